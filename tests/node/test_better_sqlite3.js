// The extension in Node's better-sqlite3, which bundles its own SQLite (not the system's): load
// it, enqueue in a transaction (and roll one back), consume once with the effect and
// sluice_done in one transaction.
//
// Usage: node test_better_sqlite3.js EXTENSION
// Exits 77 (skipped) when better-sqlite3 is not installed in tests/node (scripts/install-deps
// installs it from tests/node/package-lock.json).
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

let Database;
try {
  Database = require('better-sqlite3');
} catch (e) {
  console.log(`skipped: better-sqlite3 is not installed in tests/node (${e.code}); run scripts/install-deps`);
  process.exit(77);
}

const extension = process.argv[2];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-node-'));
try {
  const db = new Database(path.join(dir, 'app.db'));
  db.loadExtension(extension);
  const one = (sql, ...params) => db.prepare(sql).pluck().get(...params);
  console.log(`better-sqlite3's SQLite ${one('SELECT sqlite_version()')}`);

  one('SELECT sluice_init()');
  db.exec('CREATE TABLE users (name TEXT PRIMARY KEY); CREATE TABLE welcomed (event_id TEXT, name TEXT)');
  one(`SELECT sluice_subscribe('mailer', 'user.created', '{"start_from": "oldest"}')`);

  const signUp = db.transaction((name, fail) => {
    db.prepare('INSERT INTO users VALUES (?)').run(name);
    const id = one(`SELECT sluice_enqueue('user.created', json_object('name', ?))`, name);
    if (fail) throw new Error('rolled back');
    return id;
  });
  const ids = [signUp('ada'), signUp('grace')];
  assert.throws(() => signUp('mallory', true), /rolled back/);
  assert.equal(one('SELECT count(*) FROM sluice_events'), 2);

  const welcome = db.transaction((event) => {
    db.prepare('INSERT INTO welcomed VALUES (?, ?)').run(event.id, event.payload.name);
    one('SELECT sluice_done(?, ?)', 'mailer', event.id);
  });
  const events = JSON.parse(one(`SELECT sluice_claim('mailer', 10)`));
  assert.deepEqual(events.map((e) => e.id), ids);
  for (const event of events) welcome(event);
  assert.deepEqual(JSON.parse(one(`SELECT sluice_claim('mailer', 10)`)), []);

  assert.deepEqual(db.prepare('SELECT event_id, name FROM welcomed ORDER BY name').all(),
                   [{ event_id: ids[0], name: 'ada' }, { event_id: ids[1], name: 'grace' }]);
  assert.deepEqual(db.prepare(`SELECT delivered_total, pending FROM sluice_stats`).get(),
                   { delivered_total: 2, pending: 0 });
  db.close();
  console.log('better-sqlite3: all passed');
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
