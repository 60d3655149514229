#!/usr/bin/python3
"""A block device the power-cut test controls: an NBD server over a raw
image file with a volatile write cache (SPEC D8, H4; issue 13).

QEMU reaches it with `-blockdev driver=nbd,server.type=unix,...`
(qemu_disk_args() below); the guest sees a disk with a volatile write
cache, so its flushes arrive here as NBD_CMD_FLUSH and its FUA writes with
NBD_CMD_FLAG_FUA.

The model (VolatileDisk):
  - the image file is what is durable: what a powered-off disk still holds;
  - every write since the last flush stays in a volatile cache, in order;
    reads see it;
  - NBD_CMD_FLUSH makes every completed write durable (the cache is written
    to the file, in order); a write with FUA is durable when answered;
  - power_cut() (the test killed QEMU first) decides what of the cache
    reached the medium, by mode: "lose-all" (nothing), "keep-all"
    (everything), "random" (each write kept, lost, or torn: a torn write
    persisted a random subset of its 512-byte sectors in each physical
    block it touches, so a physical block ends up part old, part new);
  - faults: set_faults(write=True) answers every write (and TRIM and
    WRITE_ZEROES) with EIO and changes nothing; set_faults(flush=True)
    answers every flush with EIO and leaves the cache volatile;
  - a held flush: hold_next_flush(n, min_writes, ranges) makes the n-th
    flush from now that finds at least min_writes writes in the cache (and,
    with ranges, one of them inside those byte ranges) wait, unanswered
    and not done, until release_flush(); wait_flush_held() says when one
    waits. A cut taken then finds the writes of the guest's sync in the
    cache: the moment a power cut can do the most harm, which a cut at a
    random moment rarely hits (the guest flushes right after it writes).

Counts (stats()): writes, fua_writes, flushes, reads, cuts, writes_lost,
writes_torn, writes_kept (at cuts), writes_failed, flushes_failed,
flushes_held.

The NBD side (NbdServer): fixed newstyle handshake, NBD_OPT_GO, INFO and
EXPORT_NAME (any export name: there is one disk), LIST, ABORT; every other
option is answered NBD_REP_ERR_UNSUP (QEMU then uses simple replies).
Commands READ, WRITE, FLUSH, TRIM, WRITE_ZEROES, DISC; transmission flags
HAS_FLAGS, SEND_FLUSH, SEND_FUA, SEND_TRIM, SEND_WRITE_ZEROES. One client at
a time, requests answered in order. Python standard library only.

    python3 tests/powercut/nbd_backend.py IMAGE --unix SOCK   # by hand
"""

import argparse
import os
import random
import signal
import socket
import struct
import threading

SECTOR = 512

# Handshake (the NBD protocol, doc/proto.md of the reference server).
NBDMAGIC = 0x4E42444D41474943          # "NBDMAGIC"
IHAVEOPT = 0x49484156454F5054          # "IHAVEOPT"
OPT_REPLY_MAGIC = 0x3E889045565A9
FLAG_FIXED_NEWSTYLE = 1 << 0
FLAG_NO_ZEROES = 1 << 1
FLAG_C_FIXED_NEWSTYLE = 1 << 0
FLAG_C_NO_ZEROES = 1 << 1

OPT_EXPORT_NAME = 1
OPT_ABORT = 2
OPT_LIST = 3
OPT_INFO = 6
OPT_GO = 7

REP_ACK = 1
REP_SERVER = 2
REP_INFO = 3
REP_ERR_UNSUP = (1 << 31) + 1
REP_ERR_INVALID = (1 << 31) + 3

INFO_EXPORT = 0
INFO_BLOCK_SIZE = 3

# Transmission.
TFLAG_HAS_FLAGS = 1 << 0
TFLAG_SEND_FLUSH = 1 << 2
TFLAG_SEND_FUA = 1 << 3
TFLAG_SEND_TRIM = 1 << 5
TFLAG_SEND_WRITE_ZEROES = 1 << 6
TRANSMISSION_FLAGS = (TFLAG_HAS_FLAGS | TFLAG_SEND_FLUSH | TFLAG_SEND_FUA |
                      TFLAG_SEND_TRIM | TFLAG_SEND_WRITE_ZEROES)

REQUEST_MAGIC = 0x25609513
SIMPLE_REPLY_MAGIC = 0x67446698
CMD_FLAG_FUA = 1 << 0

CMD_READ = 0
CMD_WRITE = 1
CMD_DISC = 2
CMD_FLUSH = 3
CMD_TRIM = 4
CMD_WRITE_ZEROES = 6

EIO = 5
EINVAL = 22
ENOSPC = 28

MAX_REQUEST = 32 << 20    # the largest READ/WRITE accepted (advertised as the maximum)
MAX_OPTION = 4096         # option data beyond this is a protocol violation here

CUT_MODES = ("lose-all", "keep-all", "random")


class ProtocolError(Exception):
    """The client broke the NBD protocol: the connection is dropped."""


# ---- the disk model -------------------------------------------------------

class VolatileDisk:
    """A raw image file (the durable medium) plus the volatile cache of
    every write since the last flush. Thread-safe: the NBD connection and
    the test's control calls share it."""

    def __init__(self, path, physical_block=4096, rng=None):
        if physical_block < SECTOR or physical_block % SECTOR:
            raise ValueError("physical block size %d is not a multiple of %d"
                             % (physical_block, SECTOR))
        self.path = path
        self.physical_block = physical_block
        self.size = os.path.getsize(path)
        if self.size % SECTOR:
            raise ValueError("%s: size %d is not a whole number of %d-byte sectors"
                             % (path, self.size, SECTOR))
        self.rng = rng or random.Random()
        self.lock = threading.Lock()
        self.fd = os.open(path, os.O_RDWR)
        # The cache: writes in the order they were answered, each
        # (offset, bytes, durable). durable: a FUA write, already in the
        # file; kept in the list so that replaying the cache in order never
        # lets an older cached write overwrite it.
        self.pending = []
        self.overlay = {}   # sector number -> its newest cached 512 bytes
        self.fail_write = False
        self.fail_flush = False
        # The held flush: "armed" (flush number hold_in from now with at
        # least hold_min writes in the cache waits),
        # "held" (one waits), "released" or "cut" (let it go, done or
        # undone), or None.
        self.hold = None
        self.hold_in = 0
        self.hold_min = 0
        self.hold_ranges = None
        self.hold_cond = threading.Condition(self.lock)
        self.counts = dict.fromkeys(
            ("writes", "fua_writes", "flushes", "reads", "cuts", "writes_lost",
             "writes_torn", "writes_kept", "writes_failed", "flushes_failed",
             "flushes_held"), 0)

    def close(self):
        with self.lock:
            if self.fd >= 0:
                os.close(self.fd)
                self.fd = -1

    # -- I/O, as the NBD commands need it. Each returns 0 or an errno.

    def in_range(self, offset, length):
        return 0 <= offset and 0 <= length and offset + length <= self.size

    def read(self, offset, length):
        with self.lock:
            self.counts["reads"] += 1
            return self._view(offset, length)

    def write(self, offset, data, fua=False):
        with self.lock:
            if self.fail_write:
                self.counts["writes_failed"] += 1
                return EIO
            self.counts["writes"] += 1
            offset, data = self._sector_aligned(offset, data)
            if fua:
                self.counts["fua_writes"] += 1
                os.pwrite(self.fd, data, offset)
                for s in range(offset // SECTOR, (offset + len(data)) // SECTOR):
                    self.overlay.pop(s, None)
            else:
                for i in range(0, len(data), SECTOR):
                    self.overlay[(offset + i) // SECTOR] = data[i:i + SECTOR]
            self.pending.append((offset, data, fua))
            return 0

    def flush(self):
        with self.lock:
            if self.hold == "armed" and self._hold_counts():
                self.hold_in -= 1
            if self.hold == "armed" and self.hold_in == 0:
                self.hold = "held"
                self.counts["flushes_held"] += 1
                self.hold_cond.notify_all()
                self.hold_cond.wait_for(lambda: self.hold != "held")
                if self.hold == "cut":
                    self.hold = None
                    return EIO   # the power went first: nothing of it was done
                self.hold = None
            if self.fail_flush:
                self.counts["flushes_failed"] += 1
                return EIO
            self.counts["flushes"] += 1
            for offset, data, _ in self.pending:
                os.pwrite(self.fd, data, offset)
            self.pending.clear()
            self.overlay.clear()
            return 0

    # -- the test's controls

    def set_faults(self, write=False, flush=False):
        """From now on, fail every write (and TRIM, WRITE_ZEROES) and/or
        every flush with EIO, until called again."""
        with self.lock:
            self.fail_write, self.fail_flush = bool(write), bool(flush)

    def hold_next_flush(self, n=1, min_writes=0, ranges=None):
        """The n-th flush from now (n >= 1) that finds at least min_writes
        writes in the cache, and with ranges [(offset, length), ...] one
        of them overlapping a range, waits, undone and unanswered, until
        release_flush(); the flushes before it are done as usual."""
        if n < 1:
            raise ValueError("hold_next_flush(%d): n counts from 1" % n)
        with self.lock:
            self.hold, self.hold_in, self.hold_min = "armed", n, min_writes
            self.hold_ranges = list(ranges) if ranges else None

    def wait_flush_held(self, timeout):
        """Wait until a flush waits (after hold_next_flush); False on
        timeout."""
        with self.lock:
            return self.hold_cond.wait_for(lambda: self.hold == "held", timeout)

    def release_flush(self, done=True):
        """Let a waiting flush go: done (it flushes and answers as usual)
        or not (the power went while it waited: answered EIO, the cache
        untouched; for the test after killing the client, before
        power_cut). Disarms a hold no flush has reached."""
        with self.lock:
            if self.hold == "held":
                self.hold = "released" if done else "cut"
            else:
                self.hold = None
            self.hold_cond.notify_all()

    def power_cut(self, mode):
        """The power goes: what of the cache reaches the medium depends on
        mode (CUT_MODES). Call only with no client connected (the test
        killed QEMU and the connection is gone: NbdServer.wait_idle).
        Returns this cut's (kept, lost, torn) counts."""
        if mode not in CUT_MODES:
            raise ValueError("power cut mode %r is not one of %s" % (mode, ", ".join(CUT_MODES)))
        with self.lock:
            kept = lost = torn = 0
            for offset, data, durable in self.pending:
                if durable:
                    os.pwrite(self.fd, data, offset)   # in order: newer than what precedes it
                    continue
                fate = {"lose-all": "lose", "keep-all": "keep"}.get(mode) or \
                    self.rng.choice(("keep", "lose", "tear"))
                if fate == "tear" and len(data) == SECTOR:
                    fate = self.rng.choice(("keep", "lose"))   # a sector is atomic
                if fate == "keep":
                    os.pwrite(self.fd, data, offset)
                    kept += 1
                elif fate == "lose":
                    lost += 1
                else:
                    self._write_torn(offset, data)
                    torn += 1
            self.pending.clear()
            self.overlay.clear()
            self.counts["cuts"] += 1
            self.counts["writes_kept"] += kept
            self.counts["writes_lost"] += lost
            self.counts["writes_torn"] += torn
            return kept, lost, torn

    def volatile_writes(self):
        """Writes in the cache that a cut could still lose."""
        with self.lock:
            return sum(1 for _, _, durable in self.pending if not durable)

    def stats(self):
        with self.lock:
            return dict(self.counts)

    # -- inside the lock

    def _hold_counts(self):
        """Whether this flush counts toward the armed hold."""
        if len(self.pending) < self.hold_min:
            return False
        if self.hold_ranges is None:
            return True
        return any(off < start + length and start < off + len(data)
                   for off, data, _ in self.pending for start, length in self.hold_ranges)

    def _view(self, offset, length):
        data = bytearray(os.pread(self.fd, length, offset))
        if len(data) != length:
            raise OSError("short read of %s at %d" % (self.path, offset))
        if self.overlay:
            first, last = offset // SECTOR, (offset + length - 1) // SECTOR
            for s in range(first, last + 1):
                cached = self.overlay.get(s)
                if cached is None:
                    continue
                lo, hi = max(s * SECTOR, offset), min((s + 1) * SECTOR, offset + length)
                data[lo - offset:hi - offset] = cached[lo - s * SECTOR:hi - s * SECTOR]
        return bytes(data)

    def _sector_aligned(self, offset, data):
        """A write widened to whole sectors with what the disk holds now
        (the sector is the unit the cache keeps and a cut tears by)."""
        start = offset - offset % SECTOR
        end = -(-(offset + len(data)) // SECTOR) * SECTOR
        if start == offset and end == offset + len(data):
            return offset, bytes(data)
        whole = bytearray(self._view(start, end - start))
        whole[offset - start:offset - start + len(data)] = data
        return start, bytes(whole)

    def _write_torn(self, offset, data):
        """Each physical block the write touches gets a random subset of
        its new sectors; the write as a whole is neither kept nor lost."""
        nsec = len(data) // SECTOR
        per_block = self.physical_block // SECTOR
        keep = []
        s = 0
        while s < nsec:
            block_end = ((offset // SECTOR + s) // per_block + 1) * per_block - offset // SECTOR
            run = range(s, min(block_end, nsec))
            keep += [i for i in run if self.rng.random() < 0.5]
            s = run.stop
        if not keep or len(keep) == nsec:   # make it torn for real
            keep = self.rng.sample(range(nsec), self.rng.randint(1, nsec - 1))
        for i in keep:
            os.pwrite(self.fd, data[i * SECTOR:(i + 1) * SECTOR], offset + i * SECTOR)


# ---- the NBD server -------------------------------------------------------

def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("NBD client closed the connection")
        buf += chunk
    return bytes(buf)


class NbdServer:
    """Serves one VolatileDisk over NBD on a unix socket (path) or loopback
    TCP (path None: a free port, self.port), one client at a time, from a
    background thread."""

    def __init__(self, disk, path=None):
        self.disk = disk
        self.path = path
        if path is not None:
            if os.path.exists(path):
                os.unlink(path)
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.listener.bind(path)
            self.port = None
        else:
            self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self.listener.bind(("127.0.0.1", 0))
            self.port = self.listener.getsockname()[1]
        self.listener.listen(2)
        self.cond = threading.Condition()
        self.active = None          # the connected client's socket
        self.connections = 0
        self.errors = []            # protocol errors seen (the test may assert none)
        self.stopping = False
        self.thread = threading.Thread(target=self._accept_loop, daemon=True,
                                       name="nbd-backend")
        self.thread.start()

    def qemu_blockdev(self, node="disk0"):
        """The -blockdev value that connects QEMU to this server."""
        if self.path is not None:
            return "driver=nbd,node-name=%s,server.type=unix,server.path=%s,export=tern" % (
                node, self.path)
        return "driver=nbd,node-name=%s,server.type=inet,server.host=127.0.0.1," \
               "server.port=%d,export=tern" % (node, self.port)

    def wait_idle(self, timeout=10.0):
        """Wait until no client is connected (after QEMU was killed);
        False on timeout."""
        with self.cond:
            return self.cond.wait_for(lambda: self.active is None, timeout)

    def power_cut(self, mode, timeout=10.0):
        """The power cut of VolatileDisk.power_cut, once the client (QEMU,
        killed by the caller) is gone: a cut under a live client would let
        it go on writing into the next life of the disk."""
        # A flush held for this cut never happens (the connection thread
        # waits in it: release it, undone, so that it sees the client gone).
        self.disk.release_flush(done=False)
        if not self.wait_idle(timeout):
            raise RuntimeError("power cut: an NBD client is still connected after %.0f s"
                               % timeout)
        return self.disk.power_cut(mode)

    def wait_connected(self, count, timeout=10.0):
        """Wait until `count` connections were accepted in all."""
        with self.cond:
            return self.cond.wait_for(lambda: self.connections >= count, timeout)

    def close(self):
        self.stopping = True
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        with self.cond:
            if self.active is not None:
                try:
                    self.active.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        self.thread.join(5)
        if self.path is not None and os.path.exists(self.path):
            os.unlink(self.path)

    def _accept_loop(self):
        while not self.stopping:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with self.cond:
                self.active = conn
                self.connections += 1
                self.cond.notify_all()
            try:
                self._serve(conn)
            except (EOFError, ConnectionError):
                pass   # the client went away (QEMU killed): an ordinary end
            except ProtocolError as e:
                self.errors.append(str(e))
            finally:
                conn.close()
                with self.cond:
                    self.active = None
                    self.cond.notify_all()

    # -- handshake

    def _serve(self, conn):
        conn.sendall(struct.pack(">QQH", NBDMAGIC, IHAVEOPT,
                                 FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES))
        (cflags,) = struct.unpack(">I", recv_exact(conn, 4))
        if not cflags & FLAG_C_FIXED_NEWSTYLE:
            raise ProtocolError("client without fixed newstyle (flags %#x)" % cflags)
        no_zeroes = bool(cflags & FLAG_C_NO_ZEROES)
        while True:
            magic, opt, length = struct.unpack(">QII", recv_exact(conn, 16))
            if magic != IHAVEOPT:
                raise ProtocolError("option magic %#x" % magic)
            if length > MAX_OPTION:
                raise ProtocolError("option %d with %d bytes of data" % (opt, length))
            data = recv_exact(conn, length)
            if opt == OPT_EXPORT_NAME:
                conn.sendall(struct.pack(">QH", self.disk.size, TRANSMISSION_FLAGS) +
                             (b"" if no_zeroes else bytes(124)))
                break
            if opt in (OPT_GO, OPT_INFO):
                if not self._reply_info(conn, opt, data):
                    continue
                if opt == OPT_GO:
                    break
            elif opt == OPT_LIST:
                name = b"tern"
                self._opt_reply(conn, opt, REP_SERVER, struct.pack(">I", len(name)) + name)
                self._opt_reply(conn, opt, REP_ACK)
            elif opt == OPT_ABORT:
                self._opt_reply(conn, opt, REP_ACK)
                return
            else:
                self._opt_reply(conn, opt, REP_ERR_UNSUP)
        self._transmission(conn)

    def _opt_reply(self, conn, opt, rtype, data=b""):
        conn.sendall(struct.pack(">QIII", OPT_REPLY_MAGIC, opt, rtype, len(data)) + data)

    def _reply_info(self, conn, opt, data):
        """NBD_OPT_GO / NBD_OPT_INFO: the export's size and flags and its
        block sizes (512 minimum, the physical block preferred); False if
        the request was malformed (answered NBD_REP_ERR_INVALID)."""
        if len(data) < 6:
            self._opt_reply(conn, opt, REP_ERR_INVALID)
            return False
        (nlen,) = struct.unpack_from(">I", data, 0)
        if 4 + nlen + 2 > len(data):
            self._opt_reply(conn, opt, REP_ERR_INVALID)
            return False
        (nreq,) = struct.unpack_from(">H", data, 4 + nlen)
        if 4 + nlen + 2 + 2 * nreq != len(data):
            self._opt_reply(conn, opt, REP_ERR_INVALID)
            return False
        self._opt_reply(conn, opt, REP_INFO,
                        struct.pack(">HQH", INFO_EXPORT, self.disk.size, TRANSMISSION_FLAGS))
        self._opt_reply(conn, opt, REP_INFO,
                        struct.pack(">HIII", INFO_BLOCK_SIZE, SECTOR,
                                    self.disk.physical_block, MAX_REQUEST))
        self._opt_reply(conn, opt, REP_ACK)
        return True

    # -- transmission

    def _transmission(self, conn):
        disk = self.disk
        while True:
            magic, flags, cmd, handle, offset, length = struct.unpack(
                ">IHHQQI", recv_exact(conn, 28))
            if magic != REQUEST_MAGIC:
                raise ProtocolError("request magic %#x" % magic)
            fua = bool(flags & CMD_FLAG_FUA)
            if cmd == CMD_WRITE:
                if length > MAX_REQUEST:
                    raise ProtocolError("write of %d bytes" % length)
                data = recv_exact(conn, length)
                err = disk.write(offset, data, fua) if disk.in_range(offset, length) else ENOSPC
                self._reply(conn, handle, err)
            elif cmd == CMD_READ:
                if length > MAX_REQUEST or not disk.in_range(offset, length):
                    self._reply(conn, handle, EINVAL)
                else:
                    self._reply(conn, handle, 0, disk.read(offset, length))
            elif cmd == CMD_FLUSH:
                self._reply(conn, handle, disk.flush())
            elif cmd in (CMD_TRIM, CMD_WRITE_ZEROES):
                # A trimmed range reads as zeroes here: NBD leaves its
                # contents unspecified, zeroes are one valid choice.
                if not disk.in_range(offset, length):
                    self._reply(conn, handle, ENOSPC)
                    continue
                err = 0
                for pos in range(offset, offset + length, MAX_REQUEST):
                    n = min(MAX_REQUEST, offset + length - pos)
                    err = err or disk.write(pos, bytes(n), fua)
                self._reply(conn, handle, err)
            elif cmd == CMD_DISC:
                return
            else:
                self._reply(conn, handle, EINVAL)

    def _reply(self, conn, handle, err, data=b""):
        conn.sendall(struct.pack(">IIQ", SIMPLE_REPLY_MAGIC, err, handle) +
                     (data if err == 0 else b""))


# ---- QEMU -----------------------------------------------------------------

def qemu_disk_args(server, bus="virtio-blk", physical_block=4096, node="disk0"):
    """QEMU arguments that give the guest this server's disk with a
    volatile write cache (write-cache=on: virtio-blk offers
    VIRTIO_BLK_F_FLUSH and CONFIG_WCE; scsi-hd reports WCE in its caching
    mode page), so that the guest's flushes and FUA writes reach the
    server. QEMU 7.2's virtio-blk runs writethrough (every write FUA)
    until the guest's driver negotiates VIRTIO_BLK_F_FLUSH (or
    CONFIG_WCE): a guest that does not would make every write durable and
    the cuts would test nothing (run.py checks QEMU's cache mode). QEMU's own cache options stay at their defaults
    (cache.no-flush off: every guest flush is passed on). The device's
    qdev id is NODE-dev."""
    sizes = "logical_block_size=%d,physical_block_size=%d" % (SECTOR, physical_block)
    dev = "id=%s-dev,drive=%s,write-cache=on,%s" % (node, node, sizes)
    args = ["-blockdev", server.qemu_blockdev(node)]
    if bus == "virtio-blk":
        return args + ["-device", "virtio-blk-pci," + dev]
    if bus == "virtio-scsi":
        return args + ["-device", "virtio-scsi-pci,id=scsi0",
                       "-device", "scsi-hd,bus=scsi0.0," + dev]
    raise ValueError("disk bus %r is not virtio-blk or virtio-scsi" % bus)


def main():
    ap = argparse.ArgumentParser(description="Serve IMAGE over NBD with a volatile write "
                                 "cache; at exit (Ctrl-C) the power is cut.")
    ap.add_argument("image")
    ap.add_argument("--unix", help="unix socket path (default: loopback TCP, port printed)")
    ap.add_argument("--physical-block", type=int, default=4096)
    ap.add_argument("--cut", choices=CUT_MODES, default="lose-all",
                    help="what happens to unflushed writes at exit")
    a = ap.parse_args()
    disk = VolatileDisk(a.image, a.physical_block)
    server = NbdServer(disk, a.unix)
    print("serving %s (%d bytes): -blockdev %s" % (a.image, disk.size, server.qemu_blockdev()),
          flush=True)
    try:
        signal.sigwait([signal.SIGINT, signal.SIGTERM])
    finally:
        server.close()
        print("power cut (%s): kept %d, lost %d, torn %d" % ((a.cut,) + disk.power_cut(a.cut)))
        print(disk.stats())
        disk.close()


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT, signal.SIGTERM])
    main()
