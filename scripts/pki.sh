#!/usr/bin/env bash
# scripts/pki.sh - development PKI for tern's mutual-TLS listener (SPEC F4),
# a thin wrapper around Debian's openssl. Every key is ECDSA P-256, every
# signature ECDSA with SHA-256.
#
#   scripts/pki.sh DIR
#       Create in DIR whatever of the development PKI is missing (an existing
#       file is never replaced, so running it again changes nothing):
#         ca.crt ca.key                   development CA, signs server + clients
#         server.crt server.key           CN=localhost, SAN localhost,
#                                         127.0.0.1 and ::1
#         dev-client.crt dev-client.key   client, CN=dev-client
#         operator-ca.crt operator-ca.key operator CA (tls.operator_ca)
#         dev-operator.crt dev-operator.key
#                                         operator, CN=dev-operator, signed by
#                                         the operator CA
#   scripts/pki.sh DIR client NAME [options]
#       Issue NAME.crt + NAME.key, CN=NAME, signed by DIR/ca (the identity of
#       a client is its CN by default, so NAME is the MQTT identity).
#   scripts/pki.sh DIR operator NAME [options]
#       The same, signed by DIR/operator-ca.
#   scripts/pki.sh DIR ca NAME
#       Another self-signed CA, NAME.crt + NAME.key (tests use one to show a
#       certificate from an unknown CA is refused).
#
# Options for client/operator:
#   --ca NAME           sign with DIR/NAME.crt + DIR/NAME.key instead
#   --san TYPE:VALUE    add a subjectAltName (DNS:, email:, URI:, IP:); repeatable
#   --dates START END   validity window, openssl time format YYYYMMDDHHMMSSZ
#                       (tests make an expired certificate with a past window)
#   --days N            validity from now (default 825 for clients, servers)
#
# Environment: TERN_PKI_DAYS=N sets the validity of everything created
# (CAs and leaves) when no --days/--dates is given; the unit tests' checked-in
# certificates use a long one so they do not expire under the tests.
#
# The development CA lives 10 years. Its key sits next to its certificate,
# which is fine on a developer's machine and nowhere else: docs/OPERATIONS.md
# says how to run a real PKI with an offline CA.
set -euo pipefail
umask 077

die() { printf 'pki.sh: %s\n' "$*" >&2; exit 2; }
usage() { sed -n '2,39p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }

command -v openssl >/dev/null 2>&1 ||
    die "openssl not found (Debian package openssl; make setup installs it)"

CA_DAYS=${TERN_PKI_DAYS:-3650}
LEAF_DAYS=${TERN_PKI_DAYS:-825}
[[ $CA_DAYS =~ ^[1-9][0-9]{0,5}$ ]] || die "TERN_PKI_DAYS: expected a positive number of days"

# new_key FILE: an ECDSA P-256 private key in PKCS#8 PEM, readable by its owner only.
new_key() {
    openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null \
        || die "cannot create key $1"
    chmod 600 "$1"
}

# new_ca DIR NAME CN: self-signed CA certificate NAME.crt with key NAME.key.
new_ca() {
    local dir=$1 name=$2 cn=$3
    [[ -f $dir/$name.key ]] || new_key "$dir/$name.key"
    openssl req -x509 -new -key "$dir/$name.key" -sha256 -days "$CA_DAYS" -subj "/CN=$cn" \
        -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
        -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -addext "subjectKeyIdentifier=hash" \
        -out "$dir/$name.crt.tmp" 2>/dev/null || die "cannot create CA certificate $dir/$name.crt"
    chmod 644 "$dir/$name.crt.tmp"
    mv "$dir/$name.crt.tmp" "$dir/$name.crt"
}

# issue DIR CA NAME CN EKU DATES DAYS SAN...: NAME.crt + NAME.key signed by
# CA. DATES is "START END" or empty; SANs are openssl subjectAltName items.
# Uses `openssl ca` (with a throw-away database) because it is the openssl
# 3.0 command that can set an arbitrary validity window.
issue() {
    local dir=$1 ca=$2 name=$3 cn=$4 eku=$5 dates=$6 days=$7
    shift 7
    local work san="" item
    [[ -f $dir/$ca.crt && -f $dir/$ca.key ]] || die "CA $dir/$ca.crt or its key is missing"
    [[ -f $dir/$name.key ]] || new_key "$dir/$name.key"
    for item in "$@"; do
        san=${san:+$san,}$item
    done
    work=$(mktemp -d)
    # shellcheck disable=SC2064 # expand now: work is local
    trap "rm -rf '$work'" RETURN
    : >"$work/index.txt"
    openssl rand -hex 16 >"$work/serial"
    {
        echo "[ca]"
        echo "default_ca = tern"
        echo "[tern]"
        echo "database = $work/index.txt"
        echo "serial = $work/serial"
        echo "new_certs_dir = $work"
        echo "default_md = sha256"
        echo "policy = anything"
        echo "unique_subject = no"
        echo "email_in_dn = no"
        echo "[anything]"
        echo "commonName = supplied"
        echo "[leaf]"
        echo "basicConstraints = critical,CA:FALSE"
        echo "keyUsage = critical,digitalSignature"
        echo "extendedKeyUsage = $eku"
        echo "subjectKeyIdentifier = hash"
        echo "authorityKeyIdentifier = keyid"
        [[ -z $san ]] || echo "subjectAltName = $san"
    } >"$work/ca.cnf"
    openssl req -new -key "$dir/$name.key" -subj "/CN=$cn" -out "$work/req.csr" 2>/dev/null \
        || die "cannot create a request for $name"
    local validity=(-days "$days")
    if [[ -n $dates ]]; then
        # shellcheck disable=SC2086 # two words on purpose
        set -- $dates
        validity=(-startdate "$1" -enddate "$2")
    fi
    openssl ca -batch -notext -config "$work/ca.cnf" -extensions leaf \
        -cert "$dir/$ca.crt" -keyfile "$dir/$ca.key" "${validity[@]}" \
        -in "$work/req.csr" -out "$dir/$name.crt.tmp" >"$work/log" 2>&1 \
        || { cat "$work/log" >&2; die "cannot issue $dir/$name.crt"; }
    chmod 644 "$dir/$name.crt.tmp"
    mv "$dir/$name.crt.tmp" "$dir/$name.crt"
}

# dev_pki DIR: the development PKI, creating only what is missing.
dev_pki() {
    local dir=$1 made=()
    if [[ ! -f $dir/ca.crt ]]; then
        new_ca "$dir" ca "tern development CA"
        made+=(ca.crt)
    fi
    if [[ ! -f $dir/server.crt ]]; then
        issue "$dir" ca server localhost serverAuth "" "$LEAF_DAYS" \
            DNS:localhost IP:127.0.0.1 IP:::1
        made+=(server.crt)
    fi
    if [[ ! -f $dir/dev-client.crt ]]; then
        issue "$dir" ca dev-client dev-client clientAuth "" "$LEAF_DAYS"
        made+=(dev-client.crt)
    fi
    if [[ ! -f $dir/operator-ca.crt ]]; then
        new_ca "$dir" operator-ca "tern development operator CA"
        made+=(operator-ca.crt)
    fi
    if [[ ! -f $dir/dev-operator.crt ]]; then
        issue "$dir" operator-ca dev-operator dev-operator clientAuth "" "$LEAF_DAYS"
        made+=(dev-operator.crt)
    fi
    if ((${#made[@]} > 0)); then
        printf 'pki.sh: created in %s: %s\n' "$dir" "${made[*]}"
    fi
}

# A name becomes a file name and a CN: keep it to a safe alphabet.
check_name() {
    [[ $1 =~ ^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$ ]] \
        || die "name '$1': use 1-64 of A-Z a-z 0-9 . _ @ - (starting with a letter or digit)"
}

[[ $# -ge 1 ]] || usage
case $1 in -h | --help) usage ;; esac
DIR=$1
shift
# A new directory is private (only the last component is new, or the
# parents are the caller's business); an existing one keeps its permissions.
if [[ ! -d $DIR ]]; then
    { mkdir -p "$DIR" && chmod 700 "$DIR"; } || die "cannot create $DIR"
fi

if [[ $# -eq 0 ]]; then
    dev_pki "$DIR"
    exit 0
fi

CMD=$1
shift
[[ $# -ge 1 ]] || usage
NAME=$1
shift
check_name "$NAME"

case $CMD in
ca)
    [[ $# -eq 0 ]] || usage
    new_ca "$DIR" "$NAME" "$NAME"
    ;;
client | operator)
    SIGNER=ca
    [[ $CMD == operator ]] && SIGNER=operator-ca
    DATES=""
    DAYS=$LEAF_DAYS
    SANS=()
    while [[ $# -gt 0 ]]; do
        case $1 in
        --ca)
            [[ $# -ge 2 ]] || usage
            check_name "$2"
            SIGNER=$2
            shift 2
            ;;
        --san)
            [[ $# -ge 2 ]] || usage
            [[ $2 =~ ^(DNS|email|URI|IP):[^,]+$ ]] ||
                die "--san $2: expected DNS:, email:, URI: or IP: and a value without commas"
            SANS+=("$2")
            shift 2
            ;;
        --dates)
            [[ $# -ge 3 ]] || usage
            [[ $2 =~ ^[0-9]{14}Z$ && $3 =~ ^[0-9]{14}Z$ ]] ||
                die "--dates: expected YYYYMMDDHHMMSSZ YYYYMMDDHHMMSSZ"
            DATES="$2 $3"
            shift 3
            ;;
        --days)
            [[ $# -ge 2 && $2 =~ ^[1-9][0-9]{0,4}$ ]] || die "--days: expected a positive number"
            DAYS=$2
            shift 2
            ;;
        *) usage ;;
        esac
    done
    issue "$DIR" "$SIGNER" "$NAME" "$NAME" clientAuth "$DATES" "$DAYS" "${SANS[@]}"
    ;;
*)
    usage
    ;;
esac
