#!/usr/bin/env bash
# run-dev.sh BINARY - what `make run-hosted` does after building: create the
# development PKI in build/pki when it is missing (scripts/pki.sh), check
# config/dev.conf, say how to connect a client, then replace this shell with
# the daemon (so Ctrl-C reaches it directly and shuts it down cleanly).
#
# The addresses are read from config/dev.conf so the instructions printed
# here can never disagree with what the daemon listens on.
set -euo pipefail

if [ $# -ne 1 ]; then
    echo "usage: scripts/run-dev.sh BINARY   (e.g. scripts/run-dev.sh build/rel/ternd)" >&2
    exit 2
fi
BIN=$1
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CONF=$ROOT/config/dev.conf

if [ ! -x "$BIN" ]; then
    echo "run-dev.sh: $BIN is not an executable; build it first (make)" >&2
    exit 2
fi
# The development CA, server, client and operator certificates (only what
# is missing; config/dev.conf points at them).
PKI=$ROOT/build/pki
"$ROOT/scripts/pki.sh" "$PKI"

# A bad dev config fails here with FILE:LINE: message, before anything else.
"$BIN" --check -c "$CONF" >/dev/null

# listener_addr KEY: the HOST:PORT of a listener key in the dev config.
listener_addr() {
    sed -n "s/^[[:space:]]*listener\.$1[[:space:]]*=[[:space:]]*\([^[:space:]#]*\).*/\1/p" "$CONF"
}

# check_free KEY ADDR: stop when something already accepts on ADDR (often
# Debian's mosquitto service, which starts itself on 1883 and 8883 when the
# package is installed).
check_free() {
    local key=$1 addr=$2 host port who
    host=${addr%:*}
    host=${host#[}
    host=${host%]}
    port=${addr##*:}
    if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
        echo "run-dev.sh: port $port on $host is already in use, so tern cannot listen there." >&2
        if command -v ss >/dev/null 2>&1; then
            who=$(ss -Hltnp "sport = :$port" 2>/dev/null | grep -o 'users:(("[^"]*"' |
                head -n1 | cut -d'"' -f2 || true)
            [ -n "$who" ] && echo "  It is held by: $who" >&2
        fi
        echo "  Stop that program first (for Debian's mosquitto: sudo systemctl stop mosquitto)," >&2
        echo "  or change listener.$key in config/dev.conf." >&2
        exit 1
    fi
}

PLAIN=$(listener_addr plain)
TLS=$(listener_addr tls)
[ -z "$PLAIN" ] || check_free plain "$PLAIN"
[ -z "$TLS" ] || check_free tls "$TLS"

cat <<MSG
tern development broker. Config: config/dev.conf. Stop it with Ctrl-C.
MSG
if [ -n "$PLAIN" ]; then
    HOST=${PLAIN%:*}
    PORT=${PLAIN##*:}
    cat <<MSG

Plaintext MQTT on $PLAIN (anonymous clients allowed). In another terminal:
  subscribe:  mosquitto_sub -h $HOST -p $PORT -t 'test/#' -v
  publish:    mosquitto_pub -h $HOST -p $PORT -t test/hello -m hi
  statistics: mosquitto_sub -h $HOST -p $PORT -t '\$SYS/#' -v
MSG
fi
if [ -n "$TLS" ]; then
    HOST=${TLS%:*}
    PORT=${TLS##*:}
    CLIENT="--cafile $PKI/ca.crt --cert $PKI/dev-client.crt --key $PKI/dev-client.key"
    OPERATOR="--cafile $PKI/ca.crt --cert $PKI/dev-operator.crt --key $PKI/dev-operator.key"
    cat <<MSG

MQTT over mutual TLS on $TLS (identity = certificate CN):
  subscribe:  mosquitto_sub -h $HOST -p $PORT $CLIENT -t 'test/#' -v
  publish:    mosquitto_pub -h $HOST -p $PORT $CLIENT -t test/hello -m hi
  operator:   mosquitto_sub -h $HOST -p $PORT $OPERATOR -t '\$SYS/#' -v
  more client certificates: scripts/pki.sh $PKI client NAME   (CN = NAME)
MSG
fi
echo

exec "$BIN" -c "$CONF"
