"""The extension in the sqlite3 shell (/usr/bin/sqlite3), as an operator or a schema author uses
it: .load, enqueue in a transaction that rolls back and one that commits, a trigger on a domain
table as the producer, and a dead letter triaged with the SQL functions and tables.

Usage: test_sqlite_shell.py EXTENSION"""
import os
import subprocess
import sys
import tempfile

SCRIPT = r"""
.load {extension}
SELECT 'schema', sluice_init() >= 4;
CREATE TABLE orders (id TEXT PRIMARY KEY, cents INTEGER NOT NULL);
CREATE TRIGGER orders_placed AFTER INSERT ON orders BEGIN
  SELECT sluice_enqueue('order.placed', json_object('id', NEW.id, 'cents', NEW.cents), NEW.id);
END;

BEGIN;
SELECT 'enqueued', length(sluice_enqueue('note', '{{"text": "hello"}}')) > 0;
ROLLBACK;
SELECT 'after rollback', count(*) FROM sluice_events;
BEGIN;
SELECT 'enqueued', length(sluice_enqueue('note', '{{"text": "hello"}}')) > 0;
COMMIT;
SELECT 'after commit', count(*) FROM sluice_events;

SELECT 'subscribed', sluice_subscribe('billing', 'order.placed') > 0;
INSERT INTO orders VALUES ('o1', 100);
BEGIN;
INSERT INTO orders VALUES ('o2', 200);
ROLLBACK;
BEGIN;
INSERT INTO orders VALUES ('o3', 300);
INSERT INTO orders VALUES ('o5', 500), ('o1', 999);
INSERT INTO orders VALUES ('o4', 400);
COMMIT;
SELECT 'order events', group_concat(key) FROM (SELECT key FROM sluice_events
  WHERE topic = 'order.placed' ORDER BY seq);

SELECT 'claimed', json_array_length(sluice_claim('billing', 10));
SELECT 'failed', sluice_fail('billing', (SELECT id FROM sluice_events WHERE key = 'o3'),
                             'card declined', 1);
BEGIN;
UPDATE orders SET cents = cents WHERE id = 'o1';
SELECT 'done', sluice_done('billing', (SELECT id FROM sluice_events WHERE key = 'o1'));
COMMIT;
SELECT 'failed', sluice_fail('billing', (SELECT id FROM sluice_events WHERE key = 'o4'),
                             'address unknown', 1);
SELECT 'dead', consumer, key, reason, last_error, discarded FROM sluice_dead_letters
  ORDER BY key;
SELECT 'stats', consumer, pending, dead, delivered_total FROM sluice_stats;
SELECT 'replayed', sluice_dlq_replay('billing', (SELECT id FROM sluice_events WHERE key = 'o3'));
SELECT 'discarded', sluice_dlq_discard('billing', NULL, 'customer moved, refunded by hand');
SELECT 'dead', key, discarded, note FROM sluice_dead_letters;
SELECT 'stats', consumer, pending, dead, delivered_total FROM sluice_stats;
SELECT 'reclaimed', json_extract(sluice_claim('billing', 10), '$[0].key', '$[0].attempt');
SELECT 'done', sluice_done('billing', (SELECT id FROM sluice_events WHERE key = 'o3'));
SELECT 'stats', consumer, pending, dead, delivered_total FROM sluice_stats;
SELECT 'claims', count(*) FROM sluice_claims;
"""

EXPECTED = """\
schema|1
enqueued|1
after rollback|0
enqueued|1
after commit|1
subscribed|1
order events|o1,o3,o4
claimed|3
failed|dead
done|1
failed|dead
dead|billing|o3|permanent|card declined|0
dead|billing|o4|permanent|address unknown|0
stats|billing|0|2|1
replayed|1
discarded|1
dead|o4|1|customer moved, refunded by hand
stats|billing|1|0|1
reclaimed|["o3",1]
done|1
stats|billing|0|0|2
claims|0
"""


# A trigger on sluice_events that enqueues runs again for the event it enqueues: SQLite's trigger
# depth limit does not see statements a function runs, so without the extension's own limit the
# shell recursed until the stack overflowed (exit 139).
RECURSION_SCRIPT = r"""
.load {extension}
SELECT 'schema', sluice_init() >= 4;
CREATE TRIGGER echo AFTER INSERT ON sluice_events BEGIN
  SELECT sluice_enqueue('echo', '{{}}');
END;
SELECT 'enqueued', sluice_enqueue('first', '{{}}');
SELECT 'events', count(*) FROM sluice_events;
"""


def a_trigger_that_enqueues_into_itself_is_an_sql_error(extension, tmp):
    run = subprocess.run(["/usr/bin/sqlite3", os.path.join(tmp, "echo.db")],
                         input=RECURSION_SCRIPT.format(extension=extension),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode in (0, 1), f"the shell ended with {run.returncode}: {run.stderr}"
    errors = run.stderr.strip().splitlines()
    assert len(errors) == 1, run.stderr
    for words in ("sluice_enqueue", "nested", "trigger on sluice_events"):
        assert words in errors[0], f"{errors[0]!r} does not say {words!r}"
    assert run.stdout == "schema|1\nevents|0\n", run.stdout


def main():
    extension = os.path.splitext(sys.argv[1])[0]  # as an operator types it: no .so
    with tempfile.TemporaryDirectory() as tmp:
        a_trigger_that_enqueues_into_itself_is_an_sql_error(extension, tmp)
        run = subprocess.run(["/usr/bin/sqlite3", os.path.join(tmp, "shop.db")],
                             input=SCRIPT.format(extension=extension), capture_output=True,
                             text=True, timeout=60)
    errors = run.stderr.strip().splitlines()
    # The one expected error: the duplicate order o1, whose statement rolls back with the order
    # o5 it inserted first and o5's event, and leaves the transaction to commit o3 and o4.
    assert len(errors) == 1 and "UNIQUE constraint failed: orders.id" in errors[0], run.stderr
    assert run.stdout == EXPECTED, "shell output differs:\n" + run.stdout
    print("sqlite3 shell: all passed")


if __name__ == "__main__":
    main()
