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
-- Views and distinct users per page and minute (window TVF).  The record
-- f@59999 comes after e@64999 has moved the watermark to exactly 59999:
-- [0, 60000) has fired and f is late (dropped).  With DataStream's
-- max - bound - 1 it would have counted.
SELECT window_start, window_end, page, COUNT(*) AS views,
       COUNT(DISTINCT `user`) AS users
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, page;
