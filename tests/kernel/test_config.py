"""Configurations and bundles refused: a plaintext configuration with an
unknown key or a bad value (store.path, a file store, and store.disk
naming a disk that is not there among them), a boot bundle with a missing or bad
certificate, an unknown key or a newer format, and a TLS listener on a
machine whose RTC gives no trustworthy date must each halt the kernel with
the reason on serial, neither serving nor resetting; the image builder
(tern-bundle) refuses, before any image exists, what the kernel would.
"""
import os
import time

from harness import (BANNER, MQTT_CONF, MTLS_ACL, MTLS_CONF, READY, Failure, Pki, broker_vm,
                     make_bundle, module_vm, scratch, show, tls_vm, write_file)


def halt_test(boot, *wants):
    """boot(tmp) starts a VM the kernel must halt in: every line of wants
    on serial, then a halt, no serving and no reset."""
    def check():
        with scratch() as tmp, boot(tmp) as vm:
            took = vm.wait_for(lambda o: b"halted" in o, 30)
            time.sleep(2)  # a reset would show a second banner by now
            out = vm.text()
        text = show(out)
        if took is None:
            raise Failure(f"no halt:\n{text}")
        for want in wants:
            if want not in text:
                raise Failure(f"{want!r} not in:\n{text}")
        if out.count(BANNER) != 1 or READY.search(out):
            raise Failure(f"served or reset:\n{text}")
        return f"{took:.1f} s"
    return check


def config_refused_test(kernel, conf, want):
    """A plaintext configuration (the boot module) with an unknown key or a
    bad value: the parser's message names the key and its line."""
    return halt_test(lambda tmp: broker_vm(kernel, conf, tmp)[0], want)


def clock_unset_test(kernel, build):
    """An RTC that says 2020 (a flat battery) gives no trustworthy date
    (ADR-025): the kernel says so, and with a TLS listener it halts rather
    than serving certificates it cannot check."""
    return halt_test(
        lambda tmp: module_vm(kernel, make_bundle(build, tmp, MTLS_CONF),
                              ["-nic", "user,model=virtio-net-pci"],
                              ["-rtc", "base=2020-06-01T00:00:00"]),
        "tern: clock: no date: the RTC says before 2025-01-01",
        "tern: config: tern.conf: listener.tls: no date: the RTC says before "
        "2025-01-01 (flat battery?); certificates cannot be checked",
        "tern: config refused: not serving; halted")


def raw_bundle(files):
    """A bundle written here, independently of tern-bundle (the kernel must
    also refuse what the builder would not make)."""
    out = b"tern-bundle 1\n"
    for name, data in files:
        out += b"file %d %s\n" % (len(data), name.encode()) + data + b"\n"
    return out + b"end\n"


def pki_files(pki, skip=(), replace=None):
    """The files of a bundle with the dev PKI's server certificate and CAs,
    without an ACL; skip leaves some out, replace changes their content."""
    conf = MTLS_CONF.replace("acl.file = tern.acl\n", "").encode()
    files = [("tern.conf", conf)]
    for name in ("server.crt", "server.key", "ca.crt", "operator-ca.crt"):
        if name in skip:
            continue
        with open(pki.path(name), "rb") as f:
            data = f.read()
        if replace and name in replace:
            data = replace[name]
        files.append((f"pki/{name}", data))
    return files


def bundle_refused_test(kernel, build, files, want):
    """A bundle the kernel must refuse (files(pki): the bundle, or the
    files to write one of): the reason on serial, then a halt."""
    def boot(tmp):
        content = files(Pki(build))
        bundle = content if isinstance(content, bytes) else raw_bundle(content)
        return tls_vm(kernel, write_file(tmp, "tern.bundle", bundle))[0]
    return halt_test(boot, want)


def builder_test(build):
    """The image builder refuses, with the daemon's message and before any
    image exists, what the kernel would refuse at boot."""
    def check():
        refusals = [
            (MTLS_CONF + "bogus.key = 1\n", MTLS_ACL, "tern.conf:10: unknown key 'bogus.key'"),
            (MTLS_CONF + "store.path = t.db\n", MTLS_ACL,
             "tern.conf:10: store.path: the unikernel keeps its store on a disk partition"),
            (MTLS_CONF.replace("pki/server.key", "pki/nothing.key"), MTLS_ACL,
             ("tern.conf:4: tls.key: ", "pki/nothing.key: No such file or directory")),
            (MTLS_CONF.replace("pki/server.key", "pki/dev-client.key"), MTLS_ACL,
             ("tern.conf:4: tls.key: ",
              "pki/dev-client.key: does not match the server certificate")),
            (MTLS_CONF, "tpoic read x\n", "tern.acl:1: unknown keyword 'tpoic'"),
        ]
        for conf, acl, want in refusals:
            with scratch() as tmp:
                try:
                    make_bundle(build, tmp, conf, acl)
                    raise Failure(f"tern-bundle accepted a configuration with {want!r}")
                except Failure as e:
                    for w in want if isinstance(want, tuple) else (want,):
                        if w not in str(e):
                            raise Failure(f"{w!r} not in: {e}")
                    if os.path.exists(os.path.join(tmp, "tern.bundle")):
                        raise Failure("a refused bundle was written anyway")
        return f"{len(refusals)} refusals"
    return check


def cases(b):
    return {
        "mqtt-config-unknown-key": config_refused_test(
            b.elf, MQTT_CONF.replace(b"sys.public", b"bogus.key = 1\nsys.public"),
            "tern: config: tern.conf:4: unknown key 'bogus.key'"),
        "net-static-bad-value": config_refused_test(
            b.elf, MQTT_CONF + b"net.ipv4 = 10.0.2.0/24\n",
            "tern: config: tern.conf:6: net.ipv4: '10.0.2.0/24' is the network's own address, "
            "not a host address"),
        "store-path-refused": config_refused_test(
            b.elf, MQTT_CONF + b"store.path = t.db\n",
            "tern: config: tern.conf:6: store.path: the unikernel keeps its store on a disk "
            "partition, not in a file: remove store.path and choose the disk with store.disk"),
        "store-disk-bad-value": config_refused_test(
            b.elf, MQTT_CONF + b"store.disk = sda\n",
            "tern: config: tern.conf:6: store.disk: expected auto, none, virtio-blk, "
            "virtio-scsi or a PCI address BB:DD.F, e.g. 00:04.0, got 'sda'"),
        "store-disk-missing": config_refused_test(
            b.elf, MQTT_CONF + b"store.disk = virtio-blk\n",
            "tern: config: tern.conf:6: store.disk: no such disk"),
        "image-builder-checks": builder_test(b.dir),
        "mqtt-mtls-clock-unset": clock_unset_test(b.elf, b.dir),
        "mqtt-mtls-missing-cert": bundle_refused_test(
            b.elf, b.dir, lambda pki: pki_files(pki, skip=("server.crt",)),
            "tern: config: tern.conf: tls.cert: 'pki/server.crt' is not in the image's bundle"),
        "mqtt-mtls-bad-cert": bundle_refused_test(
            b.elf, b.dir, lambda pki: pki_files(pki, replace={"server.crt": b"not a certificate"}),
            "tern: config: tern.conf:3: tls.cert: pki/server.crt: no PEM certificate found"),
        "mqtt-mtls-unknown-key": bundle_refused_test(
            b.elf, b.dir, lambda pki: [(n, d + b"bogus.key = 1\n" if n == "tern.conf" else d)
                                       for n, d in pki_files(pki)],
            "tern: config: tern.conf:9: unknown key 'bogus.key'"),
        "mqtt-mtls-bundle-version": bundle_refused_test(
            b.elf, b.dir, lambda pki: raw_bundle(pki_files(pki)).replace(b"tern-bundle 1",
                                                                         b"tern-bundle 2", 1),
            "tern: config: bundle format version 2: this kernel reads version 1; a newer "
            "release of tern is needed"),
    }
