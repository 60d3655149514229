"""MQTT over WebSocket from a real browser: headless Chromium (Debian's
chromium package) opens a page that loads MQTT.js's browser bundle (from
the npm mqtt package, served by this test) and publishes and subscribes
through tern's listener.ws; the page reports what it received by
publishing it, and the test reads that on the plaintext listener.
"""

import functools
import http.server
import json
import os
import shutil
import signal
import subprocess
import threading
import time
import uuid

import pytest

import rawmqtt as rm
from conftest import HOST
from mqtt5clients import JS_DIR
from test_websocket import ws_broker

pytestmark = pytest.mark.tern_only

BUNDLE = os.path.join(JS_DIR, "node_modules", "mqtt", "dist", "mqtt.min.js")
CHROMIUM = shutil.which("chromium")


class _Files(http.server.SimpleHTTPRequestHandler):
    """Serves the page and the bundle only."""

    def translate_path(self, path):
        name = path.split("?", 1)[0]
        return {"/index.html": os.path.join(JS_DIR, "browser.html"),
                "/mqtt.min.js": BUNDLE}.get(name, "/nonexistent")

    def log_message(self, *args):
        pass


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (make setup)")
@pytest.mark.skipif(not os.path.exists(BUNDLE), reason="MQTT.js is not installed (make setup)")
def test_chromium_publishes_and_subscribes_through_listener_ws(broker, tmp_path):
    b = ws_broker(broker)
    watcher = rm.RawClient(HOST, b.port)
    watcher.connect(client_id="browser-watch")
    watcher.subscribe([("browser/result", 1)])
    httpd = http.server.ThreadingHTTPServer((HOST, 0), _Files)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    nonce = uuid.uuid4().hex[:8]
    url = "http://%s:%d/index.html?ws=ws://%s:%d/mqtt&nonce=%s" % (
        HOST, httpd.server_address[1], HOST, b.ws_port, nonce)
    chrome = subprocess.Popen(
        [CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-extensions", "--user-data-dir=%s" % (tmp_path / "chromium"), url],
        stdout=subprocess.DEVNULL, stderr=open(tmp_path / "chromium.log", "wb"),
        start_new_session=True)
    try:
        pkt = watcher.expect(rm.PUBLISH, timeout=20.0)
    finally:
        os.killpg(chrome.pid, signal.SIGKILL)  # the browser's own process group
        chrome.wait(timeout=10)
        httpd.shutdown()
    topic_len = int.from_bytes(pkt.body[:2], "big")
    result = json.loads(pkt.body[2 + topic_len + 2:])  # QoS 1: a packet id follows the topic
    assert result["nonce"] == nonce
    assert result["topic"] == "browser/echo"
    assert result["payload"].startswith("hello from ")
