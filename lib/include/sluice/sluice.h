/* sluice's C API: the stable surface for C and for FFI users (Swift, Rust, Go, C#).
 *
 * Conventions, for every function below:
 * - A function that can fail returns an int result code, SLUICE_OK (0) or one of the SLUICE_*
 *   error codes, and takes `char** errmsg` last. On failure *errmsg is set to a message that names
 *   the operation and what was wrong; on success it is set to NULL. The message is allocated by
 *   the library: free it with sluice_free(). Pass errmsg = NULL to get only the code. (An out
 *   parameter rather than a per-thread "last error": a goroutine may change threads between two
 *   calls.) On failure nothing was written and every other out parameter is left as it was.
 * - Every buffer the library returns is allocated by it in one block and belongs to the caller,
 *   who frees it with sluice_free(), once. Strings the library hands to a handler (sluice_event)
 *   belong to the library and are valid only during that handler call.
 * - Strings passed in are NUL-terminated UTF-8, copied before the call returns.
 * - Times are milliseconds since the Unix epoch; durations are milliseconds.
 * - No C++ exception leaves a function of this API; out of memory is SLUICE_NOMEM.
 * - Handles (sluice_db, sluice_worker, sluice_harness) are opaque. A sluice_db, like a sqlite3
 * connection, is used by one thread at a time: a call on it while another thread is inside one on
 * the same handle returns SLUICE_INVALID and does nothing. sluice_worker's functions may be called
 * from any thread; what would drive its connection from two threads at once (run_until_idle beside
 *   start or another run_until_idle, subscribe during either) returns SLUICE_INVALID. Closing a
 *   handle while another thread is inside a call on it is undefined.
 * - Enqueueing works on any sqlite3* connection of the app (from the same libsqlite3 as
 *   libsluice, the system's), inside the app's own transaction on it.
 */
#ifndef SLUICE_H
#define SLUICE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header: MAJOR * 1000000 + MINOR * 1000 + PATCH. */
#define SLUICE_VERSION "0.1.0"
#define SLUICE_VERSION_NUMBER 1000

/* Result codes. */
#define SLUICE_OK 0
/* A sluice error not covered below. */
#define SLUICE_ERROR 1
/* The caller passed something sluice refuses (NULL, an empty topic, malformed JSON, an
   oversized payload, an option out of range). Nothing was written. */
#define SLUICE_INVALID 2
/* A file, event, consumer or dead letter named by the caller does not exist. */
#define SLUICE_NOTFOUND 3
/* A transaction rule was broken: enqueue with no transaction open, or on a file without the
   sluice schema. */
#define SLUICE_TRANSACTION 4
/* SQLite reported an error (busy, I/O, read-only file...); the message has SQLite's text. */
#define SLUICE_DATABASE 5
/* The file is not an SQLite database. */
#define SLUICE_NOTADB 6
/* The file is an SQLite database but damaged. */
#define SLUICE_CORRUPT 7
/* The disk or quota is full. */
#define SLUICE_FULL 8
/* The file's sluice schema is newer than this library. */
#define SLUICE_SCHEMA 9
/* Out of memory. */
#define SLUICE_NOMEM 10

/* The library's version as SLUICE_VERSION_NUMBER gives it, for the library actually loaded,
   which may be newer than the header an app was compiled with. Never fails. */
int sluice_libversion_number(void);

/* The library's version as SLUICE_VERSION gives it: a static string, never freed. */
const char* sluice_libversion(void);

/* Frees a buffer or message the library returned (NULL is ignored). */
void sluice_free(void* p);

/* ---- Opening a file ------------------------------------------------------------------------ */

typedef struct sluice_db sluice_db;

/* How sluice_open treats the file. */
#define SLUICE_OPEN_CREATE 0   /* create the file if missing; create or migrate the schema */
#define SLUICE_OPEN_EXISTING 1 /* the file must exist (SLUICE_NOTFOUND); schema migrated */
#define SLUICE_OPEN_READONLY 2 /* the file must exist; read-only, nothing written or migrated */

/* Opens `path` (a file, or ":memory:") for sluice as the C++ open_database does: WAL journal,
   sluice's busy handling (waits up to 10 s for another connection's write lock), synchronous
   FULL, and the sluice schema created or migrated in a transaction of its own (not with
   SLUICE_OPEN_READONLY). `mode` is one of SLUICE_OPEN_*. On success *db is a new handle, closed
   with sluice_close(). (":memory:" serves enqueues and reads on this handle only: a worker opens
   a connection of its own, so it needs a file; a test harness, sluice_harness_open, delivers on
   ":memory:".) Errors: SLUICE_INVALID (NULL argument, unknown mode), SLUICE_NOTFOUND,
   SLUICE_NOTADB, SLUICE_CORRUPT, SLUICE_SCHEMA, SLUICE_DATABASE. */
int sluice_open(const char* path, int mode, sluice_db** db, char** errmsg);

/* Closes `db` (NULL is ignored), finishing its statements. The handle is invalid afterwards. */
void sluice_close(sluice_db* db);

/* The SQLite connection of `db`, for the app's own tables and transactions on the same file;
   it belongs to `db`: do not close it. NULL for a NULL `db`. */
sqlite3* sluice_db_handle(sluice_db* db);

/* Gives a connection the app opened itself sluice's busy handling (the fine-grained wait for
   the write lock that sluice's own connections use, up to 10 s), synchronous FULL and the WAL
   journal (files), as sluice_open does. It creates no schema. Errors: SLUICE_INVALID (NULL),
   SLUICE_DATABASE. */
int sluice_configure(sqlite3* conn, char** errmsg);

/* ---- Enqueueing ---------------------------------------------------------------------------- */

/* An event to enqueue. Zero-initialise it (`sluice_new_event e = {0};`) and set what you need:
   NULL or "" means "none" for every string but `topic`. */
typedef struct sluice_new_event {
  /* Routing name, e.g. "order.placed". Required, non-empty. */
  const char* topic;
  /* A JSON document (object, array or scalar), at most 1 MiB; NULL means "{}". */
  const char* payload;
  /* Ordering key: an ordered consumer handles events with equal keys in enqueue order. */
  const char* key;
  /* The idempotency key; NULL or "" means "generate one" (26 characters, time-ordered). */
  const char* id;
  /* Domain dedup key naming one business operation, e.g. "order-42:paid". */
  const char* dedup_key;
  /* Headers as a JSON object of string values, e.g. {"tenant":"7"}; values delivered as
     given. A W3C trace context goes here as "traceparent" (and "tracestate"), validated as
     the C++ NewEvent::trace_context is. */
  const char* headers;
  /* Not delivered before this time (ms since the epoch); 0 means no delay. */
  int64_t not_before_ms;
} sluice_new_event;

/* What sluice_enqueue did: stored the event, or wrote nothing as an event with its ID exists, or
   as its topic has an event with its dedup key. */
#define SLUICE_STORED 0
#define SLUICE_DUPLICATE_ID 1
#define SLUICE_DUPLICATE_DEDUP_KEY 2

typedef struct sluice_enqueued {
  /* SLUICE_STORED, SLUICE_DUPLICATE_ID or SLUICE_DUPLICATE_DEDUP_KEY. */
  int status;
  /* The stored event's seq (position in the file); for a duplicate, the existing event's. */
  int64_t seq;
  /* The stored event's ID; for a duplicate, the existing event's. Free with sluice_free(). */
  char* id;
} sluice_enqueued;

/* Appends `event` inside the transaction the caller has open on `conn` (BEGIN IMMEDIATE is
   best: the write lock is then taken once), so it commits or rolls back with the caller's own
   writes; the transaction stays usable whatever the result. `conn` is any connection of the
   app to a file that has the sluice schema (opened once with sluice_open), e.g.
   sluice_db_handle(db); statements are prepared on its first call and kept until it closes.
   Use it on the thread that uses `conn`. A worker of this process sees the commit within its
   poll interval (100 ms). On success fills *result if not NULL (free result->id).
   A duplicate is a success: result->status says which, nothing was written.
   Errors: SLUICE_INVALID (NULL conn or event, an empty topic, malformed payload JSON, headers
   that are not a JSON object of strings, an oversized payload), SLUICE_TRANSACTION (no open
   transaction, no sluice schema in the file), SLUICE_DATABASE. */
int sluice_enqueue(sqlite3* conn, const sluice_new_event* event, sluice_enqueued* result,
                   char** errmsg);

/* sluice_new_event with the payload's shape version. Zero-initialise it as sluice_new_event. */
typedef struct sluice_new_event_v2 {
  /* As in sluice_new_event. */
  const char* topic;
  const char* payload;
  const char* key;
  const char* id;
  const char* dedup_key;
  const char* headers;
  int64_t not_before_ms;
  /* The payload's shape version: a consumer takes only the versions it declares. 0 means 1;
     a negative version is refused with SLUICE_INVALID. */
  int version;
} sluice_new_event_v2;

/* sluice_enqueue for a sluice_new_event_v2: the same contract, and SLUICE_INVALID for a negative
   version. */
int sluice_enqueue_v2(sqlite3* conn, const sluice_new_event_v2* event, sluice_enqueued* result,
                      char** errmsg);

/* ---- The worker ---------------------------------------------------------------------------- */

typedef struct sluice_worker sluice_worker;

/* An event as a handler receives it. Every pointer belongs to the library and is valid only
   during the handler call; copy what you keep. */
typedef struct sluice_event {
  /* Position in the file: strictly increasing in commit order. */
  int64_t seq;
  const char* id;
  const char* topic;
  /* JSON text. */
  const char* payload;
  /* "" when unkeyed. */
  const char* key;
  /* "" when none. */
  const char* dedup_key;
  /* A JSON object of string values; "{}" when none. */
  const char* headers;
  int64_t created_at_ms;
  /* The consumer this delivery is for. */
  const char* consumer;
  /* 1 for the first attempt. */
  int attempt;
  /* The payload's shape version (sluice_new_event_v2). Last: the library fills this struct, so
     a handler built against an older header still reads what it knew where it was. */
  int version;
} sluice_event;

/* What a handler returns. SLUICE_DONE: delivered, the handler's writes commit with the mark-seen.
   SLUICE_RETRY: failed, retried by the consumer's policy, dead-lettered after its last attempt.
   SLUICE_PERMANENT: can never succeed, dead-lettered at once as "permanent". SLUICE_SNOOZE: try
   again after outcome->snooze_ms, spending no attempt. SLUICE_THROTTLE: the downstream throttles
   or is down: the event goes back spending no attempt and the whole consumer pauses for
   outcome->snooze_ms in every process, outcome->error its reason (the events claimed with it and
   not yet handed over go back uncalled). */
#define SLUICE_DONE 0
#define SLUICE_RETRY 1
#define SLUICE_PERMANENT 2
#define SLUICE_SNOOZE 3
#define SLUICE_THROTTLE 4

/* Details of a handler's outcome, filled by the handler. Starts zeroed. */
typedef struct sluice_outcome {
  /* For SLUICE_RETRY and SLUICE_PERMANENT: the error recorded with the attempt, NUL-terminated
     (e.g. snprintf(outcome->error, sizeof outcome->error, ...)); longer text is cut. */
  char error[1024];
  /* For SLUICE_SNOOZE: milliseconds until the next attempt, >= 0. For SLUICE_THROTTLE: how long
     the consumer pauses, >= 0. */
  int64_t snooze_ms;
} sluice_outcome;

/* A handler: returns SLUICE_DONE, SLUICE_RETRY, SLUICE_PERMANENT, SLUICE_SNOOZE or
   SLUICE_THROTTLE (anything
   else counts as SLUICE_RETRY, with an error saying so). `conn` is the connection whose delivery
   transaction is open: the handler's writes on it, the inbox row and the delivery state commit
   together on SLUICE_DONE and are rolled back otherwise. It must not BEGIN, COMMIT or ROLLBACK
   (the event is dead-lettered if it tries), nor keep `conn` after it returns. `conn` is NULL for
   an outside-transaction consumer. It must not throw or longjmp. `user_data` is what
   sluice_worker_subscribe was given. */
typedef int (*sluice_handler)(void* user_data, const sluice_event* event, sqlite3* conn,
                              sluice_outcome* outcome);

/* How a consumer is delivered to. Get the defaults from sluice_consumer_defaults() and change
   what you need. */
typedef struct sluice_consumer_options {
  /* 0 (default): the handler runs inside the delivery transaction, its effect exactly once.
     1: it runs with no lock held, `conn` NULL, and the delivery is marked done after it returns
     (effect at least once). */
  int outside_transaction;
  /* 1: events with equal keys are handled in enqueue order. Default 0. */
  int ordered;
  /* 1: a new consumer takes every retained event; 0 (default): only events enqueued later. */
  int start_from_oldest;
  /* Attempts in all, the first included; default 5, >= 1. */
  int max_attempts;
  /* Delay after the first failed attempt; default 1000, >= 0. */
  int64_t initial_backoff_ms;
  /* Upper bound of one delay; default 600000, >= initial_backoff_ms. */
  int64_t max_backoff_ms;
} sluice_consumer_options;

/* The default consumer options, as the fields above document them. Never fails. */
sluice_consumer_options sluice_consumer_defaults(void);

/* The consumer options of sluice_worker_subscribe_v2: those of sluice_consumer_options, and a
   circuit breaker (the C++ Breaker): after `breaker_failures` transient failures in a row
   (SLUICE_RETRY; not SLUICE_PERMANENT, snoozes or throttles), in any process of the consumer, no
   event goes to its handler for `breaker_cool_down_ms`; then one does (the probe): its success
   closes the breaker, its failure opens it again for twice as long, at most
   `breaker_max_cool_down_ms`. A failed probe spends no attempt. Like the others, the breaker is
   recorded with the consumer: every subscription of it asks for the same one. */
typedef struct sluice_consumer_options_v2 {
  sluice_consumer_options base;
  /* 0 (default): no breaker; else >= 1. */
  int breaker_failures;
  /* Default 30000, > 0. */
  int64_t breaker_cool_down_ms;
  /* Default 600000, >= breaker_cool_down_ms. */
  int64_t breaker_max_cool_down_ms;
} sluice_consumer_options_v2;

/* The defaults of sluice_consumer_options_v2: sluice_consumer_defaults() and no breaker (with
   the breaker's other fields at their defaults, for a caller that sets only breaker_failures).
   Never fails. */
sluice_consumer_options_v2 sluice_consumer_defaults_v2(void);

/* Opens a worker with its own connection to `path` (created and migrated if needed; not
   ":memory:": a test delivers on one with sluice_harness_open). On success *worker is a new
   handle, closed with sluice_worker_close(). Errors: SLUICE_INVALID (NULL, ":memory:" or ""),
   and those of sluice_open. */
int sluice_worker_open(const char* path, sluice_worker** worker, char** errmsg);

/* Registers `handler` (called with `user_data`) for `topic` under consumer `consumer`, recording
   both in the file so that other processes see them. `options` NULL means the defaults; they
   must be the same on every call for one consumer, and agree with what the file records for it
   (mode, ordered, the retry policy), whoever subscribed it. Not while the worker is
   started or delivering in run_until_idle.
   Errors: SLUICE_INVALID (NULL or empty name or topic, NULL handler, options out of range or
   unlike an earlier call's or the file's, naming each difference, a second handler for the same
   consumer and topic, the worker started or delivering), SLUICE_DATABASE. */
int sluice_worker_subscribe(sluice_worker* worker, const char* consumer, const char* topic,
                            sluice_handler handler, void* user_data,
                            const sluice_consumer_options* options, char** errmsg);

/* As sluice_worker_subscribe, with the options of version 2 (a circuit breaker). `options` NULL
   means sluice_consumer_defaults_v2(). Errors: those of sluice_worker_subscribe, and
   SLUICE_INVALID for breaker fields out of range, naming the field. */
int sluice_worker_subscribe_v2(sluice_worker* worker, const char* consumer, const char* topic,
                               sluice_handler handler, void* user_data,
                               const sluice_consumer_options_v2* options, char** errmsg);

/* What one sluice_worker_run_until_idle call did. */
typedef struct sluice_drain_result {
  /* Handler calls that returned SLUICE_DONE (or events already seen, skipped). */
  int64_t delivered;
  /* Failed attempts scheduled for a retry, and snoozes. */
  int64_t retried;
  /* Events dead-lettered. */
  int64_t dead_lettered;
} sluice_drain_result;

/* Delivers in the calling thread until nothing is due at the current time; handlers run on this
   thread. Fills *result if not NULL. Errors: SLUICE_INVALID (NULL worker, the worker is
   started, or another thread is in run_until_idle on it), SLUICE_DATABASE and the other storage
   codes. */
int sluice_worker_run_until_idle(sluice_worker* worker, sluice_drain_result* result, char** errmsg);

/* Starts delivering on a thread of the worker's own: handlers run there. It sees commits made
   on any connection to the file soon after they are made, at the latest within its poll
   interval (100 ms). Starting a started worker does nothing. Thread-safe. Errors:
   SLUICE_INVALID (NULL worker, or another thread is in run_until_idle on it). */
int sluice_worker_start(sluice_worker* worker, char** errmsg);

/* Finishes the batch in hand (its handlers' writes commit), leaves nothing claimed and joins
   the worker's thread. Idempotent; thread-safe, but not from within a handler. Errors:
   SLUICE_INVALID (NULL worker), SLUICE_DATABASE. */
int sluice_worker_stop(sluice_worker* worker, char** errmsg);

/* Stops the worker as sluice_worker_stop does and frees it (NULL is ignored). */
void sluice_worker_close(sluice_worker* worker);

/* ---- Testing handlers ---------------------------------------------------------------------- */

/* A test harness, as the C++ sluice::testing::Harness: a database with a manual clock and a worker
   on the same connection that delivers only when asked, in the calling thread. Subscribe the
   app's handlers, enqueue, then drain or advance the clock: every event that falls due,
   including those the handlers enqueue, is delivered before the call returns. Used by one thread
   at a time, as a sluice_db: a call while another thread is inside one on it (or on its
   sluice_harness_db) returns SLUICE_INVALID, and so does one from inside a handler (a handler
   enqueues with sluice_enqueue on its `conn`). */
typedef struct sluice_harness sluice_harness;

/* Opens a harness on `path`: ":memory:" (a database of the harness's alone, gone at close) or a
   file, created or migrated if needed, that the test may look at afterwards (`sluice events`).
   Its clock starts at ManualClock's default time, 2025-12-18T00:00:00Z (1766016000000 ms); set
   it with sluice_harness_set_time. On success *harness is a new handle, closed with
   sluice_harness_close(). Errors: SLUICE_INVALID (NULL), and those of sluice_open. */
int sluice_harness_open(const char* path, sluice_harness** harness, char** errmsg);

/* Closes `harness` (NULL is ignored) and its database. The handle is invalid afterwards. */
void sluice_harness_close(sluice_harness* harness);

/* The harness's database as a sluice_db, for the app's own tables (sluice_db_handle), for
   sluice_stats, sluice_dead_letters_list/_replay/_discard, sluice_delivery_state... on it. It
   belongs to the harness: do not sluice_close it. NULL for a NULL `harness`. */
sluice_db* sluice_harness_db(sluice_harness* harness);

/* The harness clock's time, ms since the epoch; 0 for a NULL `harness`. */
int64_t sluice_harness_now(sluice_harness* harness);

/* Sets the harness clock to `now_ms`, delivering nothing (sluice_harness_drain delivers what it
   made due). Setting it back is allowed, as a wall clock may be set back. Errors:
   SLUICE_INVALID (NULL, a time before the epoch). */
int sluice_harness_set_time(sluice_harness* harness, int64_t now_ms, char** errmsg);

/* As sluice_worker_subscribe, on the harness's worker. Subscribe before enqueueing: a consumer
   starts from the events enqueued after it unless options->start_from_oldest. */
int sluice_harness_subscribe(sluice_harness* harness, const char* consumer, const char* topic,
                             sluice_handler handler, void* user_data,
                             const sluice_consumer_options* options, char** errmsg);

/* As sluice_worker_subscribe_v2, on the harness's worker. */
int sluice_harness_subscribe_v2(sluice_harness* harness, const char* consumer, const char* topic,
                                sluice_handler handler, void* user_data,
                                const sluice_consumer_options_v2* options, char** errmsg);

/* Enqueues `event` as sluice_enqueue does and commits it at once; fills *result if not NULL
   (free result->id). Errors: those of sluice_enqueue but SLUICE_TRANSACTION. */
int sluice_harness_enqueue(sluice_harness* harness, const sluice_new_event* event,
                           sluice_enqueued* result, char** errmsg);

/* Delivers until nothing is due at the clock's time, events enqueued by handlers included, and
   fills *result if not NULL. A handler that enqueues an event for itself on every call never
   lets it return. Errors: SLUICE_INVALID (NULL harness), SLUICE_DATABASE. */
int sluice_harness_drain(sluice_harness* harness, sluice_drain_result* result, char** errmsg);

/* Moves the clock forward by `by_ms`, stopping at each time something falls due on the way (a
   retry, a snooze, a not-before time) to drain there, so that a retry sequence plays out as it
   would in real time; fills *result with what all the drains did. Errors: SLUICE_INVALID (NULL
   harness, a negative `by_ms`), SLUICE_DATABASE. */
int sluice_harness_advance(sluice_harness* harness, int64_t by_ms, sluice_drain_result* result,
                           char** errmsg);

/* One consumer's view of one event. */
#define SLUICE_STATE_PENDING 0   /* waiting for its first attempt (or its not-before time) */
#define SLUICE_STATE_CLAIMED 1   /* taken by a worker right now */
#define SLUICE_STATE_RETRYING 2  /* failed, waiting for its next attempt */
#define SLUICE_STATE_DELIVERED 3 /* handled: its handler returned SLUICE_DONE */
#define SLUICE_STATE_DEAD 4      /* dead-lettered */
#define SLUICE_STATE_DISCARDED 5 /* dead-lettered, then discarded by an operator */

typedef struct sluice_delivery {
  /* SLUICE_STATE_*. */
  int state;
  /* Attempts made so far; 1 once delivered (the failed ones are its history, `sluice inspect`). */
  int attempts;
  /* When it is next attempted (pending, retrying); 0 otherwise. */
  int64_t next_attempt_at_ms;
  /* When it was delivered; 0 otherwise. */
  int64_t delivered_at_ms;
  /* The last failed attempt's error; NULL when none. Free with sluice_free(). */
  char* last_error;
} sluice_delivery;

/* The state of event `event_id` for `consumer`, read from the file: fills *state (free
   state->last_error). Reads only. Errors: SLUICE_INVALID (NULL argument), SLUICE_NOTFOUND (an
   unknown event or consumer, or an event that is not the consumer's: another topic, or enqueued
   before it subscribed), SLUICE_DATABASE. */
int sluice_delivery_state(sluice_db* db, const char* consumer, const char* event_id,
                          sluice_delivery* state, char** errmsg);

/* ---- Stats and metrics --------------------------------------------------------------------- */

/* One consumer's numbers, read from the file (every process sees the same). */
typedef struct sluice_consumer_stats {
  const char* consumer;
  /* Events waiting for a first or further attempt (due or not). */
  int64_t pending;
  /* Events claimed by a worker right now. */
  int64_t claimed;
  /* Pending events that have failed at least once. */
  int64_t retrying;
  /* Dead letters not discarded. */
  int64_t dead;
  int64_t delivered_total;
  int64_t retries_total;
  int64_t snoozed_total;
  /* Age of the oldest pending event; 0 when none. */
  int64_t lag_ms;
  /* Keys held back by a dead letter (ordered consumers). */
  int64_t parked_keys;
  /* Pending events left for a worker of the consumer with a handler for their topic. */
  int64_t waiting_for_handler;
} sluice_consumer_stats;

/* One row per consumer, by name: *stats points to *count rows (NULL when none), in one block
   freed with sluice_free(*stats). Reads only. Errors: SLUICE_INVALID (NULL), SLUICE_DATABASE. */
int sluice_stats(sluice_db* db, sluice_consumer_stats** stats, size_t* count, char** errmsg);

/* One consumer's numbers as sluice_consumer_stats has them, and its pause (see
   sluice_consumer_pause). A new struct rather than a longer one: sluice_stats returns an array. */
typedef struct sluice_consumer_stats_v2 {
  const char* consumer;
  int64_t pending;
  int64_t claimed;
  int64_t retrying;
  int64_t dead;
  int64_t delivered_total;
  int64_t retries_total;
  int64_t snoozed_total;
  int64_t lag_ms;
  int64_t parked_keys;
  int64_t waiting_for_handler;
  /* Events a throttling handler gave back, spending no attempt (not in snoozed_total). */
  int64_t throttled_total;
  /* 1 while paused: no worker claims its events. */
  int paused;
  /* These four only while paused (else 0 or ""). When the pause began. */
  int64_t paused_since_ms;
  /* When it ends by itself; 0 when it lasts until resumed. */
  int64_t paused_until_ms;
  /* Why ("" when no note), and who: "operator" or "throttle". */
  const char* pause_note;
  const char* paused_by;
} sluice_consumer_stats_v2;

/* As sluice_stats, with each consumer's pause and throttle count. Freed with
   sluice_free(*stats). Reads only. Errors: SLUICE_INVALID (NULL), SLUICE_DATABASE. */
int sluice_stats_v2(sluice_db* db, sluice_consumer_stats_v2** stats, size_t* count, char** errmsg);

/* ---- Pausing a consumer -------------------------------------------------------------------- */

/* Pauses consumer `consumer`: its workers in every process claim nothing more once they see the
   commit; events they claimed and have not handed to a handler go back, no attempt spent; calls
   running finish. It lasts until `until_ms` (0: until sluice_consumer_resume), `note` (NULL or
   "": none) saying why. Recorded in the audit log as source "api". Errors: SLUICE_INVALID (NULL
   db or consumer, an until_ms not after now, a note with control characters), SLUICE_NOTFOUND
   (unknown consumer), SLUICE_DATABASE. */
int sluice_consumer_pause(sluice_db* db, const char* consumer, int64_t until_ms, const char* note,
                          char** errmsg);

/* Ends a pause of `consumer` (an operator's or a throttle's); *was_paused (if not
   NULL) says whether it was paused. Recorded in the audit log. Errors: SLUICE_INVALID (NULL db
   or consumer), SLUICE_NOTFOUND, SLUICE_DATABASE. */
int sluice_consumer_resume(sluice_db* db, const char* consumer, int* was_paused, char** errmsg);

/* The Prometheus text exposition `sluice metrics` prints (sluice_backlog, sluice_lag_seconds,
   ... labelled by consumer): *text is NUL-terminated, freed with sluice_free(). Reads only.
   Errors: SLUICE_INVALID (NULL), SLUICE_DATABASE. */
int sluice_metrics_text(sluice_db* db, char** text, char** errmsg);

/* ---- Dead letters -------------------------------------------------------------------------- */

/* A dead letter: an (event, consumer) pair that failed for good. */
typedef struct sluice_dead_letter {
  const char* event_id;
  int64_t event_seq;
  const char* consumer;
  const char* topic;
  const char* key;
  /* "permanent", "exhausted" or "crashed". */
  const char* reason;
  const char* last_error;
  int attempts;
  int64_t first_failed_at_ms;
  int64_t last_failed_at_ms;
  /* 1 once discarded: kept as an audit record with the operator's note. */
  int discarded;
  const char* note;
} sluice_dead_letter;

/* Which dead letters an operation applies to. Zero-initialise it: a zeroed filter matches every
   dead letter; each field set narrows it. */
typedef struct sluice_dead_letter_filter {
  /* These event IDs only (event_id_count of them); NULL means any. */
  const char* const* event_ids;
  size_t event_id_count;
  /* NULL or "" means any. */
  const char* consumer;
  const char* topic;
  /* Substring of the last error. */
  const char* error_contains;
  /* last_failed_at in [since_ms, until_ms); 0 means unbounded. */
  int64_t since_ms;
  int64_t until_ms;
  /* 1: list discarded (audit) records too. List only. */
  int include_discarded;
} sluice_dead_letter_filter;

/* The dead letters matching `filter` (NULL: all not discarded), oldest failure first: *letters
   points to *count rows (NULL when none), in one block freed with sluice_free(*letters). Reads
   only. Errors: SLUICE_INVALID (NULL db or out parameter), SLUICE_NOTFOUND (unknown consumer),
   SLUICE_DATABASE. */
int sluice_dead_letters_list(sluice_db* db, const sluice_dead_letter_filter* filter,
                             sluice_dead_letter** letters, size_t* count, char** errmsg);

/* Puts the dead letters matching `filter` back to pending with their attempts reset, in short
   transactions, unparking their keys; *replayed (if not NULL) says how many. `filter` is
   required (a zeroed one replays all). Errors: SLUICE_INVALID (NULL db or filter),
   SLUICE_NOTFOUND (unknown consumer), SLUICE_DATABASE. */
int sluice_dead_letters_replay(sluice_db* db, const sluice_dead_letter_filter* filter,
                               int64_t* replayed, char** errmsg);

/* Marks the dead letters matching `filter` discarded with `note` (required, non-empty), kept as
   audit records, unparking their keys; *discarded (if not NULL) says how many. Errors:
   SLUICE_INVALID (NULL db or filter, empty note), SLUICE_NOTFOUND, SLUICE_DATABASE. */
int sluice_dead_letters_discard(sluice_db* db, const sluice_dead_letter_filter* filter,
                                const char* note, int64_t* discarded, char** errmsg);

/* ---- Backfill and retention ---------------------------------------------------------------- */

/* Re-delivers to `consumer` the retained events it subscribes to, in order, from event
   `from_event_id` on, or created in [since_ms, until_ms) (until_ms 0: up to now): exactly one of
   from_event_id (non-empty) and since_ms (non-zero) must be given. The consumer's seen marks for
   them are cleared in the same transaction; *queued (if not NULL) says how many events were
   queued. Errors: SLUICE_INVALID (NULL db or consumer, both or neither start given),
   SLUICE_NOTFOUND (unknown consumer or event), SLUICE_DATABASE. */
int sluice_backfill(sluice_db* db, const char* consumer, const char* from_event_id,
                    int64_t since_ms, int64_t until_ms, int64_t* queued, char** errmsg);

/* Flags of sluice_prune. */
#define SLUICE_PRUNE_FORCE 1   /* allow a retention shorter than the dedup horizon */
#define SLUICE_PRUNE_DRY_RUN 2 /* count only, write nothing */

/* Deletes events created more than `retention_ms` ago that every consumer has finished, with
   their deliveries, attempt history and seen IDs, in short transactions; never pending, claimed
   or dead-lettered work. *pruned (if not NULL) says how many events were (or, with
   SLUICE_PRUNE_DRY_RUN, would be) deleted. Errors: SLUICE_INVALID (NULL db, a negative
   retention, unknown flags, a retention shorter than the longest retry schedule without
   SLUICE_PRUNE_FORCE: it would forget dedup keys while retries still run), SLUICE_DATABASE. */
int sluice_prune(sluice_db* db, int64_t retention_ms, int flags, int64_t* pruned, char** errmsg);

#ifdef __cplusplus
}
#endif

#endif /* SLUICE_H */
