#!/usr/bin/python3
"""Paho client checks against the broker in the kernel, run by run.py with
the system Python (where python3-paho-mqtt lives): a persistent session
subscribed at QoS 2 gets a message queued while it is offline, delivered
at QoS 2 when it comes back. With a CA and a client certificate, over
mutual TLS.

Usage: paho_check.py PORT [CAFILE CERTFILE KEYFILE]
       (prints "ok" or exits with a message)
"""
import sys
import threading

import paho.mqtt.client as mqtt

PORT = int(sys.argv[1])
TLS = sys.argv[2:5] if len(sys.argv) >= 5 else None
got = []
message = threading.Event()
subscribed = threading.Event()


def on_message(client, userdata, msg):
    got.append((msg.topic, msg.payload, msg.qos))
    message.set()


def client(cid, clean):
    c = mqtt.Client(client_id=cid, clean_session=clean)
    c.on_message = on_message
    c.on_subscribe = lambda *a: subscribed.set()
    if TLS:
        c.tls_set(ca_certs=TLS[0], certfile=TLS[1], keyfile=TLS[2])
    c.connect("127.0.0.1", PORT, 30)
    c.loop_start()
    return c


def done(c):
    c.disconnect()
    c.loop_stop()


s = client("paho-persist", False)
s.subscribe("paho/q", qos=2)
if not subscribed.wait(20):
    sys.exit("paho: no SUBACK")
done(s)
p = client("paho-pub", True)
p.publish("paho/q", b"while away", qos=2).wait_for_publish()
done(p)
s = client("paho-persist", False)
ok = message.wait(20)
done(s)
if not ok or got[0] != ("paho/q", b"while away", 2):
    sys.exit(f"paho: queued QoS 2 message after reconnect: got {got}")
print("ok")
