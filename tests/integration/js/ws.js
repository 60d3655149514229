// MQTT.js over WebSocket (ws:// and wss://) for tern's WebSocket tests
// (tests/integration/test_websocket.py).
//
//   node ws.js '{"url": "wss://127.0.0.1:PORT/mqtt", "ca": FILE, "cert": FILE, "key": FILE}'
//
// One scenario, several clients: a subscriber gets QoS 0, 1 and 2
// messages, a retained message (from a client that connected after it
// was published), a will (a client whose socket is destroyed without
// DISCONNECT), and a large message (MQTT.js sends it in one WebSocket
// message; tern's answer to a subscriber goes out in frames of at most
// 64 KiB, so it spans several). Prints one JSON line with what was
// received; the Python test judges it. An unexpected error or the time-out
// prints {"error": ...} and exits 1.
'use strict';

const fs = require('fs');
const mqtt = require('mqtt');

const args = JSON.parse(process.argv[2] || '{}');
const LIMIT_MS = (args.timeout || 20) * 1000;
const BIG = args.big || 300000;

function fail(what) {
  process.stdout.write(JSON.stringify({ error: String(what && what.stack || what) }) + '\n');
  process.exit(1);
}
setTimeout(() => fail(`timed out after ${LIMIT_MS} ms`), LIMIT_MS).unref();
process.on('unhandledRejection', fail);

function tlsOpts() {
  if (!args.ca) return {};
  const o = { ca: fs.readFileSync(args.ca), rejectUnauthorized: true, servername: 'localhost' };
  if (args.cert) { o.cert = fs.readFileSync(args.cert); o.key = fs.readFileSync(args.key); }
  return o;
}

function connect(opts) {
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(args.url, Object.assign({
      protocolVersion: 4, reconnectPeriod: 0, connectTimeout: 5000, clean: true,
    }, tlsOpts(), opts));
    const onError = (err) => { c.end(true); reject(err); };
    c.once('error', onError);
    c.once('connect', () => { c.removeListener('error', onError); resolve(c); });
  });
}

function waitFor(pred, ms, what) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const tick = () => {
      if (pred()) return resolve();
      if (Date.now() - t0 > ms) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 10);
    };
    tick();
  });
}

(async () => {
  const t = args.topic || 'ws/t';
  const got = [];
  const pub = await connect({});
  await pub.publishAsync(`${t}/retained`, 'kept', { qos: 1, retain: true });
  const sub = await connect({});
  sub.on('message', (topic, payload, packet) => {
    got.push({ topic, qos: packet.qos, retain: packet.retain, len: payload.length,
               payload: payload.length <= 64 ? payload.toString() : null,
               intact: payload.length === BIG ? payload.every((b, i) => b === (i % 251)) : null });
  });
  await sub.subscribeAsync(`${t}/#`, { qos: 2 });
  await waitFor(() => got.length >= 1, 5000, 'the retained message');
  for (const qos of [0, 1, 2]) await pub.publishAsync(`${t}/q${qos}`, `qos${qos}`, { qos });
  const big = Buffer.alloc(BIG);
  for (let i = 0; i < BIG; i++) big[i] = i % 251;
  await pub.publishAsync(`${t}/big`, big, { qos: 1 });
  const dying = await connect({ will: { topic: `${t}/will`, payload: 'gone', qos: 1 } });
  dying.stream.destroy(); // no DISCONNECT: the will fires
  await waitFor(() => got.length >= 6, 10000, 'six messages');
  await pub.endAsync();
  await sub.endAsync();
  process.stdout.write(JSON.stringify({ received: got }) + '\n');
  process.exit(0);
})().catch(fail);
