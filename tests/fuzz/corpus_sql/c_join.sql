-- Orders joined with their payments within 15 minutes (an interval
-- join): order 1 is paid at 10 min (kept) and 15 min 1 ms (outside),
-- order 2 at 16 min (outside), order 3 at once (the bound is inclusive).
CREATE TABLE orders (id BIGINT, item STRING, ts_ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(ts_ms, 3), WATERMARK FOR ts AS ts)
WITH ('connector' = 'filesystem', 'path' = 'tests/cli/data/sql_orders.jsonl',
      'format' = 'json');
CREATE TABLE payments (order_id BIGINT, amount DOUBLE, ts_ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(ts_ms, 3), WATERMARK FOR ts AS ts)
WITH ('connector' = 'filesystem', 'path' = 'tests/cli/data/sql_payments.jsonl',
      'format' = 'json');
SELECT o.id, o.item, p.amount
FROM orders o JOIN payments p ON o.id = p.order_id
WHERE p.ts BETWEEN o.ts AND o.ts + INTERVAL '15' MINUTE;
