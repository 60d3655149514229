"""The kernel tests' harness: no tests of its own.

QEMU launching with the serial console collected in the background and
waits for lines on it, host ports forwarded to the guest or a tap network
in a namespace of its own (TapNet), the build's
kernel and ISO paths, disk images (QEMU drives, hashing and patching their
bytes), the configurations and the development PKI the broker tests boot
with (and boot bundles made by the image builder), screen readback (QMP
screendump read with the kernel's own font), QMP quit, and the runner: the
test registry collected from the test modules, -k selection, parallel jobs
(with exclusive tests run alone), skips (Skip) and the timing report.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
OVMF = "/usr/share/ovmf/OVMF.fd"
BANNER = b"tern: booting"
# The whole line: a test that stops reading at its start may cut it short.
READY = re.compile(rb"tern: ready \(boot (\w+)[^\n]*\n")
KAT_PASSED = rb"tern: crypto self-tests passed in [\d.]+ ms: sha-256 hmac-drbg aes-128-gcm " \
             rb"aes-256-gcm chacha20-poly1305 x25519 ecdh-p256 ecdsa-p256-verify ecdsa-p256-sign " \
             rb"pbkdf2-sha512"


class Failure(Exception):
    pass


def show(out):
    """Serial output (bytes) as text for a failure message."""
    return out.decode("utf-8", "replace")


def expect_lines(out, wants):
    """Fail, showing the serial output, unless every pattern is in it."""
    for want in wants:
        if not re.search(want, out):
            raise Failure(f"{want!r} not in:\n{show(out)}")


def ready_line(out):
    """The kernel's ready line (there must be one), without its line end."""
    return READY.search(out).group(0).decode().strip()


# ---- tern-disk inspect and verify on every image a test leaves --------

# Set by main() (or a module's own runner): the build whose tern-disk checks
# the images; None skips the check (the tool is not built).
TERN_DISK = None
# Images a test damaged on purpose (patch(), reseal(), damaged()): their
# refusal is the test's subject, so verify is not asked about them.
_damaged = set()
_damaged_lock = threading.Lock()


def damaged(path):
    """Mark an image as damaged on purpose: scratch() does not verify it."""
    with _damaged_lock:
        _damaged.add(os.path.realpath(path))


def raw_disk(path):
    """Mark an image a test uses as a raw block device (patterns, no tern
    layout): scratch() does not verify it. Returns path."""
    damaged(path)
    return path


def verify_images(tmp):
    """tern-disk inspect and verify on every *.img under tmp not marked damaged; a
    Failure naming the image and the tool's output when one is not clean
    (exit 1: corrupt, 3: unreadable). Returns how many were checked."""
    if TERN_DISK is None or not os.path.exists(TERN_DISK):
        return 0
    checked = 0
    for root, _, files in os.walk(tmp):
        for name in sorted(files):
            path = os.path.join(root, name)
            with _damaged_lock:
                skip = os.path.realpath(path) in _damaged
            if not name.endswith(".img") or skip or not os.path.isfile(path):
                continue
            # inspect reads and prints every layer (what an operator runs
            # first); verify judges them.
            for cmd in ("inspect", "verify"):
                r = subprocess.run([TERN_DISK, cmd, path], capture_output=True, text=True,
                                   timeout=120)
                if r.returncode != 0:
                    raise Failure(f"tern-disk {cmd} {name} (exit {r.returncode}) on the image "
                                  f"the test left:\n{r.stdout}{r.stderr}")
            checked += 1
    return checked


class _Scratch(tempfile.TemporaryDirectory):
    """A TemporaryDirectory whose images are verified (verify_images) when
    the test leaves it without an exception."""

    def __exit__(self, exc, value, tb):
        try:
            if exc is None:
                verify_images(self.name)
        finally:
            super().__exit__(exc, value, tb)


def scratch():
    """A temporary directory for one test, removed when the test is done;
    every disk image (*.img) left in it must pass `tern-disk verify` unless
    the test marked it damaged."""
    return _Scratch(prefix="tern-kt-", ignore_cleanup_errors=True)


def write_file(tmp, name, data):
    path = os.path.join(tmp, name)
    with open(path, "wb" if isinstance(data, bytes) else "w") as f:
        f.write(data)
    return path


# ---- QEMU ---------------------------------------------------------------

class Vm:
    """A QEMU process whose serial output is collected in the background;
    as a context manager, killed on leaving the block. prefix goes before
    QEMU's command (a benchmark pins it with taskset)."""

    def __init__(self, args, prefix=(), serial_input=False):
        cmd = list(prefix) + ["qemu-system-x86_64", "-M", "q35", "-m", "256", "-display", "none",
               "-serial", "stdio", "-monitor", "none", "-no-user-config"] + args
        self.start = time.monotonic()
        # serial_input: QEMU's stdin is the serial console's input (type()).
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE if serial_input
                                     else subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT)
        self.out = bytearray()
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()

    def _read(self):
        while True:
            chunk = self.proc.stdout.read1(4096)
            if not chunk:
                return
            with self.lock:
                self.out += chunk

    def type(self, data):
        """Bytes typed on the serial console (a Vm made with serial_input)."""
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def text(self):
        with self.lock:
            return bytes(self.out)

    def wait_for(self, predicate, timeout):
        """Wait until predicate(output) is true; returns seconds taken or None."""
        deadline = self.start + timeout
        while time.monotonic() < deadline:
            if predicate(self.text()):
                return time.monotonic() - self.start
            if self.proc.poll() is not None:
                self.reader.join(1)
                return time.monotonic() - self.start if predicate(self.text()) else None
            time.sleep(0.05)
        return None

    def wait_ready(self, timeout):
        """Seconds to the ready line and the output by then; fails without it."""
        took = self.wait_for(lambda o: READY.search(o) is not None, timeout)
        out = self.text()
        if took is None:
            raise Failure("no ready line:\n" + show(out[-1500:]))
        return took, out

    def expect_no_fatal(self):
        out = self.text()
        if b"FATAL" in out:
            raise Failure("fatal report:\n" + show(out))

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.reader.join(2)


def run_vm(args, predicate, timeout, what):
    """Boot, wait for predicate(serial output), stop; seconds and output."""
    with Vm(args) as vm:
        took = vm.wait_for(predicate, timeout)
        out = vm.text()
    if took is None:
        raise Failure(f"{what} not seen within {timeout} s; serial output ends:\n"
                      f"{show(out[-1500:])}")
    return took, out


def run_ready(args, timeout):
    return run_vm(args, lambda o: READY.search(o) is not None, timeout, "ready line")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def nic(user_opts, device_opts=""):
    """QEMU user networking with a virtio-net device. -device (not -nic):
    QEMU 7.2 gives a NIC made by -nic no MSI-X capability, one made by
    -device has it (vectors=0 takes it away again)."""
    return ["-netdev", "user,id=n0" + (f",{user_opts}" if user_opts else ""),
            "-device", "virtio-net-pci,netdev=n0" + (f",{device_opts}" if device_opts else "")]


class Skip(Exception):
    """Raised by a test's check that cannot run on this host (the reason
    is its message): the runner reports SKIP, not a failure."""


class TapNet:
    """The guest's NIC as a tap device in a network namespace of its own,
    the way a production VM is networked: the host side's TCP stacks are
    Linux's and QEMU only moves frames (QEMU's user network instead
    terminates every connection on host sockets of its own, under the lock
    the vCPU needs). QEMU and the host's clients both run inside the
    namespace (prefix, run), so nothing of the host's own network is
    touched and the addresses below are private to it. As a context
    manager: the namespace (and with it the tap device) is deleted on
    leaving, also after a failure; a namespace left by a killed run of this
    harness is deleted the next time one is made. Enter it before the VM
    and leave it after, so QEMU has closed the tap when it goes.

    Raises Skip, saying why, where tap or namespaces are unavailable (not
    root, no /dev/net/tun, no `ip`)."""

    PREFIX = "tern-kt-"
    HOST, GUEST, PLEN = "10.77.0.1", "10.77.0.2", 24
    TAP = "ternt0"
    _lock = threading.Lock()
    _count = 0

    def __init__(self):
        with TapNet._lock:
            TapNet._count += 1
            self.name = f"{TapNet.PREFIX}{os.getpid()}-{TapNet._count}"
        self.made = False

    @staticmethod
    def unavailable():
        """Why a tap network cannot be made here, or None."""
        if os.geteuid() != 0:
            return "tap network needs root (ip netns, ip tuntap)"
        if not os.path.exists("/dev/net/tun"):
            return "tap network: no /dev/net/tun"
        if shutil.which("ip") is None:
            return "tap network: no ip(8) (iproute2)"
        return None

    @staticmethod
    def _ip(*args):
        r = subprocess.run(["ip"] + list(args), capture_output=True, text=True, timeout=30)
        return r.returncode, (r.stdout + r.stderr).strip()

    @classmethod
    def _reap(cls):
        """Delete namespaces of this harness whose process is gone."""
        rc, out = cls._ip("netns", "list")
        for line in out.splitlines() if rc == 0 else ():
            name = line.split()[0] if line.split() else ""
            pid = name[len(cls.PREFIX):].split("-")[0]
            if name.startswith(cls.PREFIX) and pid.isdigit() and \
                    not os.path.exists(f"/proc/{pid}"):
                cls._ip("netns", "del", name)

    def __enter__(self):
        why = self.unavailable()
        if why:
            raise Skip(why)
        self._reap()
        rc, out = self._ip("netns", "add", self.name)
        if rc != 0:
            raise Skip(f"tap network: ip netns add failed: {out}")
        self.made = True
        try:
            steps = [("tuntap", "add", "dev", self.TAP, "mode", "tap"),
                     ("addr", "add", f"{self.HOST}/{self.PLEN}", "dev", self.TAP),
                     ("link", "set", self.TAP, "up"), ("link", "set", "lo", "up")]
            for step in steps:
                rc, out = self._ip("netns", "exec", self.name, "ip", *step)
                if rc != 0:
                    raise Skip(f"tap network: ip {' '.join(step)} failed: {out}")
            # The namespace's own TCP settings: a storm's clients open tens of
            # thousands of connections to one address and port, each leaving
            # a TIME_WAIT behind, so the whole port range is theirs.
            self.sysctl("net.ipv4.ip_local_port_range", "1024 65535")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        if self.made:
            self._ip("netns", "del", self.name)
            self.made = False

    def sysctl(self, key, value):
        """Set a (per-namespace) sysctl inside the namespace."""
        path = "/proc/sys/" + key.replace(".", "/")
        r = subprocess.run(self.prefix() + ["sh", "-c", f"echo '{value}' > {path}"],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise Failure(f"sysctl {key} in {self.name}: {r.stderr.strip()}")

    def prefix(self):
        """Command prefix that runs a program inside the namespace (QEMU:
        Vm(prefix=...); ip netns exec execs, so the pid is the program's)."""
        return ["ip", "netns", "exec", self.name]

    def nic(self, device_opts=""):
        """QEMU arguments for a virtio-net device on the tap."""
        return ["-netdev", f"tap,id=n0,ifname={self.TAP},script=no,downscript=no",
                "-device", "virtio-net-pci,netdev=n0" + (f",{device_opts}" if device_opts
                                                          else "")]

    def tx_counts(self):
        """Frames the host sent towards the guest on the tap, and those it
        dropped because QEMU did not take them (its queue was full: the
        guest's receive ring was)."""
        r = subprocess.run(["ip", "-n", self.name, "-s", "-j", "link", "show", self.TAP],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise Failure(f"ip -s link show {self.TAP} in {self.name}: {r.stderr.strip()}")
        tx = json.loads(r.stdout)[0]["stats64"]["tx"]
        return tx["packets"], tx["dropped"]

    def guest_conf(self):
        """Configuration lines giving the guest its static address here."""
        return f"net.ipv4 = {self.GUEST}/{self.PLEN}\nnet.gateway = {self.HOST}\n"


def disk_image(tmp, name, size_mib=64):
    """A sparse raw image file of size_mib in tmp (for drive())."""
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.truncate(size_mib << 20)
    return path


def drive(path, ident, kind="virtio-blk", device_opts="", readonly=False):
    """QEMU arguments for a raw image as a disk: kind "virtio-blk" (a
    virtio-blk-pci function) or "virtio-scsi" (its own virtio-scsi-pci
    adapter with one scsi-hd); device_opts go to the disk's -device
    (logical_block_size=, physical_block_size=, opt_io_size=, ...);
    readonly: a read-only drive (virtio-blk offers VIRTIO_BLK_F_RO, scsi-hd
    sets the write-protect bit of MODE SENSE)."""
    args = ["-drive", f"file={path},format=raw,if=none,id={ident},discard=unmap" +
            (",readonly=on" if readonly else "")]
    opts = f",{device_opts}" if device_opts else ""
    if kind == "virtio-blk":
        return args + ["-device", f"virtio-blk-pci,drive={ident}{opts}"]
    return args + ["-device", f"virtio-scsi-pci,id={ident}hba",
                   "-device", f"scsi-hd,drive={ident},bus={ident}hba.0{opts}"]


def sha(path):
    """SHA-256 of a file (an image's bytes before and after a refusal)."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def patch(path, offset, data):
    """Overwrite bytes of an image file at offset (marks it damaged())."""
    damaged(path)
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(data)


def reseal(path, slot):
    """Recompute the CRC32 of the superblock at byte slot (docs/DISK.md:
    CRC over 512 bytes at offset 16, taken as zero). Marks it damaged()."""
    damaged(path)
    with open(path, "r+b") as f:
        f.seek(slot)
        sb = bytearray(f.read(512))
        sb[16:20] = bytes(4)
        sb[16:20] = zlib.crc32(sb).to_bytes(4, "little")
        f.seek(slot)
        f.write(sb)


def test_iso(tmp, kernel, cmdline):
    """A bootable ISO in tmp (GRUB for BIOS and UEFI, grub-mkrescue) with
    kernel (a test build) on the command line cmdline and no module: for
    fatal reports through GRUB, with the framebuffer console it hands
    over (all_video: VBE under SeaBIOS, GOP under OVMF). Its path."""
    root = os.path.join(tmp, "iso")
    os.makedirs(os.path.join(root, "boot", "grub"))
    shutil.copy(kernel, os.path.join(root, "boot", "tern.elf"))
    write_file(os.path.join(root, "boot", "grub"), "grub.cfg",
               "serial --unit=0 --speed=115200\nterminal_output serial\n"
               "insmod all_video\nset timeout=0\n"
               f"menuentry test {{\n  multiboot2 /boot/tern.elf {cmdline}\n}}\n")
    iso = os.path.join(tmp, "test.iso")
    r = subprocess.run(["grub-mkrescue", "-o", iso, root], capture_output=True)
    if r.returncode != 0:
        raise Failure("grub-mkrescue: " + show(r.stderr))
    return iso


def module_vm(kernel, module, net, extra=(), prefix=()):
    """kernel with a boot module (a configuration or a bundle, by -initrd,
    which PVH passes in its module list), virtio-rng and the network net;
    prefix goes before QEMU's command (TapNet.prefix())."""
    return Vm(["-kernel", kernel, "-initrd", module, "-device", "virtio-rng-pci"] +
              list(extra) + net, prefix=prefix)


class Build:
    """What `make kernel image` leaves in the build directory."""

    def __init__(self, build):
        self.dir = build
        self.elf = os.path.join(build, "kernel", "tern.elf")
        self.test_elf = os.path.join(build, "kernel", "tern-test.elf")
        self.debug_elf = os.path.join(build, "kernel", "tern-debug.elf")
        self.iso = os.path.join(build, "tern.iso")


# ---- configurations, the development PKI and boot bundles ---------------

MQTT_CONF = b"""config_version = 1
listener.plain = 0.0.0.0:1883
auth.allow_anonymous = true
sys.public = true
sys.interval = 1
"""
MTLS_CONF = """config_version = 1
listener.tls = 0.0.0.0:8883
tls.cert = pki/server.crt
tls.key = pki/server.key
tls.client_ca = pki/ca.crt
tls.operator_ca = pki/operator-ca.crt
tls.handshake_timeout = 3
acl.file = tern.acl
sys.interval = 1
"""
MTLS_ACL = """topic readwrite test/#
topic readwrite will/#
topic readwrite sync
topic readwrite paho/#
topic readwrite idle/#
pattern readwrite clients/%u/#
"""


def broker_vm(kernel, conf, tmp):
    """The broker from a plaintext configuration (bytes) as the boot
    module, a free host port forwarded to the guest's 1883; VM and port."""
    port = free_port()
    vm = module_vm(kernel, write_file(tmp, "tern.conf", conf),
                   nic(f"hostfwd=tcp:127.0.0.1:{port}-:1883"))
    return vm, port


def tls_vm(kernel, module, guest_port=8883):
    """The broker from a boot bundle, a free host port forwarded to the
    guest's 8883 (a -nic NIC: no MSI-X); VM and port."""
    port = free_port()
    vm = module_vm(kernel, module, ["-nic", f"user,model=virtio-net-pci,"
                                    f"hostfwd=tcp:127.0.0.1:{port}-:{guest_port}"])
    return vm, port


class Pki:
    """The development PKI (scripts/pki.sh build/pki, made by make image):
    mosquitto arguments per identity, and Python ssl contexts."""

    def __init__(self, build):
        self.dir = os.path.abspath(os.path.join(build, "pki"))
        if not os.path.exists(os.path.join(self.dir, "dev-client.crt")):
            subprocess.run([os.path.join(REPO, "scripts", "pki.sh"), self.dir], check=True,
                           capture_output=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def args(self, who=None):
        a = ["--cafile", self.path("ca.crt")]
        if who:
            a += ["--cert", self.path(f"{who}.crt"), "--key", self.path(f"{who}.key")]
        return a

    def context(self, who="dev-client"):
        ctx = ssl.create_default_context(cafile=self.path("ca.crt"))
        ctx.load_cert_chain(self.path(f"{who}.crt"), self.path(f"{who}.key"))
        return ctx


def make_bundle(build, tmp, conf, acl=MTLS_ACL):
    """conf and acl next to a link to the PKI, turned into a boot bundle by
    the image builder's tern-bundle (which checks them as the kernel will)."""
    write_file(tmp, "tern.conf", conf)
    write_file(tmp, "tern.acl", acl)
    os.symlink(os.path.abspath(os.path.join(build, "pki")), os.path.join(tmp, "pki"))
    out = os.path.join(tmp, "tern.bundle")
    r = subprocess.run([os.path.join(build, "rel", "tern-bundle"),
                        os.path.join(tmp, "tern.conf"), out], capture_output=True)
    if r.returncode != 0:
        raise Failure("tern-bundle: " + show(r.stdout + r.stderr))
    return out


# ---- the framebuffer console, read back ---------------------------------

FONT_C = os.path.join(REPO, "src", "platform", "kernel", "dev", "font8x8.c")
CONSOLE_LINE = re.compile(rb"tern: console: serial and framebuffer (\d+)x(\d+) "
                          rb"\((\d+) x (\d+) characters\)")


def load_font():
    """The kernel's glyphs, read from the drawing in font8x8.c: eight
    glyphs per band, rows of '#' (ink) and '.' (paper), from 0x20; the
    last slot (0x7F) is the box for unprintable bytes."""
    with open(FONT_C) as f:
        text = f.read()
    rows = re.findall(r'"([.#]{8}(?: [.#]{8}){7})"', text)
    if len(rows) != 96:
        raise Failure(f"font8x8.c: {len(rows)} glyph rows, expected 96")
    glyphs = {}
    for g in range(96):
        band, slot = divmod(g, 8)
        cell = tuple(rows[band * 8 + r][slot * 9:slot * 9 + 8] for r in range(8))
        glyphs[cell] = chr(0x20 + g) if g < 95 else "\x7f"
    return glyphs


class Qmp:
    """Just enough of QEMU's machine protocol: stop, screendump, quit."""

    def __init__(self, path, timeout=10):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.socket(socket.AF_UNIX)
                self.sock.settimeout(timeout)
                self.sock.connect(path)
                break
            except OSError:
                self.sock.close()
                if time.monotonic() > deadline:
                    raise Failure(f"QMP socket {path} never answered")
                time.sleep(0.05)
        self.buf = b""
        self._reply()  # the greeting
        self.cmd("qmp_capabilities")

    def _reply(self):
        while True:
            while b"\n" not in self.buf:
                chunk = self.sock.recv(65536)
                if not chunk:
                    raise Failure("QMP connection closed")
                self.buf += chunk
            line, self.buf = self.buf.split(b"\n", 1)
            msg = json.loads(line)
            if "event" not in msg:
                return msg

    def cmd(self, name, **args):
        self.sock.sendall(json.dumps({"execute": name, "arguments": args}).encode() + b"\n")
        msg = self._reply()
        if "error" in msg and name != "qmp_capabilities":
            raise Failure(f"QMP {name}: {msg['error']}")
        return msg

    def close(self):
        self.sock.close()


def qmp_args(tmp):
    """QEMU arguments for a QMP socket in tmp, and its path."""
    sock = os.path.join(tmp, "qmp")
    return ["-qmp", f"unix:{sock},server=on,wait=off"], sock


def qmp_quit(vm, sock, timeout=30):
    """Stop vm the orderly way: QMP quit through its socket (QEMU flushes
    its disks and exits); fails unless QEMU is gone within timeout."""
    q = Qmp(sock)
    try:
        q.cmd("quit")
    except (Failure, OSError):
        pass  # QEMU may close the socket before its reply arrives
    q.close()
    try:
        vm.proc.wait(timeout)
    except subprocess.TimeoutExpired:
        raise Failure(f"QEMU still running {timeout} s after QMP quit")
    vm.reader.join(2)


def read_screen(path, glyphs, cols, rows, scale):
    """The text on a screendump (PPM), cell by cell: a cell whose pixels
    (black = paper, anything else = ink) are not exactly one glyph of the
    font reads as NUL, so stray or misdrawn pixels fail the comparison."""
    with open(path, "rb") as f:
        data = f.read()
    parts = data.split(b"\n", 3)
    if parts[0] != b"P6" or parts[2] != b"255":
        raise Failure(f"screendump is not a binary 8-bit PPM: {data[:20]!r}")
    w, h = map(int, parts[1].split())
    pix = parts[3]
    cell = 8 * scale
    if cols * cell > w or rows * cell > h:
        raise Failure(f"screen {w}x{h} smaller than {cols} x {rows} cells")
    lines = []
    for r in range(rows):
        bands = []
        for y in range(8):
            off = ((r * cell + y * scale) * w) * 3
            row = pix[off:off + w * 3]
            bands.append("".join("." if row[x * 3 * scale:x * 3 * scale + 3] == b"\0\0\0"
                                 else "#" for x in range(cols * 8)))
        lines.append("".join(glyphs.get(tuple(b[c * 8:c * 8 + 8] for b in bands), "\0")
                             for c in range(cols)))
    return lines


def on_screen(lines, text, cols):
    """1 if text (one console line, wrapped at cols) is on consecutive rows."""
    chunks = [text[i:i + cols] for i in range(0, len(text), cols)] or [""]
    for i in range(len(lines) - len(chunks) + 1):
        if all(lines[i + k].rstrip() == chunks[k].rstrip() for k in range(len(chunks))):
            return True
    return False


class Screen:
    """The framebuffer console of a (stopped) VM: its size from the
    console line on serial (out), its text from a screendump into tmp."""

    def __init__(self, qmp, out, tmp):
        c = CONSOLE_LINE.search(out)
        if not c:
            raise Failure("no framebuffer console:\n" + show(out))
        self.console = c.group(0).decode()
        self.width, self.height, self.cols, self.rows = (int(x) for x in c.groups())
        shot = os.path.join(tmp, "screen.ppm")
        qmp.cmd("screendump", filename=shot)
        qmp.close()
        self.lines = read_screen(shot, load_font(), self.cols, self.rows,
                                 2 if self.width >= 1600 else 1)

    def expect(self, text):
        """Fail, showing what the screen reads, unless text is on it."""
        if not on_screen(self.lines, text, self.cols):
            shown = "\n".join(l.rstrip() for l in self.lines if l.strip())
            raise Failure(f"{text!r} not on the screen, which reads:\n{shown}")


# ---- the runner -----------------------------------------------------------

class _Turns:
    """Who may run: any number of ordinary tests at once, or one exclusive
    test alone. A test that measures a rate against a rate it measured
    earlier in the same run (the storm's completed handshakes against its
    closed-loop peak) needs the host's CPUs to be the same in both
    phases; with another QEMU guest starting, booting or idling beside
    it, the two phases see different machines and the ratio measures the
    neighbour. An exclusive test waiting keeps new ordinary tests from
    starting, so it is not starved."""

    def __init__(self):
        self.cv = threading.Condition()
        self.running = 0
        self.alone = False
        self.waiting = 0

    def run(self, check, exclusive):
        with self.cv:
            if exclusive:
                self.waiting += 1
                self.cv.wait_for(lambda: self.running == 0 and not self.alone)
                self.waiting -= 1
                self.alone = True
            else:
                self.cv.wait_for(lambda: not self.alone and self.waiting == 0)
                self.running += 1
        try:
            return check()
        finally:
            with self.cv:
                if exclusive:
                    self.alone = False
                else:
                    self.running -= 1
                self.cv.notify_all()


def exclusive(check):
    """Mark a test's check to run with no other test beside it (_Turns)."""
    check.exclusive = True
    return check


def collect(modules, build):
    """name -> check (a function returning a note or raising Failure; None:
    skipped), from each module's cases(build), in module order."""
    tests = {}
    for m in modules:
        for name, check in m.cases(build).items():
            if name in tests:
                raise SystemExit(f"{m.__name__}: test {name} defined twice")
            tests[name] = check
    return tests


def main(modules):
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("-k", default="", help="run tests whose name contains this")
    ap.add_argument("-j", type=int, default=max(1, min(4, os.cpu_count() or 1)))
    a = ap.parse_args()
    global TERN_DISK
    TERN_DISK = os.path.join(a.build, "rel", "tern-disk")
    selected = {n: f for n, f in collect(modules, Build(a.build)).items() if a.k in n}
    failed = skipped = 0
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(a.j) as pool:
        turns = _Turns()
        futures = {n: pool.submit(turns.run, f, getattr(f, "exclusive", False))
                   for n, f in selected.items() if f}
        for name in selected:
            if selected[name] is None:
                print(f"SKIP {name} ({OVMF} missing: apt-get install ovmf)")
                continue
            try:
                print(f"ok   {name}: {futures[name].result()}")
            except Skip as e:
                skipped += 1
                print(f"SKIP {name}: {e}")
            except Failure as e:
                failed += 1
                print(f"FAIL {name}: {e}")
            except Exception:  # a client's timeout, a socket error: this test fails, not the run
                failed += 1
                print(f"FAIL {name}: {traceback.format_exc()}")
            sys.stdout.flush()
    total = len([f for f in selected.values() if f])
    print(f"kernel tests: {total - failed - skipped} passed, {failed} failed"
          + (f", {skipped} skipped" if skipped else "") + f" ({time.monotonic() - start:.0f} s)")
    return 1 if failed else 0
