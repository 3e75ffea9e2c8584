"""A Python consumer: the app's write for an event and sluice_done commit in one transaction,
so a run that dies halfway, or a second run, charges no order twice. It handles what is due and
returns; a long-running consumer would sleep and claim again instead. From the repository root,
after producer.py:
  /usr/bin/python3 examples/python/consumer.py build/sqlext/sluice.so shop.db"""
import json
import sqlite3
import sys

extension, path = sys.argv[1], sys.argv[2]
con = sqlite3.connect(path, isolation_level=None)
con.enable_load_extension(True)
con.load_extension(extension)
con.enable_load_extension(False)
con.execute("CREATE TABLE IF NOT EXISTS charges (event_id TEXT PRIMARY KEY, order_id INTEGER)")
# The consumer and its subscription, recorded in the file (its own transaction).
con.execute("""SELECT sluice_subscribe('billing', 'order.placed', '{"start_from": "oldest"}')""")

charged = []
while True:
    events = json.loads(con.execute("SELECT sluice_claim('billing', 10)").fetchone()[0])
    if not events:
        break  # nothing due
    for event in events:
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO charges VALUES (?, ?)", (event["id"], event["payload"]["order"]))
        con.execute("SELECT sluice_done('billing', ?)", (event["id"],))
        con.execute("COMMIT")
        charged.append(str(event["payload"]["order"]))

print(f"charged orders: {', '.join(charged) or 'none'}")
con.close()
