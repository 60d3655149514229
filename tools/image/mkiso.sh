#!/bin/sh
# mkiso.sh KERNEL OUTPUT BUNDLE - build the hybrid tern ISO with Debian's
# GRUB: grub-mkrescue (grub-pc-bin for BIOS, grub-efi-amd64-bin for UEFI,
# xorriso, mtools) lays out El Torito BIOS and EFI boot images around /boot.
# BUNDLE (tern-bundle's output: the configuration and its certificates,
# keys, CAs and ACL) is baked in as /boot/tern.bundle, which GRUB hands the
# kernel as a boot module. Use tern-build-image, which makes the bundle.
set -eu
if [ $# -ne 3 ]; then
    echo "usage: mkiso.sh KERNEL OUTPUT BUNDLE (tools/image/tern-build-image makes the bundle)" >&2
    exit 2
fi
kernel=$1
out=$2
bundle=$3
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
trap 'rm -rf "$root" "$root.log"' EXIT
mkdir -p "$root/boot/grub"
cp "$kernel" "$root/boot/tern.elf"
cp "$here/grub.cfg" "$root/boot/grub/grub.cfg"
cp "$bundle" "$root/boot/tern.bundle"
mkdir -p "$(dirname "$out")"
# Quiet unless it fails; SOURCE_DATE_EPOCH keeps the image reproducible.
# The ISO holds the server's private key: readable by its owner only.
if ! SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-0} grub-mkrescue -o "$out.tmp" "$root" >"$root.log" 2>&1; then
    cat "$root.log" >&2
    rm -f "$out.tmp"
    exit 1
fi
chmod 600 "$out.tmp"
mv "$out.tmp" "$out"
