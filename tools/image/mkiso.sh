#!/bin/sh
# mkiso.sh KERNEL OUTPUT [CONFIG] - build the hybrid tern ISO with Debian's
# GRUB: grub-mkrescue (grub-pc-bin for BIOS, grub-efi-amd64-bin for UEFI,
# xorriso, mtools) lays out El Torito BIOS and EFI boot images around /boot.
# CONFIG (default tools/image/tern.conf) is baked in as /boot/tern.conf,
# which GRUB hands the kernel as a boot module.
set -eu
kernel=$1
out=$2
here=$(dirname "$0")
config=${3:-$here/tern.conf}
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
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/boot/grub"
cp "$kernel" "$root/boot/tern.elf"
cp "$here/grub.cfg" "$root/boot/grub/grub.cfg"
cp "$config" "$root/boot/tern.conf"
mkdir -p "$(dirname "$out")"
# Quiet unless it fails; SOURCE_DATE_EPOCH keeps the image reproducible.
if ! SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-0} grub-mkrescue -o "$out.tmp" "$root" >"$root.log" 2>&1; then
    cat "$root.log" >&2
    rm -f "$root.log" "$out.tmp"
    exit 1
fi
rm -f "$root.log"
mv "$out.tmp" "$out"
