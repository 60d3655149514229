#!/usr/bin/env python3
"""sbom.py - an SPDX 2.3 JSON SBOM per release artifact (tools/release/build.sh,
docs/RELEASING.md): the artifact itself (name, version, SHA-256) and every
third-party source package linked into it, with the exact Debian versions and
the SHA-256 of every source file from deps/lock; for the .deb also its runtime
dependencies (glibc, ...) as dpkg-shlibdeps found them.

What each artifact contains (one source: LINKED below):
  the images (ISO, disk): the unikernel, which compiles wolfSSL, SQLite and
      lwIP in, and GRUB (the build machine's Debian grub-pc-bin and
      grub-efi-amd64-bin, whose versions dpkg reports; their checksums are not
      in deps/lock, so the SBOM says NOASSERTION for them);
  the .deb: ternd, which links wolfSSL and SQLite statically;
  the source archive: tern's source, which names deps/lock's packages as
      build dependencies.

Deterministic: the creation time is SOURCE_DATE_EPOCH, the namespace is made
from the version and commit, lists are in a fixed order.
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import time

# What links which deps/lock package (Debian source package names).
LINKED = {
    "image": ("wolfssl", "sqlite3", "lwip"),
    "deb": ("wolfssl", "sqlite3"),
    "source": (),
}
# The upstream licenses of the pinned packages, as their debian/copyright
# says for the files tern compiles.
LICENSES = {"wolfssl": "GPL-2.0-or-later", "sqlite3": "blessing", "lwip": "BSD-3-Clause"}
# GRUB in the images: Debian binary packages of the build machine.
GRUB_PACKAGES = ("grub-pc-bin", "grub-efi-amd64-bin")


def read_lock(path):
    """deps/lock -> {package: {"upstream", "debian", "files": [(name, sha256)]}}.
    Raises ValueError on a malformed line (the lock is our own file, but a
    broken SBOM must not be written silently)."""
    packages = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            fields = line.split()
            if len(fields) != 5 or len(fields[4]) != 64:
                raise ValueError(f"{path}:{number}: expected 5 fields ending in a SHA-256")
            name, upstream, debian, file, sha = fields
            entry = packages.setdefault(name, {"upstream": upstream, "debian": debian, "files": []})
            if (entry["upstream"], entry["debian"]) != (upstream, debian):
                raise ValueError(f"{path}:{number}: {name} has two versions")
            entry["files"].append((file, sha))
    return packages


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def spdx_id(text):
    return "SPDXRef-" + "".join(c if c.isalnum() or c in ".-" else "-" for c in text)


def lock_package(name, entry):
    dsc = [sha for file, sha in entry["files"] if file.endswith(".dsc")]
    return {
        "SPDXID": spdx_id("deb-source-" + name),
        "name": name,
        "versionInfo": entry["debian"],
        "supplier": "Organization: Debian",
        "downloadLocation": f"https://deb.debian.org/debian/pool/main/{name[0]}/{name}/",
        "filesAnalyzed": False,
        # The .dsc's checksum identifies the whole source package.
        "checksums": [{"algorithm": "SHA256", "checksumValue": dsc[0]}] if dsc else [],
        "licenseConcluded": "NOASSERTION",
        "licenseDeclared": LICENSES.get(name, "NOASSERTION"),
        "copyrightText": "NOASSERTION",
        "comment": f"upstream {entry['upstream']}; Debian source files (deps/lock): "
        + ", ".join(f"{file} sha256:{sha}" for file, sha in entry["files"]),
        "externalRefs": [{
            "referenceCategory": "PACKAGE-MANAGER",
            "referenceType": "purl",
            "referenceLocator": f"pkg:deb/debian/{name}@{entry['debian']}?arch=source",
        }],
    }


def host_package(name, version, note):
    return {
        "SPDXID": spdx_id("deb-" + name),
        "name": name,
        "versionInfo": version,
        "supplier": "Organization: Debian",
        "downloadLocation": "NOASSERTION",
        "filesAnalyzed": False,
        "licenseConcluded": "NOASSERTION",
        "licenseDeclared": "NOASSERTION",
        "copyrightText": "NOASSERTION",
        "comment": note,
        "externalRefs": [{
            "referenceCategory": "PACKAGE-MANAGER",
            "referenceType": "purl",
            "referenceLocator": f"pkg:deb/debian/{name}@{version}?arch=amd64",
        }],
    }


def dpkg_version(name):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", name], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout:
        raise SystemExit(f"sbom: dpkg-query: {name} is not installed")
    return r.stdout


def parse_depends(depends):
    """'libc6 (>= 2.34), libfoo1' -> [("libc6", ">= 2.34"), ("libfoo1", "")]."""
    out = []
    for part in depends.split(","):
        part = part.strip()
        if not part:
            continue
        name, _, rest = part.partition(" ")
        out.append((name, rest.strip("() ")))
    return out


def document(args, artifact, kind, lock, extra):
    path = os.path.join(args.out, artifact)
    main = {
        "SPDXID": "SPDXRef-artifact",
        "name": artifact,
        "versionInfo": args.version,
        "supplier": "Organization: tern maintainers",
        "downloadLocation": "NOASSERTION",
        "filesAnalyzed": False,
        "checksums": [{"algorithm": "SHA256", "checksumValue": sha256_file(path)}],
        "licenseConcluded": "NOASSERTION",
        "licenseDeclared": "NOASSERTION",
        "copyrightText": "NOASSERTION",
        "comment": f"tern {args.version}, commit {args.commit}",
    }
    packages = [main]
    relationships = [{"spdxElementId": "SPDXRef-DOCUMENT", "relationshipType": "DESCRIBES",
                      "relatedSpdxElement": "SPDXRef-artifact"}]
    linked = LINKED[kind]
    for name in linked:
        if name not in lock:
            raise SystemExit(f"sbom: {name} is not in {args.lock}")
        pkg = lock_package(name, lock[name])
        packages.append(pkg)
        relationships.append({
            "spdxElementId": "SPDXRef-artifact",
            "relationshipType": "CONTAINS" if kind != "source" else "BUILD_DEPENDENCY_OF",
            "relatedSpdxElement": pkg["SPDXID"],
        })
    if kind == "source":
        for name in sorted(lock):
            pkg = lock_package(name, lock[name])
            packages.append(pkg)
            relationships.append({"spdxElementId": pkg["SPDXID"],
                                  "relationshipType": "BUILD_DEPENDENCY_OF",
                                  "relatedSpdxElement": "SPDXRef-artifact"})
    for pkg, relation in extra:
        packages.append(pkg)
        relationships.append({"spdxElementId": "SPDXRef-artifact", "relationshipType": relation,
                              "relatedSpdxElement": pkg["SPDXID"]})
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(args.epoch))
    return {
        "spdxVersion": "SPDX-2.3",
        "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT",
        "name": f"{artifact} SBOM",
        "documentNamespace": f"https://tern.invalid/spdx/{args.version}/{args.commit}/{artifact}",
        "creationInfo": {"created": created, "creators": ["Tool: tern tools/release/sbom.py"]},
        "documentDescribes": ["SPDXRef-artifact"],
        "packages": packages,
        "relationships": relationships,
    }


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lock", required=True)
    ap.add_argument("--version", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--epoch", required=True, type=int)
    ap.add_argument("--out", required=True)
    ap.add_argument("--image", action="append", default=[])
    ap.add_argument("--deb", action="append", default=[])
    ap.add_argument("--deb-depends", default="")
    ap.add_argument("--source", action="append", default=[])
    args = ap.parse_args(argv)
    try:
        lock = read_lock(args.lock)
    except (OSError, ValueError) as e:
        raise SystemExit(f"sbom: {e}")
    grub = [(host_package(name, dpkg_version(name), "GRUB, from the build machine's Debian package"),
             "CONTAINS") for name in GRUB_PACKAGES]
    runtime = [(host_package(name, dpkg_version(name),
                             f"runtime dependency (Depends: {name}{' ' + bound if bound else ''}); "
                             "the version is the build machine's"), "DEPENDS_ON")
               for name, bound in parse_depends(args.deb_depends)]
    jobs = [(a, "image", grub) for a in args.image] + [(a, "deb", runtime) for a in args.deb] + \
           [(a, "source", []) for a in args.source]
    for artifact, kind, extra in jobs:
        doc = document(args, artifact, kind, lock, extra)
        with open(os.path.join(args.out, artifact + ".spdx.json"), "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=2, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
