/* A test of a C handler with sluice's test harness: an in-memory database, a clock that moves
   only when the test moves it, and deliveries in the test's own thread.
   Usage: billing_test (exits 1, naming the failed check, if one fails) */
#include <sluice/sluice.h>
#include <stdio.h>
#include <stdlib.h>

/* The code under test: charges an order, unless the payment gateway is down. */
static int gateway_down = 0; /* failed calls the gateway has left */

static int bill(void* user_data, const sluice_event* event, sqlite3* conn,
                sluice_outcome* outcome) {
  (void)user_data;
  if (gateway_down > 0) {
    --gateway_down;
    snprintf(outcome->error, sizeof outcome->error, "gateway timeout");
    return SLUICE_RETRY;
  }
  sqlite3_stmt* charge = NULL;
  sqlite3_prepare_v2(conn, "INSERT INTO charges VALUES (json_extract(?, '$.order'))", -1, &charge,
                     NULL);
  sqlite3_bind_text(charge, 1, event->payload, -1, SQLITE_STATIC);
  const int rc = sqlite3_step(charge);
  sqlite3_finalize(charge);
  return rc == SQLITE_DONE ? SLUICE_DONE : SLUICE_RETRY;
}

/* The test's own. */
#define EXPECT(condition)                                                     \
  do {                                                                        \
    if (!(condition)) {                                                       \
      fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #condition); \
      exit(1);                                                                \
    }                                                                         \
  } while (0)

/* A harness whose consumer "billing" runs bill(), retrying after a second (20% jitter). */
static sluice_harness* billing_harness(void) {
  sluice_harness* harness = NULL;
  EXPECT(sluice_harness_open(":memory:", &harness, NULL) == SLUICE_OK);
  sqlite3* conn = sluice_db_handle(sluice_harness_db(harness));
  EXPECT(sqlite3_exec(conn, "CREATE TABLE charges (order_id)", NULL, NULL, NULL) == SQLITE_OK);
  sluice_consumer_options options = sluice_consumer_defaults();
  options.initial_backoff_ms = 1000;
  EXPECT(sluice_harness_subscribe(harness, "billing", "order.placed", bill, NULL, &options, NULL) ==
         SLUICE_OK);
  return harness;
}

static char* place_order(sluice_harness* harness, const char* payload) {
  sluice_new_event event = {.topic = "order.placed", .payload = payload};
  sluice_enqueued enqueued = {0};
  EXPECT(sluice_harness_enqueue(harness, &event, &enqueued, NULL) == SLUICE_OK);
  return enqueued.id; /* freed by the caller */
}

static sluice_delivery state_of(sluice_harness* harness, const char* event_id) {
  sluice_delivery delivery = {0};
  EXPECT(sluice_delivery_state(sluice_harness_db(harness), "billing", event_id, &delivery, NULL) ==
         SLUICE_OK);
  sluice_free(delivery.last_error);
  delivery.last_error = NULL;
  return delivery;
}

static void test_charges_an_order(void) {
  sluice_harness* harness = billing_harness();
  char* id = place_order(harness, "{\"order\": 42}");
  sluice_drain_result drained;
  EXPECT(sluice_harness_drain(harness, &drained, NULL) == SLUICE_OK);
  EXPECT(drained.delivered == 1);
  EXPECT(state_of(harness, id).state == SLUICE_STATE_DELIVERED);
  sluice_free(id);
  sluice_harness_close(harness);
  printf("ok: charges an order\n");
}

static void test_retries_while_the_gateway_is_down(void) {
  sluice_harness* harness = billing_harness();
  gateway_down = 2;
  char* id = place_order(harness, "{\"order\": 7}");
  sluice_drain_result drained;
  EXPECT(sluice_harness_drain(harness, &drained, NULL) == SLUICE_OK);
  EXPECT(state_of(harness, id).state == SLUICE_STATE_RETRYING);
  /* A minute in a moment: the retries after ~1 s and ~2 s run at their times on the way. */
  EXPECT(sluice_harness_advance(harness, 60000, &drained, NULL) == SLUICE_OK);
  EXPECT(drained.retried == 1 && drained.delivered == 1);
  EXPECT(state_of(harness, id).state == SLUICE_STATE_DELIVERED);
  sluice_free(id);
  sluice_harness_close(harness);
  printf("ok: retries while the gateway is down\n");
}

int main(void) {
  test_charges_an_order();
  test_retries_while_the_gateway_is_down();
  printf("billing tests: 2 passed\n");
  return 0;
}
