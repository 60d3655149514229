#!/usr/bin/env bash
# run-diag.sh BUILD - what `make run-diag` does after building: an ISO like
# build/tern.iso (the development configuration and PKI) whose default
# boot entry is "Diagnostics, then serve" (tools/image/grub.cfg with only
# its default changed), booted by scripts/run-image.sh --diag with a blank
# scratch disk for the disk measurements to read (diag-serve writes no
# disk). The report comes first on the console between "tern: diag:
# report begin" and "... end"; then the broker serves as the live entry
# does, with the report retained on $SYS/diag/report for operators.
set -euo pipefail
[ $# -eq 1 ] || { echo "usage: tools/diag/run-diag.sh BUILD   (make run-diag)" >&2; exit 2; }
build=$1
root=$(cd "$(dirname "$0")/../.." && pwd)
entry='Diagnostics, then serve'
n=$(grep '^menuentry ' "$root/tools/image/grub.cfg" | grep -n "^menuentry \"$entry\"" | cut -d: -f1)
[ -n "$n" ] || { echo "run-diag.sh: no \"$entry\" entry in tools/image/grub.cfg" >&2; exit 1; }
mkdir -p "$build/run"
sed "s/^set default=0\$/set default=$((n - 1))/" "$root/tools/image/grub.cfg" >"$build/run/grub-diag.cfg"
grep -q "^set default=$((n - 1))\$" "$build/run/grub-diag.cfg" ||
    { echo "run-diag.sh: tools/image/grub.cfg has no 'set default=0' line" >&2; exit 1; }
TERN_ISO_GRUB_CFG=$build/run/grub-diag.cfg "$root/tools/image/tern-build-image" \
    --kernel "$build/kernel/tern.elf" --bundler "$build/rel/tern-bundle" \
    --payload "$build/rel/tern-payload" "$build/image/tern.conf" "$build/run/tern-diag.iso"
scratch=$build/run/diag-scratch.img
[ -f "$scratch" ] || truncate -s 256M "$scratch"
exec "$root/scripts/run-image.sh" --diag "$build/run/tern-diag.iso" "$build/kernel/tern.elf"
