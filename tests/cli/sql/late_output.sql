-- Late rows kept (what Flink SQL lacks): the records too late for every
-- window go to the table named by SET 'tidemark.late-output', here
-- printed beside the results.  f@59999 arrives when the watermark is
-- exactly 59999: [0, 60000) has fired, so f is late, with its fields
-- and its event time "ts".  The results are those of tumble.sql.
CREATE TABLE late_clicks (`user` STRING, page STRING, ts_ms BIGINT)
WITH ('connector' = 'print');
SET 'tidemark.late-output' = 'late_clicks';

SELECT window_start, window_end, page, COUNT(*) AS views,
       COUNT(DISTINCT `user`) AS users
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, page;
