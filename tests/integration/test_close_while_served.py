"""A connection that the connection layer closes while serving leftover
input (from its ready list, before the turn's socket events) must not be
touched by an event for it still waiting in the same epoll batch. A client
that sends many packets under a tiny work budget and then closes is the
case: its end of input is read from the ready list while epoll, level-
triggered, reports the readable EOF again in that turn."""

import socket
import time

import rawmqtt


def test_client_closing_behind_leftover_input_is_closed_once(broker):
    b = broker(config={"limits.work_budget": "1"})
    for round_ in range(5):
        s = socket.create_connection(("127.0.0.1", b.port), timeout=5)
        s.sendall(rawmqtt.connect(client_id="burst-%d" % round_) + rawmqtt.pingreq() * 300)
        s.shutdown(socket.SHUT_WR)
        got = b""
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
        s.close()
        assert got.startswith(b"\x20\x02\x00\x00")
        assert got.count(b"\xd0\x00") == 300
    # The broker is still alive and serving (a crash would also show as a
    # sanitizer report when the fixture stops it).
    c = socket.create_connection(("127.0.0.1", b.port), timeout=5)
    c.sendall(rawmqtt.connect(client_id="after"))
    assert c.recv(4) == b"\x20\x02\x00\x00"
    c.close()
