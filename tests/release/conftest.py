"""Fixtures of the release tests (make release-check, docs/RELEASING.md): two
fresh clones of the commit under test, in directories of different names and
depths, each running `make release` with one throwaway minisign key.

The builds take most of the time (each compiles the daemon, the tools and
the unikernel from nothing); they run once per session and every test
reads their output. TERN_RELEASE_JOBS sets make's -j for each (default 2).

TERN_RELEASE_DIR=DIR (with TERN_RELEASE_PUB=the public key that signed it)
runs the tests that need one release on DIR instead, without building; the
comparison of two builds then fails, since there is only one.
"""
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def run(cmd, **kw):
    kw.setdefault("check", True)
    return subprocess.run(cmd, **kw)


def git_head():
    return run(["git", "-C", REPO, "rev-parse", "HEAD"], capture_output=True,
               text=True).stdout.strip()


@pytest.fixture(scope="session")
def minisign_key(tmp_path_factory):
    """A throwaway key pair without a password (-W): (secret, public)."""
    if os.environ.get("TERN_RELEASE_DIR"):
        return None, os.environ["TERN_RELEASE_PUB"]
    if shutil.which("minisign") is None:
        pytest.fail("minisign missing: scripts/setup-host.sh installs it")
    d = tmp_path_factory.mktemp("minisign")
    sec, pub = d / "release.key", d / "release.pub"
    run(["minisign", "-G", "-W", "-s", str(sec), "-p", str(pub)], capture_output=True)
    return sec, pub


@pytest.fixture(scope="session")
def releases(tmp_path_factory, minisign_key):
    """Two release directories from two clean clones of HEAD: [(path, seconds)]."""
    if os.environ.get("TERN_RELEASE_DIR"):
        return [(Path(os.environ["TERN_RELEASE_DIR"]), 0.0)]
    commit = git_head()
    base = tmp_path_factory.mktemp("release")
    # Different names and depths: a build path leaking into an artifact
    # shows up as a difference.
    clones = [base / "a" / "tern", base / "second-clone" / "deeper" / "src"]
    out = []
    for clone in clones:
        clone.parent.mkdir(parents=True)
        run(["git", "clone", "-q", "--no-checkout", REPO, str(clone)])
        run(["git", "-C", str(clone), "checkout", "-q", "--detach", commit])
        env = dict(os.environ, MINISIGN_KEY=str(minisign_key[0]),
                   RELEASE_JOBS=os.environ.get("TERN_RELEASE_JOBS", "2"))
        env.pop("RELEASE_ALLOW_DIRTY", None)
        start = time.monotonic()
        r = run(["make", "-C", str(clone), "--no-print-directory", "release"], env=env,
                capture_output=True, text=True, check=False)
        seconds = time.monotonic() - start
        if r.returncode != 0:
            pytest.fail(f"make release in {clone} failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")
        print(f"make release in {clone}: {seconds:.0f} s")
        out.append((clone / "build" / "release", seconds))
    return out


@pytest.fixture(scope="session")
def release_dir(releases):
    return releases[0][0]
