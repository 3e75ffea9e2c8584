"""The extension in Python's standard sqlite3 module (run with Debian's /usr/bin/python3, whose
sqlite3 can load extensions): bad input, a Python producer beside a C++ worker, and a Python
consumer whose effect stays exactly-once when it is killed with SIGKILL mid-batch.

Usage: test_python_sqlite3.py EXTENSION CLI_TEST_WORKER
       test_python_sqlite3.py --consume EXTENSION DB PAUSE_AFTER  (the consumer child)"""
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

from sluice_sql import connect, expect_error, scalar, wait_until

CONSUMER = "pyworker"


def bad_input_is_an_sql_error_and_writes_nothing(ext, tmp):
    con = connect(os.path.join(tmp, "bad.db"), ext)
    scalar(con, "SELECT sluice_init()")
    con.execute("CREATE TABLE orders (id TEXT PRIMARY KEY)")
    enqueue = "SELECT sluice_enqueue(?, ?, ?, ?, ?, ?, ?, ?)"
    cases = [
        (("t", '{"a":', None, None, None, None, None, None), ["JSON"]),
        (("t", '"' + "x" * (1 << 20) + '"', None, None, None, None, None, None),
         ["bytes", "limit"]),
        (("", "{}", None, None, None, None, None, None), ["topic is empty"]),
        (("t", None, None, None, None, None, None, None), ["payload is NULL"]),
        (("t", "{}", None, None, None, "tomorrow", None, None), ["not_before 'tomorrow'"]),
        (("t", "{}", None, None, None, None, "[1]", None), ["headers"]),
        (("t", "{}", None, None, None, None, '{"trace": 7}', None), ["header 'trace'"]),
        (("t", "{}", None, None, None, None, None, 0), ["version", "is 0"]),
        (("t", "{}", None, None, None, None, None, -2), ["version", "1 or more"]),
        (("t", "{}", None, None, None, None, None, "2"), ["version must be an integer"]),
    ]
    for args, words in cases:
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO orders VALUES ('o1')")
        expect_error(con, enqueue, args, words)
        # The failed call left the transaction usable and wrote nothing of its own.
        assert con.in_transaction, f"{args[:2]}: the transaction was rolled back"
        assert scalar(con, "SELECT count(*) FROM sluice_events") == 0
        con.execute("ROLLBACK")
    # Operator verbs run in transactions of their own, and say so inside one.
    con.execute("BEGIN")
    expect_error(con, "SELECT sluice_claim('c')", (), ["outside BEGIN"])
    con.execute("ROLLBACK")
    expect_error(con, "SELECT sluice_claim('nobody')", (), ["no consumer named 'nobody'"])
    # An ordered consumer (a C++ worker's, say) is refused rather than delivered out of order.
    scalar(con, "SELECT sluice_subscribe('audit', 'order.placed')")
    con.execute("UPDATE sluice_consumers SET ordered = 1 WHERE name = 'audit'")
    expect_error(con, "SELECT sluice_claim('audit')", (), ["'audit' is ordered"])
    expect_error(con, "SELECT sluice_done('nobody', 'e1')", (), ["not in this connection's claim"])
    con.close()


def a_trigger_enqueueing_into_itself_fails_and_one_level_is_fine(ext, tmp):
    con = connect(os.path.join(tmp, "echo.db"), ext)
    scalar(con, "SELECT sluice_init()")
    # One level: an order's event also records an audit event, whose own insert adds none.
    con.execute("CREATE TRIGGER audited AFTER INSERT ON sluice_events WHEN NEW.topic = 'order' "
                "BEGIN SELECT sluice_enqueue('audit', json_object('of', NEW.id)); END")
    scalar(con, "SELECT sluice_enqueue('order', '{}')")
    assert scalar(con, "SELECT group_concat(topic) FROM sluice_events") == "order,audit"
    # Without a WHEN the trigger runs for the events it enqueues itself, without end.
    con.execute("CREATE TRIGGER echo AFTER INSERT ON sluice_events "
                "BEGIN SELECT sluice_enqueue('echo', '{}'); END")
    message = expect_error(con, "SELECT sluice_enqueue('order', '{}')", (),
                           ["sluice_enqueue", "nested", "trigger on sluice_events"])
    assert message.count("sluice:") == 1, message
    assert scalar(con, "SELECT count(*) FROM sluice_events") == 2
    con.close()


def a_file_without_the_schema_is_refused_and_left_alone(ext, tmp):
    path = os.path.join(tmp, "plain.db")
    plain = sqlite3.connect(path)
    plain.execute("CREATE TABLE notes (body TEXT)")
    plain.commit()
    plain.close()
    before = open(path, "rb").read()
    con = connect(path, ext)
    expect_error(con, "SELECT sluice_enqueue('t', '{}')", (), ["no sluice schema", "sluice init"])
    expect_error(con, "SELECT * FROM sluice_stats", (), ["no sluice schema"])
    assert scalar(con, "PRAGMA journal_mode") == "delete"
    con.close()
    assert open(path, "rb").read() == before, "loading the extension changed a foreign file"


def duplicates_return_the_existing_event(ext, tmp):
    con = connect(os.path.join(tmp, "dup.db"), ext)
    scalar(con, "SELECT sluice_init()")
    first = json.loads(scalar(con, "SELECT sluice_enqueue_result('t', '{}', NULL, 'id-1')"))
    again = json.loads(scalar(con, "SELECT sluice_enqueue_result('t', '[]', NULL, 'id-1')"))
    assert first["status"] == "stored" and again == {**first, "status": "duplicate_id"}, again
    keyed = scalar(con, "SELECT sluice_enqueue('t', '{}', NULL, NULL, 'order-1:paid')")
    same = json.loads(scalar(con, "SELECT sluice_enqueue_result('t', '{}', NULL, NULL, "
                                  "'order-1:paid')"))
    assert same["status"] == "duplicate_dedup_key" and same["id"] == keyed, same
    assert scalar(con, "SELECT sluice_enqueue('t', '{}', NULL, 'id-1')") == "id-1"
    assert scalar(con, "SELECT count(*) FROM sluice_events") == 2
    con.close()


def a_python_producer_feeds_a_cpp_worker(ext, worker_binary, tmp):
    path = os.path.join(tmp, "shop.db")
    con = connect(path, ext)
    scalar(con, "SELECT sluice_init()")
    worker = subprocess.Popen([worker_binary, path, "20"], stdout=subprocess.PIPE, text=True)
    try:
        assert worker.stdout.readline().strip() == "ready"
        con.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY, cents INTEGER)")
        ledger = []
        for order in range(30):
            con.execute("BEGIN IMMEDIATE")
            con.execute("INSERT INTO orders VALUES (?, ?)", (order, 100 * order))
            event_id = scalar(con, "SELECT sluice_enqueue('order.placed', json_object('order', ?),"
                                   " ?)", (order, str(order)))
            if order % 10 == 9:
                con.execute("ROLLBACK")  # neither the order nor its event
                continue
            con.execute("COMMIT")
            ledger.append(event_id)
            # This process is also an instance of the worker's consumer: whatever it claims
            # before the worker does, it applies itself, into the worker's table.
            for event in json.loads(scalar(con, "SELECT sluice_claim('billing', 2)")):
                con.execute("BEGIN IMMEDIATE")
                con.execute("INSERT INTO applied (event_id, applied_at) VALUES (?, -1)",
                            (event["id"],))
                scalar(con, "SELECT sluice_done('billing', ?)", (event["id"],))
                con.execute("COMMIT")
        wait_until("the worker to apply every committed order",
                   lambda: scalar(con, "SELECT count(*) FROM applied") >= len(ledger))
        applied = [row[0] for row in con.execute("SELECT event_id FROM applied")]
        assert sorted(applied) == sorted(ledger), "applied is not exactly the committed events"
        by_python = scalar(con, "SELECT count(*) FROM applied WHERE applied_at = -1")
        print(f"{len(ledger)} orders applied once each, {by_python} of them by the Python instance")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
    assert worker.returncode == 0, worker.returncode
    con.close()


def a_claimed_event_is_the_event_as_stored(ext, tmp):
    con = connect(os.path.join(tmp, "claim.db"), ext)
    scalar(con, "SELECT sluice_init()")
    scalar(con, "SELECT sluice_subscribe('c', 't')")
    payload = '{"n": 123456789012345678901234567890, "s": "caf\\u00e9 \u263a"}'
    headers = {"trace": "a\u0000b", "\u00e9t\u00e9": "\U0001f600"}
    scalar(con, "SELECT sluice_enqueue('t', ?, 'k1', 'e1', 'd1', 4102444800000, ?)",
           (payload, json.dumps(headers)))
    claimed = scalar(con, "SELECT sluice_claim('c')")
    assert claimed == "[]", f"claimed before its not_before time: {claimed}"
    scalar(con, "SELECT sluice_enqueue('t', ?, NULL, 'e2', NULL, NULL, ?)", (payload,
                                                                           json.dumps(headers)))
    claimed = scalar(con, "SELECT sluice_claim('c')")
    assert payload in claimed, f"the payload was not passed through as stored: {claimed}"
    [event] = json.loads(claimed)
    assert event["payload"]["n"] == 123456789012345678901234567890, event
    assert event["headers"] == headers and event["id"] == "e2", event
    assert (event["key"], event["dedup_key"], event["not_before"], event["attempt"]) == \
        (None, None, None, 1), event
    assert list(event) == ["id", "seq", "topic", "payload", "headers", "key", "dedup_key",
                           "not_before", "created_at", "version", "attempt"], list(event)
    assert event["version"] == 1, event
    scalar(con, "SELECT sluice_enqueue('t', '{}', NULL, 'e3', NULL, NULL, NULL, 4)")
    # The claim gives back e2, still claimed, with e3.
    versions = {e["id"]: e["version"] for e in json.loads(scalar(con, "SELECT sluice_claim('c')"))}
    assert versions["e3"] == 4, versions
    con.close()


def a_failure_is_retried_then_dead_lettered(ext, tmp):
    con = connect(os.path.join(tmp, "retry.db"), ext)
    scalar(con, "SELECT sluice_init()")
    scalar(con, """SELECT sluice_subscribe('c', 't', '{"max_attempts": 2}')""")
    done_id = scalar(con, "SELECT sluice_enqueue('t', '{}')")
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    failing_id = scalar(con, "SELECT sluice_enqueue('t', '{}', NULL, NULL, NULL, NULL, ?)",
                        (json.dumps({"traceparent": f"00-{trace}-00f067aa0ba902b7-01"}),))
    assert len(json.loads(scalar(con, "SELECT sluice_claim('c')"))) == 2
    assert scalar(con, "SELECT sluice_done('c', ?)", (done_id,)) == 1
    expect_error(con, "SELECT sluice_done('c', ?)", (done_id,), ["finished already"])
    assert scalar(con, "SELECT sluice_fail('c', ?, 'timeout')", (failing_id,)) == "pending"
    expect_error(con, "SELECT sluice_fail('c', ?, 'timeout')", (failing_id,), ["finished already"])
    assert con.execute("SELECT pending, retrying, retries_total FROM sluice_stats").fetchone() \
        == (1, 1, 1)
    # Its second and last attempt, once its backoff (about a second) has passed.
    events = []

    def claimed():
        events[:] = json.loads(scalar(con, "SELECT sluice_claim('c')"))
        return events

    wait_until("the retry to fall due", claimed)
    assert [(e["id"], e["attempt"]) for e in events] == [(failing_id, 2)], events
    assert scalar(con, "SELECT sluice_fail('c', ?, 'timeout again')", (failing_id,)) == "dead"
    assert con.execute("SELECT event_id, reason, last_error, attempts FROM sluice_dead_letters"
                       ).fetchall() == [(failing_id, "exhausted", "timeout again", 2)]
    assert scalar(con, "SELECT trace_id FROM sluice_dead_letters") == trace
    assert scalar(con, "SELECT count(*) FROM sluice_claims") == 0
    con.close()


def triage_in_sql_is_audited_as_sql(ext, tmp):
    con = connect(os.path.join(tmp, "triage.db"), ext)
    scalar(con, "SELECT sluice_init()")
    scalar(con, "SELECT sluice_subscribe('billing', 't')")
    ids = [scalar(con, "SELECT sluice_enqueue('t', '{}')") for _ in range(3)]
    assert len(json.loads(scalar(con, "SELECT sluice_claim('billing')"))) == 3
    for event_id in ids:
        assert scalar(con, "SELECT sluice_fail('billing', ?, 'declined', 1)", (event_id,)) == "dead"
    assert scalar(con, "SELECT sluice_dlq_replay('billing', ?)", (ids[0],)) == 1
    assert scalar(con, "SELECT sluice_dlq_discard('billing', NULL, 'refunded')") == 2
    rows = con.execute("SELECT action, source, count, note, filter FROM sluice_audit ORDER BY id"
                       ).fetchall()
    assert rows == [("replay", "sql", 1, None, json.dumps({"event_ids": [ids[0]],
                                                           "consumer": "billing"},
                                                          separators=(",", ":"), sort_keys=True)),
                    ("discard", "sql", 2, "refunded", '{"consumer":"billing"}')], rows
    con.close()


def loading_gives_sluice_busy_handling(ext, tmp):
    path = os.path.join(tmp, "busy.db")
    scalar(connect(path, ext), "SELECT sluice_init()")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    # Without a busy handler (timeout 0) a writer fails at once while the lock is held...
    plain = sqlite3.connect(path, isolation_level=None, timeout=0)
    expect_error(plain, "BEGIN IMMEDIATE", (), ["locked"])
    # ...and with the extension loaded on the same kind of connection it waits for the lock.
    waiter = connect(path, ext, timeout=0, check_same_thread=False)
    trying = threading.Event()
    outcome = {}

    def write():
        trying.set()
        try:
            waiter.execute("BEGIN IMMEDIATE")
            waiter.execute("COMMIT")
            outcome["ok"] = True
        except sqlite3.Error as e:
            outcome["error"] = str(e)

    writer = threading.Thread(target=write)
    writer.start()
    trying.wait()
    time.sleep(0.2)  # how long the lock stays held while the writer waits, not a sync point
    holder.execute("COMMIT")
    writer.join()
    assert outcome.get("ok"), f"the loading connection did not wait for the lock: {outcome}"


def consume(ext, path, pause_after):
    """The consumer child: handles every claimed event in its own transaction with its effect
    and sluice_done, reports each commit, and stops (to be killed) after `pause_after` of them."""
    con = connect(path, ext)
    total = scalar(con, "SELECT count(*) FROM sluice_events")
    done = 0
    while scalar(con, "SELECT count(DISTINCT event_id) FROM effects") < total:
        events = json.loads(scalar(con, "SELECT sluice_claim(?, 10)", (CONSUMER,)))
        if not events:
            time.sleep(0.05)  # the app's poll: a crashed batch's retry waits for its backoff
            continue
        for event in events:
            con.execute("BEGIN IMMEDIATE")
            con.execute("INSERT INTO effects (event_id, n) VALUES (?, ?)",
                        (event["id"], event["payload"]["n"]))
            scalar(con, "SELECT sluice_done(?, ?)", (CONSUMER, event["id"]))
            con.execute("COMMIT")
            done += 1
            print(f"done {done}", flush=True)
            if done == pause_after:
                print("paused", flush=True)
                sys.stdin.readline()  # killed here, its batch half done
    print("finished", flush=True)


def a_python_consumer_is_exactly_once_under_sigkill(ext, tmp):
    path = os.path.join(tmp, "jobs.db")
    con = connect(path, ext)
    scalar(con, "SELECT sluice_init()")
    con.execute("CREATE TABLE effects (event_id TEXT NOT NULL, n INTEGER)")  # no UNIQUE: a
    # second effect of one event must show
    scalar(con, "SELECT sluice_subscribe(?, 'job', '{\"start_from\": \"oldest\"}')", (CONSUMER,))
    ledger = []
    for batch in range(12):
        con.execute("BEGIN IMMEDIATE")
        ids = [scalar(con, "SELECT sluice_enqueue('job', json_object('n', ?))", (batch * 10 + i,))
               for i in range(10)]
        con.execute("COMMIT")
        ledger += ids  # after the commit returned, as the torture suite's ledger

    def child(pause_after):
        return subprocess.Popen([sys.executable, __file__, "--consume", ext, path,
                                 str(pause_after)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)

    # Killed while paused in the middle of its first batch: 4 of 10 committed.
    first = child(4)
    while first.stdout.readline().strip() != "paused":
        pass
    first.kill()
    first.wait()
    # Killed wherever it is once it has committed 35 more: mid-batch, maybe mid-transaction.
    second = child(-1)
    while second.stdout.readline().strip() != "done 35":
        pass
    second.kill()
    second.wait()
    # A last one finishes the work, recovering the dead ones' claims first.
    last = child(-1)
    out, _ = last.communicate(timeout=120)
    assert last.returncode == 0 and out.strip().endswith("finished"), out[-200:]

    twice = con.execute("SELECT event_id, count(*) FROM effects GROUP BY event_id "
                        "HAVING count(*) > 1").fetchall()
    assert not twice, f"effects applied more than once: {twice}"
    effects = [row[0] for row in con.execute("SELECT event_id FROM effects")]
    assert sorted(effects) == sorted(ledger), "effects are not exactly the acknowledged events"
    crashed = scalar(con, "SELECT count(*) FROM sluice_attempts WHERE earlier LIKE '%crashed%'")
    assert crashed > 0, "no event went through crash recovery: the kills tested nothing"
    assert scalar(con, "SELECT count(*) FROM sluice_claims") == 0
    assert scalar(con, "SELECT count(*) FROM sluice_dead_letters") == 0
    stats = con.execute("SELECT delivered_total, pending, claimed FROM sluice_stats "
                        "WHERE consumer = ?", (CONSUMER,)).fetchone()
    assert stats == (len(ledger), 0, 0), stats
    con.close()
    print(f"{len(ledger)} events consumed exactly once across 2 kills; {crashed} of them went "
          "through crash recovery")


def claim_and_close(ext, path):
    """The claiming child: claims every event, closes its connection without sluice_release and
    stays alive until its stdin closes."""
    con = connect(path, ext)
    claimed = json.loads(scalar(con, "SELECT sluice_claim('mailer', 10)"))
    con.close()
    print(f"closed {len(claimed)}", flush=True)
    sys.stdin.readline()


def a_closed_connections_claim_is_recovered_while_its_process_lives(ext, tmp):
    path = os.path.join(tmp, "closed.db")
    con = connect(path, ext)
    scalar(con, "SELECT sluice_init()")
    scalar(con, "SELECT sluice_subscribe('mailer', 'mail', '{\"max_attempts\": 5}')")
    for i in range(3):
        scalar(con, "SELECT sluice_enqueue('mail', json_object('n', ?))", (i,))
    child = subprocess.Popen([sys.executable, __file__, "--claim-and-close", ext, path],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "closed 3"
        assert scalar(con, "SELECT claimed FROM sluice_stats WHERE consumer = 'mailer'") == 3
        # Its process lives on, but a closed connection is a crash: another one recovers the
        # claim (the retries wait for the consumer's backoff).
        # Each sluice_claim gives back the rest of the previous one: what it claims is handled
        # before the next call.
        done = []

        def claim_and_finish():
            for event in json.loads(scalar(con, "SELECT sluice_claim('mailer', 10)")):
                assert event["attempt"] == 2, event
                scalar(con, "SELECT sluice_done('mailer', ?)", (event["id"],))
                done.append(event["id"])
            return len(done) == 3

        wait_until("the closed connection's claim recovered", claim_and_finish, timeout=30)
        assert child.poll() is None, "the claiming process was meant to be still running"
    finally:
        child.stdin.close()
        child.wait()
    stats = con.execute("SELECT delivered_total, pending, claimed FROM sluice_stats "
                        "WHERE consumer = 'mailer'").fetchone()
    assert stats == (3, 0, 0), stats
    con.close()


def subscribing_again_keeps_the_recorded_options(ext, tmp):
    con = connect(os.path.join(tmp, "options.db"), ext)
    scalar(con, "SELECT sluice_init()")
    scalar(con, "SELECT sluice_subscribe('ledger', 'entry', '{\"max_attempts\": 4}')")
    # As a C++ worker records an ordered consumer.
    con.execute("UPDATE sluice_consumers SET ordered = 1 WHERE name = 'ledger'")
    # The documented first call of every SQL consumer changes none of the recorded options.
    scalar(con, "SELECT sluice_subscribe('ledger', 'entry')")
    scalar(con, "SELECT sluice_subscribe('ledger', 'other')")
    row = con.execute("SELECT ordered, max_attempts FROM sluice_consumers "
                      "WHERE name = 'ledger'").fetchone()
    assert row == (1, 4), row
    expect_error(con, "SELECT sluice_subscribe('ledger', 'entry', '{\"max_attempts\": 9}')", (),
                 ["max_attempts 4 (asked 9)"])
    expect_error(con, "SELECT sluice_claim('ledger')", (), ["'ledger' is ordered"])
    con.close()


def not_before_is_milliseconds_or_iso_8601_text(ext, tmp):
    con = connect(os.path.join(tmp, "not_before.db"), ext)
    scalar(con, "SELECT sluice_init()")
    for given, stored in [(4102444800000, 4102444800000),
                          ("2100-01-01T00:00:00Z", 4102444800000),
                          ("2100-01-01 01:00:00.250+01:00", 4102444800250),
                          ("2100-01-01T00:00:00.007", 4102444800007)]:
        event_id = scalar(con, "SELECT sluice_enqueue('t', '{}', NULL, NULL, NULL, ?)", (given,))
        at = scalar(con, "SELECT not_before FROM sluice_events WHERE id = ?", (event_id,))
        assert at == stored, f"not_before {given!r} stored as {at}, not {stored}"
    for bad in ["tomorrow", "2100-13-01T00:00:00Z", 1.5, b"\x00"]:
        expect_error(con, "SELECT sluice_enqueue('t', '{}', NULL, NULL, NULL, ?)", (bad,),
                     ["not_before", "ISO-8601"])
    con.close()


def handle_all(con):
    """Claims consumer c's due events, expecting one, and marks it done."""
    events = json.loads(scalar(con, "SELECT sluice_claim('c')"))
    assert len(events) == 1, events
    con.execute("BEGIN IMMEDIATE")
    scalar(con, "SELECT sluice_done('c', ?)", (events[0]["id"],))
    con.execute("COMMIT")


def a_consumer_sleeps_in_sluice_wait_until_work_arrives(ext, tmp):
    path = os.path.join(tmp, "wait.db")
    consumer = connect(path, ext, check_same_thread=False)
    scalar(consumer, "SELECT sluice_init()")
    scalar(consumer, "SELECT sluice_subscribe('c', 't')")
    producer = connect(path, ext)
    # Nothing written: the wait lasts its whole timeout and says so.
    assert scalar(consumer, "SELECT sluice_claim('c')") == "[]"
    started = time.monotonic()
    assert scalar(consumer, "SELECT sluice_wait(200)") == 0
    assert time.monotonic() - started >= 0.2
    expect_error(consumer, "SELECT sluice_wait(-1)", (), ["timeout", "0 or more"])
    expect_error(consumer, "SELECT sluice_wait('soon')", (), ["timeout"])
    consumer.execute("BEGIN")
    expect_error(consumer, "SELECT sluice_wait(10)", (), ["outside BEGIN"])
    consumer.execute("ROLLBACK")
    # A commit between the empty claim and the wait ends the wait at once.
    assert scalar(consumer, "SELECT sluice_claim('c')") == "[]"
    scalar(producer, "SELECT sluice_enqueue('t', '{}')")
    started = time.monotonic()
    assert scalar(consumer, "SELECT sluice_wait(60000)") == 1
    assert time.monotonic() - started < 30, "the wait missed a commit made before it began"
    handle_all(consumer)
    # A consumer asleep in the wait wakes for a commit made while it sleeps.
    assert scalar(consumer, "SELECT sluice_claim('c')") == "[]"
    woke = []
    sleeper = threading.Thread(
        target=lambda: woke.append(scalar(consumer, "SELECT sluice_wait(60000)")))
    sleeper.start()
    scalar(producer, "SELECT sluice_enqueue('t', '{}')")
    sleeper.join(30)
    assert woke == [1], f"the wait did not end for the commit: {woke}"
    handle_all(consumer)
    producer.close()
    consumer.close()


def a_breaker_a_worker_recorded_holds_sql_claims_too(ext, tmp):
    con = connect(os.path.join(tmp, "breaker.db"), ext)
    scalar(con, "SELECT sluice_init()")
    scalar(con, "SELECT sluice_clock_set(1800000000000)")
    scalar(con, "SELECT sluice_subscribe('mailer', 't')")
    # As a C++ or C worker records ConsumerOptions::breaker: 2 failures in a row, a minute.
    con.execute("UPDATE sluice_consumers SET breaker_failures = 2, breaker_cool_down_ms = 60000, "
                "breaker_max_cool_down_ms = 600000 WHERE name = 'mailer'")
    for _ in range(4):
        scalar(con, "SELECT sluice_enqueue('t', '{}')")
    claimed = json.loads(scalar(con, "SELECT sluice_claim('mailer', 2)"))
    assert len(claimed) == 2, claimed
    for event in claimed:
        assert scalar(con, "SELECT sluice_fail('mailer', ?, 'mail API down')",
                      (event["id"],)) == "pending"
    assert json.loads(scalar(con, "SELECT sluice_claim('mailer')")) == []  # open
    assert con.execute("SELECT breaker, breaker_failures, breaker_open_until, "
                       "breaker_cool_down_ms FROM sluice_stats").fetchone() \
        == ("open", 2, 1800000060000, 60000)
    scalar(con, "SELECT sluice_clock_advance(61000)")
    probe = json.loads(scalar(con, "SELECT sluice_claim('mailer')"))
    assert len(probe) == 1, probe  # half-open: one event goes through
    assert scalar(con, "SELECT sluice_fail('mailer', ?, 'still down')", (probe[0]["id"],)) \
        == "pending"
    # Open again, for twice the cool-down.
    scalar(con, "SELECT sluice_clock_advance(119000)")
    assert json.loads(scalar(con, "SELECT sluice_claim('mailer')")) == []
    scalar(con, "SELECT sluice_clock_advance(2000)")
    again = json.loads(scalar(con, "SELECT sluice_claim('mailer')"))
    assert len(again) == 1, again
    assert scalar(con, "SELECT sluice_done('mailer', ?)", (again[0]["id"],)) == 1
    rest = json.loads(scalar(con, "SELECT sluice_claim('mailer')"))  # closed
    assert len(rest) == 3, rest
    # The failed probe spent no attempt: claimed again as the same attempt.
    assert [e["attempt"] for e in rest + again if e["id"] == probe[0]["id"]] \
        == [probe[0]["attempt"]], (rest, again, probe)
    for event in rest:
        scalar(con, "SELECT sluice_done('mailer', ?)", (event["id"],))
    assert scalar(con, "SELECT count(*) FROM sluice_dead_letters") == 0
    assert con.execute("SELECT breaker, breaker_failures, breaker_open_until FROM sluice_stats"
                       ).fetchone() == ("closed", 0, None)
    con.close()


def main():
    if sys.argv[1] == "--consume":
        consume(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return
    if sys.argv[1] == "--claim-and-close":
        claim_and_close(sys.argv[2], sys.argv[3])
        return
    ext, worker_binary = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        bad_input_is_an_sql_error_and_writes_nothing(ext, tmp)
        a_file_without_the_schema_is_refused_and_left_alone(ext, tmp)
        a_trigger_enqueueing_into_itself_fails_and_one_level_is_fine(ext, tmp)
        duplicates_return_the_existing_event(ext, tmp)
        a_claimed_event_is_the_event_as_stored(ext, tmp)
        a_failure_is_retried_then_dead_lettered(ext, tmp)
        triage_in_sql_is_audited_as_sql(ext, tmp)
        loading_gives_sluice_busy_handling(ext, tmp)
        a_python_producer_feeds_a_cpp_worker(ext, worker_binary, tmp)
        a_python_consumer_is_exactly_once_under_sigkill(ext, tmp)
        a_closed_connections_claim_is_recovered_while_its_process_lives(ext, tmp)
        subscribing_again_keeps_the_recorded_options(ext, tmp)
        not_before_is_milliseconds_or_iso_8601_text(ext, tmp)
        a_consumer_sleeps_in_sluice_wait_until_work_arrives(ext, tmp)
        a_breaker_a_worker_recorded_holds_sql_claims_too(ext, tmp)
    print("python sqlite3: all passed")


if __name__ == "__main__":
    main()
