"""A Python producer: each order and its event commit in one transaction, so an order that rolls
back leaves no event. From the repository root, with Debian's python3 (its sqlite3 module can
load extensions):
  /usr/bin/python3 examples/python/producer.py build/sqlext/sluice.so shop.db"""
import sqlite3
import sys

extension, path = sys.argv[1], sys.argv[2]
# Autocommit mode, and BEGIN / COMMIT written out: in its default mode the module would begin a
# transaction only before the INSERT, and a SELECT sluice_enqueue(...) before it would commit alone.
con = sqlite3.connect(path, isolation_level=None)
con.enable_load_extension(True)
con.load_extension(extension)
con.enable_load_extension(False)
con.execute("SELECT sluice_init()")  # the sluice schema, created in its own transaction
con.execute("CREATE TABLE IF NOT EXISTS orders (id INTEGER PRIMARY KEY, cents INTEGER)")

for order, cents in [(1, 100), (2, 250), (3, 990)]:
    con.execute("BEGIN IMMEDIATE")
    con.execute("INSERT INTO orders VALUES (?, ?)", (order, cents))
    event_id = con.execute("SELECT sluice_enqueue('order.placed', json_object('order', ?), ?)",
                           (order, str(order))).fetchone()[0]
    if cents > 500:
        con.execute("ROLLBACK")  # say, over the customer's limit: neither order nor event
        print(f"order {order} rolled back")
        continue
    con.execute("COMMIT")
    print(f"order {order} placed: event {event_id}")

events = con.execute("SELECT count(*) FROM sluice_events").fetchone()[0]
print(f"{events} events in the outbox")
con.close()
