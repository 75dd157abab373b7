-- Views and distinct users per page and minute (window TVF).  The record
-- f@59999 comes after e@64999 has moved the watermark to exactly 59999:
-- [0, 60000) has fired and f is late (dropped).  With DataStream's
-- max - bound - 1 it would have counted.
SELECT window_start, window_end, page, COUNT(*) AS views,
       COUNT(DISTINCT `user`) AS users
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, page;
