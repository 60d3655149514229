// MQTT.js (the npm mqtt package, protocolVersion 5) scenarios for tern's
// integration tests (tests/integration/test_mqtt5_mqttjs.py).
//
//   node runner.js SCENARIO '{"host": "127.0.0.1", "port": 1883, ...}'
//
// Each scenario drives real MQTT.js clients against the broker and prints
// one JSON line with what they saw; the Python test asserts on it. The
// runner judges nothing itself except its own failures: an unexpected
// error or its time-out prints {"error": ...} and exits 1. Every client
// has reconnectPeriod 0, so MQTT.js never reconnects on its own (that
// would hide a takeover or a server DISCONNECT).
'use strict';

const mqtt = require('mqtt');

const [scenario, argText] = process.argv.slice(2);
const args = JSON.parse(argText || '{}');
const url = `mqtt://${args.host || '127.0.0.1'}:${args.port}`;
const LIMIT_MS = (args.timeout || 15) * 1000;

function done(result) {
  process.stdout.write(JSON.stringify(result) + '\n');
  process.exit(0);
}

function fail(what) {
  process.stdout.write(JSON.stringify({ error: String(what && what.stack || what) }) + '\n');
  process.exit(1);
}

setTimeout(() => fail(`scenario ${scenario} timed out after ${LIMIT_MS} ms`), LIMIT_MS).unref();

// A connected client; resolves with [client, connack packet]. Rejects on a
// refusing CONNACK (MQTT.js reports it as an error with .code). got: an
// array that collects the client's messages from the start (messages may
// come in the same read as the CONNACK).
function connect(opts, got) {
  return new Promise((resolve, reject) => {
    const c = mqtt.connect(url, Object.assign({
      protocolVersion: 5, reconnectPeriod: 0, connectTimeout: 5000, clean: true,
    }, opts));
    if (got) collectInto(c, got);
    const onError = (err) => { c.end(true); reject(err); };
    c.once('error', onError);
    c.once('connect', (connack) => { c.removeListener('error', onError); resolve([c, connack]); });
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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function collectInto(c, got) {
  c.on('message', (topic, payload, packet) => {
    got.push({
      topic, payload: payload.toString(), qos: packet.qos, retain: packet.retain,
      properties: packet.properties || {},
    });
  });
}

const scenarios = {
  // CONNACK's properties as MQTT.js reads them.
  async connack() {
    const [c, connack] = await connect({});
    await c.endAsync();
    done({ sessionPresent: connack.sessionPresent, reasonCode: connack.reasonCode || 0,
           properties: connack.properties || {} });
  },

  // Topic aliases both ways: the publisher sets alias 1 with the topic,
  // then publishes with an empty topic and the alias; the subscriber
  // accepts aliases from the server (topicAliasMaximum) and MQTT.js
  // resolves them.
  async aliases() {
    const got = [];
    const [sub] = await connect({ properties: { topicAliasMaximum: 10 } }, got);
    await sub.subscribeAsync(args.topic, { qos: 1 });
    const [pub, connack] = await connect({});
    const n = args.count || 5;
    for (let i = 0; i < n; i++) {
      const topic = i === 0 ? args.topic : '';
      await pub.publishAsync(topic, `m${i}`, { qos: 1, properties: { topicAlias: 1 } });
    }
    await waitFor(() => got.length >= n, 5000, `${n} messages`);
    await pub.endAsync();
    await sub.endAsync();
    done({ serverTopicAliasMaximum: (connack.properties || {}).topicAliasMaximum,
           received: got.map((m) => ({ topic: m.topic, payload: m.payload,
                                       alias: m.properties.topicAlias })) });
  },

  // Session expiry: a session with a long interval survives a disconnect
  // (and gets what was published meanwhile); one with a short interval is
  // gone after it.
  async session() {
    const id = args.clientId;
    const [a] = await connect({ clientId: id, clean: false,
                                properties: { sessionExpiryInterval: args.expiry } });
    await a.subscribeAsync(args.topic, { qos: 1 });
    await a.endAsync();
    const [pub] = await connect({});
    await pub.publishAsync(args.topic, 'while-away', { qos: 1 });
    await pub.endAsync();
    await sleep(args.waitMs || 0);
    const got = [];
    const [b, connack] = await connect({ clientId: id, clean: false,
                                         properties: { sessionExpiryInterval: 0 } }, got);
    await sleep(args.settleMs || 500);
    await b.endAsync();
    done({ sessionPresent: connack.sessionPresent, received: got.map((m) => m.payload) });
  },

  // Shared subscription: two members of one group split the messages.
  async shared() {
    const members = [];
    const gots = [];
    for (let i = 0; i < 2; i++) {
      const got = [];
      const [m] = await connect({}, got);
      gots.push(got);
      await m.subscribeAsync(`$share/${args.group}/${args.topic}`, { qos: 1 });
      members.push(m);
    }
    const [pub] = await connect({});
    const n = args.count || 10;
    for (let i = 0; i < n; i++) await pub.publishAsync(args.topic, `s${i}`, { qos: 1 });
    await waitFor(() => gots[0].length + gots[1].length >= n, 5000, `${n} messages`);
    await sleep(200);
    await pub.endAsync();
    for (const m of members) await m.endAsync();
    done({ received: gots.map((g) => g.map((m) => m.payload)) });
  },

  // User properties (a repeated key too) reach the subscriber.
  async userprops() {
    const got = [];
    const [sub] = await connect({}, got);
    await sub.subscribeAsync(args.topic, { qos: 1 });
    const [pub] = await connect({});
    await pub.publishAsync(args.topic, 'with-props', {
      qos: 1, properties: { userProperties: args.userProperties, contentType: 'text/plain' } });
    await waitFor(() => got.length >= 1, 5000, 'the message');
    await pub.endAsync();
    await sub.endAsync();
    done({ properties: got[0].properties });
  },

  // An authentication method the server does not support: the CONNACK's
  // reason code, as MQTT.js reports it.
  async badauth() {
    try {
      const [c, connack] = await connect({ properties: { authenticationMethod: args.method } });
      await c.endAsync();
      done({ connected: true, reasonCode: connack.reasonCode || 0 });
    } catch (err) {
      done({ connected: false, code: err.code === undefined ? null : err.code,
             message: String(err.message) });
    }
  },

  // SUBACK reason codes for the filters in args.filters, as received (the
  // 'packetreceive' event's SUBACK: MQTT.js turns a refusal into an error
  // that does not always keep the code).
  async suback() {
    const [c] = await connect({});
    let lastSuback = null;
    c.on('packetreceive', (packet) => { if (packet.cmd === 'suback') lastSuback = packet; });
    const res = [];
    for (const f of args.filters) {
      lastSuback = null;
      await new Promise((resolve) => c.subscribe(f, { qos: 1 }, () => resolve()));
      await waitFor(() => lastSuback !== null, 5000, `the SUBACK of ${f}`);
      res.push({ filter: f, codes: lastSuback.granted });
    }
    await c.endAsync();
    done({ results: res });
  },

  // Takeover: a second connection with the same client id; the first
  // connection's 'disconnect' event carries the server's DISCONNECT.
  async takeover() {
    const [first] = await connect({ clientId: args.clientId });
    let disconnect = null;
    let closed = false;
    first.on('disconnect', (packet) => { disconnect = packet; });
    first.on('close', () => { closed = true; });
    first.on('error', () => {});
    const [second] = await connect({ clientId: args.clientId });
    await waitFor(() => closed, 5000, 'the first connection closed');
    await second.endAsync();
    first.end(true);
    done({ disconnect: disconnect && { reasonCode: disconnect.reasonCode || 0 } });
  },
};

const run = scenarios[scenario];
if (!run) fail(`unknown scenario ${scenario}`);
run().catch(fail);
