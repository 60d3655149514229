"""Trusted time (SPEC B4) in the kernel: SNTP servers run here on the
host's UDP ports, which the guest reaches as 10.0.2.2:PORT over QEMU's user
network (each server its own port: time.sntp_servers takes ADDRESS:PORT).
Agreeing servers set the clock; one liar among three is outvoted; an
agreed step beyond time.max_step is refused; without agreement (here: a
spoofed reply that does not echo our nonce is not counted) the clock and
TLS stay on the RTC floor (ADR-025), and the log and $SYS/broker/time/*
say so. One VM per case, run in parallel; each waits for its first round
(about 1.5 s after DHCP).
"""
import re
import socket
import struct
import threading
import time

from clients import mosq
from harness import MQTT_CONF, Failure, broker_vm, scratch, show

NTP_DELTA = 2208988800


def ntp_ts(t):
    sec = int(t)
    return ((sec + NTP_DELTA) & 0xffffffff) << 32 | int((t - sec) * (1 << 32))


class Server:
    """An SNTP server on 127.0.0.1: answers every client-mode request with
    the host's clock plus offset seconds; spoof: the originate timestamp
    is not the request's transmit timestamp (a blind spoofer's guess)."""

    def __init__(self, offset, spoof=False):
        self.offset, self.spoof, self.asked = offset, spoof, 0
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop:
            try:
                req, peer = self.sock.recvfrom(512)
            except socket.timeout:
                continue
            if len(req) < 48 or req[0] & 7 != 3:
                continue
            self.asked += 1
            now = time.time() + self.offset
            orig = req[40:48] if not self.spoof else bytes(8)[:7] + b"\x01"
            reply = struct.pack("!BBbb", (4 << 3) | 4, 2, 6, -20) + bytes(8) + b"LOCL" + \
                struct.pack("!Q", ntp_ts(now - 10)) + orig + \
                struct.pack("!QQ", ntp_ts(now), ntp_ts(now))
            self.sock.sendto(reply, peer)

    def close(self):
        self.stop = True
        self.thread.join(1)
        self.sock.close()


def sys_time(port):
    """$SYS/broker/time/* as a dict (sys.public in MQTT_CONF)."""
    out = mosq("mosquitto_sub", port, "-t", "$SYS/broker/time/#", "-v", "-W", "3",
               check=False).stdout.decode("utf-8", "replace")
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def sntp_test(kernel, offsets, want, sys_want, spoof=(), also=()):
    """Servers at these offsets (seconds; index in spoof: a spoofer), the
    broker configured with them: the line want (a regex) on serial, and
    each of also before it, then $SYS/broker/time/* holding sys_want's
    items (regex values)."""
    def check():
        servers = [Server(o, i in spoof) for i, o in enumerate(offsets)]
        try:
            conf = MQTT_CONF + b"time.sntp_servers = " + b",".join(
                b"10.0.2.2:%d" % s.port for s in servers) + b"\n"
            with scratch() as tmp:
                vm, port = broker_vm(kernel, conf, tmp)
                with vm:
                    took = vm.wait_for(lambda o: re.search(want, o) is not None, 60)
                    out = vm.text()
                    if took is None:
                        raise Failure(f"{want!r} not seen:\n{show(out[-2500:])}")
                    got = sys_time(port)
                    vm.expect_no_fatal()
        finally:
            for s in servers:
                s.close()
        for key, value in sys_want.items():
            topic = "$SYS/broker/time/" + key
            if topic not in got or not re.fullmatch(value, got[topic]):
                raise Failure(f"{topic}: want {value!r}, got {got.get(topic)!r} in {got}")
        for a in also:
            if not re.search(a, out):
                raise Failure(f"{a!r} not in:\n{show(out[-2500:])}")
        line = re.search(want, out).group(0).decode()
        return f"{took:.1f} s: {line}"
    return check


def cases(b):
    return {
        # The RTC is the host's clock, read to the second at boot (so up to
        # a second or two behind under TCG): servers 300 s ahead agree on
        # +300 s, give or take that.
        "sntp-agreeing-servers-set-the-clock": sntp_test(
            b.elf, (300, 300.2, 299.9),
            rb"tern: time: sntp agreed, 3 of 3 sources, offset (299\d\d\d|30[012]\d\d\d) ms: "
            rb"clock stepped, now [-\dT:]+Z \(sntp, agreed\)",
            {"status": "sntp", "sources": "3 configured, 3 answered, 3 agreeing",
             "offset_ms": r"(299\d\d\d|30[012]\d\d\d)", "refusals": "0",
             "last_sync": r"20\d\d-[-\dT:]+Z"}),
        "sntp-one-liar-among-three-outvoted": sntp_test(
            b.elf, (-86400, 120, 120.3),
            rb"tern: time: sntp agreed, 2 of 3 sources, offset 1[12]\d\d\d\d ms",
            {"status": "sntp", "sources": "3 configured, 3 answered, 2 agreeing"}),
        "sntp-step-beyond-maximum-refused": sntp_test(
            b.elf, (5000, 5000, 5000.1),
            rb"tern: time: sntp refused: 3 of 3 sources agree on \d+ ms, beyond time.max_step "
            rb"1000 s; certificates stay checked against the RTC \(ADR-025 floor\)",
            {"status": "rtc", "refusals": "1", "last_sync": "never"}),
        # A spoofer echoing the wrong nonce would make 2 of 3 agree at 0.
        "sntp-no-agreement-stays-on-rtc-floor": sntp_test(
            b.elf, (0, 0, 30), rb"tern: time: sntp no agreement: [^\n]*certificates stay "
            rb"checked against the RTC \(ADR-025 floor\)",
            {"status": "rtc", "sources": "3 configured, 2 answered, 0 agreeing",
             "refusals": "1"}, spoof=(1,),
            also=(rb"tern: time: 10\.0\.2\.2:\d+ originate timestamp does not echo our request",)),
    }
