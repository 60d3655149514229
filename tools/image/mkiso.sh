#!/bin/sh
# mkiso.sh KERNEL OUTPUT BUNDLE PAYLOAD_TOOL - build the hybrid tern ISO with Debian's
# GRUB: grub-mkrescue (grub-pc-bin for BIOS, grub-efi-amd64-bin for UEFI,
# xorriso, mtools) lays out El Torito BIOS and EFI boot images around /boot.
# BUNDLE (tern-bundle's output: the configuration and its certificates,
# keys, CAs and ACL) is baked in as /boot/tern.bundle, which GRUB hands the
# kernel as a boot module. The install payload (docs/INSTALL.md: the boot
# parts mkboot.sh builds, packed by PAYLOAD_TOOL, tern-payload) is
# /boot/tern.install, the install entry's second module. Use
# tern-build-image, which makes the bundle.
#
# TERN_ISO_GRUB_CFG (tests and make run-diag only) replaces
# tools/image/grub.cfg: the kernel tests build an ISO whose default entry is
# the install entry with a short countdown, or a diagnostics entry, from the
# same script and payload; make run-diag one whose default is "Diagnostics,
# then serve" (tools/diag/run-diag.sh).
set -eu
if [ $# -ne 4 ]; then
    echo "usage: mkiso.sh KERNEL OUTPUT BUNDLE PAYLOAD_TOOL (tools/image/tern-build-image makes the bundle)" >&2
    exit 2
fi
kernel=$1
out=$2
bundle=$3
payload_tool=$4
here=$(dirname "$0")
for tool in grub-mkrescue xorriso mformat; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "mkiso: $tool missing (apt-get install grub-pc-bin grub-efi-amd64-bin xorriso mtools)" >&2
        exit 1
    }
done
for dir in /usr/lib/grub/i386-pc /usr/lib/grub/x86_64-efi; do
    [ -d "$dir" ] || { echo "mkiso: $dir missing (grub-pc-bin, grub-efi-amd64-bin)" >&2; exit 1; }
done
root=$(mktemp -d)
trap 'rm -rf "$root" "$root.log" "$root.boot"' EXIT
mkdir -p "$root/boot/grub"
cp "$kernel" "$root/boot/tern.elf"
cp "${TERN_ISO_GRUB_CFG:-$here/grub.cfg}" "$root/boot/grub/grub.cfg"
cp "$bundle" "$root/boot/tern.bundle"
"$here/mkboot.sh" "$kernel" "$bundle" "$root.boot"
"$payload_tool" "$root/boot/tern.install" 1 64 "$root.boot/boot.img" "$root.boot/core.img" \
    "$root.boot/esp.img"
rm -rf "$root.boot"
mkdir -p "$(dirname "$out")"
# Quiet unless it fails; SOURCE_DATE_EPOCH keeps xorriso's dates fixed.
# grub-mkrescue (2.06) ignores it: it stamps the ISO's volume uuid, which
# its embedded GRUB searches for and xorriso turns into the GPT's GUIDs,
# with the current time. Release builds (TERN_IMAGE_SEED set,
# tools/release) run it under faketime frozen at SOURCE_DATE_EPOCH (-f: the
# time stands still; without -f it starts there and runs) so two
# builds give the same bytes.
# The ISO holds the server's private key: readable by its owner only.
rescue() { grub-mkrescue "$@"; }
if [ -n "${TERN_IMAGE_SEED:-}" ]; then
    [ -n "${SOURCE_DATE_EPOCH:-}" ] || { echo "mkiso: TERN_IMAGE_SEED needs SOURCE_DATE_EPOCH" >&2; exit 2; }
    command -v faketime >/dev/null 2>&1 || {
        echo "mkiso: faketime missing (apt-get install faketime)" >&2
        exit 1
    }
    frozen=$(date -u -d "@$SOURCE_DATE_EPOCH" '+%Y-%m-%d %H:%M:%S')
    rescue() { TZ=UTC faketime -f "$frozen" grub-mkrescue "$@"; }
fi
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-0}
export SOURCE_DATE_EPOCH
if ! rescue -o "$out.tmp" "$root" >"$root.log" 2>&1; then
    cat "$root.log" >&2
    rm -f "$out.tmp"
    exit 1
fi
chmod 600 "$out.tmp"
mv "$out.tmp" "$out"
