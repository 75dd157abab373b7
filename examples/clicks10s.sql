-- clicks10s.sql - examples/clicks10s.yaml in SQL: clicks per page in
-- 10-second tumbling event-time windows over two CSV files (one
-- partition each), printed as the windows fire.
--
--   tidemark sql examples/clicks10s.sql
--   tidemark sql --explain examples/clicks10s.sql   # the job, as YAML
--
-- `ts` holds epoch milliseconds; the computed column `t` makes it the
-- event time.  The watermark is exactly the highest `t` so far minus
-- 500 ms (SQL's meaning; the YAML job's bound subtracts 1 ms more, which
-- these clicks never notice).

CREATE TABLE clicks (
  page STRING,
  `user` STRING,
  ts BIGINT,
  t AS TO_TIMESTAMP_LTZ(ts, 3),
  WATERMARK FOR t AS t - INTERVAL '0.5' SECOND
) WITH (
  'connector' = 'filesystem',
  'path' = 'examples/data/clicks10s/*.csv',
  'format' = 'csv'
);

SELECT page, COUNT(*) AS clicks, window_start, window_end
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(t), INTERVAL '10' SECOND))
GROUP BY page, window_start, window_end;
