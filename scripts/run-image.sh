#!/usr/bin/env bash
# run-image.sh --disk IMG KERNEL | --iso ISO KERNEL | --diag ISO KERNEL - what
# `make run`, `make run-live` and `make run-diag` do after building the image: boot the tern unikernel (the
# development configuration: mTLS on 8883 with the dev PKI in build/pki) in
# QEMU with its serial console on this terminal, forward 127.0.0.1:8883 to
# the guest's 8883, and say how to connect. Stop it with Ctrl-C.
#
#   --disk IMG  the development disk image (make run): boots from the disk
#               and keeps retained messages and sessions in its data
#               partition, across runs
#   --iso ISO   the ISO's live entry (make run-live): RAM only, no disk
#   --diag ISO  an ISO whose default is "Diagnostics, then serve" (make
#               run-diag, tools/diag/run-diag.sh), with the blank scratch
#               disk build/run/diag-scratch.img beside it for the disk
#               measurements (read only: diag-serve writes no disk); RAM only
#
# KVM when /dev/kvm exists and works (probed with a quick boot of KERNEL,
# because some nested set-ups open /dev/kvm and then fail to run a CPU),
# otherwise TCG emulation (slower, but the same broker).
set -euo pipefail

usage() {
    echo "usage: scripts/run-image.sh --disk IMG KERNEL | --iso ISO KERNEL | --diag ISO KERNEL" \
         "  (make run / make run-live / make run-diag)" >&2
    exit 2
}
[ $# -eq 3 ] || usage
case $1 in
--disk) MEDIUM=(-drive "file=$2,format=raw,if=none,id=disk0" -device virtio-blk-pci,drive=disk0) ;;
--iso) MEDIUM=(-cdrom "$2") ;;
--diag) MEDIUM=(-cdrom "$2" -drive "file=$(dirname "$2")/diag-scratch.img,format=raw,if=none,id=disk0"
                -device virtio-blk-pci,drive=disk0) ;;
*) usage ;;
esac
IMAGE=$2
KERNEL=$3
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PKI=$ROOT/build/pki
PORT=8883

command -v qemu-system-x86_64 >/dev/null 2>&1 ||
    { echo "run-image.sh: qemu-system-x86_64 missing (make setup installs it)" >&2; exit 1; }
[ -f "$IMAGE" ] || { echo "run-image.sh: $IMAGE missing (make image)" >&2; exit 2; }

# Something already accepts on 8883 (often Debian's mosquitto service)?
if (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    echo "run-image.sh: port $PORT on 127.0.0.1 is already in use, so QEMU cannot forward it." >&2
    echo "  Stop that program first (for Debian's mosquitto: sudo systemctl stop mosquitto)." >&2
    exit 1
fi

# kvm_works CPU: boot KERNEL in a mode that prints one line and halts (a
# tern.mode the kernel does not know).
kvm_works() {
    local out
    out=$(timeout 10 qemu-system-x86_64 -accel kvm -cpu "$1" -M q35 -m 128 -display none \
        -monitor none -no-user-config -serial stdio -kernel "$KERNEL" \
        -append tern.mode=kvm-probe 2>/dev/null </dev/null | head -c 4096 || true)
    [[ $out == *"not available in this build"* ]]
}
ACCEL=(-accel tcg -cpu max)
HOW="TCG emulation (no usable KVM): handshakes are slow, everything else works"
if [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
    if kvm_works host; then
        ACCEL=(-accel kvm -cpu host)
        HOW="KVM"
    elif kvm_works qemu64; then
        ACCEL=(-accel kvm)
        HOW="KVM (generic CPU model: -cpu host failed here)"
    fi
fi

if [ "$1" = --disk ]; then
    DATA="Data: kept on $IMAGE across runs (make run FRESH=1 starts from an empty disk)."
elif [ "$1" = --diag ]; then
    DATA="Diagnostics first: the report as JSON between \"tern: diag: report begin\" and
\"... end\" (build/rel/tern-diag-png SERIAL.log OUT.png draws its dashboard), then
the broker, RAM only; the operator's mosquitto_sub above reads the report
with -t '\$SYS/diag/report' -C 1."
else
    DATA="Data: in RAM only (the ISO's live entry); make run keeps it on a disk image."
fi
CLIENT="--cafile $PKI/ca.crt --cert $PKI/dev-client.crt --key $PKI/dev-client.key"
OPERATOR="--cafile $PKI/ca.crt --cert $PKI/dev-operator.crt --key $PKI/dev-operator.key"
cat <<MSG
tern unikernel: $IMAGE under QEMU ($HOW).
Its console follows; it is ready at "tern: ready". Stop it with Ctrl-C.

MQTT over mutual TLS on 127.0.0.1:$PORT (identity = certificate CN; the
image's ACL, tools/image/tern.acl, allows test/# and clients/<identity>/#):
  subscribe:  mosquitto_sub -h 127.0.0.1 -p $PORT $CLIENT -t 'test/#' -v
  publish:    mosquitto_pub -h 127.0.0.1 -p $PORT $CLIENT -t test/hello -m hi
  operator:   mosquitto_sub -h 127.0.0.1 -p $PORT $OPERATOR -t '\$SYS/#' -v
  more client certificates: scripts/pki.sh $PKI client NAME, then make run again
  your own image: tools/image/tern-build-image CONFIG OUT.iso
                  (--disk SIZE_MIB CONFIG OUT.img for a disk image)
$DATA

MSG
exec qemu-system-x86_64 "${ACCEL[@]}" -M q35 -m 512 -display none -monitor none \
    -no-user-config -serial stdio "${MEDIUM[@]}" -device virtio-rng-pci \
    -nic "user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:$PORT-:$PORT"
