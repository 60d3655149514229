"""The disk store's restore at boot (issue 13, D5), end to end on a
virtio-blk disk made by tern-mkdisk: a first boot formats the tern
partition, stores a retained message and backs it up; then the disk is
changed from the host as a restore cut short by a power cut leaves it (the
database and log regions empty: their region headers zeroed) and, in a
third boot, as a damaged database (its first pages garbage, the log
empty). Both later boots restore the newest backup: the console says
which ("database empty: ..." or "database found: quick_check failed"),
$SYS/broker/store/restored_from_backup says yes, and the retained message
is back. Before the fix of the empty case the store took the emptied
database for a new one.
"""
import os
import re
import subprocess

from clients import mosq
from harness import MQTT_CONF, Failure, drive, expect_lines, free_port, module_vm, nic, \
    scratch, show, write_file
from test_store import sys_value

CONF = MQTT_CONF + b"store.disk = auto\nstore.backup_interval = 1\n"
BACKUP_DONE = re.compile(rb"tern: store: info: store: backup \d+ to /tern\.db\.bak-[ab] complete")
REGION = re.compile(r"^\s+(\S+)\s+LBA (\d+), (\d+) blocks", re.M)
HEADERS = 8192  # both region header copies, whatever the physical block (<= 4 KiB)


def regions(build, image):
    """{kind name: first LBA} of the image's data partition (512-byte LBAs)."""
    r = subprocess.run([os.path.join(build, "rel", "tern-mkdisk"), "--show", image],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise Failure("tern-mkdisk --show: " + r.stdout + r.stderr)
    return {m.group(1): int(m.group(2)) for m in REGION.finditer(r.stdout)}


def overwrite(image, lba, data):
    with open(image, "r+b") as f:
        f.seek(lba * 512)
        f.write(data)


def boot(kernel, tmp, image, conf_path):
    port = free_port()
    vm = module_vm(kernel, conf_path, nic(f"hostfwd=tcp:127.0.0.1:{port}-:1883"),
                   drive(image, "disk0"))
    return vm, port


def restore_test(kernel, build):
    def check():
        notes = []
        with scratch() as tmp:
            image = os.path.join(tmp, "disk.img")
            r = subprocess.run([os.path.join(build, "rel", "tern-mkdisk"), "--size", "128M",
                                "--esp", "0", image], capture_output=True, text=True)
            if r.returncode != 0:
                raise Failure("tern-mkdisk: " + r.stdout + r.stderr)
            conf = write_file(tmp, "tern.conf", CONF)
            vm, port = boot(kernel, tmp, image, conf)
            with vm:
                took, out = vm.wait_ready(180)
                expect_lines(out, (rb"tern: store: database created",))
                mosq("mosquitto_pub", port, "-t", "keep/t", "-m", "v1", "-r", "-q", "1")
                done = len(BACKUP_DONE.findall(vm.text()))
                # A backup that completes after the PUBACK holds the commit.
                if vm.wait_for(lambda o: len(BACKUP_DONE.findall(o)) > done, 180) is None:
                    raise Failure("no backup after the publish:\n" + show(vm.text()[-2000:]))
                vm.expect_no_fatal()
            notes.append(f"first boot {took:.0f} s")
            reg = regions(build, image)
            if "database" not in reg or "WAL" not in reg:
                raise Failure(f"regions: {reg}")
            cases = (
                ("empty", rb"tern: store: database empty: quick_check ok; replaced by backup "
                          rb"[ab], schema 2",
                 lambda: overwrite(image, reg["database"], bytes(HEADERS))),
                ("damaged", rb"tern: store: database found: quick_check failed; replaced by "
                            rb"backup [ab], schema 2",
                 lambda: overwrite(image, reg["database"] + HEADERS // 512,
                                   bytes([0x5a]) * 65536)),
            )
            for name, line, change in cases:
                change()
                overwrite(image, reg["WAL"], bytes(HEADERS))  # the log: empty
                vm, port = boot(kernel, tmp, image, conf)
                with vm:
                    took, out = vm.wait_ready(180)
                    try:
                        expect_lines(out, (line,))
                        got = mosq("mosquitto_sub", port, "-t", "keep/t", "-C", "1", "-W", "20")
                        restored = sys_value(port, "$SYS/broker/store/restored_from_backup", 20)
                    except (Failure, OSError) as e:
                        raise Failure(f"{name}: {e}\n{show(vm.text()[-2500:])}")
                    vm.expect_no_fatal()
                if got.strip() != "v1" or restored != "yes":
                    raise Failure(f"{name}: retained {got!r}, restored_from_backup "
                                  f"{restored!r}:\n{show(out[-2000:])}")
                notes.append(f"{name}: restored, ready {took:.0f} s")
        return "; ".join(notes)
    return check


def cases(b):
    return {"store-restore-at-boot-from-empty-or-damaged-database":
            restore_test(b.elf, b.dir)}
