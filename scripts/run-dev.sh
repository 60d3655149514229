#!/usr/bin/env bash
# run-dev.sh BINARY - what `make run` does after building: check
# config/dev.conf, say how to connect a client, then replace this shell with
# the daemon (so Ctrl-C reaches it directly and shuts it down cleanly).
#
# The address is read from config/dev.conf so the instructions printed here
# can never disagree with what the daemon listens on.
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
# A bad dev config fails here with FILE:LINE: message, before anything else.
"$BIN" --check -c "$CONF" >/dev/null

ADDR=$(sed -n 's/^[[:space:]]*listener\.plain[[:space:]]*=[[:space:]]*\([^[:space:]#]*\).*/\1/p' "$CONF")
HOST=${ADDR%:*}
HOST=${HOST#[}
HOST=${HOST%]}
PORT=${ADDR##*:}

# Something already accepting on the port (often Debian's mosquitto service,
# which starts itself on 1883 when the package is installed)?
if (exec 3<>"/dev/tcp/$HOST/$PORT") 2>/dev/null; then
    echo "run-dev.sh: port $PORT on $HOST is already in use, so tern cannot listen there." >&2
    if command -v ss >/dev/null 2>&1; then
        WHO=$(ss -Hltnp "sport = :$PORT" 2>/dev/null | grep -o 'users:(("[^"]*"' | head -n1 | cut -d'"' -f2 || true)
        [ -n "$WHO" ] && echo "  It is held by: $WHO" >&2
    fi
    echo "  Stop that program first (for Debian's mosquitto: sudo systemctl stop mosquitto)," >&2
    echo "  or change listener.plain in config/dev.conf." >&2
    exit 1
fi

cat <<MSG
tern development broker: plaintext MQTT on $HOST:$PORT, anonymous clients allowed.
Config: config/dev.conf. Stop it with Ctrl-C.

In another terminal:
  subscribe:  mosquitto_sub -h $HOST -p $PORT -t 'test/#' -v
  publish:    mosquitto_pub -h $HOST -p $PORT -t test/hello -m hi
  statistics: mosquitto_sub -h $HOST -p $PORT -t '\$SYS/#' -v

MSG
exec "$BIN" -c "$CONF"
