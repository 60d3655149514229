"""A Paho client with a will, run as its own process by the will tests.

    paho_will_client.py PORT CLIENT_ID WILL_TOPIC WILL_PAYLOAD WILL_QOS WILL_RETAIN MODE

Prints CONNECTED once the broker accepted the connection. MODE "hang": stay
connected (the test kills the process with SIGKILL, so the kernel closes the
socket without an MQTT DISCONNECT). MODE "disconnect": send a clean
DISCONNECT and exit 0. Exits by itself after 60 s in any case.
"""

import sys
import time

import paho.mqtt.client as mqtt


def main():
    port, client_id, wtopic, wpayload, wqos, wretain, mode = sys.argv[1:8]
    c = mqtt.Client(client_id=client_id, clean_session=True)
    c.will_set(wtopic, wpayload, int(wqos), wretain == "1")
    connected = []
    c.on_connect = lambda client, userdata, flags, rc: connected.append(rc)
    c.connect("127.0.0.1", int(port), keepalive=60)
    deadline = time.monotonic() + 10
    while not connected and time.monotonic() < deadline:
        c.loop(0.05)
    if connected != [0]:
        print("CONNACK", connected, flush=True)
        return 1
    print("CONNECTED", flush=True)
    if mode == "disconnect":
        c.disconnect()
        return 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        c.loop(0.1)
    return 3


if __name__ == "__main__":
    sys.exit(main())
