"""A broker-wide budget for buffered input (limits.max_input_bytes, issue 16
item 3): four clients each sending 200 MB of a declared 256 MB PUBLISH no
longer make the broker hold all of it. Once the budget is spent the
connections holding the most are not read; others keep being served; the
holders are closed when the budget stays spent."""

import socket
import threading
import time

import pytest

import rawmqtt

pytestmark = pytest.mark.tern_only

DECLARED = 256 * 1024 * 1024 - 16
BUDGET = 256 * 1024 * 1024


def vm_rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def send_partial(port, index, sent, stop):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(rawmqtt.connect(client_id="big-%d" % index))
    header = bytes([0x30]) + rawmqtt.varint(DECLARED) + rawmqtt.mqtt_string("big")
    s.sendall(header)
    chunk = bytes(1 << 20)
    s.settimeout(2)
    try:
        while sent[index] < 200 * 1024 * 1024 and not stop.is_set():
            s.sendall(chunk)
            sent[index] += len(chunk)
    except (socket.timeout, OSError):
        pass  # the broker stopped reading (or closed): that is the point
    stop.wait(30)
    s.close()


def test_four_200mb_partial_publishes_are_stopped_by_the_input_budget(broker):
    b = broker(config={"limits.max_packet_size": str(DECLARED + 5),
                       "limits.max_queued_bytes": str(DECLARED + 5),
                       "limits.max_queued_bytes_per_identity": str(DECLARED + 5),
                       "limits.max_input_bytes": str(BUDGET)})
    base = vm_rss(b.proc.pid)
    sent = [0, 0, 0, 0]
    stop = threading.Event()
    threads = [threading.Thread(target=send_partial, args=(b.port, i, sent, stop))
               for i in range(4)]
    for t in threads:
        t.start()
    try:
        # Wait until the senders are stalled by the broker.
        deadline = time.monotonic() + 60
        last = -1
        while time.monotonic() < deadline:
            time.sleep(1)
            if sum(sent) == last:
                break
            last = sum(sent)
        assert sum(sent) < 4 * 200 * 1024 * 1024, sent
        grown = vm_rss(b.proc.pid) - base
        # The budget plus its slack (each holder's tail grows by doubling,
        # a read's worth each, socket buffers), far below the 800 MB sent
        # at it: ASan's own overhead is included in RSS.
        assert grown < BUDGET * 2.5, (grown, sent)
        assert "input budget spent" in b.stderr_text()
        # Someone else is still served meanwhile.
        other = socket.create_connection(("127.0.0.1", b.port), timeout=5)
        other.sendall(rawmqtt.connect(client_id="small"))
        assert other.recv(4) == b"\x20\x02\x00\x00"
        t0 = time.monotonic()
        other.sendall(rawmqtt.pingreq())
        assert other.recv(2) == b"\xd0\x00"
        assert time.monotonic() - t0 < 0.5
        other.close()
        # The budget stays spent: the holders are closed within the wait
        # (10 s) and what they held is freed.
        deadline = time.monotonic() + 30
        while "the input budget (limits.max_input_bytes) stayed spent" not in b.stderr_text():
            assert time.monotonic() < deadline, b.stderr_tail()
            time.sleep(0.5)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
