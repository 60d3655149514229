"""The release's ternd .deb in a clean Debian 12 root (debootstrap, minbase +
adduser, cached as a tarball in ~/.cache/tern/release-chroot): dpkg installs
it, the shipped configuration refuses to start until certificates are
configured and says which file is missing, and with a test PKI in
/etc/tern/tls the daemon runs as the package's user tern (no new privileges,
no capabilities, as the systemd unit has it) and serves mosquitto_pub and
mosquitto_sub over mutual TLS, keeping the retained message in
/var/lib/tern/tern.db. There is no systemd to start the unit here (no init
in a chroot, none on this machine): systemd-analyze verify checks the
unit against the installed root instead.

Needs root (chroot), debootstrap and the network the first time."""
import glob
import os
import shutil
import socket
import subprocess
import time

import pytest

from conftest import REPO

CACHE = os.path.expanduser("~/.cache/tern/release-chroot")
MIRROR = os.environ.get("TERN_DEBIAN_MIRROR", "http://deb.debian.org/debian")


def debian12_tarball(name="adduser", include="adduser"):
    """A pristine Debian 12 root with the packages `include` names, made
    once and kept as CACHE/bookworm-minbase-NAME.tar: debootstrap takes
    minutes, untarring seconds."""
    tar = os.path.join(CACHE, f"bookworm-minbase-{name}.tar")
    if os.path.exists(tar):
        return tar
    if shutil.which("debootstrap") is None:
        pytest.fail("debootstrap missing: scripts/setup-host.sh installs it")
    os.makedirs(CACHE, exist_ok=True)
    tmp = os.path.join(CACHE, f"tmp-{name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(["debootstrap", "--variant=minbase", f"--include={include}", "bookworm", tmp,
                    MIRROR], check=True, capture_output=True)
    subprocess.run(["tar", "-C", tmp, "--numeric-owner", "-cf", tar + ".tmp", "."], check=True)
    os.replace(tar + ".tmp", tar)
    shutil.rmtree(tmp)
    return tar


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, gone, seconds=20):
    """True once 127.0.0.1:port accepts a connection; False when gone()
    says the server ended first, or after `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if gone():
            return False
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return True
        except OSError:
            time.sleep(0.2)
    return False


def chroot(root, *cmd, **kw):
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    return subprocess.run(["chroot", str(root), *cmd], **kw)


@pytest.fixture
def installed(release_dir, tmp_path):
    if os.geteuid() != 0:
        pytest.fail("the install test needs root (chroot)")
    root = tmp_path / "root"
    root.mkdir()
    subprocess.run(["tar", "-C", str(root), "--numeric-owner", "-xf", debian12_tarball()], check=True)
    assert (root / "etc/debian_version").read_text().startswith("12.")
    (deb,) = glob.glob(os.path.join(release_dir, "ternd_*_amd64.deb"))
    shutil.copy(deb, root / "tmp" / "ternd.deb")
    r = chroot(root, "dpkg", "-i", "/tmp/ternd.deb")
    assert r.returncode == 0, r.stdout + r.stderr
    return root


def test_deb_installs_in_debian12_and_serves_mutual_tls(installed, tmp_path):
    root = installed
    r = chroot(root, "dpkg-query", "-W", "-f=${Status}", "ternd")
    assert r.stdout == "install ok installed"
    assert chroot(root, "getent", "passwd", "tern").returncode == 0
    assert (root / "usr/sbin/ternd").exists()

    # First run without certificates: refused, naming the missing file.
    r = chroot(root, "/usr/sbin/ternd", "--check", "-c", "/etc/tern/tern.conf")
    assert r.returncode != 0
    assert "/etc/tern/tls/server.crt" in r.stdout + r.stderr, r.stdout + r.stderr

    # The documented first-run path (README.Debian) with a test PKI.
    pki = tmp_path / "pki"
    subprocess.run([os.path.join(REPO, "scripts", "pki.sh"), str(pki)], check=True,
                   capture_output=True)
    tls = root / "etc/tern/tls"
    for name in ("server.crt", "ca.crt"):
        shutil.copy(pki / name, tls / name)
    shutil.copy(pki / "server.key", tls / "server.key")
    assert chroot(root, "chown", "root:tern", "/etc/tern/tls/server.key").returncode == 0
    os.chmod(tls / "server.key", 0o640)
    port = free_port()
    conf = root / "etc/tern/tern.conf"
    conf.write_text(conf.read_text().replace("0.0.0.0:8883", f"127.0.0.1:{port}"))
    # What systemd's StateDirectory=tern would make.
    assert chroot(root, "install", "-d", "-o", "tern", "-g", "tern", "-m", "700",
                  "/var/lib/tern").returncode == 0
    r = chroot(root, "/usr/sbin/ternd", "--check", "-c", "/etc/tern/tern.conf")
    assert r.returncode == 0, r.stdout + r.stderr

    # As the unit runs it: user tern, no new privileges, no capabilities.
    proc = subprocess.Popen(["chroot", str(root), "setpriv", "--reuid=tern", "--regid=tern",
                             "--init-groups", "--no-new-privs", "--bounding-set=-all",
                             "--inh-caps=-all", "/usr/sbin/ternd", "-c", "/etc/tern/tern.conf"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert wait_port(port, lambda: proc.poll() is not None), proc.stdout.read() if proc.poll() is not None else "no listener"
        client = ["--cafile", str(pki / "ca.crt"), "--cert", str(pki / "dev-client.crt"),
                  "--key", str(pki / "dev-client.key"), "-h", "localhost", "-p", str(port)]
        r = subprocess.run(["mosquitto_pub", *client, "-q", "1", "-r", "-t", "release/check",
                            "-m", "installed"], capture_output=True, text=True, timeout=20)
        assert r.returncode == 0, r.stdout + r.stderr
        r = subprocess.run(["mosquitto_sub", *client, "-C", "1", "-W", "10", "-t", "release/check"],
                           capture_output=True, text=True, timeout=20)
        assert r.returncode == 0 and r.stdout.strip() == "installed", r.stdout + r.stderr
        # A client without a certificate is refused.
        r = subprocess.run(["mosquitto_pub", "--cafile", str(pki / "ca.crt"), "-h", "localhost",
                            "-p", str(port), "-t", "x", "-m", "y"], capture_output=True,
                           text=True, timeout=20)
        assert r.returncode != 0
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0, out
    db = root / "var/lib/tern/tern.db"
    assert db.exists() and os.stat(db).st_uid == int(chroot(root, "id", "-u", "tern").stdout)


def test_systemd_unit_verifies_against_the_installed_root(installed):
    if shutil.which("systemd-analyze") is None:
        pytest.fail("systemd-analyze missing (package systemd)")
    r = subprocess.run(["systemd-analyze", "verify", "--man=no", f"--root={installed}",
                        "/lib/systemd/system/ternd.service"], capture_output=True, text=True)
    # The minimal root has no systemd, hence no sysinit.target for the
    # default dependencies: that line is the root's, every other one about
    # ternd (a missing command, a bad directive) fails the test. --man=no:
    # the check would run the host's man, not the root's, for the
    # Documentation= page.
    lines = (r.stdout + r.stderr).splitlines()
    own = [line for line in lines if "ternd" in line
           and "Unit sysinit.target not found" not in line]
    assert not own, "\n".join(lines)


def test_purge_removes_the_state_and_keeps_nothing_but_the_user(installed):
    root = installed
    (root / "var/lib/tern").mkdir(exist_ok=True)
    (root / "var/lib/tern/tern.db").write_text("x")
    r = chroot(root, "dpkg", "--purge", "ternd")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not (root / "usr/sbin/ternd").exists()
    assert not (root / "etc/tern/tern.conf").exists()
    assert not (root / "var/lib/tern").exists()
    status = chroot(root, "dpkg-query", "-W", "-f=${Status}", "ternd")
    assert status.returncode != 0 or "not-installed" in status.stdout, status.stdout
