"""Testing a Python consumer's handler as C++ tests do with sluice::testing::Harness: an
in-memory database, a clock that moves only when the test moves it, and a drain that hands every
due event to the handler, retries included. From the repository root, with Debian's python3:
  /usr/bin/python3 examples/python/test_billing.py build/sqlext/sluice.so"""
import json
import sqlite3
import sys
import unittest

EXTENSION = sys.argv[1]


# The app's code under test: the billing handler and the loop that runs it for each event.
class CardDeclined(Exception):
    """A failure no retry can mend."""


def bill(con, event, gateway):
    order = event["payload"]["order"]
    gateway(order)  # raises while the payment gateway is down
    con.execute("INSERT INTO charges VALUES (?)", (order,))


def handle(con, event, handler):
    """The handler's writes and sluice_done commit together; a failure is recorded instead."""
    con.execute("BEGIN IMMEDIATE")
    try:
        handler(con, event)
    except Exception as error:
        con.execute("ROLLBACK")
        con.execute("SELECT sluice_fail('billing', ?, ?, ?)",
                    (event["id"], str(error), isinstance(error, CardDeclined)))
        return
    con.execute("SELECT sluice_done('billing', ?)", (event["id"],))
    con.execute("COMMIT")


# The test's helpers: drain and advance, as the C++ Harness has them.
def scalar(con, sql, *params):
    return con.execute(sql, params).fetchone()[0]


def drain(con, handler):
    """Handles every event due at the connection's clock."""
    while events := json.loads(scalar(con, "SELECT sluice_claim('billing')")):
        for event in events:
            handle(con, event, handler)


def advance(con, ms, handler):
    """Moves the clock `ms` on, draining at each time a retry falls due on the way."""
    until = scalar(con, "SELECT sluice_now()") + ms
    drain(con, handler)
    while (due := scalar(con, "SELECT sluice_next_due('billing')")) is not None and due <= until:
        scalar(con, "SELECT sluice_clock_set(?)", due)
        drain(con, handler)
    scalar(con, "SELECT sluice_clock_set(?)", until)
    drain(con, handler)


class BillingTest(unittest.TestCase):
    def setUp(self):
        self.con = sqlite3.connect(":memory:", isolation_level=None)
        self.con.enable_load_extension(True)
        self.con.load_extension(EXTENSION)
        self.con.execute("SELECT sluice_init()")
        self.con.execute("SELECT sluice_clock_set('2026-03-01T09:00:00Z')")  # stopped
        self.con.execute("CREATE TABLE charges (order_id INTEGER)")
        # A second, then 2 s, 4 s...; no jitter, so the test knows when each retry comes.
        self.con.execute("""SELECT sluice_subscribe('billing', 'order.placed',
            '{"max_attempts": 4, "initial_backoff_ms": 1000, "jitter": 0}')""")
        self.down = 0  # failed calls the gateway has left

    def tearDown(self):
        self.con.close()

    def gateway(self, order):
        if order == 13:
            raise CardDeclined("card declined")
        if self.down > 0:
            self.down -= 1
            raise ConnectionError("gateway timeout")

    def handler(self, con, event):
        bill(con, event, self.gateway)

    def place(self, order):
        return scalar(self.con, "SELECT sluice_enqueue('order.placed', json_object('order', ?))",
                      order)

    def state(self, event_id):
        return json.loads(scalar(self.con, "SELECT sluice_delivery_state('billing', ?)", event_id))

    def charges(self):
        return [row[0] for row in self.con.execute("SELECT order_id FROM charges")]

    def test_charges_each_order_once(self):
        first, second = self.place(1), self.place(2)
        drain(self.con, self.handler)
        self.assertEqual(self.charges(), [1, 2])
        self.assertEqual(self.state(first)["state"], "delivered")
        self.assertEqual(self.state(second)["state"], "delivered")

    def test_retries_while_the_gateway_is_down(self):
        self.down = 2
        event = self.place(7)
        start = scalar(self.con, "SELECT sluice_now()")
        drain(self.con, self.handler)
        self.assertEqual(self.state(event)["state"], "retrying")
        self.assertEqual(self.state(event)["next_attempt_at"], start + 1000)
        advance(self.con, 999, self.handler)  # not yet due
        self.assertEqual(self.state(event)["attempts"], 1)
        advance(self.con, 1, self.handler)  # the second attempt fails too: 2 s more
        self.assertEqual(self.state(event)["attempts"], 2)
        self.assertEqual(self.state(event)["last_error"], "gateway timeout")
        advance(self.con, 2000, self.handler)
        self.assertEqual(self.state(event)["state"], "delivered")
        self.assertEqual(self.charges(), [7])

    def test_a_declined_card_is_dead_lettered_at_once(self):
        event = self.place(13)
        drain(self.con, self.handler)
        self.assertEqual(self.state(event)["state"], "dead")
        self.assertEqual(
            self.con.execute("SELECT reason, last_error FROM sluice_dead_letters").fetchall(),
            [("permanent", "card declined")])
        self.assertEqual(self.charges(), [])


if __name__ == "__main__":
    result = unittest.main(argv=sys.argv[:1], exit=False,
                           testRunner=unittest.TextTestRunner(stream=sys.stdout, verbosity=2))
    sys.exit(not result.result.wasSuccessful())
