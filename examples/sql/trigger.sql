-- A trigger on a domain table as the producer: an order that commits emits exactly one event,
-- one that rolls back none. From the repository root, on a new file:
--   sqlite3 shop.db < examples/sql/trigger.sql
.load build/sqlext/sluice
SELECT 'sluice schema ' || sluice_init();
CREATE TABLE orders (id TEXT PRIMARY KEY, cents INTEGER NOT NULL);
CREATE TRIGGER orders_placed AFTER INSERT ON orders BEGIN
  SELECT sluice_enqueue('order.placed', json_object('id', NEW.id, 'cents', NEW.cents), NEW.id);
END;
BEGIN;
INSERT INTO orders VALUES ('o2', 200);
ROLLBACK;                                  -- no order, no event
INSERT INTO orders VALUES ('o1', 100);     -- one order, one event
SELECT 'order ' || orders.id || ' placed: ' || count(sluice_events.id) || ' event'
  FROM orders LEFT JOIN sluice_events ON sluice_events.key = orders.id GROUP BY orders.id;
SELECT 'events in the outbox: ' || count(*) FROM sluice_events;
