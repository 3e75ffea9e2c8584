/* The C API (sluice/sluice.h) from C, compiled as C11: every function, its bad input (an error
   code and a message naming the problem, nothing written), handlers that write through the
   delivery transaction's connection, and a started worker. Usage: test_c_api */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <sluice/sluice.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int failures = 0;

#define CHECK(condition)                                                            \
  do {                                                                              \
    if (!(condition)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #condition); \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

/* `call` returned `code` and a message containing `words`; the message is freed. */
#define CHECK_ERROR(call_result, code, message, words)                                            \
  do {                                                                                            \
    int got_ = (call_result);                                                                     \
    if (got_ != (code) || (message) == NULL || strstr((message), (words)) == NULL) {              \
      fprintf(stderr, "%s:%d: expected %d with \"%s\", got %d: %s\n", __FILE__, __LINE__, (code), \
              (words), got_, (message) != NULL ? (message) : "(no message)");                     \
      ++failures;                                                                                 \
    }                                                                                             \
    sluice_free(message);                                                                         \
    (message) = NULL;                                                                             \
  } while (0)

/* `call` returned SLUICE_OK; else its message is printed. */
#define CHECK_OK(call_result, message)                                                     \
  do {                                                                                     \
    int got_ = (call_result);                                                              \
    if (got_ != SLUICE_OK) {                                                               \
      fprintf(stderr, "%s:%d: expected SLUICE_OK, got %d: %s\n", __FILE__, __LINE__, got_, \
              (message) != NULL ? (message) : "(no message)");                             \
      ++failures;                                                                          \
    }                                                                                      \
    CHECK((message) == NULL);                                                              \
    sluice_free(message);                                                                  \
    (message) = NULL;                                                                      \
  } while (0)

static char dir[] = "/tmp/sluice-c-api-XXXXXX";
static int files_made = 0;

/* A new file name in the test's directory. */
static void new_path(char* path, size_t size) {
  snprintf(path, size, "%s/%d.db", dir, ++files_made);
}

static void exec(sqlite3* conn, const char* sql) {
  char* error = NULL;
  if (sqlite3_exec(conn, sql, NULL, NULL, &error) != SQLITE_OK) {
    fprintf(stderr, "SQL failed: %s: %s\n", sql, error);
    ++failures;
  }
  sqlite3_free(error);
}

static long long count(sqlite3* conn, const char* sql) {
  sqlite3_stmt* statement = NULL;
  long long n = -1;
  if (sqlite3_prepare_v2(conn, sql, -1, &statement, NULL) == SQLITE_OK &&
      sqlite3_step(statement) == SQLITE_ROW) {
    n = sqlite3_column_int64(statement, 0);
  }
  sqlite3_finalize(statement);
  return n;
}

static sluice_db* open_file(char* path, size_t size) {
  new_path(path, size);
  sluice_db* db = NULL;
  char* error = NULL;
  CHECK_OK(sluice_open(path, SLUICE_OPEN_CREATE, &db, &error), error);
  return db;
}

/* Enqueues `event` in a transaction of its own on `conn`. */
static void enqueue_committed(sqlite3* conn, const sluice_new_event* event) {
  char* error = NULL;
  exec(conn, "BEGIN IMMEDIATE");
  CHECK_OK(sluice_enqueue(conn, event, NULL, &error), error);
  exec(conn, "COMMIT");
}

static const sluice_consumer_stats* find_stats(const sluice_consumer_stats* stats, size_t n,
                                               const char* consumer) {
  for (size_t i = 0; i < n; ++i) {
    if (strcmp(stats[i].consumer, consumer) == 0) return &stats[i];
  }
  return NULL;
}

/* ---- A scripted handler --------------------------------------------------------------------- */

/* What the handler does: write a row into `handled`, then return `outcome`. It records what it
   was given. */
typedef struct Script {
  int outcome;
  const char* error;
  /* SQL the handler runs on the delivery connection after its insert, when set. */
  const char* also_run;
  int64_t snooze_ms;
  int calls;
  int last_attempt;
  int had_connection;
  char id[64], topic[64], payload[256], key[64], dedup_key[64], headers[256], consumer[64];
  int64_t seq, created_at_ms;
  int version;
  /* For the started worker: signalled on every call. */
  pthread_mutex_t mutex;
  pthread_cond_t called;
} Script;

static void script_init(Script* script, int outcome) {
  memset(script, 0, sizeof *script);
  script->outcome = outcome;
  pthread_mutex_init(&script->mutex, NULL);
  pthread_cond_init(&script->called, NULL);
}

static void copy_text(char* to, size_t size, const char* from) { snprintf(to, size, "%s", from); }

static int scripted_handler(void* user_data, const sluice_event* event, sqlite3* conn,
                            sluice_outcome* outcome) {
  Script* script = user_data;
  pthread_mutex_lock(&script->mutex);
  script->had_connection = conn != NULL;
  if (conn != NULL) {
    sqlite3_stmt* insert = NULL;
    sqlite3_prepare_v2(conn, "INSERT INTO handled (event_id) VALUES (?)", -1, &insert, NULL);
    sqlite3_bind_text(insert, 1, event->id, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(insert) != SQLITE_DONE) ++failures;
    sqlite3_finalize(insert);
    if (script->also_run != NULL) sqlite3_exec(conn, script->also_run, NULL, NULL, NULL);
  }
  copy_text(script->id, sizeof script->id, event->id);
  copy_text(script->topic, sizeof script->topic, event->topic);
  copy_text(script->payload, sizeof script->payload, event->payload);
  copy_text(script->key, sizeof script->key, event->key);
  copy_text(script->dedup_key, sizeof script->dedup_key, event->dedup_key);
  copy_text(script->headers, sizeof script->headers, event->headers);
  copy_text(script->consumer, sizeof script->consumer, event->consumer);
  script->seq = event->seq;
  script->created_at_ms = event->created_at_ms;
  script->last_attempt = event->attempt;
  script->version = event->version;
  ++script->calls;
  if (script->error != NULL) snprintf(outcome->error, sizeof outcome->error, "%s", script->error);
  outcome->snooze_ms = script->snooze_ms;
  const int returned = script->outcome;
  pthread_cond_broadcast(&script->called);
  pthread_mutex_unlock(&script->mutex);
  return returned;
}

/* A file with a domain table `handled`, and a worker on it whose consumer `consumer` takes
   topic "order.placed" with `options` (NULL: defaults). */
typedef struct Fixture {
  char path[256];
  sluice_db* db;
  sqlite3* conn;
  sluice_worker* worker;
} Fixture;

static void fixture_open(Fixture* f, const char* consumer, Script* script,
                         const sluice_consumer_options* options) {
  char* error = NULL;
  f->db = open_file(f->path, sizeof f->path);
  f->conn = sluice_db_handle(f->db);
  exec(f->conn, "CREATE TABLE handled (event_id TEXT)");
  CHECK_OK(sluice_worker_open(f->path, &f->worker, &error), error);
  CHECK_OK(sluice_worker_subscribe(f->worker, consumer, "order.placed", scripted_handler, script,
                                   options, &error),
           error);
}

static void fixture_close(Fixture* f) {
  sluice_worker_close(f->worker);
  sluice_close(f->db);
}

/* ---- The tests ------------------------------------------------------------------------------ */

static void test_version_of_header_and_library_agree(void) {
  CHECK(sluice_libversion_number() == SLUICE_VERSION_NUMBER);
  CHECK(strcmp(sluice_libversion(), SLUICE_VERSION) == 0);
  CHECK(strcmp(SLUICE_VERSION, SLUICE_PROJECT_VERSION) == 0);
  int major = 0, minor = 0, patch = 0;
  CHECK(sscanf(SLUICE_VERSION, "%d.%d.%d", &major, &minor, &patch) == 3);
  CHECK(SLUICE_VERSION_NUMBER == major * 1000000 + minor * 1000 + patch);
}

static void test_open_refuses_bad_input_naming_it(void) {
  char path[256];
  char* error = NULL;
  sluice_db* db = NULL;
  CHECK_ERROR(sluice_open(NULL, SLUICE_OPEN_CREATE, &db, &error), SLUICE_INVALID, error, "path");
  CHECK_ERROR(sluice_open(":memory:", SLUICE_OPEN_CREATE, NULL, &error), SLUICE_INVALID, error,
              "db");
  CHECK_ERROR(sluice_open(":memory:", 7, &db, &error), SLUICE_INVALID, error, "mode 7");
  new_path(path, sizeof path);
  CHECK_ERROR(sluice_open(path, SLUICE_OPEN_EXISTING, &db, &error), SLUICE_NOTFOUND, error, path);
  CHECK(access(path, F_OK) != 0); /* not created */
  CHECK_ERROR(sluice_open(path, SLUICE_OPEN_READONLY, &db, &error), SLUICE_NOTFOUND, error, path);
  CHECK(db == NULL);
  /* No message wanted: the code alone. */
  CHECK(sluice_open(NULL, SLUICE_OPEN_CREATE, &db, NULL) == SLUICE_INVALID);

  FILE* text = fopen(path, "w");
  fputs("not a database, but long enough to be read as a header by SQLite........\n", text);
  fclose(text);
  CHECK_ERROR(sluice_open(path, SLUICE_OPEN_CREATE, &db, &error), SLUICE_NOTADB, error, path);

  /* A file from a newer sluice. */
  db = open_file(path, sizeof path);
  exec(sluice_db_handle(db), "UPDATE sluice_meta SET value = 999 WHERE name = 'schema_version'");
  sluice_close(db);
  db = NULL;
  CHECK_ERROR(sluice_open(path, SLUICE_OPEN_EXISTING, &db, &error), SLUICE_SCHEMA, error, "999");
  CHECK(db == NULL);

  /* Null handles are ignored or refused, never dereferenced. */
  sluice_close(NULL);
  sluice_worker_close(NULL);
  sluice_free(NULL);
  CHECK(sluice_db_handle(NULL) == NULL);
  CHECK_ERROR(sluice_configure(NULL, &error), SLUICE_INVALID, error, "conn");
}

static void test_read_only_open_writes_nothing(void) {
  char path[256];
  char* error = NULL;
  sluice_db* db = open_file(path, sizeof path);
  sluice_new_event event = {.topic = "order.placed"};
  enqueue_committed(sluice_db_handle(db), &event);
  sluice_close(db);

  sluice_db* reader = NULL;
  CHECK_OK(sluice_open(path, SLUICE_OPEN_READONLY, &reader, &error), error);
  CHECK(count(sluice_db_handle(reader), "SELECT count(*) FROM sluice_events") == 1);
  CHECK(sqlite3_exec(sluice_db_handle(reader), "DELETE FROM sluice_events", NULL, NULL, NULL) ==
        SQLITE_READONLY);
  sluice_close(reader);
}

static void test_enqueue_commits_and_rolls_back_with_the_apps_transaction(void) {
  char path[256];
  char* error = NULL;
  sluice_db* db = open_file(path, sizeof path);
  sqlite3* conn = sluice_db_handle(db);
  exec(conn, "CREATE TABLE orders (id TEXT PRIMARY KEY)");

  sluice_new_event event = {.topic = "order.placed",
                            .payload = "{\"order_id\":\"42\"}",
                            .key = "42",
                            .id = "request-7f3a",
                            .dedup_key = "order-42:placed",
                            .headers = "{\"trace\":\"abc\"}"};
  sluice_enqueued result = {0};
  exec(conn, "BEGIN IMMEDIATE");
  exec(conn, "INSERT INTO orders (id) VALUES ('42')");
  CHECK_OK(sluice_enqueue(conn, &event, &result, &error), error);
  CHECK(result.status == SLUICE_STORED);
  CHECK(result.seq > 0);
  CHECK(result.id != NULL && strcmp(result.id, "request-7f3a") == 0);
  sluice_free(result.id);
  exec(conn, "ROLLBACK");
  CHECK(count(conn, "SELECT count(*) FROM orders") == 0);
  CHECK(count(conn, "SELECT count(*) FROM sluice_events") == 0);

  exec(conn, "BEGIN IMMEDIATE");
  exec(conn, "INSERT INTO orders (id) VALUES ('42')");
  CHECK_OK(sluice_enqueue(conn, &event, &result, &error), error);
  sluice_free(result.id);
  exec(conn, "COMMIT");
  CHECK(count(conn, "SELECT count(*) FROM orders") == 1);
  CHECK(count(conn,
              "SELECT count(*) FROM sluice_events WHERE id = 'request-7f3a' AND key = '42' "
              "AND dedup_key = 'order-42:placed' AND payload = '{\"order_id\":\"42\"}'") == 1);

  /* A generated ID; duplicates by ID and by dedup key name the existing event. */
  sluice_new_event generated = {.topic = "order.placed"};
  exec(conn, "BEGIN IMMEDIATE");
  CHECK_OK(sluice_enqueue(conn, &generated, &result, &error), error);
  CHECK(result.status == SLUICE_STORED && strlen(result.id) == 26);
  sluice_free(result.id);
  CHECK_OK(sluice_enqueue(conn, &event, &result, &error), error);
  CHECK(result.status == SLUICE_DUPLICATE_ID && strcmp(result.id, "request-7f3a") == 0);
  sluice_free(result.id);
  sluice_new_event same_operation = {.topic = "order.placed", .dedup_key = "order-42:placed"};
  CHECK_OK(sluice_enqueue(conn, &same_operation, &result, &error), error);
  CHECK(result.status == SLUICE_DUPLICATE_DEDUP_KEY && strcmp(result.id, "request-7f3a") == 0);
  sluice_free(result.id);
  exec(conn, "COMMIT");
  CHECK(count(conn, "SELECT count(*) FROM sluice_events") == 2);
  sluice_close(db);
}

static void test_enqueue_refuses_bad_input_and_writes_nothing(void) {
  char path[256];
  char* error = NULL;
  sluice_db* db = open_file(path, sizeof path);
  sqlite3* conn = sluice_db_handle(db);
  sluice_enqueued result = {.status = -1};

  sluice_new_event good = {.topic = "order.placed"};
  CHECK_ERROR(sluice_enqueue(conn, &good, &result, &error), SLUICE_TRANSACTION, error,
              "no transaction is open");

  exec(conn, "BEGIN IMMEDIATE");
  CHECK_ERROR(sluice_enqueue(NULL, &good, &result, &error), SLUICE_INVALID, error, "conn is NULL");
  CHECK_ERROR(sluice_enqueue(conn, NULL, &result, &error), SLUICE_INVALID, error, "event is NULL");
  sluice_new_event no_topic = {.payload = "{}"};
  CHECK_ERROR(sluice_enqueue(conn, &no_topic, &result, &error), SLUICE_INVALID, error,
              "topic is NULL");
  sluice_new_event empty_topic = {.topic = ""};
  CHECK_ERROR(sluice_enqueue(conn, &empty_topic, &result, &error), SLUICE_INVALID, error,
              "topic is empty");
  sluice_new_event bad_json = {.topic = "order.placed", .payload = "{\"order_id\": 42"};
  CHECK_ERROR(sluice_enqueue(conn, &bad_json, &result, &error), SLUICE_INVALID, error, "payload");
  sluice_new_event headers_not_object = {.topic = "order.placed", .headers = "[\"trace\"]"};
  CHECK_ERROR(sluice_enqueue(conn, &headers_not_object, &result, &error), SLUICE_INVALID, error,
              "headers must be a JSON object");
  sluice_new_event headers_not_json = {.topic = "order.placed", .headers = "{trace"};
  CHECK_ERROR(sluice_enqueue(conn, &headers_not_json, &result, &error), SLUICE_INVALID, error,
              "headers are not valid JSON");
  sluice_new_event header_number = {.topic = "order.placed", .headers = "{\"retries\":3}"};
  CHECK_ERROR(sluice_enqueue(conn, &header_number, &result, &error), SLUICE_INVALID, error,
              "header 'retries'");
  const size_t big = 2u << 20;
  char* oversized = malloc(big + 3);
  memset(oversized, ' ', big + 2);
  oversized[0] = '"';
  oversized[big + 1] = '"';
  oversized[big + 2] = '\0';
  sluice_new_event too_big = {.topic = "order.placed", .payload = oversized};
  CHECK_ERROR(sluice_enqueue(conn, &too_big, &result, &error), SLUICE_INVALID, error, "payload");
  free(oversized);
  CHECK(result.status == -1); /* untouched on failure */
  /* The transaction is still usable, and nothing of the refused events is in it. */
  CHECK_OK(sluice_enqueue(conn, &good, NULL, &error), error);
  exec(conn, "COMMIT");
  CHECK(count(conn, "SELECT count(*) FROM sluice_events") == 1);
  sluice_close(db);
}

static void test_enqueue_on_a_connection_the_app_opened(void) {
  char path[256];
  char* error = NULL;
  sluice_db* db = open_file(path, sizeof path);
  sluice_close(db); /* the schema is there now */

  sqlite3* conn = NULL;
  CHECK(sqlite3_open_v2(path, &conn, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
  CHECK_OK(sluice_configure(conn, &error), error);
  sqlite3_stmt* mode = NULL;
  sqlite3_prepare_v2(conn, "PRAGMA journal_mode", -1, &mode, NULL);
  CHECK(sqlite3_step(mode) == SQLITE_ROW &&
        strcmp((const char*)sqlite3_column_text(mode, 0), "wal") == 0);
  sqlite3_finalize(mode);
  sluice_new_event event = {.topic = "order.placed", .not_before_ms = 4102444800000LL};
  for (int i = 0; i < 3; ++i) enqueue_committed(conn, &event);
  CHECK(count(conn, "SELECT count(*) FROM sluice_events WHERE not_before = 4102444800000") == 3);
  /* The statements sluice keeps for the connection go with it: a plain close succeeds. */
  CHECK(sqlite3_close(conn) == SQLITE_OK);

  /* A file without the sluice schema is refused, not silently created in the app's
     transaction. */
  char bare[256];
  new_path(bare, sizeof bare);
  CHECK(sqlite3_open(bare, &conn) == SQLITE_OK);
  exec(conn, "BEGIN IMMEDIATE");
  CHECK_ERROR(sluice_enqueue(conn, &event, NULL, &error), SLUICE_TRANSACTION, error,
              "no current sluice schema");
  exec(conn, "ROLLBACK");
  CHECK(sqlite3_close(conn) == SQLITE_OK);
}

static void test_handler_sees_the_event_and_its_writes_commit_with_done(void) {
  Script script;
  script_init(&script, SLUICE_DONE);
  Fixture f = {0};
  fixture_open(&f, "billing", &script, NULL);
  char* error = NULL;
  sluice_new_event event = {.topic = "order.placed",
                            .payload = "{\"order_id\":\"42\"}",
                            .key = "42",
                            .id = "evt-1",
                            .dedup_key = "order-42:placed",
                            .headers = "{\"trace\":\"abc\"}"};
  enqueue_committed(f.conn, &event);

  sluice_drain_result drained = {-1, -1, -1};
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(drained.delivered == 1 && drained.retried == 0 && drained.dead_lettered == 0);
  CHECK(script.calls == 1);
  CHECK(script.had_connection);
  CHECK(strcmp(script.id, "evt-1") == 0);
  CHECK(strcmp(script.topic, "order.placed") == 0);
  CHECK(strcmp(script.payload, "{\"order_id\":\"42\"}") == 0);
  CHECK(strcmp(script.key, "42") == 0);
  CHECK(strcmp(script.dedup_key, "order-42:placed") == 0);
  CHECK(strcmp(script.headers, "{\"trace\":\"abc\"}") == 0);
  CHECK(strcmp(script.consumer, "billing") == 0);
  CHECK(script.last_attempt == 1);
  CHECK(script.seq > 0);
  CHECK(script.created_at_ms > 1700000000000LL);
  CHECK(count(f.conn, "SELECT count(*) FROM handled WHERE event_id = 'evt-1'") == 1);
  CHECK(count(f.conn, "SELECT count(*) FROM sluice_inbox") == 1);

  sluice_consumer_stats* stats = NULL;
  size_t n = 0;
  CHECK_OK(sluice_stats(f.db, &stats, &n, &error), error);
  CHECK(n == 1);
  CHECK(n == 1 && strcmp(stats[0].consumer, "billing") == 0 && stats[0].delivered_total == 1 &&
        stats[0].pending == 0 && stats[0].dead == 0 && stats[0].lag_ms == 0);
  sluice_free(stats);
  fixture_close(&f);
}

static void test_enqueue_v2_stores_the_version_and_the_handler_sees_it(void) {
  Script script;
  script_init(&script, SLUICE_DONE);
  Fixture f = {0};
  fixture_open(&f, "billing", &script, NULL);
  char* error = NULL;
  sluice_enqueued result = {0};
  sluice_new_event_v2 negative = {.topic = "order.placed", .version = -1};
  exec(f.conn, "BEGIN IMMEDIATE");
  CHECK_ERROR(sluice_enqueue_v2(f.conn, &negative, &result, &error), SLUICE_INVALID, error,
              "version");
  /* Zero-initialised: version 1. */
  sluice_new_event_v2 plain = {.topic = "order.placed", .id = "evt-v1"};
  CHECK_OK(sluice_enqueue_v2(f.conn, &plain, &result, &error), error);
  sluice_free(result.id);
  sluice_new_event_v2 third = {.topic = "order.placed", .id = "evt-v3", .version = 3};
  CHECK_OK(sluice_enqueue_v2(f.conn, &third, &result, &error), error);
  sluice_free(result.id);
  exec(f.conn, "COMMIT");
  CHECK(count(f.conn, "SELECT count(*) FROM sluice_events") == 2);
  CHECK(count(f.conn, "SELECT version FROM sluice_events WHERE id = 'evt-v1'") == 1);
  CHECK(count(f.conn, "SELECT version FROM sluice_events WHERE id = 'evt-v3'") == 3);

  sluice_drain_result drained = {-1, -1, -1};
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  /* In seq order: the last call was for the version 3 event. */
  CHECK(script.calls == 2);
  CHECK(strcmp(script.id, "evt-v3") == 0);
  CHECK(script.version == 3);
  fixture_close(&f);
}

static void test_retry_rolls_back_the_handlers_row(void) {
  Script script;
  script_init(&script, SLUICE_RETRY);
  script.error = "payment service timed out";
  sluice_consumer_options options = sluice_consumer_defaults();
  options.initial_backoff_ms = 3600 * 1000; /* the retry is not due during the test */
  options.max_backoff_ms = 3600 * 1000;
  Fixture f = {0};
  fixture_open(&f, "billing", &script, &options);
  char* error = NULL;
  sluice_new_event event = {.topic = "order.placed", .id = "evt-retry"};
  enqueue_committed(f.conn, &event);

  sluice_drain_result drained = {0};
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(script.calls == 1);
  CHECK(drained.delivered == 0 && drained.retried == 1);
  CHECK(count(f.conn, "SELECT count(*) FROM handled") == 0);
  CHECK(count(f.conn, "SELECT count(*) FROM sluice_inbox") == 0);
  CHECK(count(f.conn,
              "SELECT count(*) FROM sluice_deliveries WHERE last_error = 'payment service timed "
              "out'") == 1);

  sluice_consumer_stats* stats = NULL;
  size_t n = 0;
  CHECK_OK(sluice_stats(f.db, &stats, &n, &error), error);
  const sluice_consumer_stats* billing = find_stats(stats, n, "billing");
  CHECK(billing != NULL && billing->pending == 1 && billing->retrying == 1 &&
        billing->retries_total == 1 && billing->delivered_total == 0);
  sluice_free(stats);
  fixture_close(&f);
}

static void test_retries_spend_attempts_until_exhausted(void) {
  Script script;
  script_init(&script, SLUICE_RETRY);
  script.error = "still failing";
  sluice_consumer_options options = sluice_consumer_defaults();
  options.max_attempts = 3;
  options.initial_backoff_ms = 0;
  Fixture f = {0};
  fixture_open(&f, "billing", &script, &options);
  char* error = NULL;
  sluice_new_event event = {.topic = "order.placed", .id = "evt-exhausted"};
  enqueue_committed(f.conn, &event);
  sluice_drain_result drained = {0};
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(script.calls == 3 && script.last_attempt == 3);
  CHECK(drained.dead_lettered == 1);

  sluice_dead_letter* letters = NULL;
  size_t n = 0;
  CHECK_OK(sluice_dead_letters_list(f.db, NULL, &letters, &n, &error), error);
  CHECK(n == 1 && strcmp(letters[0].reason, "exhausted") == 0 && letters[0].attempts == 3 &&
        strcmp(letters[0].last_error, "still failing") == 0);
  sluice_free(letters);
  fixture_close(&f);
}

static void test_permanent_snooze_and_unknown_outcomes(void) {
  Script script;
  script_init(&script, SLUICE_PERMANENT);
  script.error = "card declined";
  Fixture f = {0};
  fixture_open(&f, "billing", &script, NULL);
  char* error = NULL;
  sluice_new_event first = {.topic = "order.placed", .id = "evt-permanent", .key = "42"};
  enqueue_committed(f.conn, &first);
  sluice_drain_result drained = {0};
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(drained.dead_lettered == 1 && script.calls == 1);
  CHECK(count(f.conn, "SELECT count(*) FROM handled") == 0);

  sluice_dead_letter* letters = NULL;
  size_t n = 0;
  CHECK_OK(sluice_dead_letters_list(f.db, NULL, &letters, &n, &error), error);
  CHECK(n == 1);
  if (n == 1) {
    CHECK(strcmp(letters[0].event_id, "evt-permanent") == 0);
    CHECK(strcmp(letters[0].consumer, "billing") == 0);
    CHECK(strcmp(letters[0].topic, "order.placed") == 0);
    CHECK(strcmp(letters[0].key, "42") == 0);
    CHECK(strcmp(letters[0].reason, "permanent") == 0);
    CHECK(strcmp(letters[0].last_error, "card declined") == 0);
    CHECK(letters[0].attempts == 1 && letters[0].discarded == 0 && letters[0].event_seq > 0);
    CHECK(letters[0].first_failed_at_ms > 0 &&
          letters[0].last_failed_at_ms >= letters[0].first_failed_at_ms);
  }
  sluice_free(letters);

  /* Snooze: delivered later, spending no attempt. */
  script.outcome = SLUICE_SNOOZE;
  script.snooze_ms = 3600 * 1000;
  sluice_new_event second = {.topic = "order.placed", .id = "evt-snooze"};
  enqueue_committed(f.conn, &second);
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(script.calls == 2 && drained.retried == 1);
  CHECK(count(f.conn, "SELECT count(*) FROM handled") == 0);
  sluice_consumer_stats* stats = NULL;
  CHECK_OK(sluice_stats(f.db, &stats, &n, &error), error);
  CHECK(n == 1 && stats[0].snoozed_total == 1 && stats[0].retrying == 0 && stats[0].pending == 1);
  sluice_free(stats);

  /* A return value that is no outcome counts as a retry saying so. */
  script.outcome = 42;
  script.error = NULL;
  sluice_new_event third = {.topic = "order.placed", .id = "evt-unknown"};
  enqueue_committed(f.conn, &third);
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(script.calls == 3 && drained.retried == 1);
  CHECK(
      count(
          f.conn,
          "SELECT count(*) FROM sluice_deliveries WHERE last_error LIKE '%handler returned 42%'") ==
      1);
  fixture_close(&f);
}

/* A paused consumer claims nothing; a resumed one delivers; SLUICE_THROTTLE gives the event back
   with no attempt spent and pauses the consumer; sluice_stats_v2 shows both. */
static void test_pause_resume_and_throttle(void) {
  Script script;
  script_init(&script, SLUICE_DONE);
  Fixture f = {0};
  fixture_open(&f, "billing", &script, NULL);
  char* error = NULL;
  CHECK(sluice_consumer_pause(f.db, "nobody", 0, NULL, &error) == SLUICE_NOTFOUND);
  sluice_free(error);
  error = NULL;
  CHECK(sluice_consumer_pause(f.db, "billing", 1, NULL, &error) == SLUICE_INVALID);
  sluice_free(error);
  error = NULL;
  CHECK_OK(sluice_consumer_pause(f.db, "billing", 0, "card processor down", &error), error);
  sluice_new_event first = {.topic = "order.placed", .id = "evt-paused"};
  enqueue_committed(f.conn, &first);
  sluice_drain_result drained = {0};
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(script.calls == 0);
  sluice_consumer_stats_v2* stats = NULL;
  size_t n = 0;
  CHECK_OK(sluice_stats_v2(f.db, &stats, &n, &error), error);
  CHECK(n == 1 && stats[0].paused == 1 && stats[0].paused_until_ms == 0 &&
        stats[0].paused_since_ms > 0 && strcmp(stats[0].pause_note, "card processor down") == 0 &&
        strcmp(stats[0].paused_by, "operator") == 0 && stats[0].pending == 1);
  sluice_free(stats);
  int was_paused = 0;
  CHECK_OK(sluice_consumer_resume(f.db, "billing", &was_paused, &error), error);
  CHECK(was_paused == 1);
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(script.calls == 1 && drained.delivered == 1);

  script.outcome = SLUICE_THROTTLE;
  script.snooze_ms = 3600 * 1000;
  script.error = "429";
  sluice_new_event second = {.topic = "order.placed", .id = "evt-throttled"};
  enqueue_committed(f.conn, &second);
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(script.calls == 2 && script.last_attempt == 1);
  CHECK(count(f.conn, "SELECT count(*) FROM handled") == 1);
  CHECK(count(f.conn, "SELECT attempts FROM sluice_deliveries") == 0);
  CHECK_OK(sluice_stats_v2(f.db, &stats, &n, &error), error);
  CHECK(n == 1 && stats[0].paused == 1 && stats[0].throttled_total == 1 &&
        stats[0].snoozed_total == 0 && strcmp(stats[0].paused_by, "throttle") == 0 &&
        strcmp(stats[0].pause_note, "429") == 0 && stats[0].paused_until_ms > 0);
  sluice_free(stats);
  script.outcome = SLUICE_DONE;
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(script.calls == 2);
  CHECK_OK(sluice_consumer_resume(f.db, "billing", &was_paused, &error), error);
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(script.calls == 3 && script.last_attempt == 1);
  fixture_close(&f);
}

static void test_handler_that_ends_the_transaction_itself_is_dead_lettered(void) {
  Script script;
  script_init(&script, SLUICE_DONE);
  script.also_run = "COMMIT";
  Fixture f = {0};
  fixture_open(&f, "billing", &script, NULL);
  char* error = NULL;
  sluice_new_event event = {.topic = "order.placed", .id = "evt-commits"};
  enqueue_committed(f.conn, &event);
  sluice_drain_result drained = {0};
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(script.calls == 1 && drained.dead_lettered == 1 && drained.delivered == 0);
  CHECK(count(f.conn, "SELECT count(*) FROM handled") == 0);
  sluice_dead_letter* letters = NULL;
  size_t n = 0;
  CHECK_OK(sluice_dead_letters_list(f.db, NULL, &letters, &n, &error), error);
  CHECK(n == 1 && strcmp(letters[0].reason, "permanent") == 0);
  sluice_free(letters);
  fixture_close(&f);
}

static void test_ordered_consumer_parks_the_key_of_a_dead_letter(void) {
  Script script;
  script_init(&script, SLUICE_PERMANENT);
  script.error = "bad order";
  sluice_consumer_options options = sluice_consumer_defaults();
  options.ordered = 1;
  Fixture f = {0};
  fixture_open(&f, "billing", &script, &options);
  char* error = NULL;
  sluice_new_event first = {.topic = "order.placed", .id = "evt-k1", .key = "k"};
  sluice_new_event second = {.topic = "order.placed", .id = "evt-k2", .key = "k"};
  enqueue_committed(f.conn, &first);
  enqueue_committed(f.conn, &second);
  sluice_drain_result drained = {0};
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  /* The second event waits behind the first's dead letter. */
  CHECK(script.calls == 1 && drained.dead_lettered == 1);
  sluice_consumer_stats* stats = NULL;
  size_t n = 0;
  CHECK_OK(sluice_stats(f.db, &stats, &n, &error), error);
  CHECK(n == 1 && stats[0].parked_keys == 1 && stats[0].pending == 1 && stats[0].dead == 1);
  sluice_free(stats);

  /* Time bounds of the filter: nothing failed before 1970-01-01T00:00:01Z, all since. */
  sluice_dead_letter* letters = NULL;
  sluice_dead_letter_filter before = {.until_ms = 1000};
  CHECK_OK(sluice_dead_letters_list(f.db, &before, &letters, &n, &error), error);
  CHECK(n == 0);
  sluice_dead_letter_filter since = {.since_ms = 1000, .topic = "order.placed"};
  CHECK_OK(sluice_dead_letters_list(f.db, &since, &letters, &n, &error), error);
  CHECK(n == 1);
  sluice_free(letters);

  /* Discarding the dead letter unparks the key: the second event is delivered. */
  script.outcome = SLUICE_DONE;
  int64_t discarded = 0;
  CHECK_OK(sluice_dead_letters_discard(f.db, &since, "bad order, cancelled", &discarded, &error),
           error);
  CHECK(discarded == 1);
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(drained.delivered == 1 && strcmp(script.id, "evt-k2") == 0);
  fixture_close(&f);
}

static void test_outside_transaction_handler_gets_no_connection(void) {
  Script script;
  script_init(&script, SLUICE_DONE);
  sluice_consumer_options options = sluice_consumer_defaults();
  options.outside_transaction = 1;
  Fixture f = {0};
  fixture_open(&f, "mailer", &script, &options);
  char* error = NULL;
  sluice_new_event event = {.topic = "order.placed"};
  enqueue_committed(f.conn, &event);
  sluice_drain_result drained = {0};
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(script.calls == 1 && !script.had_connection && drained.delivered == 1);
  fixture_close(&f);
}

static void test_worker_refuses_bad_input(void) {
  Script script;
  script_init(&script, SLUICE_DONE);
  char* error = NULL;
  sluice_worker* worker = NULL;
  CHECK_ERROR(sluice_worker_open(":memory:", &worker, &error), SLUICE_INVALID, error, ":memory:");
  CHECK_ERROR(sluice_worker_open(NULL, &worker, &error), SLUICE_INVALID, error, "path is NULL");
  CHECK(worker == NULL);
  Fixture f = {0};
  fixture_open(&f, "billing", &script, NULL);
  CHECK_ERROR(
      sluice_worker_subscribe(f.worker, "billing", "order.placed", NULL, NULL, NULL, &error),
      SLUICE_INVALID, error, "handler is NULL");
  CHECK_ERROR(sluice_worker_subscribe(f.worker, "", "order.placed", scripted_handler, &script, NULL,
                                      &error),
              SLUICE_INVALID, error, "consumer");
  CHECK_ERROR(sluice_worker_subscribe(f.worker, "billing", "order.placed", scripted_handler,
                                      &script, NULL, &error),
              SLUICE_INVALID, error, "order.placed");
  sluice_consumer_options options = sluice_consumer_defaults();
  options.max_attempts = 0;
  CHECK_ERROR(sluice_worker_subscribe(f.worker, "audit", "order.placed", scripted_handler, &script,
                                      &options, &error),
              SLUICE_INVALID, error, "max_attempts");
  CHECK_ERROR(sluice_worker_subscribe(NULL, "audit", "order.placed", scripted_handler, &script,
                                      NULL, &error),
              SLUICE_INVALID, error, "worker is NULL");
  CHECK_ERROR(sluice_worker_run_until_idle(NULL, NULL, &error), SLUICE_INVALID, error, "NULL");
  CHECK_ERROR(sluice_worker_start(NULL, &error), SLUICE_INVALID, error, "NULL");
  CHECK_ERROR(sluice_worker_stop(NULL, &error), SLUICE_INVALID, error, "NULL");
  fixture_close(&f);
}

static void test_started_worker_delivers_until_stopped(void) {
  Script script;
  script_init(&script, SLUICE_DONE);
  Fixture f = {0};
  fixture_open(&f, "billing", &script, NULL);
  char* error = NULL;
  CHECK_OK(sluice_worker_start(f.worker, &error), error);
  CHECK_OK(sluice_worker_start(f.worker, &error), error); /* already started: no effect */
  CHECK_ERROR(sluice_worker_run_until_idle(f.worker, NULL, &error), SLUICE_INVALID, error,
              "running on its own thread");
  sluice_new_event event = {.topic = "order.placed", .id = "evt-started"};
  enqueue_committed(f.conn, &event);

  /* Wait for the handler's signal, with a deadline that only a broken worker reaches. */
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 30;
  pthread_mutex_lock(&script.mutex);
  while (script.calls == 0) {
    if (pthread_cond_timedwait(&script.called, &script.mutex, &deadline) != 0) break;
  }
  const int calls = script.calls;
  pthread_mutex_unlock(&script.mutex);
  CHECK(calls == 1);

  CHECK_OK(sluice_worker_stop(f.worker, &error), error);
  CHECK_OK(sluice_worker_stop(f.worker, &error), error); /* idempotent */
  /* Stopped means the delivery committed, the handler's row with it. */
  CHECK(count(f.conn, "SELECT count(*) FROM handled WHERE event_id = 'evt-started'") == 1);
  CHECK(count(f.conn, "SELECT count(*) FROM sluice_claims") == 0);

  /* A stopped worker delivers nothing more; run_until_idle still does. */
  sluice_new_event later = {.topic = "order.placed", .id = "evt-after-stop"};
  enqueue_committed(f.conn, &later);
  sluice_drain_result drained = {0};
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(drained.delivered == 1 && script.calls == 2);
  fixture_close(&f);
}

static void test_dead_letters_listed_replayed_and_discarded(void) {
  Script script;
  script_init(&script, SLUICE_PERMANENT);
  script.error = "no such customer";
  Fixture f = {0};
  fixture_open(&f, "billing", &script, NULL);
  char* error = NULL;
  sluice_new_event a = {.topic = "order.placed", .id = "evt-a"};
  sluice_new_event b = {.topic = "order.placed", .id = "evt-b"};
  enqueue_committed(f.conn, &a);
  enqueue_committed(f.conn, &b);
  sluice_drain_result drained = {0};
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(drained.dead_lettered == 2);

  /* Bad input first: nothing changes. */
  int64_t changed = -1;
  CHECK_ERROR(sluice_dead_letters_replay(f.db, NULL, &changed, &error), SLUICE_INVALID, error,
              "filter is NULL");
  CHECK_ERROR(sluice_dead_letters_replay(NULL, NULL, &changed, &error), SLUICE_INVALID, error,
              "db is NULL");
  sluice_dead_letter_filter unknown = {.consumer = "nobody"};
  CHECK_ERROR(sluice_dead_letters_replay(f.db, &unknown, &changed, &error), SLUICE_NOTFOUND, error,
              "nobody");
  const char* null_id[] = {NULL};
  sluice_dead_letter_filter null_ids = {.event_ids = null_id, .event_id_count = 1};
  CHECK_ERROR(sluice_dead_letters_replay(f.db, &null_ids, &changed, &error), SLUICE_INVALID, error,
              "event_ids[0] is NULL");
  sluice_dead_letter_filter only_a_filter = {0};
  const char* only_b[] = {"evt-b"};
  sluice_dead_letter_filter b_filter = {.event_ids = only_b, .event_id_count = 1};
  CHECK_ERROR(sluice_dead_letters_discard(f.db, &b_filter, "", &changed, &error), SLUICE_INVALID,
              error, "note");
  CHECK_ERROR(sluice_dead_letters_discard(f.db, &b_filter, NULL, &changed, &error), SLUICE_INVALID,
              error, "note is NULL");
  CHECK(changed == -1);
  sluice_dead_letter* letters = NULL;
  size_t n = 0;
  CHECK_ERROR(sluice_dead_letters_list(f.db, NULL, NULL, &n, &error), SLUICE_INVALID, error,
              "letters");
  CHECK_OK(sluice_dead_letters_list(f.db, &only_a_filter, &letters, &n, &error), error);
  CHECK(n == 2);
  sluice_free(letters);

  /* Discard b with a note; it stays as an audit record. */
  CHECK_OK(sluice_dead_letters_discard(f.db, &b_filter, "customer deleted", &changed, &error),
           error);
  CHECK(changed == 1);
  CHECK_OK(sluice_dead_letters_list(f.db, NULL, &letters, &n, &error), error);
  CHECK(n == 1 && strcmp(letters[0].event_id, "evt-a") == 0);
  sluice_free(letters);
  sluice_dead_letter_filter with_discarded = {.include_discarded = 1, .error_contains = "customer"};
  CHECK_OK(sluice_dead_letters_list(f.db, &with_discarded, &letters, &n, &error), error);
  CHECK(n == 2);
  for (size_t i = 0; i < n; ++i) {
    if (strcmp(letters[i].event_id, "evt-b") == 0) {
      CHECK(letters[i].discarded == 1 && strcmp(letters[i].note, "customer deleted") == 0);
    } else {
      CHECK(letters[i].discarded == 0 && strcmp(letters[i].note, "") == 0);
    }
  }
  sluice_free(letters);

  /* Replay a: the fixed handler delivers it, its row committed. */
  script.outcome = SLUICE_DONE;
  sluice_dead_letter_filter billing = {.consumer = "billing"};
  CHECK_OK(sluice_dead_letters_replay(f.db, &billing, &changed, &error), error);
  CHECK(changed == 1);
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(drained.delivered == 1);
  CHECK(strcmp(script.id, "evt-a") == 0 && script.last_attempt == 1);
  CHECK(count(f.conn, "SELECT count(*) FROM handled WHERE event_id = 'evt-a'") == 1);
  CHECK_OK(sluice_dead_letters_list(f.db, NULL, &letters, &n, &error), error);
  CHECK(n == 0 && letters == NULL);
  /* Both actions are in the audit log as the app's own ("api"); the refused ones are not. */
  CHECK(count(f.conn, "SELECT count(*) FROM sluice_audit") == 2);
  CHECK(
      count(f.conn,
            "SELECT count(*) FROM sluice_audit WHERE action = 'discard' AND source = 'api' AND "
            "count = 1 AND note = 'customer deleted' AND filter = '{\"event_ids\":[\"evt-b\"]}'") ==
      1);
  CHECK(count(f.conn,
              "SELECT count(*) FROM sluice_audit WHERE action = 'replay' AND source = 'api' AND "
              "count = 1 AND filter = '{\"consumer\":\"billing\"}'") == 1);
  fixture_close(&f);
}

static void test_backfill_redelivers_and_prune_deletes_finished_history(void) {
  Script script;
  script_init(&script, SLUICE_DONE);
  Fixture f = {0};
  fixture_open(&f, "billing", &script, NULL);
  char* error = NULL;
  const char* ids[] = {"evt-1", "evt-2", "evt-3"};
  for (int i = 0; i < 3; ++i) {
    sluice_new_event event = {.topic = "order.placed", .id = ids[i]};
    enqueue_committed(f.conn, &event);
  }
  sluice_drain_result drained = {0};
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(drained.delivered == 3);

  int64_t queued = -1;
  CHECK_ERROR(sluice_backfill(f.db, "billing", NULL, 0, 0, &queued, &error), SLUICE_INVALID, error,
              "exactly one");
  CHECK_ERROR(sluice_backfill(f.db, "billing", "evt-2", 1, 0, &queued, &error), SLUICE_INVALID,
              error, "exactly one");
  CHECK_ERROR(sluice_backfill(f.db, "nobody", "evt-2", 0, 0, &queued, &error), SLUICE_NOTFOUND,
              error, "nobody");
  CHECK_ERROR(sluice_backfill(f.db, "billing", "evt-404", 0, 0, &queued, &error), SLUICE_NOTFOUND,
              error, "evt-404");
  CHECK_ERROR(sluice_backfill(f.db, NULL, "evt-2", 0, 0, &queued, &error), SLUICE_INVALID, error,
              "consumer is NULL");
  CHECK(queued == -1);
  CHECK_OK(sluice_backfill(f.db, "billing", "evt-2", 0, 0, &queued, &error), error);
  CHECK(queued == 2);
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(drained.delivered == 2 && script.calls == 5);
  CHECK_OK(sluice_backfill(f.db, "billing", NULL, 1, 0, &queued, &error), error);
  CHECK(queued == 3);
  CHECK_OK(sluice_worker_run_until_idle(f.worker, &drained, &error), error);
  CHECK(drained.delivered == 3);

  int64_t pruned = -1;
  CHECK_ERROR(sluice_prune(f.db, 0, 0, &pruned, &error), SLUICE_INVALID, error, "retention");
  CHECK_ERROR(sluice_prune(f.db, 0, 4, &pruned, &error), SLUICE_INVALID, error, "unknown flags 4");
  CHECK_ERROR(sluice_prune(f.db, -1, SLUICE_PRUNE_FORCE, &pruned, &error), SLUICE_INVALID, error,
              "negative");
  CHECK_ERROR(sluice_prune(NULL, 0, 0, &pruned, &error), SLUICE_INVALID, error, "db is NULL");
  CHECK(pruned == -1);
  CHECK_OK(sluice_prune(f.db, 0, SLUICE_PRUNE_FORCE | SLUICE_PRUNE_DRY_RUN, &pruned, &error),
           error);
  CHECK(pruned == 3);
  CHECK(count(f.conn, "SELECT count(*) FROM sluice_events") == 3);
  CHECK_OK(sluice_prune(f.db, 0, SLUICE_PRUNE_FORCE, &pruned, &error), error);
  CHECK(pruned == 3);
  CHECK(count(f.conn, "SELECT count(*) FROM sluice_events") == 0);
  fixture_close(&f);
}

static void test_metrics_text_is_the_prometheus_exposition(void) {
  Script script;
  script_init(&script, SLUICE_DONE);
  Fixture f = {0};
  fixture_open(&f, "billing", &script, NULL);
  char* error = NULL;
  sluice_new_event event = {.topic = "order.placed"};
  enqueue_committed(f.conn, &event);
  char* text = NULL;
  CHECK_OK(sluice_metrics_text(f.db, &text, &error), error);
  CHECK(text != NULL && strstr(text, "# TYPE sluice_backlog gauge") != NULL);
  CHECK(text != NULL && strstr(text, "sluice_backlog{consumer=\"billing\"} 1\n") != NULL);
  sluice_free(text);
  text = NULL;
  CHECK_ERROR(sluice_metrics_text(NULL, &text, &error), SLUICE_INVALID, error, "db is NULL");
  CHECK_ERROR(sluice_metrics_text(f.db, NULL, &error), SLUICE_INVALID, error, "text");
  sluice_consumer_stats* stats = NULL;
  size_t n = 0;
  CHECK_ERROR(sluice_stats(NULL, &stats, &n, &error), SLUICE_INVALID, error, "db is NULL");
  CHECK(stats == NULL);
  fixture_close(&f);
}

/* A handler that blocks until the test opens its gate, so that the test acts while it runs. */
typedef struct Gate {
  pthread_mutex_t mutex;
  pthread_cond_t changed;
  int entered, open;
} Gate;

static int gated_handler(void* user_data, const sluice_event* event, sqlite3* conn,
                         sluice_outcome* outcome) {
  (void)event;
  (void)conn;
  (void)outcome;
  Gate* gate = user_data;
  pthread_mutex_lock(&gate->mutex);
  gate->entered = 1;
  pthread_cond_broadcast(&gate->changed);
  while (!gate->open) pthread_cond_wait(&gate->changed, &gate->mutex);
  pthread_mutex_unlock(&gate->mutex);
  return SLUICE_DONE;
}

typedef struct Drain {
  sluice_worker* worker;
  sluice_drain_result result;
  int code;
} Drain;

static void* drain_thread(void* arg) {
  Drain* drain = arg;
  char* error = NULL;
  drain->code = sluice_worker_run_until_idle(drain->worker, &drain->result, &error);
  sluice_free(error);
  return NULL;
}

static void test_two_threads_on_one_worker_are_refused_not_interleaved(void) {
  char* error = NULL;
  Gate gate = {.entered = 0, .open = 0};
  pthread_mutex_init(&gate.mutex, NULL);
  pthread_cond_init(&gate.changed, NULL);
  Fixture f;
  f.db = open_file(f.path, sizeof f.path);
  f.conn = sluice_db_handle(f.db);
  CHECK_OK(sluice_worker_open(f.path, &f.worker, &error), error);
  CHECK_OK(sluice_worker_subscribe(f.worker, "gated", "order.placed", gated_handler, &gate, NULL,
                                   &error),
           error);
  const sluice_new_event event = {.topic = "order.placed", .payload = "{}"};
  for (int i = 0; i < 5; ++i) enqueue_committed(f.conn, &event);
  Drain drain = {.worker = f.worker};
  pthread_t drainer;
  pthread_create(&drainer, NULL, drain_thread, &drain);
  pthread_mutex_lock(&gate.mutex);
  while (!gate.entered) pthread_cond_wait(&gate.changed, &gate.mutex);
  pthread_mutex_unlock(&gate.mutex);
  /* The worker's connection is in the drain: a second driver is refused, nothing else happens. */
  CHECK_ERROR(sluice_worker_start(f.worker, &error), SLUICE_INVALID, error, "run_until_idle");
  CHECK_ERROR(sluice_worker_run_until_idle(f.worker, NULL, &error), SLUICE_INVALID, error,
              "another thread");
  CHECK_ERROR(sluice_worker_subscribe(f.worker, "other", "order.placed", gated_handler, &gate, NULL,
                                      &error),
              SLUICE_INVALID, error, "running");
  pthread_mutex_lock(&gate.mutex);
  gate.open = 1;
  pthread_cond_broadcast(&gate.changed);
  pthread_mutex_unlock(&gate.mutex);
  pthread_join(drainer, NULL);
  CHECK(drain.code == SLUICE_OK);
  CHECK(drain.result.delivered == 5);
  CHECK(count(f.conn, "SELECT count(*) FROM sluice_inbox") == 5);
  CHECK(count(f.conn, "SELECT count(*) FROM sluice_claims") == 0);
  fixture_close(&f);
}

/* ---- The test harness ------------------------------------------------------------------------ */

static void test_harness_delivers_on_memory_by_its_manual_clock(void) {
  char* error = NULL;
  sluice_harness* h = NULL;
  CHECK_OK(sluice_harness_open(":memory:", &h, &error), error);
  sqlite3* conn = sluice_db_handle(sluice_harness_db(h));
  exec(conn, "CREATE TABLE handled (event_id TEXT)");
  CHECK_OK(sluice_harness_set_time(h, 1772355600000, &error), error);
  CHECK(sluice_harness_now(h) == 1772355600000);
  Script script;
  script_init(&script, SLUICE_RETRY);
  script.error = "gateway down";
  sluice_consumer_options options = sluice_consumer_defaults();
  options.initial_backoff_ms = 1000;
  options.max_backoff_ms = 1000;
  CHECK_OK(sluice_harness_subscribe(h, "billing", "order.placed", scripted_handler, &script,
                                    &options, &error),
           error);
  sluice_new_event event = {.topic = "order.placed", .payload = "{\"order\":1}"};
  sluice_enqueued enqueued = {0};
  CHECK_OK(sluice_harness_enqueue(h, &event, &enqueued, &error), error);
  CHECK(enqueued.status == SLUICE_STORED);
  sluice_drain_result drained = {0};
  CHECK_OK(sluice_harness_drain(h, &drained, &error), error);
  CHECK(drained.retried == 1 && drained.delivered == 0);
  sluice_delivery state = {0};
  CHECK_OK(sluice_delivery_state(sluice_harness_db(h), "billing", enqueued.id, &state, &error),
           error);
  CHECK(state.state == SLUICE_STATE_RETRYING);
  CHECK(state.attempts == 1);
  /* A second's backoff, 20% jitter either way. */
  CHECK(state.next_attempt_at_ms >= 1772355600000 + 800);
  CHECK(state.next_attempt_at_ms <= 1772355600000 + 1200);
  CHECK(state.last_error != NULL && strcmp(state.last_error, "gateway down") == 0);
  CHECK(state.delivered_at_ms == 0);
  sluice_free(state.last_error);
  const int64_t due = state.next_attempt_at_ms;
  /* Not due yet: nothing runs, and the clock moved as asked. */
  CHECK_OK(sluice_harness_advance(h, due - 1 - sluice_harness_now(h), &drained, &error), error);
  CHECK(drained.retried == 0 && script.calls == 1);
  CHECK(sluice_harness_now(h) == due - 1);
  /* Past it: advance stops at the retry's time to deliver it there. */
  script.outcome = SLUICE_DONE;
  CHECK_OK(sluice_harness_advance(h, 60000, &drained, &error), error);
  CHECK(drained.delivered == 1 && script.calls == 2 && script.last_attempt == 2);
  CHECK(sluice_harness_now(h) == due - 1 + 60000);
  CHECK_OK(sluice_delivery_state(sluice_harness_db(h), "billing", enqueued.id, &state, &error),
           error);
  CHECK(state.state == SLUICE_STATE_DELIVERED);
  CHECK(state.delivered_at_ms == due);
  CHECK(state.last_error == NULL);
  CHECK(count(conn, "SELECT count(*) FROM handled") == 1);
  sluice_free(enqueued.id);
  sluice_harness_close(h);
}

/* A handler that calls the harness it runs in, which must refuse. */
typedef struct Reentry {
  sluice_harness* harness;
  int code;
  char* error;
} Reentry;

static int reentrant_handler(void* user_data, const sluice_event* event, sqlite3* conn,
                             sluice_outcome* outcome) {
  (void)event, (void)conn, (void)outcome;
  Reentry* reentry = user_data;
  sluice_new_event more = {.topic = "other"};
  reentry->code = sluice_harness_enqueue(reentry->harness, &more, NULL, &reentry->error);
  return SLUICE_DONE;
}

static void test_breaker_through_subscribe_v2(void) {
  char* error = NULL;
  sluice_harness* h = NULL;
  CHECK_OK(sluice_harness_open(":memory:", &h, &error), error);
  CHECK_OK(sluice_harness_set_time(h, 1772355600000, &error), error);
  Script script;
  script_init(&script, SLUICE_RETRY);
  script.error = "mail API down";
  sluice_consumer_options_v2 options = sluice_consumer_defaults_v2();
  CHECK(options.breaker_failures == 0 && options.breaker_cool_down_ms == 30000 &&
        options.breaker_max_cool_down_ms == 600000);
  options.base.outside_transaction = 1;
  options.breaker_failures = 2;
  options.breaker_cool_down_ms = 60000;
  options.breaker_max_cool_down_ms = 50000;
  CHECK(sluice_harness_subscribe_v2(h, "mailer", "order.placed", scripted_handler, &script,
                                    &options, &error) == SLUICE_INVALID);
  CHECK(error != NULL && strstr(error, "max_cool_down") != NULL);
  sluice_free(error);
  error = NULL;
  options.breaker_max_cool_down_ms = 600000;
  CHECK_OK(sluice_harness_subscribe_v2(h, "mailer", "order.placed", scripted_handler, &script,
                                       &options, &error),
           error);
  for (int i = 0; i < 4; ++i) {
    sluice_new_event event = {.topic = "order.placed"};
    sluice_enqueued enqueued = {0};
    CHECK_OK(sluice_harness_enqueue(h, &event, &enqueued, &error), error);
    sluice_free(enqueued.id);
  }
  sluice_drain_result drained = {0};
  CHECK_OK(sluice_harness_drain(h, &drained, &error), error);
  /* Two failures open it; the other two events go back uncalled. */
  CHECK(script.calls == 2 && drained.retried == 2);
  CHECK_OK(sluice_harness_set_time(h, 1772355600000 + 59000, &error), error);
  CHECK_OK(sluice_harness_drain(h, &drained, &error), error);
  CHECK(script.calls == 2);
  /* The cool-down over: one probe, which fails and opens it again for twice as long. */
  CHECK_OK(sluice_harness_set_time(h, 1772355600000 + 61000, &error), error);
  CHECK_OK(sluice_harness_drain(h, &drained, &error), error);
  CHECK(script.calls == 3);
  CHECK_OK(sluice_harness_set_time(h, 1772355600000 + 61000 + 119000, &error), error);
  CHECK_OK(sluice_harness_drain(h, &drained, &error), error);
  CHECK(script.calls == 3);
  /* The outage over: the probe succeeds, the breaker closes, the rest go through. */
  script.outcome = SLUICE_DONE;
  CHECK_OK(sluice_harness_set_time(h, 1772355600000 + 61000 + 121000, &error), error);
  CHECK_OK(sluice_harness_drain(h, &drained, &error), error);
  CHECK(script.calls == 7 && drained.delivered == 4 && drained.dead_lettered == 0);
  /* One consumer, one set of options: a subscription without the breaker is refused, naming
     it; one in another mode too. */
  sluice_consumer_options without = options.base;
  CHECK(sluice_harness_subscribe(h, "mailer", "order.paid", scripted_handler, &script, &without,
                                 &error) == SLUICE_INVALID);
  CHECK(error != NULL && strstr(error, "breaker") != NULL);
  sluice_free(error);
  error = NULL;
  CHECK(sluice_harness_subscribe(h, "mailer", "order.paid", scripted_handler, &script, NULL,
                                 &error) == SLUICE_INVALID);
  CHECK(error != NULL && strstr(error, "mode outside-transaction here before") != NULL);
  sluice_free(error);
  sluice_harness_close(h);
}

static void test_harness_refuses_bad_input_naming_it(void) {
  char* error = NULL;
  sluice_harness* h = NULL;
  CHECK_ERROR(sluice_harness_open(NULL, &h, &error), SLUICE_INVALID, error, "path is NULL");
  CHECK_OK(sluice_harness_open(":memory:", &h, &error), error);
  CHECK_ERROR(sluice_harness_advance(h, -1, NULL, &error), SLUICE_INVALID, error, "negative");
  CHECK_ERROR(sluice_harness_set_time(h, -5, &error), SLUICE_INVALID, error, "before the Unix");
  CHECK_ERROR(sluice_harness_drain(NULL, NULL, &error), SLUICE_INVALID, error, "harness is NULL");
  Reentry reentry = {.harness = h};
  CHECK_OK(sluice_harness_subscribe(h, "c", "t", reentrant_handler, &reentry, NULL, &error), error);
  sluice_new_event event = {.topic = "t"};
  sluice_enqueued enqueued = {0};
  CHECK_OK(sluice_harness_enqueue(h, &event, &enqueued, &error), error);
  CHECK_OK(sluice_harness_drain(h, NULL, &error), error);
  CHECK_ERROR(reentry.code, SLUICE_INVALID, reentry.error, "in use");
  sluice_delivery state = {0};
  sluice_db* db = sluice_harness_db(h);
  CHECK_ERROR(sluice_delivery_state(db, "nobody", enqueued.id, &state, &error), SLUICE_NOTFOUND,
              error, "no consumer named 'nobody'");
  CHECK_ERROR(sluice_delivery_state(db, "c", "missing", &state, &error), SLUICE_NOTFOUND, error,
              "'missing'");
  sluice_new_event other = {.topic = "other"};
  sluice_enqueued other_enqueued = {0};
  CHECK_OK(sluice_harness_enqueue(h, &other, &other_enqueued, &error), error);
  CHECK_ERROR(sluice_delivery_state(db, "c", other_enqueued.id, &state, &error), SLUICE_NOTFOUND,
              error, "is not for consumer 'c'");
  CHECK_ERROR(sluice_delivery_state(db, "c", NULL, &state, &error), SLUICE_INVALID, error,
              "event_id is NULL");
  sluice_free(enqueued.id);
  sluice_free(other_enqueued.id);
  sluice_harness_close(h);
}

static void test_harness_on_a_file_leaves_it_to_look_at(void) {
  char path[256];
  new_path(path, sizeof path);
  char* error = NULL;
  sluice_harness* h = NULL;
  CHECK_OK(sluice_harness_open(path, &h, &error), error);
  Script script;
  script_init(&script, SLUICE_DONE);
  exec(sluice_db_handle(sluice_harness_db(h)), "CREATE TABLE handled (event_id TEXT)");
  CHECK_OK(
      sluice_harness_subscribe(h, "c", "order.placed", scripted_handler, &script, NULL, &error),
      error);
  sluice_new_event event = {.topic = "order.placed"};
  CHECK_OK(sluice_harness_enqueue(h, &event, NULL, &error), error);
  CHECK_OK(sluice_harness_drain(h, NULL, &error), error);
  sluice_harness_close(h);
  sluice_db* db = NULL;
  CHECK_OK(sluice_open(path, SLUICE_OPEN_EXISTING, &db, &error), error);
  CHECK(count(sluice_db_handle(db), "SELECT count(*) FROM handled") == 1);
  CHECK(count(sluice_db_handle(db), "SELECT count(*) FROM sluice_inbox") == 1);
  sluice_close(db);
}

int main(void) {
  if (mkdtemp(dir) == NULL) {
    perror("mkdtemp");
    return 1;
  }
  test_version_of_header_and_library_agree();
  test_open_refuses_bad_input_naming_it();
  test_read_only_open_writes_nothing();
  test_enqueue_commits_and_rolls_back_with_the_apps_transaction();
  test_enqueue_refuses_bad_input_and_writes_nothing();
  test_enqueue_on_a_connection_the_app_opened();
  test_handler_sees_the_event_and_its_writes_commit_with_done();
  test_enqueue_v2_stores_the_version_and_the_handler_sees_it();
  test_retry_rolls_back_the_handlers_row();
  test_retries_spend_attempts_until_exhausted();
  test_permanent_snooze_and_unknown_outcomes();
  test_pause_resume_and_throttle();
  test_handler_that_ends_the_transaction_itself_is_dead_lettered();
  test_ordered_consumer_parks_the_key_of_a_dead_letter();
  test_outside_transaction_handler_gets_no_connection();
  test_worker_refuses_bad_input();
  test_started_worker_delivers_until_stopped();
  test_dead_letters_listed_replayed_and_discarded();
  test_backfill_redelivers_and_prune_deletes_finished_history();
  test_metrics_text_is_the_prometheus_exposition();
  test_two_threads_on_one_worker_are_refused_not_interleaved();
  test_harness_delivers_on_memory_by_its_manual_clock();
  test_breaker_through_subscribe_v2();
  test_harness_refuses_bad_input_naming_it();
  test_harness_on_a_file_leaves_it_to_look_at();

  char command[512];
  snprintf(command, sizeof command, "rm -rf '%s'", dir);
  if (system(command) != 0) fprintf(stderr, "could not remove %s\n", dir);
  if (failures != 0) {
    fprintf(stderr, "%d checks failed\n", failures);
    return 1;
  }
  printf("C API: all checks passed\n");
  return 0;
}
