/* A consumer in C: the handler's write, the inbox row and the delivery state commit together.
   Usage: consumer [DATABASE] (default orders.db); run after producer. */
#include <sluice/sluice.h>
#include <stdio.h>

/* Charges the order. Its UPDATE runs in the delivery transaction on `conn`: it commits only if
   the handler returns SLUICE_DONE. */
static int bill(void* user_data, const sluice_event* event, sqlite3* conn,
                sluice_outcome* outcome) {
  (void)user_data;
  sqlite3_stmt* charge = NULL;
  int rc = sqlite3_prepare_v2(conn,
                              "UPDATE orders SET status = 'charged' "
                              "WHERE id = json_extract(?, '$.order_id') AND status = 'placed'",
                              -1, &charge, NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(charge, 1, event->payload, -1, SQLITE_STATIC);
    rc = sqlite3_step(charge);
  }
  sqlite3_finalize(charge);
  if (rc != SQLITE_DONE) {
    /* Retried later with backoff; the error is recorded with the attempt. */
    snprintf(outcome->error, sizeof outcome->error, "charge: %s", sqlite3_errmsg(conn));
    return SLUICE_RETRY;
  }
  printf("billing handled %s (attempt %d)\n", event->id, event->attempt);
  return SLUICE_DONE;
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "orders.db";
  char* error = NULL;
  sluice_worker* worker = NULL;
  int rc = sluice_worker_open(path, &worker, &error);
  /* A new consumer starts from "now"; this one takes the events enqueued before it existed. */
  sluice_consumer_options options = sluice_consumer_defaults();
  options.start_from_oldest = 1;
  if (rc == SLUICE_OK) {
    rc = sluice_worker_subscribe(worker, "billing", "order.placed", bill, NULL, &options, &error);
  }
  /* Delivers what is due, here in this thread; sluice_worker_start() delivers on a thread of the
     worker's own until sluice_worker_stop(). */
  sluice_drain_result drained;
  if (rc == SLUICE_OK) rc = sluice_worker_run_until_idle(worker, &drained, &error);
  sluice_worker_close(worker);
  if (rc != SLUICE_OK) {
    fprintf(stderr, "%s\n", error);
    sluice_free(error);
    return 1;
  }

  sluice_db* db = NULL;
  if (sluice_open(path, SLUICE_OPEN_EXISTING, &db, &error) != SLUICE_OK) {
    fprintf(stderr, "%s\n", error);
    sluice_free(error);
    return 1;
  }
  sqlite3_stmt* status = NULL;
  sqlite3_prepare_v2(sluice_db_handle(db), "SELECT status FROM orders WHERE id = '42'", -1, &status,
                     NULL);
  if (sqlite3_step(status) == SQLITE_ROW) {
    printf("order 42 is %s\n", (const char*)sqlite3_column_text(status, 0)); /* charged */
  }
  sqlite3_finalize(status);
  sluice_close(db);
  return 0;
}
