"""The release's evaluation images boot and serve (docs/RELEASING.md): the ISO
(SeaBIOS, CD-ROM) and the raw disk image (SeaBIOS, virtio disk, a copy) each
boot under QEMU and accept an anonymous mosquitto_pub / mosquitto_sub pair
on the guest's plaintext port 1883. TCG: about a minute each."""
import glob
import os
import shutil
import socket
import subprocess
import time

import pytest


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def boot_and_publish(drive_args, port, tmp_path, seconds=240):
    log = tmp_path / "serial.log"
    with open(log, "wb") as out:
        vm = subprocess.Popen(
            ["qemu-system-x86_64", "-M", "q35", "-m", "256", "-display", "none", "-serial", "stdio",
             "-monitor", "none", "-no-user-config", "-nic",
             f"user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:{port}-:1883", *drive_args],
            stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + seconds
        got = None
        # QEMU's user network accepts connections before the guest
        # listens: wait for the kernel's ready line on the serial console.
        while time.monotonic() < deadline and vm.poll() is None:
            if b"tern: ready (boot" in log.read_bytes():
                break
            time.sleep(1)
        if b"tern: ready (boot" in log.read_bytes():
            published = subprocess.run(
                ["mosquitto_pub", "-h", "127.0.0.1", "-p", str(port), "-q", "1", "-r", "-t",
                 "release/boot", "-m", "booted"], capture_output=True, text=True, timeout=60)
            assert published.returncode == 0, published.stderr
            sub = subprocess.run(["mosquitto_sub", "-h", "127.0.0.1", "-p", str(port), "-C", "1",
                                  "-W", "20", "-t", "release/boot"], capture_output=True, text=True,
                                 timeout=60)
            got = sub.stdout.strip()
        assert got == "booted", log.read_text(errors="replace")[-3000:]
    finally:
        vm.kill()
        vm.wait()


@pytest.fixture
def qemu():
    if shutil.which("qemu-system-x86_64") is None:
        pytest.fail("qemu-system-x86_64 missing (scripts/setup-host.sh installs it)")


def test_release_iso_boots_and_serves_plaintext_mqtt(release_dir, qemu, tmp_path):
    (iso,) = glob.glob(os.path.join(release_dir, "tern-*.iso"))
    boot_and_publish(["-cdrom", iso, "-boot", "d"], free_port(), tmp_path)


def test_release_disk_image_boots_and_serves_plaintext_mqtt(release_dir, qemu, tmp_path):
    (img,) = glob.glob(os.path.join(release_dir, "tern-*-disk.img"))
    copy = tmp_path / "disk.img"
    subprocess.run(["cp", "--sparse=always", img, str(copy)], check=True)
    boot_and_publish(["-drive", f"file={copy},format=raw,if=virtio"], free_port(), tmp_path)
