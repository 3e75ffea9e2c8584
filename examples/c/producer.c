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
  exec(conn, "CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, status TEXT)");

  exec(conn, "BEGIN IMMEDIATE");
  exec(conn, "INSERT INTO orders (id, status) VALUES ('42', 'placed')");
  sluice_new_event event = {.topic = "order.placed",
                            .payload = "{\"order_id\":\"42\"}",
                            .key = "42",          /* ordering key */
                            .id = "request-7f3a", /* idempotency key, or NULL: generated */
                            .dedup_key = "order-42:placed"};
  sluice_enqueued result;
  if (sluice_enqueue(conn, &event, &result, &error) != SLUICE_OK) {
    fprintf(stderr, "%s\n", error); /* e.g. malformed JSON: nothing was written */
    sluice_free(error);
    exec(conn, "ROLLBACK");
    sluice_close(db);
    return 1;
  }
  if (result.status != SLUICE_STORED) printf("already enqueued as %s\n", result.id);
  const int committed = exec(conn, "COMMIT") == SQLITE_OK;
  if (committed) printf("enqueued %s\n", result.id);
  sluice_free(result.id);
  sluice_close(db);
  return committed ? 0 : 1;
}
