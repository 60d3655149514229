"""A handshake storm against the unikernel (issue 19, SPEC B7), through
QEMU's user network: tern-bench first measures the guest's closed-loop
peak of full mutual-TLS connections (32 at once, enough to keep the
guest's CPU busy: 8, as before, left it waiting on round trips and gave
a peak 30-40% low on some runs), then new clients arrive at ten times it
(open loop, a 3 s connect timeout and one retry each, like devices) while
four bystander clients connected before the storm time their own QoS 1
messages. Checked: no client that got its CONNACK is dropped, no
connection is reset or closed during its handshake (the SYNs the guest
would not serve are dropped: QEMU's user network accepts the host side at
once and keeps retrying the guest, so a dropped SYN shows as a client
timeout, a reset or refused one as a close), the bystanders' p99 stays
bounded, and the completed rate stays at or above MIN_RATIO of the peak.

MIN_RATIO is a guard against collapse (Mosquitto completes 2-17% of its
peak under its storm), not issue 19's bar of 80%: against a peak the guest
really reaches, the kernel completes 57-83% of it under TCG (PROGRESS,
"Not yet"), so the 80% line is reported in the note, not enforced here.

Under TCG a handshake costs the guest ~6 ms of CPU, so the peak is about
a hundred or two per second; the test takes about a minute. It runs with
no other test beside it (harness.exclusive), and with two host CPUs the
guest's vCPU has one to itself (pin()): the ratio compares two phases of
one run, and anything else on the guest's CPU in one phase and not the
other changes the guest under them.
"""
import json
import os
import subprocess

from harness import (MTLS_ACL, MTLS_CONF, Failure, Pki, exclusive, free_port, make_bundle,
                     module_vm, scratch, show)

# The storm is all from one address (QEMU's NAT: 10.0.2.2): the
# per-address bound must not be what is measured.
STORM_CONF = MTLS_CONF.replace("tls.handshake_timeout = 3", "tls.handshake_timeout = 10") + \
    "limits.max_handshakes_per_address = 1024\n"

# tern-bench's bystanders use topics under tern-bench/.
STORM_ACL = MTLS_ACL + "topic readwrite tern-bench/#\n"

PEAK_S = 6
STORM_S = 12
# Issue 19's bar (reported), and the collapse guard (enforced): see above.
BAR_RATIO = 0.8
MIN_RATIO = 0.5
# Bystanders' QoS 1 round trip under TCG while the guest is saturated:
# a few handshake turns (the per-turn step budget) at ~10 ms a step.
MAX_BYSTANDER_P99_MS = 1500


# With two or more host CPUs the guest's vCPU thread gets CPU 1 to itself
# and everything else (QEMU's main loop, where its user network runs, and
# tern-bench) shares CPU 0, in the peak and the storm alike: the storm's
# thousands of host-side sockets then cost the host's other core, not the
# guest's, and the ratio is the guest's.
GUEST_CPU, HOST_CPU = 1, 0


def pin(vm):
    """vCPU threads (named by -name debug-threads=on) to GUEST_CPU, QEMU's
    other threads to HOST_CPU; False when the host has one CPU."""
    if (os.cpu_count() or 1) < 2:
        return False
    tasks = os.path.join("/proc", str(vm.proc.pid), "task")
    for tid in os.listdir(tasks):
        try:
            with open(os.path.join(tasks, tid, "comm")) as f:
                vcpu = f.read().startswith("CPU ")
            os.sched_setaffinity(int(tid), {GUEST_CPU if vcpu else HOST_CPU})
        except (FileNotFoundError, ProcessLookupError):
            pass  # a short-lived helper thread that is gone
    return True


def bench(build, pki, port, args, timeout, pinned):
    cmd = (["taskset", "-c", str(HOST_CPU)] if pinned else []) + \
        [os.path.join(build, "rel", "tern-bench")] + args + \
        ["--port", str(port), "--label", "tern-kernel"] + pki.args("dev-client")
    r = subprocess.run(cmd, capture_output=True, timeout=timeout)
    if r.returncode != 0:
        raise Failure(f"tern-bench {args[0]} failed: {show(r.stderr)}")
    return json.loads(r.stdout.decode().strip().splitlines()[-1])


def storm(build):
    def check():
        with scratch() as tmp:
            pki = Pki(build)
            port = free_port()
            vm = module_vm(os.path.join(build, "kernel", "tern.elf"),
                           make_bundle(build, tmp, STORM_CONF, STORM_ACL),
                           ["-nic", f"user,model=virtio-net-pci,"
                                    f"hostfwd=tcp:127.0.0.1:{port}-:8883"],
                           ["-name", "tern-storm,debug-threads=on"])
            with vm:
                vm.wait_ready(60)
                pinned = pin(vm)
                peak = bench(build, pki, port, ["handshake", "--conns", "32", "--duration",
                                                str(PEAK_S)], 60, pinned)["results"]["per_s"]
                if peak <= 0:
                    raise Failure("no handshake completed in the closed loop")
                rate = 10 * peak
                r = bench(build, pki, port,
                          ["storm", "--rate", f"{rate:.1f}", "--duration", str(STORM_S),
                           "--conns", "3000", "--connect-timeout", "3", "--retries", "1",
                           "--retry-delay", "1", "--hold", "1", "--bystanders", "4",
                           "--bystander-rate", "5", "--qos", "1"], 120, pinned)["results"]
                ratio = r["completed_per_s"] / peak
                p99 = r["bystander_latency"]["p99_ms"]
                note = (f"peak {peak:.0f}/s closed loop; storm offered {r['offered_per_s']:.0f}/s: "
                        f"completed {r['completed_per_s']:.0f}/s ({ratio:.0%} of peak, median "
                        f"second {r['completed_per_s_median']}/s, worst {r['completed_per_s_min']}/s), "
                        f"{r['handshake_timeouts']} attempts timed out, "
                        f"{r['handshake_failed']} closed or reset in the handshake, "
                        f"{r['dropped_after_connack']} dropped after CONNACK; bystanders p50 "
                        f"{r['bystander_latency']['p50_ms']:.0f} ms, p99 {p99:.0f} ms, "
                        f"{r['bystanders']['lost']} lost" + ("; vCPU pinned" if pinned else ""))
                if ratio < MIN_RATIO:
                    raise Failure(f"completed rate under {MIN_RATIO:.0%} of the peak: " + note)
                note += ("; at or above " if ratio >= BAR_RATIO else "; below ") + \
                    f"issue 19's {BAR_RATIO:.0%}"
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
