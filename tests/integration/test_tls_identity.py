"""Mutual TLS: a certificate whose subject has more than one CN names no
single identity and is refused when the identity is the CN (tls.identity =
cn, the default), like two subjectAltNames of the configured type; with a
SAN identity the CNs do not matter. Certificates made with openssl
(`openssl req -subj "/CN=alice/CN=bob"`) and signed by the test CA;
unmodified clients (mosquitto_pub, Python's ssl)."""

import os
import socket
import ssl
import subprocess

import pytest

from mqttclients import mosq_pub, wait_until

pytestmark = pytest.mark.tern_only

CONNECT = b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x3c\x00\x00"   # clean session, empty id
AMBIGUOUS = "failed: ambiguous identity"


def log_has(b, text, timeout=5):
    wait_until(lambda: text in b.stderr_text(), timeout, what="log line %r" % text)


def _openssl(*args):
    res = subprocess.run(["openssl"] + list(args), capture_output=True, timeout=60)
    assert res.returncode == 0, "openssl %s: %s" % (" ".join(args), res.stderr.decode())
    return res.stdout.decode()


class Certs:
    """Client certificates with unusual subjects, issued by the test CA."""

    def __init__(self, directory, pki):
        self.dir = str(directory)
        self.pki = pki

    def issue(self, name, subj, san=None, multivalue=False):
        key = os.path.join(self.dir, name + ".key")
        csr = os.path.join(self.dir, name + ".csr")
        crt = os.path.join(self.dir, name + ".crt")
        ext = os.path.join(self.dir, name + ".ext")
        with open(ext, "w") as f:
            f.write("basicConstraints = critical,CA:FALSE\n"
                    "keyUsage = critical,digitalSignature\n"
                    "extendedKeyUsage = clientAuth\n")
            if san:
                f.write("subjectAltName = %s\n" % san)
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                 "-out", key)
        _openssl("req", "-new", "-key", key, "-subj", subj, "-out", csr,
                 *(["-multivalue-rdn"] if multivalue else []))
        # x509 -req keeps the subject exactly as requested (`openssl ca`
        # would apply a policy to it).
        _openssl("x509", "-req", "-in", csr, "-CA", self.pki.ca,
                 "-CAkey", self.pki.path("ca.key"), "-set_serial", "0x" + os.urandom(8).hex(),
                 "-days", "30", "-sha256", "-extfile", ext, "-out", crt)
        return crt, key

    def args(self, name):
        crt, key = (os.path.join(self.dir, name + ext) for ext in (".crt", ".key"))
        return ["--cafile", self.pki.ca, "--cert", crt, "--key", key]


@pytest.fixture(scope="module")
def certs(tls_pki, tmp_path_factory):
    c = Certs(tmp_path_factory.mktemp("cn-certs"), tls_pki)
    crt, _ = c.issue("two-cn", "/CN=alice/CN=bob")
    subject = _openssl("x509", "-in", crt, "-noout", "-subject", "-nameopt", "RFC2253")
    assert subject.strip() == "subject=CN=bob,CN=alice"   # RFC 2253 lists the last RDN first
    crt, _ = c.issue("two-cn-rdn", "/CN=alice+CN=bob", multivalue=True)
    subject = _openssl("x509", "-in", crt, "-noout", "-subject", "-nameopt", "RFC2253")
    assert subject.strip() in ("subject=CN=alice+CN=bob", "subject=CN=bob+CN=alice")
    c.issue("two-cn-san", "/CN=alice/CN=bob", san="DNS:sensor-9.example")
    return c


def test_certificate_with_two_cns_is_refused_as_ambiguous(tls, certs):
    b = tls.start()
    res = mosq_pub(b.tls_port, "t/x", "m", extra=certs.args("two-cn"), check=False)
    assert res.returncode != 0, "mosquitto_pub with CN=alice, CN=bob was accepted"
    log_has(b, AMBIGUOUS + ": the certificate has more than one CN")
    text = b.stderr_text()
    assert "identity bob" not in text and "identity alice" not in text
    # Everyone else still gets in.
    mosq_pub(b.tls_port, "t/x", "m", extra=tls.mosq_args("dev-client"))
    log_has(b, "identity dev-client (TLSv1.3")


def test_python_client_with_two_cns_gets_no_connack(tls, certs):
    b = tls.start()
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(tls.pki.ca)
    ctx.load_cert_chain(*(os.path.join(certs.dir, "two-cn" + e) for e in (".crt", ".key")))
    got = b""
    with socket.create_connection((b.host, b.tls_port), timeout=5) as s:
        # TLS 1.3: the client's handshake ends before the server has judged
        # its certificate; the refusal arrives as an alert on the next read.
        try:
            with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
                t.sendall(CONNECT)
                got = t.recv(4)
        except (ssl.SSLError, ConnectionError):
            pass
    assert got == b"", "a CONNACK came back: %r" % got
    log_has(b, AMBIGUOUS)


def test_two_cns_in_one_rdn_are_refused(tls, certs):
    """CN=alice+CN=bob (a multi-valued RDN): wolfSSL does not parse it and
    refuses the certificate as invalid; either way it gets no identity."""
    b = tls.start()
    res = mosq_pub(b.tls_port, "t/x", "m", extra=certs.args("two-cn-rdn"), check=False)
    assert res.returncode != 0, "mosquitto_pub with CN=alice+CN=bob was accepted"
    wait_until(lambda: "TLS handshake with" in b.stderr_text(), 5, what="a refusal in the log")
    text = b.stderr_text()
    assert AMBIGUOUS in text or "failed: certificate invalid" in text, b.stderr_tail()
    assert "identity bob" not in text and "identity alice" not in text


def test_two_cns_do_not_matter_when_the_identity_is_a_san(tls, certs):
    b = tls.start(tls_identity="san-dns")
    mosq_pub(b.tls_port, "t/x", "m", extra=certs.args("two-cn-san"))
    log_has(b, "identity sensor-9.example (TLSv1.3")
    assert AMBIGUOUS not in b.stderr_text()
