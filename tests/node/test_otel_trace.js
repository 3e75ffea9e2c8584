// The trace context end to end with the real OpenTelemetry JS SDK (tests/node/package-lock.json
// pins it): a Node producer starts a span and enqueues through better-sqlite3 and the extension,
// its context injected into the event's headers by the SDK's own W3C propagator; the C++ worker
// (otel_trace_worker) must see the same trace ID with the producer's span as parent, on the
// first attempt and on its retry.
//
// Usage: node test_otel_trace.js EXTENSION OTEL_TRACE_WORKER
// Exits 77 (skipped) when the packages are not installed in tests/node (scripts/install-deps).
'use strict';
const assert = require('node:assert/strict');
const {execFileSync} = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

let Database, api, sdk, core;
try {
  Database = require('better-sqlite3');
  api = require('@opentelemetry/api');
  sdk = require('@opentelemetry/sdk-trace-base');
  core = require('@opentelemetry/core');
} catch (e) {
  console.log(`skipped: a package is not installed in tests/node (${e.code}); run scripts/install-deps`);
  process.exit(77);
}

const [extension, worker] = process.argv.slice(2);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-otel-'));
try {
  api.propagation.setGlobalPropagator(new core.W3CTraceContextPropagator());
  const exporter = new sdk.InMemorySpanExporter();
  const provider =
      new sdk.BasicTracerProvider({spanProcessors: [new sdk.SimpleSpanProcessor(exporter)]});
  api.trace.setGlobalTracerProvider(provider);
  const tracer = api.trace.getTracer('orders-ui');

  const file = path.join(dir, 'app.db');
  const db = new Database(file);
  db.loadExtension(extension);
  const one = (sql, ...params) => db.prepare(sql).pluck().get(...params);
  one('SELECT sluice_init()');
  const span = tracer.startSpan('place order');
  const carrier = {};
  api.propagation.inject(api.trace.setSpan(api.context.active(), span), carrier);
  assert.ok(carrier.traceparent, 'the propagator injected a traceparent');
  one(`SELECT sluice_enqueue('order.placed', '{"order":42}', NULL, NULL, NULL, NULL, ?)`,
      JSON.stringify(carrier));
  span.end();
  db.close();

  const lines = execFileSync(worker, [file]).toString().trim().split('\n').map((l) => JSON.parse(l));
  const {traceId, spanId} = span.spanContext();
  const attempts = lines.filter((l) => 'attempt' in l);
  assert.deepEqual(attempts.map((a) => a.attempt), [1, 2], JSON.stringify(lines));
  for (const line of lines) {
    const seen = line.traceparent ?? line.handler_saw;
    const [version, trace, parent, flags] = seen.split('-');
    assert.equal(version, '00');
    assert.equal(trace, traceId, `the worker saw trace ${trace}, the producer's is ${traceId}`);
    assert.equal(parent, spanId, `the worker's parent is ${parent}, the producer's span ${spanId}`);
    assert.equal(flags, '01');
  }
  assert.equal(exporter.getFinishedSpans().length, 1);
  console.log(`OpenTelemetry JS: trace ${traceId} from the producer's span ${spanId} ` +
              `reached the C++ worker's tracer on attempts 1 and 2`);
} finally {
  fs.rmSync(dir, {recursive: true, force: true});
}
