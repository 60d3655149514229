#!/usr/bin/env bash
# scripts/callgrind.sh - instructions the daemon spends per delivered
# message: build/rel/ternd under valgrind's callgrind while build/rel/tern-bench
# drives one scenario against it. Instruction counts do not depend on the
# machine's load, unlike the times of `make bench`, so they are what to
# compare before and after a change on a shared machine (docs/PERFORMANCE.md).
#
#   scripts/callgrind.sh NAME SCENARIO [tern-bench options...]
#   scripts/callgrind.sh q1 flood --pairs 16 --qos 1 --size 64 --duration 5
#   scripts/callgrind.sh fan1000 fanout --subs 1000 --rate 50 --duration 5
#
# Prints one JSON line (published, delivered, instructions, instructions
# per delivery) and leaves build/prof/callgrind-NAME.out for
# `callgrind_annotate` (add --inclusive=yes or --tree=caller to see who
# calls what). Only user-space instructions are counted: system calls and
# the kernel's TCP work are not. Under valgrind the broker is ~50x slower,
# so it is always the bottleneck: per-message counts are comparable between
# runs, rates are not. Deliveries (not publishes) are the divisor because a
# QoS 0 flood's publisher writes more than a valgrind-slowed broker reads
# before the run ends.
#
# Environment: BUILD (default build), PORT (default 21993), TERND (measure
# this ternd instead of building $BUILD/rel/ternd: an older commit's).
#
# Counts are stable for floods (the broker is saturated, so every run
# batches alike). At a fixed rate (fanout, latency) how many messages one
# loop turn handles depends on how fast valgrind runs on a loaded machine,
# and the count per delivery moved by up to 40% between runs of one
# build: compare medians of several runs, alternating the builds.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PORT=${PORT:-21993}
[[ $# -ge 2 ]] || { sed -n '2,22p' "$0" >&2; exit 2; }
name=$1
shift
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind missing (apt-get install valgrind)" >&2; exit 1; }
TERND=${TERND:-$BUILD/rel/ternd}
make --no-print-directory "$BUILD/rel/tern-bench" >/dev/null
[[ $TERND != "$BUILD/rel/ternd" ]] || make --no-print-directory "$TERND" >/dev/null
[[ -z $(ss -Hltn "sport = :$PORT") ]] || { echo "callgrind.sh: port $PORT in use (set PORT)" >&2; exit 1; }

out=$BUILD/prof
mkdir -p "$out"
cat >"$out/callgrind.conf" <<EOF
config_version = 1
listener.plain = 127.0.0.1:$PORT
log.level = warn
auth.allow_anonymous = true
sys.interval = 1
limits.max_inflight = 32
limits.max_queued = 1000
limits.max_queued_bytes = 16777216
limits.max_packet_size = 1048576
sys.public = true
EOF
valgrind --tool=callgrind --callgrind-out-file="$out/callgrind-$name.out" \
    "$TERND" -c "$out/callgrind.conf" >"$out/callgrind-$name.log" 2>&1 &
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
for _ in $(seq 200); do
    [[ -n $(ss -Hltn "sport = :$PORT") ]] && break
    kill -0 $pid 2>/dev/null || { cat "$out/callgrind-$name.log" >&2; exit 1; }
    sleep 0.1
done
"$BUILD/rel/tern-bench" "$@" --port "$PORT" --pid $pid >"$out/callgrind-$name.json"
kill -TERM $pid
wait $pid || true
trap - EXIT
ir=$(callgrind_annotate "$out/callgrind-$name.out" 2>/dev/null |
    sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
jq -c --arg name "$name" --argjson ir "$ir" \
    '{name: $name, published: .results.published, delivered: .results.delivered,
      instructions: $ir, per_delivery: (if .results.delivered > 0
      then ($ir / .results.delivered | floor) else null end)}' "$out/callgrind-$name.json"
