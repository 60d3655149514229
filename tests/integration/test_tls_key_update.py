"""TLS 1.3 KeyUpdate from OpenSSL's s_client against ternd, whose record
layer after the handshake is its own (src/tls/record.c): after the
client's KeyUpdate, with and without asking for the server's, MQTT keeps
flowing both ways (a PINGREQ sent under the new key is answered under the
server's key, updated when asked) and the client's DISCONNECT arrives."""

import shutil
import subprocess
import time

import pytest

from mqttclients import wait_until

pytestmark = pytest.mark.tern_only

CONNECT = b"\x10\x0c\x00\x04MQTT\x04\x02\x00\x3c\x00\x00"   # clean session, empty id
CONNACK = b"\x20\x02\x00\x00"
PINGREQ, PINGRESP, DISCONNECT = b"\xc0\x00", b"\xd0\x00", b"\xe0\x00"


def s_client(tls, port):
    crt, key = tls.pki.cert("dev-client")
    # Not -quiet: it implies -ign_eof, which turns the K/k commands off.
    return subprocess.Popen(
        ["openssl", "s_client", "-connect", "127.0.0.1:%d" % port, "-tls1_3",
         "-CAfile", tls.pki.ca, "-cert", crt, "-key", key],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def send(p, data, pause=0.5):
    p.stdin.write(data)
    p.stdin.flush()
    time.sleep(pause)


@pytest.mark.skipif(shutil.which("openssl") is None, reason="no openssl")
@pytest.mark.parametrize("command", ["K", "k"], ids=["update-requested", "update-not-requested"])
def test_openssl_key_update_keeps_mqtt_flowing(tls, command):
    b = tls.start()
    p = s_client(tls, b.tls_port)
    try:
        wait_until(lambda: "identity dev-client" in b.stderr_text(), 10, what="handshake")
        send(p, CONNECT)
        send(p, command.encode() + b"\n")   # s_client: send a KeyUpdate
        send(p, PINGREQ)
        send(p, DISCONNECT)
        out, err = p.communicate(timeout=10)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert b"KEYUPDATE" in out + err, (out + err)[-500:]
    assert CONNACK in out
    assert PINGRESP in out[out.index(CONNACK):], "no PINGRESP after the KeyUpdate"
    wait_until(lambda: "client sent DISCONNECT" in b.stderr_text(), 5, what="DISCONNECT")
    assert "TLS error" not in b.stderr_text()
