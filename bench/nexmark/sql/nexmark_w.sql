-- NEXMark-W in SQL: bids per auction per 10-second window, the job of
-- bench/nexmark/nexmark_w.yaml (BENCHMARKS.md compares the two).
SET 'tidemark.batch.size' = '4096';
SET 'pipeline.auto-watermark-interval' = '20 ms';
SET 'parallelism.default' = '2';

CREATE TABLE nexmark_w (
  auction BIGINT,
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  n BIGINT
) WITH ('connector' = 'blackhole');

INSERT INTO nexmark_w
SELECT auction, window_start, window_end, COUNT(*) AS n
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '10' SECOND))
GROUP BY auction, window_start, window_end;
