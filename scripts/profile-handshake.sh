#!/usr/bin/env bash
# scripts/profile-handshake.sh - where the daemon's CPU goes in a full
# mutual-TLS 1.3 handshake (TCP accept, handshake with a client certificate,
# CONNECT, CONNACK, DISCONNECT, close): build/rel/ternd, configured as
# `make bench` configures it (scripts/bench.sh: client CA, operator CA,
# client certificates required, TLS 1.3 only), while build/rel/tern-bench's
# `handshake` scenario connects to it.
#
#   scripts/profile-handshake.sh callgrind NAME [SECONDS]
#       ternd under valgrind's callgrind; prints one JSON line (handshakes,
#       instructions, instructions per handshake) and leaves build/prof/hs-NAME.callgrind for
#       `callgrind_annotate --inclusive=yes`. Counting starts once ternd
#       listens (callgrind_control -z). User-space instructions only:
#       the kernel's TCP and system-call work is not counted. Counts do not
#       depend on the machine's load, so they are what to compare before
#       and after a change here (a shared 2-core machine).
#   scripts/profile-handshake.sh perf NAME [SECONDS]
#       ternd natively under `perf record -g` (user and kernel time, cycles
#       or, where the VM has no PMU, the cpu-clock software event); prints
#       the microseconds per handshake by part (scripts/handshake_parts.py)
#       and leaves build/prof/hs-NAME.perf for `perf report`.
#   scripts/profile-handshake.sh strace NAME [SECONDS]
#       `strace -c -f` of ternd: system calls per handshake; leaves
#       build/prof/hs-NAME.strace.
#
# Environment: BUILD (default build), PORT (TLS port, default 28993; the
# plain listener takes PORT+1), TERND (profile this ternd instead of
# building $BUILD/rel/ternd), CONNS (connections in parallel: default 1 under callgrind, so that handshakes cut off at the end weigh little, else 32).
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
PORT=${PORT:-28993}
CONNS=${CONNS:-$([[ ${1:-} == callgrind ]] && echo 1 || echo 32)}
[[ $# -ge 2 ]] || { sed -n '2,26p' "$0" >&2; exit 2; }
tool=$1 name=$2 secs=${3:-5}
case $tool in
callgrind) command -v valgrind >/dev/null || { echo "profile-handshake.sh: valgrind missing (apt-get install valgrind)" >&2; exit 1; } ;;
perf) command -v perf >/dev/null || { echo "profile-handshake.sh: perf missing (apt-get install linux-perf)" >&2; exit 1; } ;;
strace) command -v strace >/dev/null || { echo "profile-handshake.sh: strace missing (apt-get install strace)" >&2; exit 1; } ;;
*) echo "profile-handshake.sh: unknown tool $tool (callgrind, perf, strace)" >&2; exit 2 ;;
esac
TERND=${TERND:-$BUILD/rel/ternd}
make --no-print-directory "$BUILD/rel/tern-bench" >/dev/null
[[ $TERND != "$BUILD/rel/ternd" ]] || make --no-print-directory "$TERND" >/dev/null
for p in "$PORT" $((PORT + 1)); do
    [[ -z $(ss -Hltn "sport = :$p") ]] || { echo "profile-handshake.sh: port $p in use (set PORT)" >&2; exit 1; }
done

out=$BUILD/prof
pki=$out/pki
mkdir -p "$out"
scripts/pki.sh "$pki" >/dev/null
pki=$(cd "$pki" && pwd)
cat >"$out/hs.conf" <<EOF
config_version = 1
listener.plain = 127.0.0.1:$((PORT + 1))
listener.tls = 127.0.0.1:$PORT
log.level = warn
auth.allow_anonymous = true
sys.interval = 1
sys.public = true
tls.cert = $pki/server.crt
tls.key = $pki/server.key
tls.client_ca = $pki/ca.crt
tls.operator_ca = $pki/operator-ca.crt
tls.require_client_cert = true
tls.min_version = 1.3
EOF

base=$out/hs-$name
case $tool in
callgrind)
    valgrind --tool=callgrind --callgrind-out-file="$base.callgrind" \
        "$TERND" -c "$out/hs.conf" >"$base.log" 2>&1 &
    ;;
perf)
    # cycles where the VM exposes a PMU, else the cpu-clock timer.
    ev=cycles
    perf stat -e cycles true 2>&1 | grep -q 'not supported' && ev=cpu-clock
    perf record -e "$ev" -g -o "$base.perf" "$TERND" -c "$out/hs.conf" >"$base.log" 2>&1 &
    ;;
strace)
    strace -c -f -o "$base.strace" "$TERND" -c "$out/hs.conf" >"$base.log" 2>&1 &
    ;;
esac
pid=$!
trap 'kill -TERM $pid 2>/dev/null || true' EXIT
for _ in $(seq 300); do
    [[ -n $(ss -Hltn "sport = :$PORT") ]] && break
    kill -0 $pid 2>/dev/null || { cat "$base.log" >&2; exit 1; }
    sleep 0.1
done
# Count the handshakes only, not start-up (configuration, certificates).
[[ $tool != callgrind ]] || callgrind_control -z $pid >/dev/null
"$BUILD/rel/tern-bench" handshake --port "$PORT" --conns "$CONNS" --duration "$secs" \
    --cafile "$pki/ca.crt" --cert "$pki/dev-client.crt" --key "$pki/dev-client.key" \
    >"$base.json"
# strace passes no signal on to its tracee: stop ternd itself (perf's
# child, strace's tracee), found by its parent's id.
if [[ $tool == callgrind ]]; then
    kill -TERM $pid
else
    kill -TERM "$(ps --ppid $pid -o pid= | head -1)" 2>/dev/null || kill -TERM $pid
fi
wait $pid || true
trap - EXIT
n=$(jq '.results.handshakes' "$base.json")
case $tool in
callgrind)
    ann=$(callgrind_annotate --inclusive=yes "$base.callgrind" 2>/dev/null)
    ir=$(sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' <<<"$ann" | tr -d ,)
    jq -cn --arg name "$name" --argjson n "$n" --argjson ir "$ir" \
        '{name: $name, handshakes: $n, instructions: $ir,
          per_handshake: (if $n > 0 then ($ir / $n | floor) else null end)}'
    ;;
perf)
    python3 scripts/handshake_parts.py "$base.perf" "$n" "$BUILD/rel/src"
    ;;
strace)
    # System calls per handshake, from strace's summary table.
    # (columns: % time, seconds, usecs/call, calls, [errors,] syscall)
    awk -v n="$n" '$NF ~ /^[a-z_0-9]+$/ && $1 ~ /^[0-9.]+$/ {
            printf "%-14s %6.2f per handshake\n", $NF, $4 / n }' "$base.strace" |
        sort -k2 -rn | awk '$2 >= 0.05'
    ;;
esac
