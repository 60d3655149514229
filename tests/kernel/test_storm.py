"""A handshake storm against the unikernel (issue 19, SPEC B7), through
QEMU's user network: tern-bench first measures the guest's closed-loop
peak of full mutual-TLS connections, then new clients arrive at ten times
it (open loop, a 3 s connect timeout and one retry each, like devices)
while four bystander clients connected before the storm time their own
QoS 1 messages. Checked: completed handshakes per second stay at or
above 80% of the peak, the bystanders' p99 stays bounded, no client that
got its CONNACK is dropped, and no connection is reset or closed during
its handshake: the SYNs the guest would not serve are dropped (QEMU's user
network accepts the host side at once and keeps retrying the guest, so a
dropped SYN shows as a client timeout, a reset or refused one as a close).

Under TCG a handshake costs the guest ~10 ms of CPU, so the peak is tens
to a hundred per second; the test takes about a minute. It runs with no
other test beside it (harness.exclusive): the ratio compares two phases
of one run, and a neighbouring guest that boots or idles in one phase and
works in the other changes the host under them (CI saw 67% that way
while the guest alone gives 84-97%).
"""
import json
import os
import subprocess

from harness import MTLS_ACL, MTLS_CONF, Failure, Pki, exclusive, make_bundle, scratch, show, tls_vm

# The storm is all from one address (QEMU's NAT: 10.0.2.2): the
# per-address bound must not be what is measured.
STORM_CONF = MTLS_CONF.replace("tls.handshake_timeout = 3", "tls.handshake_timeout = 10") + \
    "limits.max_handshakes_per_address = 1024\n"

# tern-bench's bystanders use topics under tern-bench/.
STORM_ACL = MTLS_ACL + "topic readwrite tern-bench/#\n"

PEAK_S = 6
STORM_S = 12
# Done-when of issue 19: at least 80% of the peak during the storm.
MIN_RATIO = 0.8
# Bystanders' QoS 1 round trip under TCG while the guest is saturated:
# a few handshake turns (the per-turn step budget) at ~10 ms a step.
MAX_BYSTANDER_P99_MS = 1500


def bench(build, pki, port, args, timeout):
    cmd = [os.path.join(build, "rel", "tern-bench")] + args + \
        ["--port", str(port), "--label", "tern-kernel"] + pki.args("dev-client")
    r = subprocess.run(cmd, capture_output=True, timeout=timeout)
    if r.returncode != 0:
        raise Failure(f"tern-bench {args[0]} failed: {show(r.stderr)}")
    return json.loads(r.stdout.decode().strip().splitlines()[-1])


def storm(build):
    def check():
        with scratch() as tmp:
            pki = Pki(build)
            vm, port = tls_vm(os.path.join(build, "kernel", "tern.elf"),
                              make_bundle(build, tmp, STORM_CONF, STORM_ACL))
            with vm:
                vm.wait_ready(60)
                peak = bench(build, pki, port, ["handshake", "--conns", "8", "--duration",
                                                str(PEAK_S)], 60)["results"]["per_s"]
                if peak <= 0:
                    raise Failure("no handshake completed in the closed loop")
                rate = 10 * peak
                r = bench(build, pki, port,
                          ["storm", "--rate", f"{rate:.1f}", "--duration", str(STORM_S),
                           "--conns", "3000", "--connect-timeout", "3", "--retries", "1",
                           "--retry-delay", "1", "--hold", "1", "--bystanders", "4",
                           "--bystander-rate", "5", "--qos", "1"], 120)["results"]
                ratio = r["completed_per_s"] / peak
                p99 = r["bystander_latency"]["p99_ms"]
                note = (f"peak {peak:.0f}/s closed loop; storm offered {r['offered_per_s']:.0f}/s: "
                        f"completed {r['completed_per_s']:.0f}/s ({ratio:.0%} of peak, median "
                        f"second {r['completed_per_s_median']}/s, worst {r['completed_per_s_min']}/s), "
                        f"{r['handshake_timeouts']} attempts timed out, "
                        f"{r['handshake_failed']} closed or reset in the handshake, "
                        f"{r['dropped_after_connack']} dropped after CONNACK; bystanders p50 "
                        f"{r['bystander_latency']['p50_ms']:.0f} ms, p99 {p99:.0f} ms, "
                        f"{r['bystanders']['lost']} lost")
                if ratio < MIN_RATIO:
                    raise Failure("completed rate under 80% of the peak: " + note)
                if r["dropped_after_connack"] or r["ping_timeouts"] or r["bystanders"]["lost"]:
                    raise Failure("a connected client was dropped: " + note)
                if r["handshake_failed"] or r["tcp_refused_or_reset"]:
                    raise Failure("connections closed or reset instead of their SYN "
                                  "dropped: " + note)
                if r["bystanders"]["received"] == 0 or p99 > MAX_BYSTANDER_P99_MS:
                    raise Failure("bystanders' latency unbounded: " + note)
                if r["handshake_timeouts"] == 0:
                    raise Failure("the storm never exceeded the guest's capacity: " + note)
                vm.expect_no_fatal()
                return note
    # Peak and storm must see the same host: no other guest beside them.
    return exclusive(check)


def cases(b):
    return {"storm-mtls": storm(b.dir)}
