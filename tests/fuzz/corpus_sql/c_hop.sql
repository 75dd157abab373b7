-- The clicks of tests/cli/data/sql_clicks.jsonl: the watermark is exactly
-- the highest time so far minus 5 s, after every record.
CREATE TABLE clicks (
  `user` STRING,
  page STRING,
  ts_ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(ts_ms, 3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'filesystem',
  'path' = 'tests/cli/data/sql_clicks.jsonl',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);
-- All views per 1-minute window every 30 s.  f@59999 is late for
-- [0, 60000) only: it counts in [30000, 90000).
SELECT window_start, window_end, COUNT(*) AS views
FROM TABLE(HOP(TABLE clicks, DESCRIPTOR(ts), INTERVAL '30' SECOND, INTERVAL '1' MINUTE))
GROUP BY window_start, window_end;
