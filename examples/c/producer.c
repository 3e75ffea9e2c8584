/* A producer in C: an order row and its event commit together, or not at all.
   Usage: producer [DATABASE] (default orders.db) */
#include <sluice/sluice.h>
#include <stdio.h>

/* Runs `sql` on `conn`, printing SQLite's message if it fails. */
static int exec(sqlite3* conn, const char* sql) {
  char* error = NULL;
  const int rc = sqlite3_exec(conn, sql, NULL, NULL, &error);
  if (rc != SQLITE_OK) fprintf(stderr, "%s: %s\n", sql, error);
  sqlite3_free(error);
  return rc;
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "orders.db";
  char* error = NULL;
  sluice_db* db = NULL;
  /* WAL, busy handling, the sluice schema created or migrated. */
  if (sluice_open(path, SLUICE_OPEN_CREATE, &db, &error) != SLUICE_OK) {
    fprintf(stderr, "%s\n", error);
    sluice_free(error);
    return 1;
  }
  /* The app's own tables live in the same file, written on the same connection. */
  sqlite3* conn = sluice_db_handle(db);
  int ok = exec(conn, "CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, status TEXT)") ==
               SQLITE_OK &&
           exec(conn, "BEGIN IMMEDIATE") == SQLITE_OK;
  /* The request may come again (a client's retry, this program run twice): the order row is
     written once, and the event's ID says whether it was enqueued before. */
  ok = ok && exec(conn,
                  "INSERT INTO orders (id, status) VALUES ('42', 'placed') "
                  "ON CONFLICT (id) DO NOTHING") == SQLITE_OK;
  sluice_new_event event = {.topic = "order.placed",
                            .payload = "{\"order_id\":\"42\"}",
                            .key = "42",          /* ordering key */
                            .id = "request-7f3a", /* idempotency key, or NULL: generated */
                            .dedup_key = "order-42:placed"};
  sluice_enqueued result = {0};
  if (ok && sluice_enqueue(conn, &event, &result, &error) != SLUICE_OK) {
    fprintf(stderr, "%s\n", error); /* e.g. malformed JSON: nothing was written */
    sluice_free(error);
    ok = 0;
  }
  if (ok && result.status != SLUICE_STORED) {
    /* Done before: this run has nothing to write. */
    printf("already enqueued as %s\n", result.id);
    exec(conn, "ROLLBACK");
  } else if (ok && exec(conn, "COMMIT") == SQLITE_OK) {
    printf("enqueued %s\n", result.id);
  } else {
    /* Nothing of the order or its event is written; an open transaction is rolled back. */
    if (!sqlite3_get_autocommit(conn)) exec(conn, "ROLLBACK");
    ok = 0;
  }
  sluice_free(result.id);
  sluice_close(db);
  return ok ? 0 : 1;
}
