"""Self-tests of the power-cut harness's block backend (nbd_backend.py),
without a guest: a minimal NBD client written here from the protocol, and
QEMU's own client (qemu-io, package qemu-utils) for interoperability.

    /usr/bin/python3 -m pytest -q tests/powercut/test_backend.py
"""
import os
import random
import shutil
import socket
import struct
import subprocess
import threading

import pytest

import nbd_backend as nb

SIZE = 1 << 20
OLD = 0x11          # every byte of a fresh image
NEW = 0x22          # every byte the tests write


class Client:
    """Just enough of an NBD client: fixed newstyle, NBD_OPT_GO (or
    NBD_OPT_EXPORT_NAME), simple replies."""

    def __init__(self, server, go=True):
        if server.path is not None:
            self.s = socket.socket(socket.AF_UNIX)
            self.s.connect(server.path)
        else:
            self.s = socket.create_connection(("127.0.0.1", server.port))
        self.s.settimeout(10)
        magic, opt, hflags = struct.unpack(">QQH", nb.recv_exact(self.s, 18))
        assert (magic, opt) == (nb.NBDMAGIC, nb.IHAVEOPT)
        assert hflags & nb.FLAG_FIXED_NEWSTYLE
        self.s.sendall(struct.pack(">I", nb.FLAG_C_FIXED_NEWSTYLE | nb.FLAG_C_NO_ZEROES))
        self.info = {}
        if go:
            self.option(8, b"")   # NBD_OPT_STRUCTURED_REPLY: this server declines it
            assert self.reply()[1] == nb.REP_ERR_UNSUP
            name = b"tern"
            self.option(nb.OPT_GO, struct.pack(">I", len(name)) + name +
                        struct.pack(">HH", 1, nb.INFO_BLOCK_SIZE))
            while True:
                _, rtype, data = self.reply()
                if rtype == nb.REP_ACK:
                    break
                assert rtype == nb.REP_INFO, rtype
                (kind,) = struct.unpack_from(">H", data)
                self.info[kind] = data[2:]
            self.size, self.flags = struct.unpack(">QH", self.info[nb.INFO_EXPORT])
        else:
            self.option(nb.OPT_EXPORT_NAME, b"")
            self.size, self.flags = struct.unpack(">QH", nb.recv_exact(self.s, 10))
        self.handle = 0

    def option(self, opt, data):
        self.s.sendall(struct.pack(">QII", nb.IHAVEOPT, opt, len(data)) + data)

    def reply(self):
        magic, opt, rtype, length = struct.unpack(">QIII", nb.recv_exact(self.s, 20))
        assert magic == nb.OPT_REPLY_MAGIC
        return opt, rtype, nb.recv_exact(self.s, length)

    def cmd(self, cmd, offset=0, length=0, data=b"", flags=0, want=0):
        self.handle += 1
        self.s.sendall(struct.pack(">IHHQQI", nb.REQUEST_MAGIC, flags, cmd, self.handle,
                                   offset, length) + data)
        magic, err, handle = struct.unpack(">IIQ", nb.recv_exact(self.s, 16))
        assert (magic, handle) == (nb.SIMPLE_REPLY_MAGIC, self.handle)
        return err, (nb.recv_exact(self.s, want) if err == 0 and want else b"")

    def write(self, offset, data, fua=False):
        return self.cmd(nb.CMD_WRITE, offset, len(data), data,
                        nb.CMD_FLAG_FUA if fua else 0)[0]

    def read(self, offset, length):
        err, data = self.cmd(nb.CMD_READ, offset, length, want=length)
        assert err == 0, err
        return data

    def flush(self):
        return self.cmd(nb.CMD_FLUSH)[0]

    def close(self):
        self.s.sendall(struct.pack(">IHHQQI", nb.REQUEST_MAGIC, 0, nb.CMD_DISC, 0, 0, 0))
        self.s.close()


@pytest.fixture
def rig(tmp_path):
    """A 1 MiB image of OLD bytes served on a unix socket; yields
    (disk, server, image path); everything closed afterwards."""
    image = tmp_path / "disk.img"
    image.write_bytes(bytes([OLD]) * SIZE)
    disk = nb.VolatileDisk(str(image), 4096, random.Random(7))
    server = nb.NbdServer(disk, str(tmp_path / "nbd.sock"))
    yield disk, server, image
    server.close()
    disk.close()
    assert server.errors == []


def on_disk(image, offset, length):
    with open(image, "rb") as f:
        f.seek(offset)
        return f.read(length)


def cut(server, mode):
    return server.power_cut(mode, timeout=5)


def test_handshake_go_advertises_size_flush_fua_and_block_sizes(rig):
    disk, server, _ = rig
    c = Client(server)
    assert c.size == SIZE
    for flag in (nb.TFLAG_HAS_FLAGS, nb.TFLAG_SEND_FLUSH, nb.TFLAG_SEND_FUA,
                 nb.TFLAG_SEND_TRIM, nb.TFLAG_SEND_WRITE_ZEROES):
        assert c.flags & flag
    assert struct.unpack(">III", c.info[nb.INFO_BLOCK_SIZE]) == (512, 4096, nb.MAX_REQUEST)
    c.close()


def test_handshake_export_name_enters_transmission(rig):
    _, server, _ = rig
    c = Client(server, go=False)
    assert c.size == SIZE and c.flags & nb.TFLAG_SEND_FLUSH
    assert c.read(0, 512) == bytes([OLD]) * 512
    c.close()


def test_reads_see_unflushed_writes(rig):
    disk, server, image = rig
    c = Client(server)
    assert c.write(4096, bytes([NEW]) * 8192) == 0
    assert c.read(4096 - 512, 9216) == bytes([OLD]) * 512 + bytes([NEW]) * 8192 + bytes([OLD]) * 512
    assert on_disk(image, 4096, 8192) == bytes([OLD]) * 8192   # not durable yet
    c.close()


@pytest.mark.parametrize("mode", nb.CUT_MODES)
def test_flushed_writes_survive_a_cut(rig, mode):
    disk, server, image = rig
    c = Client(server)
    assert c.write(0, bytes([NEW]) * 65536) == 0
    assert c.flush() == 0
    c.close()
    assert cut(server, mode) == (0, 0, 0)
    assert on_disk(image, 0, 65536) == bytes([NEW]) * 65536
    assert disk.stats()["flushes"] == 1 and disk.stats()["cuts"] == 1


def test_unflushed_writes_are_lost_by_lose_all(rig):
    disk, server, image = rig
    c = Client(server)
    for i in range(5):
        assert c.write(i * 8192, bytes([NEW]) * 4096) == 0
    c.close()
    assert cut(server, "lose-all") == (0, 5, 0)
    assert on_disk(image, 0, SIZE) == bytes([OLD]) * SIZE
    assert disk.stats()["writes_lost"] == 5


def test_unflushed_writes_are_kept_by_keep_all_in_order(rig):
    disk, server, image = rig
    c = Client(server)
    assert c.write(0, bytes([0x33]) * 4096) == 0
    assert c.write(0, bytes([NEW]) * 1024) == 0     # newer, over part of it
    c.close()
    assert cut(server, "keep-all") == (2, 0, 0)
    assert on_disk(image, 0, 4096) == bytes([NEW]) * 1024 + bytes([0x33]) * 3072


def test_random_cut_keeps_loses_or_tears_each_write_by_sector(tmp_path):
    """Many 8 KiB writes straddling physical blocks: each ends up whole,
    absent, or torn; a torn one is a mix of whole old and new sectors."""
    image = tmp_path / "disk.img"
    image.write_bytes(bytes([OLD]) * SIZE)
    disk = nb.VolatileDisk(str(image), 4096, random.Random(3))
    server = nb.NbdServer(disk, str(tmp_path / "s"))
    try:
        c = Client(server)
        n = 100
        for i in range(n):   # 8 KiB at 2 KiB past a 4 KiB boundary: 3 physical blocks
            assert c.write(i * 10240 + 2048, bytes([NEW]) * 8192) == 0
        c.close()
        kept, lost, torn = cut(server, "random")
        assert kept + lost + torn == n and kept and lost and torn
        whole = new = old = mixed = 0
        for i in range(n):
            data = on_disk(image, i * 10240 + 2048, 8192)
            sectors = [data[k:k + 512] for k in range(0, 8192, 512)]
            assert all(s in (bytes([OLD]) * 512, bytes([NEW]) * 512) for s in sectors)
            kinds = {s[0] for s in sectors}
            if kinds == {NEW}:
                new += 1
            elif kinds == {OLD}:
                old += 1
            else:
                mixed += 1
            whole += 1
        assert (new, old, mixed) == (kept, lost, torn)
        st = disk.stats()
        assert (st["writes_kept"], st["writes_lost"], st["writes_torn"]) == (kept, lost, torn)
    finally:
        server.close()
        disk.close()


def test_tear_is_confined_to_sectors_of_the_write(rig):
    """A torn write changes no byte outside the sectors it wrote."""
    disk, server, image = rig
    disk.rng = random.Random(11)
    c = Client(server)
    for i in range(40):
        assert c.write(65536 + i * 16384, bytes([NEW]) * 12288) == 0
    c.close()
    cut(server, "random")
    for i in range(40):
        gap = on_disk(image, 65536 + i * 16384 + 12288, 4096)
        assert gap == bytes([OLD]) * 4096
    assert on_disk(image, 0, 65536) == bytes([OLD]) * 65536


def test_a_single_sector_write_is_never_torn(rig):
    disk, server, image = rig
    c = Client(server)
    for i in range(50):
        assert c.write(i * 4096, bytes([NEW]) * 512) == 0
    c.close()
    kept, lost, torn = cut(server, "random")
    assert torn == 0 and kept + lost == 50


def test_fua_write_is_durable_when_answered(rig):
    disk, server, image = rig
    c = Client(server)
    assert c.write(8192, bytes([NEW]) * 4096, fua=True) == 0
    assert on_disk(image, 8192, 4096) == bytes([NEW]) * 4096
    c.close()
    cut(server, "lose-all")
    assert on_disk(image, 8192, 4096) == bytes([NEW]) * 4096
    assert disk.stats()["fua_writes"] == 1


def test_older_cached_write_never_overwrites_a_newer_fua_write(rig):
    disk, server, image = rig
    c = Client(server)
    assert c.write(0, bytes([0x33]) * 4096) == 0                 # cached
    assert c.write(0, bytes([NEW]) * 4096, fua=True) == 0        # durable, newer
    assert c.write(4096, bytes([0x44]) * 512) == 0               # cached, elsewhere
    c.close()
    assert cut(server, "keep-all") == (2, 0, 0)
    assert on_disk(image, 0, 4096) == bytes([NEW]) * 4096
    assert on_disk(image, 4096, 512) == bytes([0x44]) * 512


def test_cached_write_after_fua_is_lost_by_lose_all(rig):
    disk, server, image = rig
    c = Client(server)
    assert c.write(0, bytes([NEW]) * 4096, fua=True) == 0
    assert c.write(0, bytes([0x33]) * 4096) == 0
    assert c.read(0, 4096) == bytes([0x33]) * 4096
    c.close()
    cut(server, "lose-all")
    assert on_disk(image, 0, 4096) == bytes([NEW]) * 4096


def test_injected_write_errors_fail_with_eio_and_change_nothing(rig):
    disk, server, image = rig
    c = Client(server)
    disk.set_faults(write=True)
    assert c.write(0, bytes([NEW]) * 4096) == nb.EIO
    assert c.write(0, bytes([NEW]) * 4096, fua=True) == nb.EIO
    assert c.cmd(nb.CMD_WRITE_ZEROES, 0, 4096)[0] == nb.EIO
    assert c.read(0, 4096) == bytes([OLD]) * 4096
    assert c.flush() == 0
    disk.set_faults()
    assert c.write(0, bytes([NEW]) * 4096) == 0
    assert c.flush() == 0
    c.close()
    assert on_disk(image, 0, 4096) == bytes([NEW]) * 4096
    st = disk.stats()
    assert st["writes_failed"] == 3 and st["writes"] == 1


def test_injected_flush_errors_leave_the_writes_volatile(rig):
    disk, server, image = rig
    c = Client(server)
    assert c.write(0, bytes([NEW]) * 4096) == 0
    disk.set_faults(flush=True)
    assert c.flush() == nb.EIO
    assert on_disk(image, 0, 4096) == bytes([OLD]) * 4096
    assert disk.volatile_writes() == 1
    c.close()
    cut(server, "lose-all")
    assert on_disk(image, 0, 4096) == bytes([OLD]) * 4096
    assert disk.stats()["flushes_failed"] == 1


def test_flush_works_again_when_the_fault_is_cleared(rig):
    disk, server, image = rig
    c = Client(server)
    disk.set_faults(flush=True)
    assert c.write(0, bytes([NEW]) * 4096) == 0
    assert c.flush() == nb.EIO
    disk.set_faults()
    assert c.flush() == 0
    c.close()
    cut(server, "lose-all")
    assert on_disk(image, 0, 4096) == bytes([NEW]) * 4096


def flush_in_thread(c):
    """c.flush() on a thread: (thread, result list)."""
    out = []

    def go():
        try:
            out.append(c.flush())
        except (OSError, EOFError) as e:
            out.append(e)
    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t, out


def test_held_flush_waits_undone_until_released(rig):
    disk, server, image = rig
    c = Client(server)
    assert c.write(4096, bytes([NEW]) * 4096) == 0
    disk.hold_next_flush()
    t, out = flush_in_thread(c)
    assert disk.wait_flush_held(5)
    t.join(0.2)
    assert t.is_alive() and out == []                 # unanswered
    assert on_disk(image, 4096, 4096) == bytes([OLD]) * 4096   # and undone
    disk.release_flush()
    t.join(5)
    assert out == [0]
    assert on_disk(image, 4096, 4096) == bytes([NEW]) * 4096
    assert c.flush() == 0                             # the hold was for one flush
    assert disk.stats()["flushes_held"] == 1
    c.close()


def test_hold_of_the_third_flush_lets_two_through(rig):
    disk, server, image = rig
    c = Client(server)
    disk.hold_next_flush(3)
    for i in range(2):
        assert c.write(i * 4096, bytes([NEW]) * 4096) == 0
        assert c.flush() == 0
    assert c.write(8192, bytes([NEW]) * 4096) == 0
    t, out = flush_in_thread(c)
    assert disk.wait_flush_held(5)
    assert on_disk(image, 0, 12288) == bytes([NEW]) * 8192 + bytes([OLD]) * 4096
    disk.release_flush()
    t.join(5)
    assert out == [0]
    c.close()


def test_hold_with_min_writes_skips_smaller_syncs(rig):
    disk, server, image = rig
    c = Client(server)
    disk.hold_next_flush(1, min_writes=3)
    assert c.write(0, bytes([NEW]) * 4096) == 0
    assert c.flush() == 0                             # one write: not held
    for i in range(3):
        assert c.write((i + 1) * 4096, bytes([NEW]) * 4096) == 0
    t, out = flush_in_thread(c)
    assert disk.wait_flush_held(5)
    assert on_disk(image, 4096, 4096) == bytes([OLD]) * 4096
    disk.release_flush()
    t.join(5)
    assert out == [0]
    c.close()


def test_hold_with_ranges_waits_for_a_write_inside_them(rig):
    disk, server, image = rig
    c = Client(server)
    disk.hold_next_flush(1, ranges=[(65536, 8192)])
    assert c.write(0, bytes([NEW]) * 4096) == 0
    assert c.write(65536 + 8192, bytes([NEW]) * 4096) == 0   # just past the range
    assert c.flush() == 0                                    # not held
    assert c.write(65536 + 4096, bytes([NEW]) * 512) == 0    # inside
    t, out = flush_in_thread(c)
    assert disk.wait_flush_held(5)
    disk.release_flush()
    t.join(5)
    assert out == [0]
    c.close()


def test_power_cut_during_a_held_flush_never_does_it(rig):
    disk, server, image = rig
    c = Client(server)
    assert c.write(0, bytes([NEW]) * 8192) == 0
    disk.hold_next_flush()
    t, out = flush_in_thread(c)
    assert disk.wait_flush_held(5)
    c.s.shutdown(socket.SHUT_RDWR)                    # the client dies waiting
    c.s.close()
    assert cut(server, "lose-all") == (0, 1, 0)
    t.join(5)
    assert out and out[0] != 0                        # never answered ok
    assert on_disk(image, 0, 8192) == bytes([OLD]) * 8192


def test_a_hold_no_flush_reached_is_disarmed_by_a_cut(rig):
    disk, server, image = rig
    disk.hold_next_flush()
    assert not disk.wait_flush_held(0.1)
    cut(server, "keep-all")
    c = Client(server)
    assert c.write(0, bytes([NEW]) * 512) == 0
    assert c.flush() == 0                             # not held
    assert on_disk(image, 0, 512) == bytes([NEW]) * 512
    c.close()


def test_trim_and_write_zeroes_read_as_zeroes(rig):
    disk, server, image = rig
    c = Client(server)
    assert c.cmd(nb.CMD_TRIM, 0, 8192)[0] == 0
    assert c.cmd(nb.CMD_WRITE_ZEROES, 16384, 4096, flags=nb.CMD_FLAG_FUA)[0] == 0
    assert c.read(0, 8192) == bytes(8192)
    assert on_disk(image, 16384, 4096) == bytes(4096)     # FUA: durable already
    assert on_disk(image, 0, 8192) == bytes([OLD]) * 8192  # cached only
    c.close()


def test_out_of_range_requests_are_refused(rig):
    disk, server, image = rig
    c = Client(server)
    assert c.cmd(nb.CMD_READ, SIZE - 512, 1024)[0] == nb.EINVAL
    assert c.write(SIZE, bytes(512)) == nb.ENOSPC
    assert c.cmd(9, 0, 0)[0] == nb.EINVAL        # NBD_CMD_RESIZE: not offered
    assert c.read(SIZE - 512, 512) == bytes([OLD]) * 512   # still in step
    c.close()


def test_unaligned_write_is_widened_to_whole_sectors(rig):
    disk, server, image = rig
    c = Client(server)
    assert c.write(700, b"abc") == 0
    assert c.read(512, 512) == bytes([OLD]) * 188 + b"abc" + bytes([OLD]) * 321
    c.close()
    cut(server, "keep-all")
    assert on_disk(image, 512, 512) == bytes([OLD]) * 188 + b"abc" + bytes([OLD]) * 321


def test_power_cut_refused_while_a_client_is_connected(rig):
    disk, server, image = rig
    c = Client(server)
    with pytest.raises(RuntimeError, match="still connected"):
        server.power_cut("lose-all", timeout=0.2)
    c.close()
    cut(server, "lose-all")


def test_unknown_cut_mode_is_refused(rig):
    disk, server, _ = rig
    with pytest.raises(ValueError, match="not one of"):
        disk.power_cut("some")


def test_a_new_connection_after_a_cut_sees_what_persisted(rig):
    disk, server, image = rig
    c = Client(server)
    assert c.write(0, bytes([NEW]) * 512) == 0
    assert c.flush() == 0
    assert c.write(512, bytes([NEW]) * 512) == 0
    c.close()
    cut(server, "lose-all")
    c = Client(server)
    assert c.read(0, 1024) == bytes([NEW]) * 512 + bytes([OLD]) * 512
    c.close()


def test_tcp_listener_serves_too(tmp_path):
    image = tmp_path / "disk.img"
    image.write_bytes(bytes(SIZE))
    disk = nb.VolatileDisk(str(image))
    server = nb.NbdServer(disk)
    try:
        assert "server.port=%d" % server.port in server.qemu_blockdev()
        c = Client(server)
        assert c.size == SIZE
        c.close()
    finally:
        server.close()
        disk.close()


QEMU_IO = shutil.which("qemu-io")


@pytest.mark.skipif(QEMU_IO is None, reason="qemu-io missing: apt-get install qemu-utils")
def test_qemu_io_writes_flushes_fua_and_reads_through_the_backend(rig):
    """QEMU's NBD client (the one -blockdev driver=nbd uses): it negotiates,
    its writes reach the cache, its flush and FUA reach the backend as
    such, and what it flushed survives a lose-all cut."""
    disk, server, image = rig
    opts = "driver=nbd,server.type=unix,server.path=%s,export=tern" % server.path
    r = subprocess.run([QEMU_IO, "--image-opts", opts, "-t", "writeback",
                        "-c", "write -P 0x22 0 64k",
                        "-c", "flush",
                        "-c", "write -f -P 0x33 65536 4k",
                        "-c", "read -P 0x22 0 64k",
                        "-c", "read -P 0x33 65536 4k"],
                       capture_output=True, timeout=60)
    out = (r.stdout + r.stderr).decode()
    assert r.returncode == 0 and "Pattern verification failed" not in out, out
    assert server.wait_idle(5)
    st = disk.stats()
    assert st["writes"] == 2 and st["fua_writes"] == 1 and st["flushes"] >= 1, st
    cut(server, "lose-all")
    assert on_disk(image, 0, 65536) == bytes([NEW]) * 65536
    assert on_disk(image, 65536, 4096) == bytes([0x33]) * 4096


@pytest.mark.skipif(QEMU_IO is None, reason="qemu-io missing: apt-get install qemu-utils")
def test_qemu_io_sees_an_injected_write_error(rig):
    disk, server, image = rig
    disk.set_faults(write=True)
    opts = "driver=nbd,server.type=unix,server.path=%s,export=tern" % server.path
    r = subprocess.run([QEMU_IO, "--image-opts", opts, "-c", "write -P 0x22 0 4k"],
                       capture_output=True, timeout=60)
    out = (r.stdout + r.stderr).decode()
    assert "Input/output error" in out, out
    assert server.wait_idle(5)
    assert on_disk(image, 0, 4096) == bytes([OLD]) * 4096
