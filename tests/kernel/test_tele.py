"""The telemetry journal on the machine's own disk (issue 14, D7 and D4),
read back from the image with build/rel/tern-tele (the kernel's own parser
on the host) after each boot:

- Boots and power cuts: three boots of one disk, the first two ended by
  killing QEMU (a power cut for the guest). Each boot that reached serving
  has its boot record, numbered 1, 2, 3 in order; the second and third
  have a power-cut record naming the boot before; the console says so;
  the journal reads cleanly (CRCs, sequences); $SYS/broker/telemetry/events
  shows the boot records to the operator, and oldest_ms when the journal
  began.
- Discard: a thin qcow2 image (discard=unmap on virtio-blk) and the test
  kernel writing a statistics record every millisecond (tern.test.tele_ms)
  until the 15-slot ring of a 64 MiB disk has wrapped: the slot ahead of
  the head is unallocated in the image (`qemu-img map`) and at most
  slots - 1 of the region's slots are allocated, where a ring that never
  discards has every slot allocated.
"""
import json
import os
import re
import subprocess
import time

from clients import mosq
from harness import (MTLS_CONF, REPO, Failure, Pki, drive, make_bundle, module_vm, scratch,
                     show)
from test_store_disk import DiskBroker, mkdisk

SEG = 64 << 10


def journal(build, img):
    """tern-tele's reading of img: (head line fields, records, bad lines)."""
    r = subprocess.run([os.path.join(build.dir, "rel", "tern-tele"), img], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 0:
        raise Failure(f"tern-tele {img}: exit {r.returncode}:\n{r.stdout[-1500:]}{r.stderr}")
    lines = r.stdout.splitlines()
    head = next(l for l in lines if l.startswith("head "))
    fields = dict(zip(head.split()[0::2], (int(v) for v in head.split()[1::2])))
    recs = [json.loads(l) for l in lines if l.startswith("{")]
    return fields, recs


def boots_test(build):
    def check():
        with scratch() as tmp:
            img, _ = mkdisk(build, tmp)
            db = DiskBroker(build, tmp, drive(img, "d0", "virtio-blk"))
            outs = []
            for n in (1, 2, 3):
                with db.boot(kernel=build.test_elf) as vm:
                    out = db.ready(vm)
                    want = rf"tern: telemetry: virtio-blk [0-9a-f:.]+: boot {n} recorded \(record \d+\)"
                    if n > 1:
                        want += " after a power cut"
                    if not re.search(want.encode(), out):
                        raise Failure(f"boot {n}: no line /{want}/:\n{show(out[-2000:])}")
                    if n == 3:
                        events = mosq("mosquitto_sub", db.port, "-t",
                                      "$SYS/broker/telemetry/events", "-C", "1", "-W", "30",
                                      tls=Pki(build.dir).args("dev-operator"))
                        kinds = [json.loads(l)["kind"] for l in events.splitlines() if l]
                        if kinds[-2:] != ["power-cut", "boot"]:
                            raise Failure(f"$SYS events: {events}")
                        oldest = int(mosq("mosquitto_sub", db.port, "-t",
                                          "$SYS/broker/telemetry/oldest_ms", "-C", "1", "-W",
                                          "30", tls=Pki(build.dir).args("dev-operator")))
                        if not 0 < oldest / 1000 <= time.time() + 120:
                            raise Failure(f"$SYS oldest_ms {oldest}")
                    vm.stop()  # SIGKILL: the guest loses power
                    outs.append(out)
            head, recs = journal(build, img)
            boots = [r for r in recs if r["kind"] == "boot"]
            cuts = [r for r in recs if r["kind"] == "power-cut"]
            if [b["boot"] for b in boots] != [1, 2, 3]:
                raise Failure(f"boot records: {boots}")
            if [c["previous_boot"] for c in cuts] != [1, 2]:
                raise Failure(f"power-cut records: {cuts}")
            nums = [r["record"] for r in recs]
            if nums != sorted(nums) or len(set(nums)) != len(nums):
                raise Failure(f"record numbers not increasing: {nums}")
            return f"3 boots, 2 power cuts, {len(recs)} records, head segment {head['head']}"
    return check


def allocated(img, start, length):
    """Bytes of [start, start+length) that hold data in the qcow2 image."""
    r = subprocess.run(["qemu-img", "map", "--output=json", "-f", "qcow2", img],
                       capture_output=True, text=True, timeout=60, check=True)
    total = 0
    for e in json.loads(r.stdout):
        if not e["data"] or e.get("zero"):
            continue
        lo, hi = max(e["start"], start), min(e["start"] + e["length"], start + length)
        total += max(0, hi - lo)
    return total


def discard_test(build):
    def check():
        with scratch() as tmp:
            raw, part = mkdisk(build, tmp)
            img = os.path.join(tmp, "disk.qcow2")
            subprocess.run(["qemu-img", "convert", "-f", "raw", "-O", "qcow2", raw, img],
                           check=True, timeout=60)
            d = drive(img, "d0", "virtio-blk")
            d[1] = d[1].replace("format=raw", "format=qcow2")
            db = DiskBroker(build, tmp, d)
            op = Pki(build.dir).args("dev-operator")
            with db.boot(kernel=build.test_elf, append="tern.test.tele_ms=1") as vm:
                db.ready(vm, timeout=120)
                deadline = time.monotonic() + 240
                expired = 0
                while time.monotonic() < deadline:
                    out = mosq("mosquitto_sub", db.port, "-t",
                               "$SYS/broker/telemetry/expired_segments", "-C", "1", "-W", "30",
                               tls=op)
                    expired = int(out.strip() or 0)
                    if expired >= 8:
                        break
                    time.sleep(2)
                vm.stop()
            if expired < 8:
                raise Failure(f"the ring did not wrap: {expired} segments expired")
            # the converted qcow2 is read through qemu-img for the journal
            back = os.path.join(tmp, "back.raw")
            subprocess.run(["qemu-img", "convert", "-f", "qcow2", "-O", "raw", img, back],
                           check=True, timeout=60)
            head, _ = journal(build, back)
            region = head["lba"] * 512
            slots = head["slots"]
            seg0 = region + head["seg0"]
            ahead = seg0 + ((head["head"]) % slots) * SEG  # slot of head + 1
            if allocated(img, ahead, SEG):
                raise Failure(f"the slot ahead of the head (segment {head['head'] + 1}) is "
                              f"allocated")
            used = allocated(img, seg0, slots * SEG)
            if used > (slots - 1) * SEG:
                raise Failure(f"{used} bytes of the ring allocated: more than {slots - 1} slots")
            return (f"{expired} segments expired; ring allocation {used // 1024} KiB of "
                    f"{slots * SEG // 1024} KiB")
    return check


def cert_test(build):
    def check():
        with scratch() as tmp:
            fake = os.path.join(tmp, "build")
            os.makedirs(fake)
            subprocess.run([os.path.join(REPO, "scripts", "pki.sh"), os.path.join(fake, "pki")],
                           env=dict(os.environ, TERN_PKI_DAYS="10"), check=True,
                           capture_output=True, timeout=60)
            os.symlink(os.path.abspath(os.path.join(build.dir, "rel")), os.path.join(fake, "rel"))
            bundle = make_bundle(fake, tmp, MTLS_CONF)
            img, _ = mkdisk(build, tmp)
            with module_vm(build.test_elf, bundle, ["-nic", "user,model=virtio-net-pci"],
                           extra=drive(img, "d0", "virtio-blk")) as vm:
                _, out = vm.wait_ready(90)
                vm.stop()
            # 10 days from the certificate's making, less the seconds until
            # the guest reads its RTC: 9 whole days left; 10 when the RTC
            # (read to the second, from the host at QEMU's start) lags them.
            want = rb"tern: telemetry: warning: the server certificate expires in (9|10) days"
            m = re.search(want, out)
            if not m:
                raise Failure(f"no line /{want.decode()}/:\n{show(out[-1500:])}")
            days = int(m.group(1))
            _, recs = journal(build, img)
            cert = [r for r in recs if r["kind"] == "certificate"]
            if len(cert) != 1 or cert[0]["days_left"] != days:
                raise Failure(f"certificate records: {cert}")
            return f"warned, record {cert[0]['record']} days_left {days}"
    return check


def cases(b):
    return {
        "tele-boot-records-survive-power-cuts-in-order": boots_test(b),
        "tele-qcow2-expired-segments-discarded": discard_test(b),
        "tele-certificate-expiring-in-9-days-warned-and-recorded": cert_test(b),
    }
