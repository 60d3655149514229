#!/usr/bin/env bash
# scripts/check-core-symbols.sh - the broker core's objects export only
# names that cannot collide with another module linked into the same image
# (the unikernel links the core next to lwIP, which owns sys_*, and next to
# platform glue with its own conn_* and deliver): every global symbol a
# src/broker object defines starts with broker_ (the public API, broker.h,
# acl.h, journal.h) or bk_ (the core's internal cross-file functions), or is
# one of the public names listed below.
#
#   scripts/check-core-symbols.sh                  build/asan/src/broker/*.o
#   scripts/check-core-symbols.sh OBJ...           these objects (e.g. the
#                                                  kernel's build/kernel/prod/src/broker/*.o)
#
# Prints each offending object and symbol and exits 1; prints one summary
# line and exits 0 when every name is allowed. Needs nm (binutils).
set -euo pipefail

cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}

# Public names outside the two prefixes, with the header that declares them.
PUBLIC=(
    journal_next  # journal.h: the store's reader of journal records
    siphash       # hash.h: the keyed hash, tested against published vectors
    table_hash    # hash.h: the core tables' hash
)

if [ $# -eq 0 ]; then
    shopt -s nullglob
    set -- "$BUILD"/asan/src/broker/*.o
    shopt -u nullglob
    if [ $# -eq 0 ]; then
        echo "check-core-symbols: no objects in $BUILD/asan/src/broker (make build/asan/unit-tests)" >&2
        exit 2
    fi
fi

allowed=" ${PUBLIC[*]} "
bad=0
count=0
for obj in "$@"; do
    # Global defined symbols of any kind (text, data, read-only, bss);
    # undefined ones (U) are what the object uses, not what it exports.
    while read -r _ kind name; do
        count=$((count + 1))
        case $name in
        broker_* | bk_*) continue ;;
        esac
        if [[ $allowed == *" $name "* ]]; then
            continue
        fi
        echo "check-core-symbols: $obj: '$name' ($kind) is neither broker_*, bk_* nor a listed public name" >&2
        bad=1
    done < <(nm -g --defined-only "$obj" | awk 'NF == 3')
done
if [ $bad -ne 0 ]; then
    exit 1
fi
echo "check-core-symbols: $# objects, $count global symbols, all broker_*, bk_* or public"
