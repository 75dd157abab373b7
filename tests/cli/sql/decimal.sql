-- Exact DECIMAL columns (tests/cli/decimal.sh): the prices of
-- tests/cli/data/decimal.jsonl as DECIMAL(10, 2); SUM is DECIMAL(18, 2)
-- and prints 1658.20 for item a (0.1 + 1657.8 + 0.3), where DOUBLE
-- would print 1658.1999999999998.  The three bad lines are skipped.
-- Two queries: the first one's rows, then the second one's.
CREATE TABLE prices (
  item STRING,
  price DECIMAL(10, 2),
  ts BIGINT,
  rt AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR rt AS rt
) WITH (
  'connector' = 'filesystem',
  'path' = 'tests/cli/data/decimal.jsonl',
  'format' = 'json'
);
SELECT item, SUM(price) AS total, MIN(price) AS lo, MAX(price) AS hi,
       AVG(price) AS mean, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE prices, DESCRIPTOR(rt), INTERVAL '10' SECOND))
GROUP BY window_start, window_end, item;
-- A decimal compares as its value; arithmetic on it is a double, made
-- exact again by CAST (half away from zero: 1657.8 * 0.908 = 1505.2824).
SELECT item, price, CAST(price * 0.908 AS DECIMAL(12, 3)) AS eur
FROM prices WHERE price > 1.5;
