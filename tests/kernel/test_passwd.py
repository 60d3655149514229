"""Password files in the unikernel (auth.password_file, SPEC C3): a file
written by Debian's mosquitto_passwd travels in the boot bundle; over the
guest's TLS listener, with no client certificate required, the right
password connects and the user name is the ACL identity, a wrong password
and an unknown user are refused after the core's delay (and logged and
counted), a certificate holder still connects, config-show lists the
file by its hash, and a password over the plaintext listener is refused. A bad file halts the kernel naming file and
line, and the image builder refuses it first. The unikernel has no reload:
its bundle is the RAM copy the loader made (docs/DECISIONS.md ADR-055).
"""
import hashlib
import json
import os
import subprocess
import time

from clients import Sub, mosq, sys_value
from harness import (BANNER, MTLS_CONF, READY, Failure, Pki, free_port, make_bundle, module_vm,
                     scratch, show, write_file)

CONF = MTLS_CONF + ("tls.require_client_cert = false\n"
                    "auth.password_file = users.pw\n"
                    "listener.plain = 0.0.0.0:1883\n")
USERS = (("alice", "secret"), ("bob", "b:ob pw"))


def passwd_file(tmp, users):
    """users.pw in tmp, written by mosquitto_passwd (its default: $7$)."""
    path = os.path.join(tmp, "users.pw")
    for i, (user, pw) in enumerate(users):
        subprocess.run(["mosquitto_passwd"] + (["-c"] if i == 0 else []) +
                       ["-b", path, user, pw], check=True, capture_output=True, timeout=20)
    with open(path) as f:
        if not f.read().startswith(users[0][0] + ":$7$"):
            raise Failure("mosquitto_passwd did not write a $7$ line")
    return path


def login_test(kernel, build):
    """One boot: right password in (the user name as the ACL identity),
    wrong password and unknown user refused after a second, a certificate
    holder in, a password on plaintext refused."""
    def check():
        notes = []
        with scratch() as tmp:
            pki = Pki(build)
            passwd_file(tmp, USERS)
            bundle = make_bundle(build, tmp, CONF)
            tport, pport = free_port(), free_port()
            vm = module_vm(kernel, bundle, [
                "-nic", f"user,model=virtio-net-pci,hostfwd=tcp:127.0.0.1:{tport}-:8883,"
                        f"hostfwd=tcp:127.0.0.1:{pport}-:1883"])
            with vm:
                took, out = vm.wait_ready(60)
                if b"tern: config: password file users.pw loaded (2 users)" not in out:
                    raise Failure("no password-file line:\n" + show(out))
                notes.append(f"ready {took:.1f} s")
                tls = pki.args()  # server verified, no client certificate

                def pub(user, pw, topic="test/pw", port=tport, args=tls):
                    t0 = time.monotonic()
                    r = mosq("mosquitto_pub", port, "-u", user, "-P", pw, "-t", topic,
                             "-m", "m", "-q", "1", tls=args, check=False)
                    return r, time.monotonic() - t0

                for user, pw in USERS:
                    r, t = pub(user, pw)
                    if r.returncode != 0:
                        raise Failure(f"{user} refused: {show(r.stderr)}")
                notes.append(f"right passwords in ({t:.2f} s)")
                # The user name is the identity: the ACL's clients/%u/# pattern.
                r = mosq("mosquitto_sub", tport, "-u", "alice", "-P", "secret",
                         "-t", "clients/alice/x", "-t", "clients/bob/x", "-C", "1",
                         "-W", "2", "-q", "1", "-d", tls=tls, check=False)
                # SUBACK's granted list: clients/alice/x QoS 1, clients/bob/x 0x80.
                if b"Subscribed (mid: 1): 1, 128" not in r.stdout:
                    raise Failure("alice's SUBACK is not [1, 128]:\n" + show(r.stdout + r.stderr))
                notes.append("alice: clients/alice/# granted, clients/bob/# denied")
                for user, pw in (("alice", "Secret"), ("nobody", "secret"), ("bob", "")):
                    r, t = pub(user, pw)
                    if r.returncode == 0 or b"bad user name or password" not in r.stderr.lower():
                        raise Failure(f"{user}/{pw!r} not refused as a bad password: "
                                      f"{show(r.stdout + r.stderr)}")
                    if t < 0.9:
                        raise Failure(f"{user}/{pw!r} refused after {t:.2f} s: not slowed")
                notes.append(f"wrong and unknown refused after {t:.2f} s")
                # Counted; $SYS is refreshed every second (sys.interval = 1).
                for _ in range(5):
                    failed = sys_value(tport, pki.args("dev-operator"),
                                       "$SYS/broker/clients/auth_failed")
                    if failed >= 3:
                        break
                    time.sleep(1)
                else:
                    raise Failure(f"$SYS/broker/clients/auth_failed {failed}, not 3")
                notes.append(f"auth_failed {failed}")
                mosq("mosquitto_pub", tport, "-t", "test/cert", "-m", "m",
                     tls=pki.args("dev-client"))
                notes.append("certificate holder in")
                # config-show names the file the image carries, by its hash.
                op = pki.args("dev-operator")
                answers = Sub(tport, ["$SYS/console/response/dev-operator"], tls=op)
                try:
                    answers.synced()
                    mosq("mosquitto_pub", tport, "-t", "$SYS/console/request", "-q", "1",
                         "-m", json.dumps({"command": "config-show"}), tls=op)
                    answers.wait(lambda ls: any('"config-show"' in l for l in ls), 20,
                                 "config-show answer")
                finally:
                    answers.stop()
                out = next(l for l in answers.lines if '"config-show"' in l).split(" ", 3)[3]
                files = {f["key"]: f for f in json.loads(out).get("files", [])}
                with open(os.path.join(tmp, "users.pw"), "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                if files.get("auth.password_file", {}).get("sha256") != digest:
                    raise Failure(f"config-show files: {files} in {out[:3000]}")
                notes.append("config-show lists it")
                r, _ = pub("alice", "secret", port=pport, args=())
                if r.returncode == 0 or b"not authori" not in r.stderr.lower():
                    raise Failure("password on plaintext not refused: " + show(r.stderr))
                notes.append("password over plaintext refused")
                text = show(vm.text())
                for want in ("CONNECT as user 'nobody' refused: bad user name or password",
                             "password sent in plaintext"):
                    if want not in text:
                        raise Failure(f"{want!r} not logged:\n{text}")
                vm.expect_no_fatal()
        return "; ".join(notes)
    return check


def bad_file_test(kernel, build):
    """A bundle whose password file has a $6$ line (written here: the
    builder refuses it first, with the same message) halts the kernel
    naming file and line."""
    want = "users.pw:2: $6$ hash"

    def check():
        with scratch() as tmp:
            passwd_file(tmp, USERS[:1])
            with open(os.path.join(tmp, "users.pw"), "a") as f:
                f.write("carol:$6$KgQx8os1bTcU8QTX$ElTb8zvshm+tZgCaRP6l2T4gqnPKZ5sNOF9QvlIDtml"
                        "dXldSWT1n104YKuy2xxQF8SIetk1goxjDhYDjhCpKxA==\n")
            try:
                make_bundle(build, tmp, CONF)
                raise Failure("tern-bundle accepted a $6$ line")
            except Failure as e:
                if want not in str(e):
                    raise Failure(f"{want!r} not in the builder's refusal: {e}")
            # The bundle by hand, as tern-bundle would write it.
            names = ["tern.conf", "pki/server.crt", "pki/server.key", "pki/ca.crt",
                     "pki/operator-ca.crt", "tern.acl", "users.pw"]
            out = b"tern-bundle 1\n"
            for name in names:
                with open(os.path.join(tmp, name), "rb") as f:
                    data = f.read()
                out += b"file %d %s\n" % (len(data), name.encode()) + data + b"\n"
            module = write_file(tmp, "bad.bundle", out + b"end\n")
            with module_vm(kernel, module, ["-nic", "user,model=virtio-net-pci"]) as vm:
                took = vm.wait_for(lambda o: b"halted" in o, 30)
                out = vm.text()
        text = show(out)
        if took is None or f"tern: config: {want}" not in text:
            raise Failure(f"no halt naming {want!r}:\n{text}")
        if out.count(BANNER) != 1 or READY.search(out):
            raise Failure(f"served or reset:\n{text}")
        return f"builder and kernel refuse it; halted in {took:.1f} s"
    return check


def cases(b):
    return {"passwd-login": login_test(b.test_elf, b.dir),
            "passwd-bad-file": bad_file_test(b.test_elf, b.dir)}
