#!/usr/bin/python3
"""Power-cut torture test for the durable store (SPEC D8, H4).

The load and the checks are durable_load.py's (shared with the unikernel's
power-cut harness, tests/powercut/run.py). A publisher streams QoS 1
retained messages to distinct topics and QoS 1 and QoS 2 messages for an
offline persistent session, and records what the broker acknowledged
(PUBACK for QoS 1, PUBREC for QoS 2). The daemon is
killed with SIGKILL at a random moment (seeded), the database files are
checked with PRAGMA integrity_check, and the daemon is restarted. Then:

  - every acknowledged retained message is there (subscribe and compare:
    this cycle's topics and two other slots' after each restart, all of
    them at the end);
  - the persistent session is connected and drained: every acknowledged
    QoS 1 message arrives at least once, every acknowledged QoS 2 message
    exactly once over the whole run (also counting unacknowledged ones
    that made it: none may arrive twice).

Some kills land while the daemon is still opening its database, and backups
run every second, so kills also hit backups in progress. At the end the
whole retained set is checked once more and both backup copies must pass
quick_check.

    TERN_BIN=build/rel/ternd tests/torture/torture.py --kills 200 --seed 1

Exit status 0 when every check passed. Everything waits with a timeout.
"""

import argparse
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

from durable_load import (NO_DROP_LIMITS, SLOTS, Endpoint, Failure, Publisher, State, finish,
                          check_queued, check_retained, drain_session, setup_session)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
HOST = "127.0.0.1"
START_TIMEOUT = 20.0   # ASan builds start slower
STEP_TIMEOUT = 10.0


SANITIZER_PATTERNS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                      "AddressSanitizer:DEADLYSIGNAL", "runtime error:")


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class Daemon:
    """ternd on a fixed port and database, started and killed repeatedly.
    listener: the configuration lines of its listener (default: plaintext
    on port, anonymous clients allowed); extra: more lines."""

    def __init__(self, binary, workdir, port, listener=None, extra=(), env=None,
                 sys_interval=0):
        self.binary = binary
        self.port = port
        self.env = env
        self.db = os.path.join(workdir, "tern.db")
        self.conf = os.path.join(workdir, "tern.conf")
        self.log_path = os.path.join(workdir, "ternd.log")
        self.proc = None
        if listener is None:
            listener = ["listener.plain = %s:%d" % (HOST, port), "auth.allow_anonymous = true"]
        with open(self.conf, "w") as f:
            f.write("\n".join([
                "config_version = 1"] + list(listener) + list(extra) + [
                "log.level = warn",
                "sys.interval = %d" % sys_interval] + list(NO_DROP_LIMITS) + [
                "store.path = %s" % self.db,
                "store.backup_interval = 1",
                ""]))

    def start(self):
        self.log = open(self.log_path, "a")
        self.proc = subprocess.Popen([self.binary, "-c", self.conf], stdout=self.log,
                                     stderr=self.log, env=self.env)

    def wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Failure("ternd exited with %s at start" % self.proc.returncode)
            try:
                with socket.create_connection((HOST, self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.01)
        raise Failure("ternd did not accept connections within %.0f s" % START_TIMEOUT)

    def kill(self):
        # A daemon that died by itself (a crash, a sanitizer abort) must not
        # pass for one of our kills.
        rc = self.proc.poll()
        if rc is not None:
            raise Failure("ternd exited on its own (status %s)" % rc)
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=STEP_TIMEOUT)
        self.log.close()
        self.proc = None
        self.check_log()

    def check_log(self):
        with open(self.log_path, errors="replace") as f:
            text = f.read()
        for pat in SANITIZER_PATTERNS:
            if pat in text:
                raise Failure("sanitizer report in the daemon's log: %r" % pat)

    def stop(self):
        if self.proc is None:
            return
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(timeout=STEP_TIMEOUT)
        self.log.close()
        self.proc = None
        if rc != 0:
            raise Failure("ternd exited with %d after SIGTERM" % rc)
        self.check_log()

    def tail(self, n=30):
        try:
            with open(self.log_path) as f:
                return "".join(f.readlines()[-n:])
        except OSError:
            return ""


def integrity_check(db, scratch):
    """PRAGMA integrity_check on a copy of the files as the kill left them
    (a copy, so the check's own recovery does not change what the daemon
    finds at restart)."""
    if os.path.exists(scratch):
        shutil.rmtree(scratch)
    os.mkdir(scratch)
    copy = os.path.join(scratch, "check.db")
    for suffix in ("", "-wal", "-journal"):
        if os.path.exists(db + suffix):
            shutil.copyfile(db + suffix, copy + suffix)
    if not os.path.exists(copy):
        return "no database yet"
    con = sqlite3.connect(copy)
    try:
        rows = con.execute("PRAGMA integrity_check").fetchall()
    finally:
        con.close()
    if rows != [("ok",)]:
        raise Failure("integrity_check: %r" % rows[:5])
    return "ok"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=25)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bin", default=os.environ.get("TERN_BIN",
                                                    os.path.join(REPO, "build/rel/ternd")))
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()

    rng = random.Random(args.seed)
    workdir = tempfile.mkdtemp(prefix="tern-torture-")
    daemon = Daemon(args.bin, workdir, free_port())
    ep = Endpoint(HOST, daemon.port, timeout=STEP_TIMEOUT)
    state = State()
    started = time.monotonic()
    early = published = 0
    ok = False
    try:
        daemon.start()
        daemon.wait_ready()
        setup_session(ep)
        for cycle in range(1, args.kills + 1):
            if rng.random() < 0.1:
                # Kill while the daemon opens, checks and loads the store.
                daemon.kill()
                integrity_check(daemon.db, os.path.join(workdir, "check"))
                daemon.start()
                time.sleep(rng.uniform(0.0, 0.03))
                early += 1
            pub = Publisher(ep, cycle, random.Random(rng.random()), state)
            pub.start()
            time.sleep(rng.uniform(0.02, 0.5))
            daemon.kill()
            pub.join(timeout=STEP_TIMEOUT)
            if pub.is_alive():
                raise Failure("publisher did not notice the kill")
            if pub.error is not None:
                raise Failure("publisher: %r" % pub.error)
            published += pub.sent
            integrity_check(daemon.db, os.path.join(workdir, "check"))
            daemon.start()
            daemon.wait_ready()
            # This cycle's retained topics and two other slots' (all of them
            # once more at the end).
            slot = cycle % SLOTS
            check_retained(ep, state,
                           [slot] + rng.sample([s for s in range(SLOTS) if s != slot], 2))
            drain_session(ep, state)
            check_queued(state)
            if cycle % 10 == 0 or cycle == args.kills:
                print("cycle %d: %d published, acknowledged %d retained, %d QoS 1, %d QoS 2; "
                      "%.0f s" % (cycle, published, len(state.acked["r"]),
                                  len(state.acked["q1"]), len(state.acked["q2"]),
                                  time.monotonic() - started), flush=True)
        # Everything retained, from every cycle, once more.
        check_retained(ep, state, range(SLOTS))
        daemon.stop()
        for slot in ("a", "b"):
            path = daemon.db + ".bak-" + slot
            if os.path.exists(path):
                con = sqlite3.connect(path)
                try:
                    if con.execute("PRAGMA quick_check").fetchall() != [("ok",)]:
                        raise Failure("backup %s fails quick_check" % path)
                finally:
                    con.close()
        ok = True
        print("torture: %d kills (%d during start-up), %d messages published, %d acknowledged, "
              "all present after every restart; QoS 2 exactly once; integrity ok; %.0f s"
              % (args.kills, early, published,
                 state.acknowledged(), time.monotonic() - started))
    except Failure as e:
        print("torture FAILED (seed %d): %s" % (args.seed, e))
        print("--- ternd log tail ---\n" + daemon.tail())
    finally:
        if daemon.proc is not None:
            daemon.proc.kill()
            daemon.proc.wait()
    return finish(workdir, ok, args.keep)


if __name__ == "__main__":
    sys.exit(main())
