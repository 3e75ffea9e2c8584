-- Dead-letter triage from the sqlite3 shell: a billing consumer gave up on orders o3 and o4;
-- the operator replays one and discards the other. From the repository root, on a new file:
--   sqlite3 billing.db < examples/sql/triage.sql
.load build/sqlext/sluice
SELECT 'sluice schema ' || sluice_init();

-- How the dead letters came about: both orders failed permanently.
SELECT 'subscribed ' || sluice_subscribe('billing', 'order.placed');
SELECT sluice_enqueue('order.placed', '{"id": "o3"}', 'o3', 'event-o3'),
       sluice_enqueue('order.placed', '{"id": "o4"}', 'o4', 'event-o4');
SELECT 'claimed ' || json_array_length(sluice_claim('billing', 10));
SELECT sluice_fail('billing', 'event-o3', 'card declined', 1),
       sluice_fail('billing', 'event-o4', 'address unknown', 1);

-- The triage.
SELECT consumer, key, reason, last_error FROM sluice_dead_letters;
SELECT 'replayed ' || sluice_dlq_replay('billing', 'event-o3');
SELECT 'discarded ' || sluice_dlq_discard('billing', NULL, 'customer moved, refunded by hand');
SELECT key, discarded, note FROM sluice_dead_letters;
SELECT consumer, pending, dead FROM sluice_stats;
