// The trace context across NATS with the real OpenTelemetry JS SDK and nats.js
// (tests/node/package-lock.json pins them): a C++ producer (`sluice enqueue`) stores an event
// carrying a Node span's traceparent, `sluice relay` publishes it to JetStream, and a Node NATS
// subscriber's W3C propagator extracts the same trace and parent span from the message's headers.
// nats-server runs on 127.0.0.1 on a port of its own and is stopped by PID.
//
// Usage: node test_otel_nats.js SLUICE_CLI
// Exits 77 (skipped) when a package or nats-server is missing.
'use strict';
const assert = require('node:assert/strict');
const {execFileSync, spawn} = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

let api, core, nats;
try {
  api = require('@opentelemetry/api');
  core = require('@opentelemetry/core');
  nats = require('nats');
} catch (e) {
  console.log(`skipped: a package is not installed in tests/node (${e.code}); run scripts/install-deps`);
  process.exit(77);
}
const natsServer = ['/usr/sbin/nats-server', '/usr/bin/nats-server'].find((p) => fs.existsSync(p));
if (!natsServer) {
  console.log('skipped: nats-server is not installed; run scripts/install-deps');
  process.exit(77);
}

// A port the kernel says is free now (the server is given it at once).
function freePort() {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.on('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const {port} = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

async function main() {
  const cli = process.argv[2];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-otel-nats-'));
  const children = [];
  let nc;
  try {
    api.propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
    // A span context as a producer's SDK makes one (sampled), for the C++ producer to carry.
    const producer = {
      traceId: '0af7651916cd43dd8448eb211c80319c',
      spanId: 'b7ad6b7169203331',
      traceFlags: api.TraceFlags.SAMPLED,
    };
    const carrier = {};
    api.propagation.inject(api.trace.setSpanContext(api.ROOT_CONTEXT, producer), carrier);

    const port = await freePort();
    const url = `nats://127.0.0.1:${port}`;
    children.push(spawn(natsServer, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd',
      path.join(dir, 'store')], {stdio: 'ignore'}));
    nc = await nats.connect({servers: url, waitOnFirstConnect: true, reconnectTimeWait: 50});
    // A plain subscriber sees what the relay publishes to JetStream, headers included.
    const subscription = nc.subscribe('orders.order.placed', {max: 1, timeout: 30000});

    const file = path.join(dir, 'a.db');
    execFileSync(cli, ['--db', file, 'init']);
    execFileSync(cli, ['--db', file, 'enqueue', '--topic', 'order.placed', '--payload',
      '{"order":42}', '--header', `traceparent=${carrier.traceparent}`]);
    children.push(spawn(cli, ['relay', file, '--nats', url, '--stream', 'ORDERS', '--topic',
      'order.placed', '--subject-prefix', 'orders'], {stdio: 'ignore'}));

    let message;
    for await (const m of subscription) message = m;
    assert.ok(message && message.headers, 'the relayed message has headers');
    const extracted = api.propagation.extract(api.ROOT_CONTEXT, message.headers, {
      get: (h, key) => h.get(key) || undefined,
      keys: (h) => h.keys(),
    });
    const seen = api.trace.getSpanContext(extracted);
    assert.ok(seen, 'the propagator extracted a span context');
    assert.equal(seen.traceId, producer.traceId);
    assert.equal(seen.spanId, producer.spanId);
    assert.equal(seen.traceFlags, api.TraceFlags.SAMPLED);
    assert.equal(seen.isRemote, true);
    console.log(`OpenTelemetry JS over NATS: trace ${seen.traceId}, parent ${seen.spanId}, ` +
                'extracted from the relayed message');
  } finally {
    if (nc) await nc.close();
    for (const child of children.reverse()) {
      child.kill('SIGTERM');
      if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
    }
    fs.rmSync(dir, {recursive: true, force: true});
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
