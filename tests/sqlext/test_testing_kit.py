"""The extension's testing kit in Python's sqlite3 (Debian's /usr/bin/python3): a connection's
manual clock (sluice_clock_set, sluice_clock_advance, sluice_now) read by every sluice function
on it, sluice_next_due and sluice_delivery_state, and sluice_subscribe's backoff options, each
refused clearly when malformed.

Usage: test_testing_kit.py EXTENSION"""
import json
import os
import sys
import tempfile
import time

from sluice_sql import connect, expect_error, scalar

MARCH_1 = 1772355600000  # 2026-03-01T09:00:00Z


def claim(con, consumer):
    return json.loads(scalar(con, "SELECT sluice_claim(?)", (consumer,)))


def state(con, consumer, event_id):
    return json.loads(scalar(con, "SELECT sluice_delivery_state(?, ?)", (consumer, event_id)))


def the_clock_is_the_connections_and_every_function_reads_it(ext, tmp):
    path = os.path.join(tmp, "clock.db")
    con = connect(path, ext)
    scalar(con, "SELECT sluice_init()")
    system_now = int(time.time() * 1000)
    assert abs(scalar(con, "SELECT sluice_now()") - system_now) < 60_000
    assert scalar(con, "SELECT sluice_clock_set('2026-03-01T09:00:00Z')") == MARCH_1
    assert scalar(con, "SELECT sluice_clock_set(?)", (MARCH_1,)) == MARCH_1
    assert scalar(con, "SELECT sluice_now()") == MARCH_1
    scalar(con, "SELECT sluice_subscribe('c', 't', '{\"initial_backoff_ms\": 1000, \"jitter\": 0}')")
    event = scalar(con, "SELECT sluice_enqueue('t', '{}')")
    assert scalar(con, "SELECT created_at FROM sluice_events WHERE id = ?", (event,)) == MARCH_1
    assert scalar(con, "SELECT created_at FROM sluice_consumers") == MARCH_1
    # A retry falls due by the connection's clock, not the system's.
    [claimed] = claim(con, "c")
    assert scalar(con, "SELECT sluice_fail('c', ?, 'down')", (event,)) == "pending"
    assert state(con, "c", event) == {"state": "retrying", "attempts": 1,
                                      "next_attempt_at": MARCH_1 + 1000, "delivered_at": None,
                                      "last_error": "down"}
    assert scalar(con, "SELECT sluice_next_due('c')") == MARCH_1 + 1000
    assert scalar(con, "SELECT sluice_next_due()") == MARCH_1 + 1000
    assert scalar(con, "SELECT sluice_clock_advance(999)") == MARCH_1 + 999
    assert claim(con, "c") == []
    assert scalar(con, "SELECT sluice_clock_advance(1)") == MARCH_1 + 1000
    [again] = claim(con, "c")
    assert again["id"] == event and again["attempt"] == 2, again
    con.execute("BEGIN IMMEDIATE")
    scalar(con, "SELECT sluice_done('c', ?)", (event,))
    con.execute("COMMIT")
    assert state(con, "c", event)["delivered_at"] == MARCH_1 + 1000
    assert scalar(con, "SELECT sluice_next_due('c')") is None
    # The stats table's lag is the connection clock's too.
    scalar(con, "SELECT sluice_enqueue('t', '{}')")
    scalar(con, "SELECT sluice_clock_advance(60000)")
    assert scalar(con, "SELECT lag_ms FROM sluice_stats WHERE consumer = 'c'") == 60000
    # Another connection to the file keeps the system's clock.
    other = connect(path, ext)
    assert abs(scalar(other, "SELECT sluice_now()") - int(time.time() * 1000)) < 60_000
    other.close()
    # NULL gives the connection the system's clock back.
    assert abs(scalar(con, "SELECT sluice_clock_set(NULL)") - int(time.time() * 1000)) < 60_000
    con.close()


def a_delayed_event_is_due_at_its_not_before_time(ext, tmp):
    con = connect(":memory:", ext)
    scalar(con, "SELECT sluice_init()")
    scalar(con, "SELECT sluice_clock_set(?)", (MARCH_1,))
    scalar(con, "SELECT sluice_subscribe('c', 't')")
    event = scalar(con, "SELECT sluice_enqueue('t', '{}', NULL, NULL, NULL, ?)",
                   (MARCH_1 + 5000,))
    # Due before any claim reached it, and after one held it back.
    assert scalar(con, "SELECT sluice_next_due('c')") == MARCH_1 + 5000
    assert claim(con, "c") == []
    assert state(con, "c", event)["state"] == "pending"
    assert scalar(con, "SELECT sluice_next_due('c')") == MARCH_1 + 5000
    scalar(con, "SELECT sluice_clock_set(?)", (MARCH_1 + 5000,))
    assert [e["id"] for e in claim(con, "c")] == [event]
    con.close()


def the_testing_functions_refuse_bad_input(ext, tmp):
    con = connect(":memory:", ext)
    scalar(con, "SELECT sluice_init()")
    expect_error(con, "SELECT sluice_clock_advance(10)", (), ["system clock", "sluice_clock_set"])
    expect_error(con, "SELECT sluice_clock_set('soon')", (),
                 ["sluice_clock_set: the time 'soon'", "ISO-8601"])
    expect_error(con, "SELECT sluice_clock_set(-1)", (), ["before the Unix epoch"])
    scalar(con, "SELECT sluice_clock_set(?)", (MARCH_1,))
    expect_error(con, "SELECT sluice_clock_advance(-1)", (), ["0 or more"])
    expect_error(con, "SELECT sluice_clock_advance('1s')", (), ["whole number of milliseconds"])
    assert scalar(con, "SELECT sluice_now()") == MARCH_1  # the refusals moved nothing
    expect_error(con, "SELECT sluice_next_due('nobody')", (), ["no consumer named 'nobody'"])
    scalar(con, "SELECT sluice_subscribe('c', 't')")
    event = scalar(con, "SELECT sluice_enqueue('other', '{}')")
    expect_error(con, "SELECT sluice_delivery_state('nobody', ?)", (event,),
                 ["no consumer named 'nobody'"])
    expect_error(con, "SELECT sluice_delivery_state('c', 'missing')", (), ["'missing'"])
    expect_error(con, "SELECT sluice_delivery_state('c', ?)", (event,),
                 ["is not for consumer 'c'", "topic 'other'"])
    con.close()


def subscribe_records_the_backoff_and_refuses_a_malformed_one(ext, tmp):
    con = connect(":memory:", ext)
    scalar(con, "SELECT sluice_init()")
    subscribe = "SELECT sluice_subscribe('c', 't', ?)"
    cases = [
        ({"initial_backoff_ms": -1}, ["option initial_backoff_ms -1", "0 or more"]),
        ({"initial_backoff_ms": "1s"}, ["option initial_backoff_ms \"1s\"", "milliseconds"]),
        ({"max_backoff_ms": 1.5}, ["option max_backoff_ms 1.5", "whole number"]),
        ({"multiplier": 0.5}, ["option multiplier 0.5", "1 or more"]),
        ({"jitter": 1}, ["option jitter 1", "up to (not including) 1"]),
        ({"seed": -3}, ["option seed -3"]),
        ({"max_attempts": 0}, ["option max_attempts 0", "1 or more"]),
        ({"backoff": 1000}, ["unknown option 'backoff'", "initial_backoff_ms"]),
        ({"initial_backoff_ms": 5000, "max_backoff_ms": 4000},
         ["max_backoff_ms 4000 is less than initial_backoff_ms 5000"]),
        ({"initial_backoff_ms": 700000},
         ["max_backoff_ms 600000 (recorded or the default) is less than initial_backoff_ms"]),
    ]
    for options, words in cases:
        expect_error(con, subscribe, (json.dumps(options),), words)
    assert scalar(con, "SELECT count(*) FROM sluice_consumers") == 0  # nothing written
    scalar(con, subscribe, (json.dumps({"max_attempts": 3, "initial_backoff_ms": 250,
                                        "max_backoff_ms": 2000, "multiplier": 3, "jitter": 0.5,
                                        "seed": 18446744073709551615}),))
    row = con.execute("SELECT max_attempts, initial_backoff_ms, max_backoff_ms, "
                      "backoff_multiplier, backoff_jitter, backoff_seed, retry_span_ms "
                      "FROM sluice_consumers").fetchone()
    # The span at full jitter: (250 + 750) * 1.5.
    assert row == (3, 250, 2000, 3.0, 0.5, -1, 1500), row
    # Subscribed again naming the same backoff, or none: accepted. Another one: refused.
    scalar(con, subscribe, ('{"initial_backoff_ms": 250}',))
    scalar(con, "SELECT sluice_subscribe('c', 'u')")
    expect_error(con, subscribe, ('{"initial_backoff_ms": 300, "multiplier": 2}',),
                 ["initial_backoff_ms 250 (asked 300), multiplier 3.0 (asked 2.0)"])
    con.close()


def main():
    ext = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        for test in [the_clock_is_the_connections_and_every_function_reads_it,
                     a_delayed_event_is_due_at_its_not_before_time,
                     the_testing_functions_refuse_bad_input,
                     subscribe_records_the_backoff_and_refuses_a_malformed_one]:
            test(ext, tmp)
            print(f"ok {test.__name__}")


if __name__ == "__main__":
    main()
