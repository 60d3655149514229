"""tern-mkdisk --guid-seed (release builds, docs/RELEASING.md): the same seed
gives the same disk image bytes, another seed other GUIDs, no seed random
ones, and a malformed seed is refused. Uses build/rel/tern-mkdisk (made here
when missing); seconds, no release build needed."""
import hashlib
import os
import subprocess

import pytest

from conftest import REPO

# 64 varied bytes: the layout refuses two partitions with one GUID, which a
# repeated pattern would give.
SEED_A = hashlib.sha512(b"seed a").hexdigest()
SEED_B = hashlib.sha512(b"seed b").hexdigest()


@pytest.fixture(scope="module")
def mkdisk():
    tool = os.path.join(REPO, "build", "rel", "tern-mkdisk")
    subprocess.run(["make", "-C", REPO, "--no-print-directory", "build/rel/tern-mkdisk"],
                   check=True, capture_output=True)
    return tool


def image(mkdisk, path, *seed):
    subprocess.run([mkdisk, "--size", "160M", "--bios-boot", "1M", "--esp", "64M", *seed, str(path)],
                   check=True, capture_output=True)
    with open(path, "rb") as f:
        head = f.read(1 << 20)
        f.seek(-(1 << 20), os.SEEK_END)
        return head + f.read()


def disk_guid(mkdisk, path):
    out = subprocess.run([mkdisk, "--show", str(path)], capture_output=True, text=True,
                         check=True).stdout
    return out.split("GPT ", 1)[1].split()[0]


def test_same_guid_seed_gives_identical_images(mkdisk, tmp_path):
    a = image(mkdisk, tmp_path / "a.img", "--guid-seed", SEED_A)
    b = image(mkdisk, tmp_path / "b.img", "--guid-seed", SEED_A)
    assert a == b


def test_other_or_no_guid_seed_gives_other_guids(mkdisk, tmp_path):
    image(mkdisk, tmp_path / "a.img", "--guid-seed", SEED_A)
    image(mkdisk, tmp_path / "b.img", "--guid-seed", SEED_B)
    image(mkdisk, tmp_path / "r1.img")
    image(mkdisk, tmp_path / "r2.img")
    guids = {disk_guid(mkdisk, tmp_path / n) for n in ("a.img", "b.img", "r1.img", "r2.img")}
    assert len(guids) == 4


@pytest.mark.parametrize("seed", ["ab" * 63, "ab" * 65, "zz" * 64, ""])
def test_malformed_guid_seed_is_refused(mkdisk, tmp_path, seed):
    r = subprocess.run([mkdisk, "--size", "160M", "--guid-seed", seed, str(tmp_path / "x.img")],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "--guid-seed needs 128 hex digits" in r.stderr
    assert not (tmp_path / "x.img").exists()
