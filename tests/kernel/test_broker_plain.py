"""The plaintext broker in the kernel: the test build with a configuration
as its boot module, a host port forwarded to the guest's 1883, driven by
the unmodified mosquitto_pub/mosquitto_sub, Paho and raw sockets: QoS
0/1/2, a 300 kB message, retained, will, a persistent session, $SYS memory
for 100 idle connections and all of it back after, and garbage closing
only its own connection.
"""
import socket

from clients import CORE_MEMORY, Clients, expect_pings, paho, raw_client, settle_memory
from harness import MQTT_CONF, Failure, broker_vm, expect_lines, scratch


def mqtt_test(kernel):
    """QoS 0/1/2 through the broker, a 300 kB message, a retained message,
    a will, a Paho persistent session, $SYS memory for 100 idle
    connections (and all of it back after), garbage closing only its
    connection."""
    def check():
        notes = []
        with scratch() as tmp:
            vm, port = broker_vm(kernel, MQTT_CONF, tmp)
            with vm, Clients(port) as cl:
                took, out = vm.wait_ready(60)
                expect_lines(out, (rb"tern: config: tern\.conf from boot module \(\d+ bytes\)",
                                   rb"tern: mqtt: plaintext port 1883"))
                notes.append(f"ready {took:.1f} s")

                cl.pubsub(tmp, 30)
                cl.retained("ret/a", "ret/#")
                cl.will()
                notes.append("paho persistent QoS 2 ok" if paho(port)
                             else "paho not installed, skipped")

                # Core memory for 100 idle connections, and all of it back after.
                core0 = settle_memory(port, topic=CORE_MEMORY)
                m0 = settle_memory(port)
                for i in range(100):
                    cl.socks.append(raw_client(port, f"idle-{i:03d}"))
                core1 = settle_memory(port, topic=CORE_MEMORY)
                m1 = settle_memory(port)
                notes.append(f"100 idle connections: core memory {core0} -> {core1} bytes, "
                             f"{(core1 - core0) / 100:.0f} per connection; kernel heap "
                             f"{m0} -> {m1}, {(m1 - m0) / 100:.0f} per connection")

                # Garbage closes only its own connection: the idle ones still answer.
                bad = socket.create_connection(("127.0.0.1", port), timeout=20)
                bad.sendall(b"\xff\xffthis is not MQTT\r\n")
                try:
                    if bad.recv(16) != b"":
                        raise Failure("garbage: the broker answered instead of closing")
                except ConnectionResetError:
                    pass
                bad.close()
                expect_pings(cl.socks)
                cl.close_socks()
                m2 = settle_memory(port)
                notes.append(f"heap {m2} after closing them")
                # $SYS values grow by a digit now and then; a leak of even one
                # allocation per connection would be more than 1700 bytes. Only
                # growth is a leak: the first reading once caught a 4 KiB
                # buffer that was about to be freed (4112 bytes lower after).
                if m2 - m0 > 1024:
                    raise Failure(f"heap {m0} before, {m2} after 100 connections closed")
                vm.expect_no_fatal()
        return "; ".join(notes)
    return check


def cases(b):
    return {"mqtt-broker": mqtt_test(b.test_elf)}
