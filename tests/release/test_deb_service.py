"""The release's ternd .deb started by systemd itself: a clean Debian 12 root
with systemd (debootstrap minbase + adduser, systemd, systemd-sysv, dbus;
cached as a tarball in ~/.cache/tern/release-chroot) booted as a container
with systemd-nspawn, the package installed there by dpkg while systemd runs
(so the maintainer scripts take their systemd branch), and ternd.service
started with `systemctl start` under every line of its hardening
(seccomp filter, ProtectSystem=strict, no capabilities, ...).

test_deb_install.py runs the daemon in a chroot the way the unit would;
this test is the unit itself, which is what catches hardening that blocks
something the daemon does: the one exec of itself at start (ADR-062, seen
here as GLIBC_TUNABLES in the running process's initial environment),
the I/O threads of `workers = 2` (ADR-061), a reload by SIGHUP.

The container shares the host's network (no --private-network), so the
host's mosquitto clients reach the service on a loopback port. Needs root,
systemd-nspawn (package systemd-container) and the network the first time.
"""
import glob
import os
import shutil
import subprocess
import time

import pytest

from conftest import REPO
from test_deb_install import debian12_tarball, free_port, wait_port

# The root the container boots: systemd as its PID 1.
INCLUDE = "adduser,systemd,systemd-sysv,dbus"


def container_init(nspawn_pid):
    """The host PID of the container's systemd: the process named systemd
    descending from our systemd-nspawn (its /proc/PID/root reads "/", being
    pivoted in its own mount namespace)."""
    parent, comm = {}, {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold blanks and parentheses.
        name, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:]
        parent[int(pid)], comm[int(pid)] = int(rest.split()[1]), name
    for pid, name in comm.items():
        if name != "systemd":
            continue
        up = parent.get(pid)
        while up not in (None, 0, 1):
            if up == nspawn_pid:
                return pid
            up = parent.get(up)
    return None


class Container:
    def __init__(self, root, proc):
        self.root, self.proc, self.pid = root, proc, None

    def run(self, *cmd, check=False, timeout=60):
        """CMD inside the container (every namespace of its systemd)."""
        r = subprocess.run(["nsenter", "-t", str(self.pid), "-a", *cmd], capture_output=True,
                           text=True, timeout=timeout)
        if check:
            assert r.returncode == 0, f"{cmd}: {r.stdout}{r.stderr}"
        return r

    def show(self, prop):
        return self.run("systemctl", "show", "-P", prop, "ternd.service", check=True).stdout.strip()

    def journal(self):
        return self.run("journalctl", "-u", "ternd.service", "--no-pager", "-o", "cat").stdout


@pytest.fixture(scope="module")
def container(release_dir, tmp_path_factory):
    if os.geteuid() != 0:
        pytest.fail("the service test needs root (systemd-nspawn)")
    if shutil.which("systemd-nspawn") is None:
        pytest.fail("systemd-nspawn missing: scripts/setup-host.sh installs systemd-container")
    root = tmp_path_factory.mktemp("nspawn") / "root"
    root.mkdir()
    subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-xf", debian12_tarball("systemd", INCLUDE)], check=True)
    assert (root / "etc/debian_version").read_text().startswith("12.")
    (deb,) = glob.glob(os.path.join(release_dir, "ternd_*_amd64.deb"))
    # Not /tmp: nspawn mounts a tmpfs there.
    shutil.copy(deb, root / "root" / "ternd.deb")
    log = open(root.parent / "nspawn.log", "w")
    # --register=no --keep-unit: no machined or transient scope, so this
    # works on a host whose PID 1 is not systemd (as on the test machine).
    proc = subprocess.Popen(["systemd-nspawn", "-q", "-D", str(root), "-b", "--register=no",
                             "--keep-unit", "--console=pipe", f"--machine=tern-rel-{os.getpid()}"],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    c = Container(root, proc)
    try:
        deadline = time.monotonic() + 120
        state = ""
        while time.monotonic() < deadline and proc.poll() is None:
            c.pid = c.pid or container_init(proc.pid)
            if c.pid is not None:
                state = c.run("systemctl", "is-system-running").stdout.strip()
                if state in ("running", "degraded"):
                    break
            time.sleep(0.5)
        assert state in ("running", "degraded"), \
            f"the container's systemd did not come up ({state!r}):\n" + \
            (root.parent / "nspawn.log").read_text()[-3000:]
        yield c
    finally:
        if c.pid is not None and proc.poll() is None:
            c.run("systemctl", "poweroff", "--no-block")
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def proc_status(c, pid):
    """/proc/PID/status of the container's PID as {key: value}."""
    out = {}
    for line in c.run("cat", f"/proc/{pid}/status", check=True).stdout.splitlines():
        key, _, value = line.partition(":")
        out[key] = value.strip()
    return out


def test_systemd_starts_the_installed_service_and_it_serves_under_its_hardening(container,
                                                                                 tmp_path):
    c = container
    r = c.run("dpkg", "-i", "/root/ternd.deb", timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert c.show("LoadState") == "loaded"
    # Enabled on install, as Debian does (deb-systemd-helper): it starts at
    # boot once configured.
    assert c.run("systemctl", "is-enabled", "ternd.service").stdout.strip() == "enabled"

    # Without certificates: ExecStartPre's --check refuses, naming the file,
    # and the restarts (Restart=on-failure) stop at the start limit instead
    # of failing every RestartSec for ever.
    r = c.run("systemctl", "start", "ternd.service")
    assert r.returncode != 0
    assert "/etc/tern/tls/server.crt" in c.journal(), c.journal()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and c.show("ActiveState") != "failed":
        time.sleep(1)
    assert c.show("ActiveState") == "failed", c.show("NRestarts")
    assert int(c.show("NRestarts")) <= 5
    c.run("systemctl", "reset-failed", "ternd.service", check=True)

    # README.Debian's first run, with a test PKI, on a loopback port, with
    # I/O threads.
    pki = tmp_path / "pki"
    subprocess.run([os.path.join(REPO, "scripts", "pki.sh"), str(pki)], check=True,
                   capture_output=True)
    tls = c.root / "etc/tern/tls"
    for name in ("server.crt", "ca.crt", "server.key"):
        shutil.copy(pki / name, tls / name)
    c.run("chown", "root:tern", "/etc/tern/tls/server.key", check=True)
    os.chmod(tls / "server.key", 0o640)
    port = free_port()
    conf = c.root / "etc/tern/tern.conf"
    conf.write_text(conf.read_text().replace("0.0.0.0:8883", f"127.0.0.1:{port}")
                    + "workers = 2\n")
    c.run("systemctl", "start", "ternd.service", check=True)
    assert wait_port(port, lambda: c.show("ActiveState") == "failed", 30), c.journal()
    assert c.show("ActiveState") == "active", c.journal()
    pid = int(c.show("MainPID"))
    status = proc_status(c, pid)
    uid = int(c.run("id", "-u", "tern", check=True).stdout)
    assert status["Uid"].split() == [str(uid)] * 4
    assert status["NoNewPrivs"] == "1"
    assert status["Seccomp"] == "2"
    assert int(status["CapEff"], 16) == 0 and int(status["CapBnd"], 16) == 0
    # The exec of itself went through the sandbox (the initial environment
    # is the exec's; the variable is set only for it).
    environ = c.run("cat", f"/proc/{pid}/environ", check=True).stdout.split("\0")
    assert "GLIBC_TUNABLES=glibc.malloc.tcache_count=0" in environ, environ
    # The core thread, two I/O threads and the store's.
    assert int(status["Threads"]) >= 3, status["Threads"]

    client = ["--cafile", str(pki / "ca.crt"), "--cert", str(pki / "dev-client.crt"),
              "--key", str(pki / "dev-client.key"), "-h", "localhost", "-p", str(port)]
    r = subprocess.run(["mosquitto_pub", *client, "-q", "1", "-r", "-t", "release/service",
                        "-m", "started by systemd"], capture_output=True, text=True, timeout=20)
    assert r.returncode == 0, r.stdout + r.stderr + c.journal()
    # A reload (ExecReload's SIGHUP) keeps the same process serving.
    c.run("systemctl", "reload", "ternd.service", check=True)
    time.sleep(1)
    assert c.show("ActiveState") == "active" and int(c.show("MainPID")) == pid, c.journal()
    r = subprocess.run(["mosquitto_sub", *client, "-C", "1", "-W", "10", "-t", "release/service"],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 0 and r.stdout.strip() == "started by systemd", r.stdout + r.stderr

    c.run("systemctl", "stop", "ternd.service", check=True)
    assert c.show("Result") == "success", c.journal()
    assert c.show("ExecMainStatus") == "0", c.journal()
    db = c.root / "var/lib/tern/tern.db"
    assert db.exists() and os.stat(db).st_uid == uid
