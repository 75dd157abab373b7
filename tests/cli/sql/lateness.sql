-- Allowed lateness (Flink's table.exec.emit.allow-lateness): with 1 s,
-- f@59999 at watermark 59999 is not dropped: [0, 60000) is kept until
-- the watermark passes 60999, so f refires it.  Refired results are
-- updates: the rows carry "op", "-" retracting the earlier result and
-- "+" giving the new one (/x: 3 views of 2 users, then 4 of 3).
SET 'table.exec.emit.allow-lateness' = '1 s';

SELECT window_start, window_end, page, COUNT(*) AS views,
       COUNT(DISTINCT `user`) AS users
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, page;
