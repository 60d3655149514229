#!/usr/bin/env bash
# scripts/bench.sh - `make bench`: tern and Mosquitto side by side (SPEC G).
#
# For each repetition, each case and each broker (the order of the brokers
# alternates between repetitions, so slow drifts in machine load hit both),
# start a fresh broker pinned to one CPU, run build/rel/tern-bench pinned to
# another, stop the broker. Every result is a JSON line in
# build/bench/results-TIME.jsonl (also copied to build/bench/latest.jsonl);
# tools/bench/report.py then rewrites the table in docs/PERFORMANCE.md.
#
# Environment:
#   BENCH_QUICK=1        smoke run: 1 repetition, 2 s per case, small sizes
#   BENCH_REPS=N         repetitions (default 3, quick 1)
#   BENCH_DURATION=S     seconds per measured phase (default 10, quick 2)
#   BENCH_CASES="a b"    only these cases (ids as in the table)
#   BENCH_BROKERS="tern mosquitto"
#   BENCH_BROKER_CPU=0 BENCH_GEN_CPU=1
#   BENCH_PORT_PLAIN=21883 BENCH_PORT_TLS=28883
#   BENCH_NO_REPORT=1    do not touch docs/PERFORMANCE.md
#   MOSQUITTO=/usr/sbin/mosquitto
#   TERND=path           measure this ternd instead of building build/rel/ternd
# Servers listen on 127.0.0.1 only. Every case is bounded in time.
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
OUT=$BUILD/bench
BIN=$BUILD/rel/tern-bench
TERND=${TERND:-$BUILD/rel/ternd}
MOSQ=${MOSQUITTO:-/usr/sbin/mosquitto}
QUICK=${BENCH_QUICK:-0}
BROKER_CPU=${BENCH_BROKER_CPU:-0}
GEN_CPU=${BENCH_GEN_CPU:-1}
PORT_PLAIN=${BENCH_PORT_PLAIN:-21883}
PORT_TLS=${BENCH_PORT_TLS:-28883}
BROKERS=${BENCH_BROKERS:-"tern mosquitto"}
if [[ $QUICK == 1 ]]; then
    REPS=${BENCH_REPS:-1}; D=${BENCH_DURATION:-2}
    IDLE_PLAIN=1000; IDLE_TLS=300; DRAIN=1
else
    REPS=${BENCH_REPS:-3}; D=${BENCH_DURATION:-10}
    IDLE_PLAIN=10000; IDLE_TLS=2000; DRAIN=3
fi

die() { printf 'bench.sh: %s\n' "$*" >&2; exit 1; }
note() { printf 'bench.sh: %s\n' "$*" >&2; }

# --- build -----------------------------------------------------------------
# From `make bench` both binaries are fresh already; run by hand, build them.
# A tree that does not build right now (colleagues mid-change) falls back to
# the last binary, and the results say which one was used.
if [[ -z ${MAKELEVEL:-} ]]; then
    mk=(make --no-print-directory)
    grep -q 'tools/bench/bench.mk' Makefile || mk+=(-f Makefile -f tools/bench/bench.mk)
    "${mk[@]}" "$BIN" >/dev/null || die "cannot build $BIN (make deps first?)"
    mkdir -p "$OUT"
    if [[ $TERND == "$BUILD/rel/ternd" ]] && ! "${mk[@]}" "$TERND" >"$OUT/build.log" 2>&1; then
        [[ -x $TERND ]] || die "cannot build $TERND (see $OUT/build.log)"
        note "warning: $TERND does not build now; using the existing binary"
    fi
fi
[[ -x $BIN && -x $TERND ]] || die "missing $BIN or $TERND"
[[ -x $MOSQ ]] || die "no mosquitto at $MOSQ (apt-get install mosquitto)"
command -v taskset >/dev/null || die "taskset missing (util-linux)"
(( $(nproc) >= 2 )) || note "warning: fewer than 2 CPUs; broker and generator share one"

for p in "$PORT_PLAIN" "$PORT_TLS"; do
    [[ -z $(ss -Hltn "sport = :$p") ]] || die "port $p is in use (set BENCH_PORT_PLAIN/TLS)"
done

STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RUN=$OUT/run-$STAMP
RESULTS=$OUT/results-$STAMP.jsonl
mkdir -p "$RUN"

# --- certificates and configurations ----------------------------------------
PKI=$OUT/pki
scripts/pki.sh "$PKI" >/dev/null || die "scripts/pki.sh failed"
PKI=$(cd "$PKI" && pwd)
CLIENT_TLS=(--cafile "$PKI/ca.crt" --cert "$PKI/dev-client.crt" --key "$PKI/dev-client.key")

# Equivalent limits on both brokers (see docs/PERFORMANCE.md).
cat >"$RUN/tern.conf" <<EOF
config_version = 1
listener.plain = 127.0.0.1:$PORT_PLAIN
log.level = warn
auth.allow_anonymous = true
sys.interval = 1
limits.max_inflight = 32
limits.max_queued = 1000
limits.max_queued_bytes = 16777216
limits.max_packet_size = 1048576
EOF
# $SYS readable by anyone, as in Mosquitto's default: lets the idle cases
# read tern's own memory figure. Older ternd builds lack the key.
printf 'sys.public = true\n' >>"$RUN/tern.conf"
if "$TERND" --check -c "$RUN/tern.conf" >/dev/null 2>&1; then
    TERN_SYS_PUBLIC=1
else
    TERN_SYS_PUBLIC=0
    sed -i '/^sys.public/d' "$RUN/tern.conf"
fi
# The TLS listener is being added to ternd; use it when this ternd accepts it.
cp "$RUN/tern.conf" "$RUN/tern-tls.conf"
cat >>"$RUN/tern-tls.conf" <<EOF
listener.tls = 127.0.0.1:$PORT_TLS
tls.cert = $PKI/server.crt
tls.key = $PKI/server.key
tls.client_ca = $PKI/ca.crt
tls.operator_ca = $PKI/operator-ca.crt
tls.require_client_cert = true
tls.min_version = 1.3
EOF
if "$TERND" --check -c "$RUN/tern-tls.conf" >"$RUN/tern-tls.check" 2>&1; then
    TERN_TLS=1
    cp "$RUN/tern-tls.conf" "$RUN/tern.conf"
else
    TERN_TLS=0
    note "ternd has no TLS listener yet: tern's mTLS cases are skipped ($(head -c 200 "$RUN/tern-tls.check"))"
fi

# The same without the window and queue limits, for the cases that
# measure the brokers as they ship (issue 21): each broker's own defaults.
sed '/^limits\.max_inflight\|^limits\.max_queued/d' "$RUN/tern.conf" >"$RUN/tern-default.conf"

cat >"$RUN/mosquitto.conf" <<EOF
per_listener_settings false
allow_anonymous true
persistence false
log_dest stderr
log_type error
log_type warning
sys_interval 1
max_inflight_messages 32
max_queued_messages 1000
max_queued_bytes 16777216
max_packet_size 1048576
# Stay root: the generated keys are readable by their owner only.
user root
listener $PORT_PLAIN 127.0.0.1
listener $PORT_TLS 127.0.0.1
cafile $PKI/ca.crt
certfile $PKI/server.crt
keyfile $PKI/server.key
require_certificate true
tls_version tlsv1.3
EOF

sed '/^max_inflight_messages\|^max_queued/d' "$RUN/mosquitto.conf" >"$RUN/mosquitto-default.conf"

# --- brokers -----------------------------------------------------------------
BPID=
stop_broker() {
    [[ -n $BPID ]] || return 0
    kill -TERM "$BPID" 2>/dev/null || true
    wait "$BPID" 2>/dev/null || true
    BPID=
}
trap stop_broker EXIT

# start_broker NAME [CONF]: CONF is "default" for the brokers' own window
# and queue defaults, else the equivalent limits.
start_broker() {
    local name=$1 i conf=${2:+-$2}
    case $name in
    tern) taskset -c "$BROKER_CPU" "$TERND" -c "$RUN/tern$conf.conf" >>"$RUN/tern.log" 2>&1 & ;;
    mosquitto) taskset -c "$BROKER_CPU" "$MOSQ" -c "$RUN/mosquitto$conf.conf" >>"$RUN/mosquitto.log" 2>&1 & ;;
    *) die "unknown broker $name" ;;
    esac
    BPID=$!
    for i in $(seq 100); do
        kill -0 "$BPID" 2>/dev/null || die "$name exited at start (see $RUN/$name.log)"
        [[ -n $(ss -Hltn "sport = :$PORT_PLAIN") ]] && return 0
        sleep 0.05
    done
    die "$name did not listen on $PORT_PLAIN"
}

# --- cases: id|scenario|transport|options[|default] ---------------------------
# A fifth field "default" runs both brokers without the window and queue
# limits of the equivalence table (their shipped defaults).
CASES=(
    "handshake-mtls|handshake|mtls|--conns 32 --duration $D"
    "handshake-plain|handshake|plain|--conns 32 --duration $D"
    "idle-plain|idle|plain|--conns $IDLE_PLAIN --concurrency 100 --hold 1"
    "idle-mtls|idle|mtls|--conns $IDLE_TLS --concurrency 32 --hold 1"
    "latency-q0|latency|plain|--pairs 8 --rate 100 --qos 0 --duration $D --drain 1"
    "latency-q1|latency|plain|--pairs 8 --rate 100 --qos 1 --duration $D --drain 1"
    "latency-q1-v5|latency|plain|--mqtt 5 --pairs 8 --rate 100 --qos 1 --duration $D --drain 1"
    "fanout-100|fanout|plain|--subs 100 --rate 500 --duration $D --drain 2"
    "fanout-1000|fanout|plain|--subs 1000 --rate 50 --duration $D --drain 2"
    "flood-q0-64|flood|plain|--pairs 16 --qos 0 --size 64 --duration $D --drain $DRAIN"
    "flood-q1-64|flood|plain|--pairs 16 --qos 1 --size 64 --duration $D --drain $DRAIN"
    "flood-q0-64-v5|flood|plain|--mqtt 5 --pairs 16 --qos 0 --size 64 --duration $D --drain $DRAIN"
    "flood-q1-64-v5|flood|plain|--mqtt 5 --pairs 16 --qos 1 --size 64 --duration $D --drain $DRAIN"
    "flood-q0-1k|flood|plain|--pairs 16 --qos 0 --size 1024 --duration $D --drain $DRAIN"
    "flood-mtls-q0-64|flood|mtls|--pairs 16 --qos 0 --size 64 --duration $D --drain $DRAIN"
    "flood-q1-default|flood|plain|--pairs 4 --qos 1 --size 64 --window 100 --ack batch --duration $D --drain $DRAIN|default"
    "rtt50-q1|flood|plain|--pairs 1 --qos 1 --size 64 --window 100 --ack batch --rtt-ms 50 --duration $D --drain $DRAIN|default"
)

wanted() { [[ -z ${BENCH_CASES:-} || " $BENCH_CASES " == *" $1 "* ]]; }

# One JSON line describing the run, first in the results file.
meta() {
    local cpu kern tern mosq wolf
    cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
    kern=$(uname -sr)
    tern=$("$TERND" --version 2>&1 | head -1 || true)
    # mosquitto -h exits 3 after printing its version.
    mosq=$({ "$MOSQ" -h 2>&1 || true; } | sed -n 's/^mosquitto version //p' | head -1)
    wolf=$(sed -n 's/^#define LIBWOLFSSL_VERSION_STRING "\(.*\)"/\1/p' \
        "$BUILD/deps/wolfssl/include/wolfssl/version.h" 2>/dev/null || true)
    jq -cn --arg stamp "$STAMP" --arg cpu "$cpu" --arg kern "$kern" --arg tern "$tern" \
        --arg mosq "$mosq" --arg wolf "$wolf" --argjson nproc "$(nproc)" \
        --argjson quick "$QUICK" --argjson reps "$REPS" --argjson dur "$D" \
        --argjson tls "$TERN_TLS" --arg load "$(cut -d' ' -f1-3 /proc/loadavg)" \
        --arg tern_built "$(date -u -r "$TERND" +%Y-%m-%dT%H:%MZ)" --arg ternd "$TERND" \
        '{meta:{stamp:$stamp, cpu:$cpu, nproc:$nproc, kernel:$kern, tern:$tern,
          tern_built:$tern_built, ternd:$ternd, mosquitto:$mosq, wolfssl:$wolf, quick:($quick==1),
          reps:$reps, duration_s:$dur, tern_tls:($tls==1), loadavg_start:$load,
          broker_cpu:'"$BROKER_CPU"', generator_cpu:'"$GEN_CPU"'}}'
}
command -v jq >/dev/null || die "jq missing (apt-get install jq)"
meta >"$RESULTS"

load1=$(cut -d' ' -f1 /proc/loadavg)
if awk -v l="$load1" 'BEGIN { exit !(l > 0.5) }'; then
    note "warning: load average $load1 before starting: other work shares these CPUs"
fi

n=0
for rep in $(seq "$REPS"); do
    order=($BROKERS)
    (( rep % 2 == 0 )) && order=($(printf '%s\n' "${order[@]}" | tac))
    for c in "${CASES[@]}"; do
        IFS='|' read -r id scen transport args conf <<<"$c"
        wanted "$id" || continue
        for b in "${order[@]}"; do
            if [[ $b == tern && $transport == mtls && $TERN_TLS == 0 ]]; then
                printf '{"case":"%s","broker":"tern","rep":%d,"skipped":"ternd has no TLS listener yet"}\n' \
                    "$id" "$rep" >>"$RESULTS"
                continue
            fi
            extra=()
            if [[ $transport == mtls ]]; then
                extra+=("${CLIENT_TLS[@]}" --port "$PORT_TLS")
            else
                extra+=(--port "$PORT_PLAIN")
            fi
            # The broker's own memory figure: Mosquitto's heap is readable
            # by anyone; tern's $SYS with sys.public, else by an operator (TLS).
            if [[ $scen == idle && $b == mosquitto ]]; then
                extra+=(--sys --sys-topic '$SYS/broker/heap/current' --sys-wait 5)
            elif [[ $scen == idle && $b == tern && $TERN_SYS_PUBLIC == 1 ]]; then
                extra+=(--sys --sys-wait 5)
            elif [[ $scen == idle && $b == tern && $transport == mtls ]]; then
                extra+=(--sys --sys-cert "$PKI/dev-operator.crt" --sys-key "$PKI/dev-operator.key" --sys-wait 5)
            fi
            n=$((n + 1))
            note "rep $rep/$REPS $id $b"
            start_broker "$b" "$conf"
            # shellcheck disable=SC2086 # $args is a list of options
            if ! out=$(timeout 120 taskset -c "$GEN_CPU" "$BIN" "$scen" $args "${extra[@]}" \
                --pid "$BPID" --label "$b" --case "$id" --rep "$rep" 2>>"$RUN/bench.stderr"); then
                note "  $id against $b failed (see $RUN/bench.stderr)"
                out=${out:-$(printf '{"case":"%s","broker":"%s","rep":%d,"error":"tern-bench failed"}' "$id" "$b" "$rep")}
            fi
            printf '%s\n' "$out" >>"$RESULTS"
            stop_broker
        done
    done
done

cp "$RESULTS" "$OUT/latest.jsonl"
note "$n runs; results in $RESULTS"
if [[ ${BENCH_NO_REPORT:-0} != 1 ]]; then
    /usr/bin/python3 tools/bench/report.py "$RESULTS" docs/PERFORMANCE.md
    note "table updated in docs/PERFORMANCE.md"
fi
