#include "schema.hpp"

namespace sluice::schema {

// All times are integer milliseconds since the Unix epoch.
static const char* const kVersion1 = R"sql(
CREATE TABLE sluice_meta (
  name  TEXT PRIMARY KEY,
  value INTEGER NOT NULL
) WITHOUT ROWID;

-- The outbox and the log of retained events. AUTOINCREMENT: a seq is never reused after pruning,
-- so a cursor reading "seq > last" never skips a new event.
CREATE TABLE sluice_events (
  seq        INTEGER PRIMARY KEY AUTOINCREMENT,
  id         TEXT NOT NULL UNIQUE,          -- idempotency key
  topic      TEXT NOT NULL,
  payload    TEXT NOT NULL,                 -- JSON
  headers    TEXT,                          -- JSON object, NULL when none
  key        TEXT,                          -- ordering key, NULL when none
  dedup_key  TEXT,                          -- domain dedup key, NULL when none
  not_before INTEGER,
  created_at INTEGER NOT NULL
);
CREATE UNIQUE INDEX sluice_events_dedup ON sluice_events (topic, dedup_key)
  WHERE dedup_key IS NOT NULL;

-- Every event with seq <= cursor (and > its subscription's start_seq) has been claimed by a
-- worker, or recorded in sluice_deliveries.
CREATE TABLE sluice_consumers (
  id              INTEGER PRIMARY KEY,
  name            TEXT NOT NULL UNIQUE,
  cursor          INTEGER NOT NULL,
  mode            TEXT NOT NULL CHECK (mode IN ('in-transaction', 'outside-transaction')),
  ordered         INTEGER NOT NULL,
  max_attempts    INTEGER NOT NULL,
  retry_span_ms   INTEGER NOT NULL,        -- RetryPolicy::longest_span(): the dedup horizon
  delivered_total INTEGER NOT NULL DEFAULT 0,
  retries_total   INTEGER NOT NULL DEFAULT 0,
  snoozed_total   INTEGER NOT NULL DEFAULT 0,  -- postponed without an attempt (a relay: broker down)
  created_at      INTEGER NOT NULL
);

CREATE TABLE sluice_subscriptions (
  consumer_id INTEGER NOT NULL REFERENCES sluice_consumers (id),
  topic       TEXT NOT NULL,
  start_seq   INTEGER NOT NULL,             -- events at or below it are not for this consumer
  PRIMARY KEY (consumer_id, topic)
) WITHOUT ROWID;

-- A worker's durable record, made before its handlers run, of the work it took: fresh events in
-- (from_seq, to_seq] and the sluice_deliveries rows naming this claim. from_seq advances as the
-- work commits. A claim whose owner process is gone is an attempt that crashed.
CREATE TABLE sluice_claims (
  id          INTEGER PRIMARY KEY,
  consumer_id INTEGER NOT NULL REFERENCES sluice_consumers (id),
  owner       TEXT NOT NULL,                -- "pid:process start time:worker token"
  pid         INTEGER NOT NULL,
  from_seq    INTEGER NOT NULL,
  to_seq      INTEGER NOT NULL,
  lease_until INTEGER NOT NULL,
  created_at  INTEGER NOT NULL
);
CREATE INDEX sluice_claims_consumer ON sluice_claims (consumer_id);

-- (event, consumer) pairs off the happy path: waiting for a retry, a not-before time or an earlier
-- event of their key (pending), taken by a worker (claimed), failed for good (dead), or a dead
-- letter an operator discarded (discarded, kept for audit). scheduled_at is when a retry's
-- backoff started: a retry scheduled "in the future" means the clock was set back since, and the
-- worker makes it due at once rather than wait for the clock to catch up.
CREATE TABLE sluice_deliveries (
  consumer_id     INTEGER NOT NULL REFERENCES sluice_consumers (id),
  event_seq       INTEGER NOT NULL,
  -- ORs, not an IN list: SQLite builds a temporary b-tree for an IN list of more than two values
  -- on every write, which made each failure's delivery row cost four times an inbox row.
  state           TEXT NOT NULL CHECK (state = 'pending' OR state = 'claimed' OR state = 'dead' OR
                                       state = 'discarded'),
  key             TEXT,                     -- the event's ordering key, for per-key order
  attempts        INTEGER NOT NULL,
  next_attempt_at INTEGER NOT NULL,
  scheduled_at    INTEGER NOT NULL DEFAULT 0,  -- when a retry's backoff started, see below
  claim_id        INTEGER,
  suspect         INTEGER NOT NULL DEFAULT 0,  -- its batch crashed: retried alone
  reason          TEXT,                     -- dead: permanent | exhausted | crashed
  last_error      TEXT,
  first_failed_at INTEGER,
  last_failed_at  INTEGER,
  note            TEXT,
  -- Event first: the key also finds an event's rows for every consumer (prune, inspect), which
  -- spares a failure the write of one more index.
  PRIMARY KEY (event_seq, consumer_id)
) WITHOUT ROWID;
CREATE INDEX sluice_deliveries_due ON sluice_deliveries (consumer_id, state, next_attempt_at);
CREATE INDEX sluice_deliveries_key ON sluice_deliveries (consumer_id, key, event_seq)
  WHERE key IS NOT NULL;

-- The inbox: event IDs each consumer has handled. Written in the handler's own transaction.
CREATE TABLE sluice_inbox (
  consumer_id  INTEGER NOT NULL,
  event_id     TEXT NOT NULL,
  delivered_at INTEGER NOT NULL,
  PRIMARY KEY (consumer_id, event_id)
) WITHOUT ROWID;

-- History of operator actions and of settled deliveries: an outcome that ended a delivery row
-- (delivered after failures), with the row's earlier attempts (see version 3).
CREATE TABLE sluice_attempts (
  id          INTEGER PRIMARY KEY,
  consumer_id INTEGER NOT NULL,
  event_seq   INTEGER NOT NULL,
  attempt     INTEGER NOT NULL,
  at          INTEGER NOT NULL,
  outcome     TEXT NOT NULL,
  error       TEXT
);
CREATE INDEX sluice_attempts_event ON sluice_attempts (event_seq);

-- The NATS ingester's position: the stream sequence ingested last per (stream, durable),
-- committed with the events it brought. It keeps stream order across crashes: JetStream would
-- otherwise deliver new messages before redelivering ones a crashed ingester fetched but had not
-- committed.
CREATE TABLE sluice_nats_positions (
  stream     TEXT NOT NULL,
  durable    TEXT NOT NULL,
  stream_seq INTEGER NOT NULL,
  PRIMARY KEY (stream, durable)
) WITHOUT ROWID;
)sql";

// Crash suspects are looked for before every claim. Through sluice_deliveries_due that walked
// every due row that is not one (after a broker outage, all of a relay's snoozed events).
static const char* const kVersion2 = R"sql(
CREATE INDEX sluice_deliveries_suspect ON sluice_deliveries (consumer_id, next_attempt_at)
  WHERE suspect = 1 AND state = 'pending';
)sql";

// A failure wrote its delivery row and a sluice_attempts row: two rows and three indexes, which
// made a transient failure cost 1.7 times a delivery. Now the delivery row carries its pair's
// attempt log while it exists, and the log is settled into sluice_attempts (in one row, with the
// outcome that ended it) only when the row is deleted. Both columns hold a JSON array of
// [attempt, at, outcome, error] entries, oldest first; error is null when there is none.
static const char* const kVersion3 = R"sql(
ALTER TABLE sluice_deliveries ADD COLUMN history TEXT;  -- failures and crashes while the row lives
ALTER TABLE sluice_attempts ADD COLUMN earlier TEXT;    -- the settled row's history
)sql";

// A claim that crashed had its events retried one at a time (suspect = 1): after a relay was
// killed with 7,712 events claimed, one transaction each. Now `suspect` is the size of the group
// a suspect is claimed in, halved at each crash until the crashing event is alone, and the index
// takes every group size.
static const char* const kVersion4 = R"sql(
DROP INDEX sluice_deliveries_suspect;
CREATE INDEX sluice_deliveries_suspect ON sluice_deliveries (consumer_id, next_attempt_at)
  WHERE suspect > 0 AND state = 'pending';
)sql";

// The operators' log: every replay, discard, backfill and prune that changed the file, with the
// filter it was given (a JSON object) and where it came from ('cli', 'console', or 'api': an app
// recording its own calls with record_audit). sluice_events_created: the console's event search
// by time range, and backfill --since, page through a 1M-event file without reading it all. Only
// that one: each index on sluice_events costs Outbox::enqueue about a tenth of its throughput
// (with indexes by topic and key as well, 1000/tx fell from 0.9 to 0.65 of the floor's; with
// this one it is 0.75-0.79), so searches by topic or key go by seq with a filter.
static const char* const kVersion5 = R"sql(
CREATE TABLE sluice_audit (
  id     INTEGER PRIMARY KEY,
  at     INTEGER NOT NULL,
  action TEXT NOT NULL CHECK (action = 'replay' OR action = 'discard' OR action = 'backfill' OR
                              action = 'prune'),
  filter TEXT NOT NULL,                      -- JSON object
  count  INTEGER NOT NULL,
  note   TEXT,
  source TEXT NOT NULL CHECK (source = 'console' OR source = 'cli' OR source = 'api')
);
CREATE INDEX sluice_events_created ON sluice_events (created_at);
)sql";

// Fenced ownership (claim_book.hpp). Claim and consumer ids come from counters in sluice_meta,
// never reused: INTEGER PRIMARY KEY reuses the largest id once its row is deleted, so a worker
// that stalled past the recovery of its claim "renewed" the next worker's claim, and a consumer
// removed and added again under its old id had its old worker deliver the new one's events. The
// workers that claim are registered, each holding a kernel lock on the byte of its id in the
// lock file beside the database while it lives (liveness_lock.hpp).
static const char* const kVersion6 = R"sql(
CREATE TABLE sluice_workers (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused: its byte in the lock file
  pid        INTEGER NOT NULL,
  host       TEXT NOT NULL,
  kind       TEXT NOT NULL,              -- 'worker' (C++ or C API) or 'sql' (a connection)
  consumers  TEXT NOT NULL,              -- JSON array of the consumers' names
  locked     INTEGER NOT NULL,           -- 1: holds its kernel lock; 0: liveness by lease
  started_at INTEGER NOT NULL
);
ALTER TABLE sluice_claims ADD COLUMN worker_id INTEGER;  -- null: made before version 6
INSERT INTO sluice_meta (name, value) SELECT 'claim_ids', coalesce(max(id), 0) FROM sluice_claims;
INSERT INTO sluice_meta (name, value)
  SELECT 'consumer_ids', coalesce(max(id), 0) FROM sluice_consumers;
)sql";

// Every action that changes dead letters, consumers or retention records itself, in the same
// transaction as its changes: the extension's sluice_dlq_replay and sluice_dlq_discard as source
// 'sql', and a consumer's removal as action 'remove'. SQLite cannot alter a CHECK constraint, so
// the table is rebuilt with the wider ones, every row kept with its id.
static const char* const kVersion7 = R"sql(
CREATE TABLE sluice_audit_rebuilt (
  id     INTEGER PRIMARY KEY,
  at     INTEGER NOT NULL,
  action TEXT NOT NULL CHECK (action = 'replay' OR action = 'discard' OR action = 'backfill' OR
                              action = 'prune' OR action = 'remove'),
  filter TEXT NOT NULL,                      -- JSON object
  count  INTEGER NOT NULL,
  note   TEXT,
  source TEXT NOT NULL CHECK (source = 'console' OR source = 'cli' OR source = 'sql' OR
                              source = 'api')
);
INSERT INTO sluice_audit_rebuilt (id, at, action, filter, count, note, source)
  SELECT id, at, action, filter, count, note, source FROM sluice_audit ORDER BY id;
DROP TABLE sluice_audit;
ALTER TABLE sluice_audit_rebuilt RENAME TO sluice_audit;
)sql";

// A consumer's whole retry policy (RetryPolicy's fields), so that every process and language that
// delivers it retries alike: a consumer driven from SQL retried on the default backoff whatever
// its C++ workers used, and sluice_subscribe could not set it. NULL in a consumer recorded before
// version 8: the first subscription after the migration that gives a policy records it.
static const char* const kVersion8 = R"sql(
ALTER TABLE sluice_consumers ADD COLUMN initial_backoff_ms INTEGER;
ALTER TABLE sluice_consumers ADD COLUMN max_backoff_ms INTEGER;
ALTER TABLE sluice_consumers ADD COLUMN backoff_multiplier REAL;
ALTER TABLE sluice_consumers ADD COLUMN backoff_jitter REAL;
ALTER TABLE sluice_consumers ADD COLUMN backoff_seed INTEGER;  -- the uint64 seed's bits
)sql";

// Flow control (pause.hpp). A consumer is held, and no worker of any process claims for it, while
// paused_at is set and paused_until is unset or still ahead: an operator's pause, a handler's
// throttle (paused_by), all in the one row every worker's claim reads
// already. A resume clears them; a pause that ran out keeps them, and is in force again should
// the clock be set back before its end (its end is absolute, as a not-before time is).
// Pauses and resumes are audited, so the audit table is rebuilt again for its wider CHECK.
static const char* const kVersion9 = R"sql(
ALTER TABLE sluice_consumers ADD COLUMN paused_at INTEGER;     -- null: never paused
ALTER TABLE sluice_consumers ADD COLUMN paused_until INTEGER;  -- null: until resumed
ALTER TABLE sluice_consumers ADD COLUMN pause_note TEXT;
ALTER TABLE sluice_consumers ADD COLUMN paused_by TEXT;        -- operator | throttle
ALTER TABLE sluice_consumers ADD COLUMN throttled_total INTEGER NOT NULL DEFAULT 0;
CREATE TABLE sluice_audit_rebuilt (
  id     INTEGER PRIMARY KEY,
  at     INTEGER NOT NULL,
  action TEXT NOT NULL CHECK (action = 'replay' OR action = 'discard' OR action = 'backfill' OR
                              action = 'prune' OR action = 'remove' OR action = 'pause' OR
                              action = 'resume'),
  filter TEXT NOT NULL,                      -- JSON object
  count  INTEGER NOT NULL,
  note   TEXT,
  source TEXT NOT NULL CHECK (source = 'console' OR source = 'cli' OR source = 'sql' OR
                              source = 'api')
);
INSERT INTO sluice_audit_rebuilt (id, at, action, filter, count, note, source)
  SELECT id, at, action, filter, count, note, source FROM sluice_audit ORDER BY id;
DROP TABLE sluice_audit;
ALTER TABLE sluice_audit_rebuilt RENAME TO sluice_audit;
)sql";

// Events by ordering key (`sluice events --key`, the console's search) without walking every
// event: 250 ms a search on a 1M-event file before. Partial, so unkeyed events cost nothing.
static const char* const kVersion10 = R"sql(
CREATE INDEX sluice_events_key ON sluice_events (key) WHERE key IS NOT NULL;
)sql";

// Circuit breaker (consumer.hpp, Breaker). Its options (breaker_failures NULL: none) are recorded
// with the consumer's others; its state is in the row every worker's claim reads, changed in the
// transaction that commits the outcomes that change it. Open while breaker_open_until is set:
// until then no claim, after it one probe (breaker_probe = 1 once claimed, which holds the others
// off for another cool-down in case its worker dies).
static const char* const kVersion11 = R"sql(
ALTER TABLE sluice_consumers ADD COLUMN breaker_failures INTEGER;       -- null: no breaker
ALTER TABLE sluice_consumers ADD COLUMN breaker_cool_down_ms INTEGER;
ALTER TABLE sluice_consumers ADD COLUMN breaker_max_cool_down_ms INTEGER;
ALTER TABLE sluice_consumers ADD COLUMN breaker_consecutive INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sluice_consumers ADD COLUMN breaker_open_until INTEGER;     -- null: closed
ALTER TABLE sluice_consumers ADD COLUMN breaker_open_ms INTEGER;        -- the cool-down in force
ALTER TABLE sluice_consumers ADD COLUMN breaker_probe INTEGER NOT NULL DEFAULT 0;
)sql";

// version 12: payload versions (NewEvent::version). Every event stored before it was of version 1.
static const char* const kVersion12 = R"sql(
ALTER TABLE sluice_events ADD COLUMN version INTEGER NOT NULL DEFAULT 1 CHECK (version >= 1);
)sql";

const std::vector<std::string>& migrations() {
  static const std::vector<std::string> all = {kVersion1, kVersion2,  kVersion3,  kVersion4,
                                               kVersion5, kVersion6,  kVersion7,  kVersion8,
                                               kVersion9, kVersion10, kVersion11, kVersion12};
  return all;
}

}  // namespace sluice::schema
