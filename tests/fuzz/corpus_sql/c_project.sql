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
-- A projection with a computed column and a filter, written to a file
-- sink by INSERT INTO (columns by position, named by the sink table).
CREATE TABLE out_rows (who STRING, at_ms BIGINT, next_ms BIGINT) WITH (
  'connector' = 'print'
);
INSERT INTO out_rows
SELECT `user`, ts_ms, ts_ms + 1
FROM clicks
WHERE page = '/x' AND ts_ms BETWEEN 1000 AND 61000 AND `user` <> 'b';
