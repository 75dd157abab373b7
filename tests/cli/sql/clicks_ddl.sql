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
