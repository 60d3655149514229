"""MQTT 5.0 in the kernel over mutual TLS (issue 15): the production
kernel with the image's mutual-TLS configuration, driven by Paho MQTTv5
(paho5_check.py, system Python): CONNACK capabilities and an assigned
client id, session and message expiry with a queued message's
properties, subscription identifiers, a topic alias, no local, a shared
subscription; then a raw 5.0 client taken over by another connection
gets DISCONNECT 0x8E.
"""
import os
import socket
import ssl
import subprocess

from clients import mtls_broker_check
from harness import MTLS_CONF, Failure, show

HERE = os.path.dirname(os.path.abspath(__file__))
PAHO5_CHECK = os.path.join(HERE, "paho5_check.py")


def serve(vm, tmp, pki, cl, notes):
    took, _ = vm.wait_ready(60)
    notes.append(f"ready {took:.1f} s")
    r = subprocess.run(["/usr/bin/python3", PAHO5_CHECK, str(cl.port), pki.path("ca.crt"),
                        pki.path("dev-client.crt"), pki.path("dev-client.key")],
                       capture_output=True, timeout=240)
    if r.returncode != 0 or r.stdout.strip() != b"ok":
        raise Failure("paho5: " + show(r.stdout + r.stderr) + "\nserial output ends:\n"
                      + show(vm.text()[-3000:]))
    notes.append("Paho MQTTv5 over mTLS ok")
    takeover(pki, cl.port)
    notes.append("takeover DISCONNECT 0x8E")
    vm.expect_no_fatal()


def takeover(pki, port):
    """[MQTT-3.1.4-3]: a second connection with the same client id; the
    first gets DISCONNECT 0x8E (Session taken over) and is closed."""
    ctx = pki.context("dev-client")
    conn5 = bytes([0x10, 17, 0, 4]) + b"MQTT" + bytes([5, 0x02, 0, 60, 0, 0, 4]) + b"twin"
    socks = []
    for _ in range(2):
        raw = socket.create_connection(("127.0.0.1", port), timeout=30)
        s = ctx.wrap_socket(raw, server_hostname="localhost")
        s.sendall(conn5)
        ack = s.recv(64)
        if len(ack) < 4 or ack[0] != 0x20 or ack[3] != 0:
            raise Failure(f"5.0 CONNACK: {ack.hex()}")
        socks.append(s)
    data = b""
    while True:
        try:
            chunk = socks[0].recv(64)
        except (OSError, ssl.SSLError):
            break
        if not chunk:
            break
        data += chunk
    if len(data) < 3 or data[0] != 0xE0 or data[2] != 0x8E:
        raise Failure(f"the taken-over connection got {data.hex()}, not DISCONNECT 0x8E")
    for s in socks:
        s.close()


def cases(b):
    return {"mqtt5-mtls": mtls_broker_check(b.elf, b.dir, MTLS_CONF, serve)}
