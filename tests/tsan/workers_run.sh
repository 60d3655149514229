#!/usr/bin/env bash
# tests/tsan/workers_run.sh TERND TERN_BENCH - the daemon's I/O threads
# (workers = N, ADR-061; TLS on them, ADR-065) under ThreadSanitizer
# (`make tsan-workers`, part of `make tsan-test`): a TSan-built ternd at
# workers = 2 and 4 serves plaintext QoS 1 and QoS 0 floods, a mutual-TLS
# flood and handshakes (with two certificate reloads meanwhile) from
# tern-bench, then gets SIGTERM with clients still connected. Fails on any
# ThreadSanitizer report (halt_on_error: exit 66), a non-zero exit, a
# generator error or a shutdown that takes more than 20 s.
set -euo pipefail
TERND=$(realpath "$1"); BENCH=$(realpath "$2")
cd "$(dirname "$0")/../.."
OUT=build/tsan/workers-run
rm -rf "$OUT"; mkdir -p "$OUT"
scripts/pki.sh "$OUT/pki" >/dev/null
PKI=$(cd "$OUT/pki" && pwd)
TLS=(--cafile "$PKI/ca.crt" --cert "$PKI/dev-client.crt" --key "$PKI/dev-client.key")
port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
fail() { echo "workers_run.sh: $*" >&2; tail -40 "$LOG" >&2 || true; exit 1; }

for W in 2 4; do
    PLAIN=$(port); SECURE=$(port); LOG=$OUT/ternd-$W.log
    cat >"$OUT/tern-$W.conf" <<CONF
config_version = 1
workers = $W
listener.plain = 127.0.0.1:$PLAIN
listener.tls = 127.0.0.1:$SECURE
log.level = warn
auth.allow_anonymous = true
tls.cert = $PKI/server.crt
tls.key = $PKI/server.key
tls.client_ca = $PKI/ca.crt
tls.operator_ca = $PKI/operator-ca.crt
tls.require_client_cert = true
store.path = $PWD/$OUT/store-$W.db
CONF
    TSAN_OPTIONS="halt_on_error=1 exitcode=66" "$TERND" -c "$OUT/tern-$W.conf" >"$LOG" 2>&1 &
    PID=$!
    for _ in $(seq 200); do
        [[ -n $(ss -Hltn "sport = :$PLAIN") ]] && break
        kill -0 $PID 2>/dev/null || fail "ternd exited at start"
        sleep 0.05
    done
    run() {
        "$BENCH" "$@" >"$OUT/bench.json" || fail "tern-bench $* failed"
        grep -q '"errors":0' "$OUT/bench.json" || fail "tern-bench $* reported errors: $(head -c 600 "$OUT/bench.json")"
    }
    run flood --port "$PLAIN" --pairs 4 --qos 1 --size 64 --duration 2 --drain 2
    run flood --port "$PLAIN" --pairs 4 --qos 0 --size 512 --duration 2 --drain 1
    run flood --port "$SECURE" "${TLS[@]}" --pairs 2 --qos 1 --size 64 --duration 2 --drain 2
    # Handshakes on the I/O threads while the TLS context is swapped under
    # them (SIGHUP reloads the certificates: ADR-065).
    ( sleep 0.7; kill -HUP $PID; sleep 0.5; kill -HUP $PID ) &
    run handshake --port "$SECURE" "${TLS[@]}" --conns 4 --duration 2
    wait $! || fail "workers = $W: SIGHUP could not be sent during the handshakes"
    # (log.level = warn hides the reload's own line; a failed one is an error)
    grep -q "keeping the previous TLS certificates" "$LOG" && fail "workers = $W: reload failed"
    # Clients still connected (and flooding) at SIGTERM.
    "$BENCH" flood --port "$PLAIN" --pairs 4 --qos 0 --size 64 --duration 10 >/dev/null 2>&1 &
    GEN=$!
    sleep 1.5
    kill -TERM $PID
    for _ in $(seq 400); do kill -0 $PID 2>/dev/null || break; sleep 0.05; done
    if kill -0 $PID 2>/dev/null; then kill -KILL $PID; fail "workers = $W: no exit within 20 s of SIGTERM"; fi
    rc=0; wait $PID || rc=$?
    kill $GEN 2>/dev/null || true; wait $GEN 2>/dev/null || true
    grep -q "ThreadSanitizer" "$LOG" && fail "workers = $W: ThreadSanitizer report"
    [[ $rc == 0 ]] || fail "workers = $W: ternd exit status $rc"
    echo "workers_run.sh: workers = $W: no ThreadSanitizer report, clean exit"
done
