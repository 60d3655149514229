"""Log lines one client can make the broker repeat are rate-limited
(issue 16 item 8, src/broker/log.c): at most 10 lines of a kind per 10 s,
then one line with the count of those suppressed."""

import re

import pytest

import rawmqtt as rm

pytestmark = pytest.mark.tern_only

N = 20000


def test_a_flood_of_refused_retained_messages_writes_a_bounded_number_of_lines(broker):
    b = broker(limits_max_retained=1, sys_interval=0)  # $SYS retains too
    c = rm.RawClient(b.host, b.port)
    assert c.connect(client_id="flooder").return_code == 0
    before = len(b.stderr_text().splitlines())
    # The first is kept; the other 19,999 are refused (delivered, not kept).
    c.send(b"".join(rm.publish("flood/%d" % i, b"x", retain=True) for i in range(N)))
    assert c.is_open_after_ping(timeout=60)  # everything before it was handled
    c.send(rm.disconnect())
    c.close()
    assert b.stop() == []  # the counts of windows still open come out at exit

    lines = b.stderr_text().splitlines()[before:]
    assert len(lines) < 60, "%d lines, the first: %s" % (len(lines), "\n".join(lines[:12]))
    refused = [line for line in lines if "delivered but not kept" in line]
    suppressed = [int(m.group(1)) for m in
                  (re.search(r"log: (\d+) more 'retained message not kept' lines suppressed",
                             line) for line in lines) if m]
    assert refused and "retained message on 'flood/" in refused[0]
    assert "from client flooder delivered but not kept" in refused[0]
    assert "limits.max_retained (1) reached" in refused[0]
    assert suppressed, "no line with the count of suppressed lines"
    # Nothing lost from the count: every refusal is a line or counted.
    assert len(refused) + sum(suppressed) == N - 1
    # One window of 10 s per 10 lines: the flood lasts seconds at most.
    assert len(refused) <= 10 * len(suppressed) + 10
