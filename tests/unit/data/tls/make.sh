#!/usr/bin/env bash
# tests/unit/data/tls/make.sh - regenerate the certificates the TLS unit
# tests (tests/unit/test_tls_*.c) read from this directory. Test material
# only: these keys protect nothing and are committed on purpose.
#
# Everything valid lives 50 years (TERN_PKI_DAYS) so the checked-in files
# outlive the tests; expired.crt and not-yet-valid.crt have fixed windows.
#
#   tests/unit/data/tls/make.sh      (from anywhere; rewrites this directory)
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PKI=$HERE/../../../../scripts/pki.sh
export TERN_PKI_DAYS=18250

rm -f "$HERE"/*.crt "$HERE"/*.key
"$PKI" "$HERE"                                       # ca, server, dev-client, operator-ca, dev-operator
"$PKI" "$HERE" ca other-ca                           # a CA the server does not trust
"$PKI" "$HERE" client intruder --ca other-ca
"$PKI" "$HERE" client expired --dates 20200101000000Z 20200102000000Z
"$PKI" "$HERE" client not-yet-valid --dates 20900101000000Z 20900102000000Z
"$PKI" "$HERE" client sans --san DNS:sensor-7.example --san email:sensor-7@example.com \
    --san URI:urn:tern:sensor-7
"$PKI" "$HERE" client two-dns --san DNS:a.example --san DNS:b.example   # ambiguous
"$PKI" "$HERE" client listed-operator                # an operator by tls.operators, not by CA
# A server certificate on the wrong curve (P-384): the server must refuse it.
openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-384 -nodes -sha384 \
    -days "$TERN_PKI_DAYS" -subj /CN=localhost -keyout "$HERE/p384-server.key" \
    -out "$HERE/p384-server.crt" 2>/dev/null
chmod 644 "$HERE"/*.crt "$HERE"/*.key
crts=("$HERE"/*.crt)
echo "regenerated ${#crts[@]} certificates in $HERE"
