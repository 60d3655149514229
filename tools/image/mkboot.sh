#!/bin/sh
# mkboot.sh KERNEL BUNDLE OUTDIR - the boot parts of a tern disk, built once
# for both users: mkdisk.sh copies them into a raw disk image
# (tern-build-image --disk), mkiso.sh packs them into the ISO's install
# payload (tern-payload) for the kernel's installer. The same offsets for
# both (docs/DISK.md, docs/INSTALL.md):
#
#   OUTDIR/boot.img   GRUB's boot.img, patched: its first 440 bytes go into
#                     the MBR (the partition records after them are kept)
#   OUTDIR/core.img   GRUB's core.img for the BIOS boot partition at 1 MiB
#                     (LBA 2048, 512-byte sectors), patched to load itself
#   OUTDIR/esp.img    the EFI system partition (64 MiB FAT32, at 2 MiB):
#                     EFI/BOOT/BOOTX64.EFI, /boot/grub (grub.cfg, modules),
#                     /boot/tern.elf, /boot/tern.bundle
#   OUTDIR/volid      the ESP's FAT volume id (XXXX-XXXX): random per build;
#                     both GRUBs search for it, and grub.cfg hands it to the
#                     kernel as tern.esp= so the boot log names the disk
#
# No loop devices and no root: the ESP is a FAT image made with mtools, and
# GRUB's BIOS stage is installed by patching the two block lists
# grub-bios-setup would patch (boot.img's pointer to core.img, and
# core.img's first-sector list of the rest of itself).
set -eu
if [ $# -ne 3 ]; then
    echo "usage: mkboot.sh KERNEL BUNDLE OUTDIR" >&2
    exit 2
fi
kernel=$1
bundle=$2
work=$3
here=$(dirname "$0")
for tool in grub-mkimage mformat mcopy mmd; do
    command -v "$tool" >/dev/null 2>&1 || {
        echo "mkboot: $tool missing (apt-get install grub-pc-bin grub-efi-amd64-bin mtools)" >&2
        exit 1
    }
done
for dir in /usr/lib/grub/i386-pc /usr/lib/grub/x86_64-efi; do
    [ -d "$dir" ] || { echo "mkboot: $dir missing (grub-pc-bin, grub-efi-amd64-bin)" >&2; exit 1; }
done
mkdir -p "$work"

# The offsets, in 512-byte sectors; tern-mkdisk and the kernel's
# klayout_partition put the partitions there (--bios-boot 1M --esp 64M).
sector=512
bios_start=2048           # 1 MiB
bios_sectors=2048
esp_sectors=131072        # 64 MiB

# FAT volume id: random per build; GRUB searches for it.
# The ESP's FAT volume id: random, or with TERN_IMAGE_SEED (release builds,
# tools/release) derived from it, so a rebuild of one commit gives the same
# bytes (mtools takes its timestamps from SOURCE_DATE_EPOCH).
if [ -n "${TERN_IMAGE_SEED:-}" ]; then
    volid=$(printf '%s esp-volume-id' "$TERN_IMAGE_SEED" | sha256sum | cut -c1-8 | tr 'a-f' 'A-F')
else
    volid=$(od -An -N4 -tx4 /dev/urandom | tr -d ' \n' | tr 'a-f' 'A-F')
fi
fsuuid=$(printf '%s-%s' "$(echo "$volid" | cut -c1-4)" "$(echo "$volid" | cut -c5-8)")
echo "$fsuuid" >"$work/volid"

# GRUB's early configuration, embedded in both images: find the ESP by its
# volume id, then read /boot/grub/grub.cfg from it.
cat >"$work/early.cfg" <<EOC
search --no-floppy --fs-uuid --set=root $fsuuid
set prefix=(\$root)/boot/grub
EOC
mods="part_gpt fat search search_fs_uuid normal configfile multiboot2 serial terminal echo"
grub-mkimage -O i386-pc -o "$work/core.img" -c "$work/early.cfg" -p /boot/grub \
    biosdisk $mods
grub-mkimage -O x86_64-efi -o "$work/BOOTX64.EFI" -c "$work/early.cfg" -p /boot/grub \
    $mods

core_bytes=$(stat -c %s "$work/core.img")
core_sectors=$(( (core_bytes + sector - 1) / sector ))
if [ "$core_sectors" -gt "$bios_sectors" ]; then
    echo "mkboot: GRUB core.img ($core_bytes bytes) does not fit the BIOS boot partition" >&2
    exit 1
fi

# The menu: the disk's entry with the ESP's volume id for the boot log.
sed "s|tern.mode=disk|tern.mode=disk tern.esp=$fsuuid|" "$here/grub-disk.cfg" >"$work/grub.cfg"
grep -q "tern.esp=$fsuuid" "$work/grub.cfg" || {
    echo "mkboot: grub-disk.cfg has no tern.mode=disk entry" >&2
    exit 1
}

# The ESP's files.
esp="$work/esp.img"
rm -f "$esp"
truncate -s $((esp_sectors * sector)) "$esp"
mformat -i "$esp" -F -N "$volid" -v TERNESP ::
mmd -i "$esp" ::/EFI ::/EFI/BOOT ::/boot ::/boot/grub ::/boot/grub/i386-pc ::/boot/grub/x86_64-efi
mcopy -i "$esp" "$work/BOOTX64.EFI" ::/EFI/BOOT/BOOTX64.EFI
mcopy -i "$esp" "$work/grub.cfg" ::/boot/grub/grub.cfg
mcopy -i "$esp" "$kernel" ::/boot/tern.elf
mcopy -i "$esp" "$bundle" ::/boot/tern.bundle
mcopy -i "$esp" /usr/lib/grub/i386-pc/*.mod /usr/lib/grub/i386-pc/*.lst ::/boot/grub/i386-pc/
mcopy -i "$esp" /usr/lib/grub/x86_64-efi/*.mod /usr/lib/grub/x86_64-efi/*.lst ::/boot/grub/x86_64-efi/

# BIOS stage: boot.img's code (not the partition table) for the MBR with
# the LBA of core.img at offset 0x5c; core.img's first sector (diskboot)
# lists the rest of core.img in its last 12 bytes: start LBA (8 bytes),
# sector count (2), load segment (2, 0x820). Little-endian throughout.
put_le() { # FILE OFFSET VALUE BYTES
    v=$3 i=0
    while [ $i -lt "$4" ]; do
        printf "\\$(printf '%03o' $((v & 255)))"
        v=$((v >> 8)) i=$((i + 1))
    done | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
cp /usr/lib/grub/i386-pc/boot.img "$work/boot.img"
put_le "$work/boot.img" $((0x5c)) $bios_start 8
put_le "$work/boot.img" $((0x66)) $((0x9090)) 2   # hard disk: skip the floppy drive check
put_le "$work/core.img" $((0x200 - 12)) $((bios_start + 1)) 8
put_le "$work/core.img" $((0x200 - 4)) $((core_sectors - 1)) 2
put_le "$work/core.img" $((0x200 - 2)) $((0x820)) 2
