"""SQLite in the kernel (issue 13, D1): the test build's kvfs self-test
(tern.test=kvfs) runs the daemon's store, compiled freestanding with the
pinned SQLite, through the kernel's VFS on a RAM disk (512-byte logical,
4 KiB physical blocks, volatile cache): commits, a backup, a remount from
the disk alone, every row back and integrity_check ok. The kernel then
boots on to its ready line.
"""
import re

from harness import Failure, run_ready, show

OK = re.compile(rb"selftest kvfs: ok: 40 commits, \d+ writes, \d+ flushes, \d+ reads, "
                rb"sqlite memory high-water \d+ KiB")


def kvfs_selftest(kernel):
    """The store through the VFS passes and the boot goes on."""
    def check():
        took, out = run_ready(["-kernel", kernel, "-append", "tern.test=kvfs"], 120)
        if b"FATAL" in out or not OK.search(out):
            raise Failure(f"selftest kvfs did not pass:\n{show(out)}")
        return f"{took:.1f} s; {OK.search(out).group(0).decode()}"
    return check


def cases(b):
    return {"selftest-kvfs": kvfs_selftest(b.test_elf)}
