"""Wills (SPEC C1): published when the client goes away without
DISCONNECT, never after a clean DISCONNECT."""

import signal
import time

import pytest

import rawmqtt as R
from mqttclients import PahoClient
from mqttclients import start_will_client as _start_will_client


@pytest.fixture
def start_will_client():
    """mqttclients.start_will_client, killing leftover processes at teardown."""
    procs = []

    def start(*args, **kwargs):
        p = _start_will_client(*args, **kwargs)
        procs.append(p)
        return p
    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=5)


def _kill(proc):
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=5)


def test_will_is_published_when_paho_client_process_is_killed(broker, start_will_client):
    b = broker()
    sub = PahoClient(b.port, client_id="will-sub")
    sub.connect()
    sub.subscribe("will/killed", 2)
    victim = start_will_client(b.port, "will-victim", "will/killed", "victim died", will_qos=1)
    _kill(victim)  # the kernel closes the socket; no MQTT DISCONNECT
    got = sub.wait_messages(1, timeout=5)
    assert [(m.topic, m.payload, m.qos, m.retain) for m in got] == [
        ("will/killed", b"victim died", 1, False)]
    sub.disconnect()


def test_will_is_published_when_raw_client_resets_connection(broker):
    b = broker()
    sub = PahoClient(b.port, client_id="will-sub-rst")
    sub.connect()
    sub.subscribe("will/rst", 1)
    raw = R.RawClient(b.host, b.port)
    assert raw.connect(client_id="will-rst", will=("will/rst", b"reset", 0, False)).return_code == 0
    raw.abort()  # TCP RST
    got = sub.wait_messages(1, timeout=5)
    assert [(m.payload, m.qos) for m in got] == [(b"reset", 0)]
    sub.disconnect()


def test_will_with_retain_flag_is_stored_as_retained(broker):
    b = broker()
    live = PahoClient(b.port, client_id="will-ret-live")
    live.connect()
    live.subscribe("will/retained", 1)
    raw = R.RawClient(b.host, b.port)
    assert raw.connect(client_id="will-ret", will=("will/retained", b"gone", 1, True)).return_code == 0
    raw.close()  # FIN without DISCONNECT
    # Live delivery: retain flag clear [MQTT-3.3.1-9].
    assert [(m.payload, m.retain) for m in live.wait_messages(1)] == [(b"gone", False)]
    late = PahoClient(b.port, client_id="will-ret-late")
    late.connect()
    late.subscribe("will/retained", 1)
    assert [(m.payload, m.retain) for m in late.wait_messages(1)] == [(b"gone", True)]
    late.disconnect()
    live.disconnect()


def test_will_is_not_published_after_clean_disconnect(broker, start_will_client):
    """Client A (will "A") disconnects cleanly; then client B (will "B") is
    killed. B's will proves the will path works and, arriving after A's
    DISCONNECT was handled, bounds the time we wait for a wrong "A"."""
    b = broker()
    sub = PahoClient(b.port, client_id="will-sub-clean")
    sub.connect()
    sub.subscribe("will/clean", 1)
    a = start_will_client(b.port, "will-clean-a", "will/clean", "A", will_qos=1, mode="disconnect")
    assert a.wait(timeout=10) == 0
    victim = start_will_client(b.port, "will-clean-b", "will/clean", "B", will_qos=1)
    _kill(victim)
    sub.wait_for(lambda ms: any(m.payload == b"B" for m in ms), timeout=5, what="will B")
    # Grace period for a (wrong) late will of A; A's socket was closed
    # before B even connected.
    time.sleep(0.3)
    assert [m.payload for m in sub.messages] == [b"B"]
    sub.disconnect()


def test_will_is_not_published_after_raw_disconnect_packet(broker):
    b = broker()
    sub = PahoClient(b.port, client_id="will-sub-raw-clean")
    sub.connect()
    sub.subscribe("will/raw-clean", 1)
    raw = R.RawClient(b.host, b.port)
    assert raw.connect(client_id="will-raw-clean", will=("will/raw-clean", b"A", 1, False)).return_code == 0
    raw.send(R.disconnect())
    # [MQTT-3.14.4-1]: after DISCONNECT the server closes the connection.
    raw.wait_closed(timeout=5)
    raw.close()
    raw2 = R.RawClient(b.host, b.port)
    assert raw2.connect(client_id="will-raw-b", will=("will/raw-clean", b"B", 1, False)).return_code == 0
    raw2.abort()
    sub.wait_for(lambda ms: any(m.payload == b"B" for m in ms), timeout=5, what="will B")
    time.sleep(0.3)
    assert [m.payload for m in sub.messages] == [b"B"]
    sub.disconnect()
