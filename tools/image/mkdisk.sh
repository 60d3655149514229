#!/bin/sh
# mkdisk.sh [--keep-data] KERNEL OUTPUT BUNDLE SIZE_MIB MKDISK - a raw disk image that boots tern
# from its own disk under BIOS (SeaBIOS) and UEFI (OVMF), and keeps its data
# on the same disk (SPEC F3, D2; docs/DISK.md):
#
#   LBA 0        protective MBR carrying GRUB's boot.img (BIOS)
#   1 MiB        "bios"  BIOS boot partition: GRUB's core.img (BIOS)
#   2 MiB        "esp"   EFI system partition, FAT32: EFI/BOOT/BOOTX64.EFI,
#                        /boot/grub (grub.cfg, modules), /boot/tern.elf,
#                        /boot/tern.bundle
#   66 MiB       "tern"  the data partition, zeroed: the kernel formats it
#                        on first boot
#   last 1 MiB   backup GPT
#
# No loop devices and no root: the GPT is written by MKDISK (tern-mkdisk,
# the kernel's own layout code: tools/disk); the boot parts (MBR code,
# core.img, the ESP's FAT image) come from mkboot.sh, which the ISO's
# install payload shares, and are copied in. Both GRUBs find the ESP by its
# FAT volume id, so other disks (an ISO, a second disk) do not confuse them.
#
# --keep-data: when OUTPUT exists with this partition table, rewrite only
# the boot parts (MBR code, core.img, the ESP) and keep the data partition
# as it is: `make run` uses it so a new kernel keeps the broker's data.
# OUTPUT of another shape is refused, never overwritten.
set -eu
keep=0
if [ "${1:-}" = --keep-data ]; then
    keep=1
    shift
fi
if [ $# -ne 5 ]; then
    echo "usage: mkdisk.sh [--keep-data] KERNEL OUTPUT BUNDLE SIZE_MIB MKDISK (tern-build-image --disk makes the bundle)" >&2
    exit 2
fi
kernel=$1
out=$2
bundle=$3
size_mib=$4
mkdisk=$5
here=$(dirname "$0")
for tool in "$mkdisk" sfdisk; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "mkdisk: $tool missing (make build/rel/tern-mkdisk; apt-get install fdisk grub-pc-bin grub-efi-amd64-bin mtools)" >&2
        exit 1
    }
done
for dir in /usr/lib/grub/i386-pc /usr/lib/grub/x86_64-efi; do
    [ -d "$dir" ] || { echo "mkdisk: $dir missing (grub-pc-bin, grub-efi-amd64-bin)" >&2; exit 1; }
done
case $size_mib in
    '' | *[!0-9]*) echo "mkdisk: SIZE_MIB must be a number of MiB" >&2; exit 2 ;;
esac
# ESP 64 MiB + 2 MiB in front + 1 MiB backup GPT + a data partition big
# enough for the layout's regions (docs/DISK.md: at least 64 MiB).
if [ "$size_mib" -lt 160 ]; then
    echo "mkdisk: SIZE_MIB must be at least 160" >&2
    exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

sector=512
esp_start=4096            # 2 MiB
esp_sectors=131072        # 64 MiB
bios_start=2048           # 1 MiB
bios_sectors=2048
data_start=$((esp_start + esp_sectors))

# The partition table as sfdisk prints it back, reduced to start/size/type
# (the data partition's size depends on the disk): what --keep-data compares.
shape() {
    sfdisk --dump "$1" 2>/dev/null |
        sed -n 's/.*start= *\([0-9]*\), size= *\([0-9]*\), type=\([0-9A-Fa-f-]*\).*/\1 \2 \3/p' |
        tr 'a-f' 'A-F' | awk 'NR < 3 { print } NR == 3 { print $1, $3 }'
}
# The data partition's type GUID has one source, disk/gpt.h: taken from
# what tern-mkdisk writes, not repeated here.
want_shape() {
    printf '%s\n' "$bios_start $bios_sectors 21686148-6449-6E6F-744E-656564454649" \
        "$esp_start $esp_sectors C12A7328-F81F-11D2-BA4B-00A0C93EC93B" \
        "$data_start $("$mkdisk" --show "$1" | sed -n 's/.*tern-data .* type \([0-9a-f-]*\)$/\1/p')" |
        tr 'a-f' 'A-F'
}

if [ $keep -eq 1 ] && [ -e "$out" ]; then
    if [ "$(shape "$out")" != "$(want_shape "$out")" ]; then
        echo "mkdisk: $out exists but is not a tern disk of this layout; not touching it" >&2
        echo "  (remove it, or make run FRESH=1, to start from an empty disk)" >&2
        exit 1
    fi
    target=$out
else
    rm -f "$out.tmp"
    # TERN_IMAGE_SEED (release builds): the GPT's GUIDs from it, not random.
    seed=
    if [ -n "${TERN_IMAGE_SEED:-}" ]; then
        seed="--guid-seed $(printf '%s gpt-a' "$TERN_IMAGE_SEED" | sha256sum | cut -c1-64)$(
            printf '%s gpt-b' "$TERN_IMAGE_SEED" | sha256sum | cut -c1-64)"
    fi
    # shellcheck disable=SC2086 # $seed is empty or two words
    "$mkdisk" --size "${size_mib}M" --bios-boot 1M --esp 64M $seed "$out.tmp" >/dev/null
    if [ "$(shape "$out.tmp")" != "$(want_shape "$out.tmp")" ]; then
        echo "mkdisk: $mkdisk wrote partitions other than this script's offsets" >&2
        exit 1
    fi
    target=$out.tmp
fi

# The boot parts (one source with the ISO's install payload): mkboot.sh.
"$here/mkboot.sh" "$kernel" "$bundle" "$work"
dd if="$work/esp.img" of="$target" bs=$sector seek=$esp_start conv=notrunc status=none
dd if="$work/boot.img" of="$target" bs=440 count=1 conv=notrunc status=none
dd if="$work/core.img" of="$target" bs=$sector seek=$bios_start conv=notrunc status=none

# The image holds the server's private key: readable by its owner only.
chmod 600 "$target"
[ "$target" = "$out" ] || mv "$target" "$out"
