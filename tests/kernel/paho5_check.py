#!/usr/bin/python3
"""Paho MQTTv5 checks against the broker in the kernel over mutual TLS, run
by test_mqtt5.py with the system Python (python3-paho-mqtt 1.6.1):

- CONNACK's capabilities (receive maximum, topic alias maximum, maximum
  packet size; shared subscriptions and subscription identifiers not
  refused) and an assigned client identifier for an empty one
  [MQTT-3.1.3-7];
- a session with a Session Expiry Interval [MQTT-3.1.2-23] gets, after
  reconnecting, a QoS 2 message queued meanwhile with its user properties
  in order [MQTT-3.3.2-18], correlation data [MQTT-3.3.2-16], its
  subscription identifier [MQTT-3.3.4-3] and a message expiry interval
  reduced by the wait [MQTT-3.3.2-6]; one that had expired is not
  delivered [MQTT-3.3.2-5];
- a topic alias set by the publisher is resolved [MQTT-3.3.2-12];
- no local [MQTT-3.8.3-3];
- a shared subscription gives each message to one of two members.

Usage: paho5_check.py PORT CAFILE CERTFILE KEYFILE
       (prints "ok" or exits with a message)
"""
import sys
import threading
import time

import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

PORT = int(sys.argv[1])
CA, CERT, KEY = sys.argv[2:5]
TIMEOUT = 30


def props(ptype, **values):
    p = Properties(ptype)
    for k, v in values.items():
        setattr(p, k, v)
    return p


class Client:
    """A connected Paho MQTTv5 client over mutual TLS with bounded waits."""

    def __init__(self, cid, clean_start=True, **connect_props):
        self.cond = threading.Condition()
        self.msgs, self.subacks, self.connack = [], {}, None
        c = self.c = mqtt.Client(client_id=cid, protocol=mqtt.MQTTv5, reconnect_on_failure=False)
        c.tls_set(ca_certs=CA, certfile=CERT, keyfile=KEY)
        c.on_connect = self.on_connect
        c.on_message = self.on_message
        c.on_subscribe = self.on_subscribe
        c.connect("127.0.0.1", PORT, 30, clean_start=clean_start,
                  properties=props(PacketTypes.CONNECT, **connect_props) if connect_props else None)
        c.loop_start()
        self.wait(lambda: self.connack, "CONNACK")
        if self.connack[1] != 0:
            sys.exit(f"paho5 {cid}: CONNACK {self.connack[1]}")

    def on_connect(self, c, u, flags, rc, p=None):
        with self.cond:
            self.connack = (flags.get("session present"), rc.value,
                            p.json() if p is not None else {})
            self.cond.notify_all()

    def on_message(self, c, u, m):
        with self.cond:
            self.msgs.append((m.topic, m.payload, m.qos, m.properties))
            self.cond.notify_all()

    def on_subscribe(self, c, u, mid, codes, p=None):
        with self.cond:
            self.subacks[mid] = [x.value for x in codes]
            self.cond.notify_all()

    def wait(self, pred, what):
        deadline = time.monotonic() + TIMEOUT
        with self.cond:
            while not pred():
                left = deadline - time.monotonic()
                if left <= 0:
                    sys.exit(f"paho5: timed out waiting for {what}")
                self.cond.wait(left)
            return pred()

    def sub(self, flt, qos=1, sub_id=None, no_local=False):
        p = props(PacketTypes.SUBSCRIBE, SubscriptionIdentifier=sub_id) if sub_id else None
        _, mid = self.c.subscribe(flt, options=SubscribeOptions(qos=qos, noLocal=no_local),
                                  properties=p)
        codes = self.wait(lambda: self.subacks.get(mid), f"SUBACK of {flt}")
        if codes != [qos]:
            sys.exit(f"paho5: SUBACK of {flt}: {codes}")

    def pub(self, topic, payload, qos=1, **publish_props):
        p = props(PacketTypes.PUBLISH, **publish_props) if publish_props else None
        info = self.c.publish(topic, payload, qos, properties=p)
        info.wait_for_publish(TIMEOUT)

    def close(self):
        self.c.disconnect()
        self.c.loop_stop()


def check(cond, what):
    if not cond:
        sys.exit("paho5: " + what)


# CONNACK and the assigned client identifier.
a = Client("")
_, _, caps = a.connack
check(caps.get("AssignedClientIdentifier"), f"no assigned client id: {caps}")
for key in ("ReceiveMaximum", "TopicAliasMaximum", "MaximumPacketSize"):
    check(caps.get(key, 0) > 0, f"CONNACK without {key}: {caps}")
check(caps.get("SharedSubscriptionAvailable", 1) == 1, f"shared subscriptions: {caps}")
check(caps.get("SubscriptionIdentifierAvailable", 1) == 1, f"subscription ids: {caps}")
a.close()

# Session expiry, queued message with its properties, message expiry.
s = Client("paho5-keep", SessionExpiryInterval=300)
s.sub("test/v5/q", 2, sub_id=11)
s.close()
p = Client("paho5-pub")
pairs = [("z", "1"), ("a", "2"), ("z", "3")]
p.pub("test/v5/q", b"expired", 1, MessageExpiryInterval=1)
p.pub("test/v5/q", b"queued", 2, MessageExpiryInterval=600, UserProperty=pairs,
      CorrelationData=b"\x01\x02", ResponseTopic="test/v5/reply")
p.close()
time.sleep(2.5)
s = Client("paho5-keep", clean_start=False, SessionExpiryInterval=300)
check(s.connack[0], "session not present after reconnect")
s.wait(lambda: s.msgs, "the queued message")
time.sleep(0.5)
check([m[1] for m in s.msgs] == [b"queued"], f"queued messages: {[m[1] for m in s.msgs]}")
topic, payload, qos, mp = s.msgs[0]
check(qos == 2, f"QoS {qos}")
check(mp.UserProperty == pairs, f"user properties {mp.UserProperty}")
check(mp.CorrelationData == b"\x01\x02" and mp.ResponseTopic == "test/v5/reply",
      "request/response properties")
check(11 in mp.SubscriptionIdentifier, f"subscription id {mp.SubscriptionIdentifier}")
check(590 <= mp.MessageExpiryInterval <= 598, f"remaining expiry {mp.MessageExpiryInterval}")
s.close()

# Topic alias (inbound), no local, shared subscription.
s = Client("paho5-sub")
s.sub("test/v5/alias", 1)
s.sub("test/v5/nl", 1, no_local=True)
m1, m2 = Client("paho5-m1"), Client("paho5-m2")
m1.sub("$share/g/test/v5/sh", 1)
m2.sub("$share/g/test/v5/sh", 1)
p = Client("paho5-pub2")
p.pub("test/v5/alias", b"a1", TopicAlias=1)
p.pub("", b"a2", TopicAlias=1)
s.pub("test/v5/nl", b"own")
p.pub("test/v5/nl", b"other")
for i in range(10):
    p.pub("test/v5/sh", b"%d" % i)
s.wait(lambda: len(s.msgs) >= 3, "alias and no-local messages")
got = sorted((t, pl) for t, pl, _, _ in s.msgs)
check(got == [("test/v5/alias", b"a1"), ("test/v5/alias", b"a2"), ("test/v5/nl", b"other")],
      f"alias/no local: {got}")
m1.wait(lambda: len(m1.msgs) + len(m2.msgs) >= 10, "10 shared messages")
time.sleep(0.5)
shared = sorted([x[1] for x in m1.msgs + m2.msgs], key=int)
check(shared == [b"%d" % i for i in range(10)], f"shared: {shared}")
check(m1.msgs and m2.msgs, f"one member got all: {len(m1.msgs)}/{len(m2.msgs)}")
for c in (s, m1, m2, p):
    c.close()
print("ok")
