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
-- Sessions per user with a 10 s gap (the group-window syntax): f@59999
-- opens [59999, 69999), not late.
SELECT `user`, SESSION_START(ts, INTERVAL '10' SECOND) AS s,
       SESSION_END(ts, INTERVAL '10' SECOND) AS e, COUNT(*) AS n
FROM clicks
GROUP BY `user`, SESSION(ts, INTERVAL '10' SECOND);
