-- Views read from standard input, two partitions by the field `part`:
-- the watermark is exactly max - 1 s per partition, emitted every
-- 200 ms of processing time, and a partition silent for 2 s is idle
-- (tests/cli/sql_time.sh drives the clock).
CREATE TABLE views (
  `user` STRING,
  part STRING,
  ts_ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(ts_ms, 3),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'stdin',
  'format' = 'json',
  'tidemark.partition.field' = 'part',
  'scan.watermark.idle-timeout' = '2 s'
);
SET 'pipeline.auto-watermark-interval' = '200 ms';
SET 'pipeline.name' = 'views';

SELECT window_start, window_end, COUNT(*) AS views
FROM TABLE(TUMBLE(TABLE views, DESCRIPTOR(ts), INTERVAL '10' SECOND))
GROUP BY window_start, window_end;
