"""make release (tools/release/build.sh): two clean clones give the same bytes,
the signature verifies the checksums, the checksums cover every artifact, the
SBOMs list deps/lock's packages with their exact versions and checksums, and
the Debian package is lintian-clean. The builds come from conftest.py."""
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import REPO

ARTIFACT_PATTERNS = ("tern-*.iso", "tern-*-disk.img", "ternd_*_amd64.deb", "tern-*.tar.gz")


def files(d):
    return sorted(os.listdir(d))


def read_lock():
    lock = {}
    with open(os.path.join(REPO, "deps", "lock"), encoding="utf-8") as f:
        for line in f:
            fields = line.split()
            if len(fields) == 5 and not line.startswith("#"):
                lock.setdefault(fields[0], {"upstream": fields[1], "debian": fields[2],
                                            "files": {}})["files"][fields[3]] = fields[4]
    return lock


def test_two_clean_clones_give_byte_identical_artifacts(releases):
    assert len(releases) == 2, "TERN_RELEASE_DIR gives one release: nothing to compare"
    (a, ta), (b, tb) = releases
    print(f"build times: {ta:.0f} s and {tb:.0f} s")
    assert files(a) == files(b)
    for pattern in ARTIFACT_PATTERNS:
        assert len(glob.glob(os.path.join(a, pattern))) == 1, pattern
    different = []
    for name in files(a):
        with open(os.path.join(a, name), "rb") as fa, open(os.path.join(b, name), "rb") as fb:
            if hashlib.sha256(fa.read()).digest() != hashlib.sha256(fb.read()).digest():
                different.append(name)
    if different and shutil.which("diffoscope"):
        for name in different:
            r = subprocess.run(["diffoscope", "--text", "-", os.path.join(a, name),
                                os.path.join(b, name)], capture_output=True, text=True)
            print(r.stdout[:20000])
    assert different == [], f"differ between the two builds: {different}"


def test_minisign_verifies_the_checksums_and_they_cover_every_artifact(release_dir, minisign_key):
    sums = os.path.join(release_dir, "SHA256SUMS")
    r = subprocess.run(["minisign", "-V", "-p", str(minisign_key[1]), "-m", sums],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Signature and comment signature verified" in r.stdout
    r = subprocess.run(["sha256sum", "--strict", "-c", "SHA256SUMS"], cwd=release_dir,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(sums, encoding="utf-8") as f:
        listed = sorted(line.split(None, 1)[1].strip() for line in f)
    assert listed == [n for n in files(release_dir) if not n.startswith("SHA256SUMS")]


def test_a_changed_checksum_file_fails_minisign(release_dir, minisign_key, tmp_path):
    """The check above can fail: one changed byte and minisign refuses."""
    forged = tmp_path / "SHA256SUMS"
    with open(os.path.join(release_dir, "SHA256SUMS"), "rb") as f:
        data = bytearray(f.read())
    data[0] ^= 1
    forged.write_bytes(bytes(data))
    shutil.copy(os.path.join(release_dir, "SHA256SUMS.minisig"), tmp_path / "SHA256SUMS.minisig")
    r = subprocess.run(["minisign", "-V", "-p", str(minisign_key[1]), "-m", str(forged)],
                       capture_output=True, text=True)
    assert r.returncode != 0


@pytest.mark.parametrize("pattern,expected", [
    ("tern-*.iso", {"wolfssl", "sqlite3", "lwip"}),
    ("tern-*-disk.img", {"wolfssl", "sqlite3", "lwip"}),
    ("ternd_*_amd64.deb", {"wolfssl", "sqlite3"}),
])
def test_sbom_lists_the_linked_deps_lock_packages_with_versions_and_checksums(
        release_dir, pattern, expected):
    (artifact,) = glob.glob(os.path.join(release_dir, pattern))
    with open(artifact + ".spdx.json", encoding="utf-8") as f:
        doc = json.load(f)
    assert doc["spdxVersion"] == "SPDX-2.3"
    lock = read_lock()
    by_name = {p["name"]: p for p in doc["packages"]}
    main = by_name[os.path.basename(artifact)]
    with open(artifact, "rb") as f:
        assert main["checksums"][0]["checksumValue"] == hashlib.sha256(f.read()).hexdigest()
    contained = {r["relatedSpdxElement"] for r in doc["relationships"]
                 if r["relationshipType"] == "CONTAINS"}
    for name in expected:
        pkg = by_name[name]
        assert pkg["versionInfo"] == lock[name]["debian"]
        assert pkg["SPDXID"] in contained
        dsc = [sha for file, sha in lock[name]["files"].items() if file.endswith(".dsc")]
        assert pkg["checksums"] == [{"algorithm": "SHA256", "checksumValue": dsc[0]}]
        for file, sha in lock[name]["files"].items():
            assert f"{file} sha256:{sha}" in pkg["comment"]
    # Only what is linked: lwIP is the kernel's network stack, not the daemon's.
    assert {n for n in lock if n in by_name} == expected
    if pattern.endswith(".deb"):
        assert "libc6" in by_name


def test_deb_is_lintian_clean(release_dir):
    if shutil.which("lintian") is None:
        pytest.fail("lintian missing: scripts/setup-host.sh installs it")
    (deb,) = glob.glob(os.path.join(release_dir, "ternd_*_amd64.deb"))
    r = subprocess.run(["lintian", "--fail-on", "error,warning", deb], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not re.search(r"^[EW]: ", r.stdout, re.M), r.stdout


def test_deb_holds_the_hardened_unit_and_the_conffile(release_dir):
    (deb,) = glob.glob(os.path.join(release_dir, "ternd_*_amd64.deb"))
    listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True,
                             check=True).stdout
    for path in ("./usr/sbin/ternd", "./lib/systemd/system/ternd.service", "./etc/tern/tern.conf",
                 "./usr/share/doc/ternd/copyright", "./usr/share/man/man8/ternd.8.gz"):
        assert re.search(r"root/root .* " + re.escape(path) + "$", listing, re.M), path
    conffiles = subprocess.run(["dpkg-deb", "-I", deb, "conffiles"], capture_output=True,
                               text=True, check=True).stdout.split()
    assert conffiles == ["/etc/tern/tern.conf"]
    unit = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], capture_output=True, check=True).stdout
    import io
    import tarfile
    with tarfile.open(fileobj=io.BytesIO(unit)) as t:
        text = t.extractfile("./lib/systemd/system/ternd.service").read().decode()
    for line in ("NoNewPrivileges=yes", "ProtectSystem=strict", "StateDirectory=tern",
                 "CapabilityBoundingSet=", "User=tern"):
        assert re.search("^" + re.escape(line) + "$", text, re.M), line


def test_deb_copyright_names_the_linked_packages_at_deps_lock_versions(release_dir):
    """build.sh fills the versions in from deps/lock (their one source): a
    lock bump cannot leave the copyright file naming the old ones."""
    import io
    import tarfile
    (deb,) = glob.glob(os.path.join(release_dir, "ternd_*_amd64.deb"))
    data = subprocess.run(["dpkg-deb", "--fsys-tarfile", deb], capture_output=True,
                          check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        text = t.extractfile("./usr/share/doc/ternd/copyright").read().decode()
    assert not re.search(r"@[a-z0-9]+\.[a-z]+@", text), text
    words = " ".join(text.split())
    lock = read_lock()
    for name, label in (("wolfssl", "wolfSSL"), ("sqlite3", "SQLite")):
        assert f"source package {name} {lock[name]['debian']}" in words, name
        assert f"{label} {lock[name]['upstream']} (" in words, name
    assert lock["lwip"]["debian"] not in words
