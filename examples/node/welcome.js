// Node with better-sqlite3 (which bundles its own SQLite): users sign up, each with a
// user.created event in the same transaction, and a mailer consumer welcomes each once, its
// write and sluice_done in one transaction. From the repository root, on a new file, with
// better-sqlite3 installed (scripts/install-deps puts it in tests/node/node_modules):
//   NODE_PATH=tests/node/node_modules node examples/node/welcome.js build/sqlext/sluice.so app.db
'use strict';
const Database = require('better-sqlite3');

const [extension, path] = process.argv.slice(2);
const db = new Database(path);
db.loadExtension(extension);
const one = (sql, ...params) => db.prepare(sql).pluck().get(...params);
one('SELECT sluice_init()');
db.exec(`CREATE TABLE users (name TEXT PRIMARY KEY);
         CREATE TABLE welcomed (event_id TEXT, name TEXT)`);
one(`SELECT sluice_subscribe('mailer', 'user.created')`);

// db.transaction() commits when the function returns and rolls back when it throws.
const signUp = db.transaction((name) => {
  one(`SELECT sluice_enqueue('user.created', json_object('name', ?))`, name);
  db.prepare('INSERT INTO users VALUES (?)').run(name);
});
const welcome = db.transaction((event) => {
  db.prepare('INSERT INTO welcomed VALUES (?, ?)').run(event.id, event.payload.name);
  one('SELECT sluice_done(?, ?)', 'mailer', event.id);
});

signUp('ada');
signUp('grace');
try {
  signUp('ada');  // taken: the INSERT fails, and the event enqueued before it is rolled back
} catch (e) {
  console.log(`ada not signed up twice: ${e.message}`);
}
console.log(`${one('SELECT count(*) FROM sluice_events')} events in the outbox`);
for (const event of JSON.parse(one(`SELECT sluice_claim('mailer', 10)`))) welcome(event);
const names = db.prepare('SELECT name FROM welcomed ORDER BY name').pluck().all();
console.log(`welcomed ${names.join(', ')}`);
db.close();
