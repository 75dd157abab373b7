-- An upsert table (PRIMARY KEY ... NOT ENFORCED): the window's rows are
-- written as upserts keyed by the GROUP BY columns and the window, so
-- with allowed lateness the refired result replaces the first one (f
-- refires [0, 60000) for /x: 3 views of 2 users, then 4 of 3) and the
-- file sink's table holds the final row of every key.  The path is
-- the sink's, set by the test (tidemark.path would pass one through).
SET 'table.exec.emit.allow-lateness' = '1 s';
CREATE TABLE views (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  page STRING,
  views BIGINT,
  users BIGINT,
  PRIMARY KEY (window_start, window_end, page) NOT ENFORCED
) WITH ('connector' = 'filesystem', 'path' = 'OUT', 'format' = 'json');
INSERT INTO views
SELECT window_start, window_end, page, COUNT(*) AS views,
       COUNT(DISTINCT `user`) AS users
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, page;
