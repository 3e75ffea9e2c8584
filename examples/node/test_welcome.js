// Testing a Node consumer's handler as C++ tests do with sluice::testing::Harness: an in-memory
// database, a clock that moves only when the test moves it, and a drain that hands every due
// event to the handler. Node's own test runner (node:test); from the repository root, with
// better-sqlite3 installed (scripts/install-deps puts it in tests/node/node_modules):
//   NODE_PATH=tests/node/node_modules node examples/node/test_welcome.js build/sqlext/sluice.so
'use strict';
const assert = require('node:assert');
const {test} = require('node:test');
const Database = require('better-sqlite3');

const extension = process.argv[2];

// The app's code under test: the mailer's handler.
function welcome(db, event) {
  db.prepare('INSERT INTO welcomed VALUES (?)').run(event.payload.name);
}

// The test's helpers: a fresh database on a stopped clock, and a drain.
function open() {
  const db = new Database(':memory:');
  db.loadExtension(extension);
  const one = (sql, ...params) => db.prepare(sql).pluck().get(...params);
  one('SELECT sluice_init()');
  one(`SELECT sluice_clock_set('2026-03-01T09:00:00Z')`);
  db.exec('CREATE TABLE welcomed (name TEXT)');
  one(`SELECT sluice_subscribe('mailer', 'user.created')`);
  const handle = db.transaction((event) => {
    welcome(db, event);
    one(`SELECT sluice_done('mailer', ?)`, event.id);
  });
  const drain = () => {
    let events;
    while ((events = JSON.parse(one(`SELECT sluice_claim('mailer')`))).length > 0) {
      events.forEach(handle);
    }
  };
  const welcomed = () => db.prepare('SELECT name FROM welcomed').pluck().all();
  return {db, one, drain, welcomed};
}

test('welcomes each new user once', () => {
  const {db, one, drain, welcomed} = open();
  one(`SELECT sluice_enqueue('user.created', json_object('name', 'ada'))`);
  drain();
  drain();
  assert.deepStrictEqual(welcomed(), ['ada']);
  db.close();
});

test('waits for the welcome time, which the test reaches without waiting', () => {
  const {db, one, drain, welcomed} = open();
  const id = one(`SELECT sluice_enqueue('user.created', json_object('name', 'grace'), NULL,
                  NULL, NULL, '2026-03-01T10:00:00Z')`);
  drain();
  assert.deepStrictEqual(welcomed(), []);
  assert.strictEqual(JSON.parse(one(`SELECT sluice_delivery_state('mailer', ?)`, id)).state,
                     'pending');
  assert.strictEqual(one(`SELECT sluice_next_due('mailer')`), Date.parse('2026-03-01T10:00:00Z'));
  one('SELECT sluice_clock_advance(3600000)');  // an hour
  drain();
  assert.deepStrictEqual(welcomed(), ['grace']);
  db.close();
});
