-- Views per page in cumulate windows: every 30 s, the count since the
-- start of the minute.  Max windows [0, 60000), [60000, 120000),
-- [120000, 180000); a record is in each window of its minute that ends
-- after it: 1000, 2000 (/x) and 3000 (/y) in [0, 30000) and [0, 60000);
-- a@59999 (/x) in [0, 60000) only; e@64999 (/y, watermark 59999: the
-- first minute fires) and c@61000 (/x), b@70000 (/y) in [60000, 90000)
-- and [60000, 120000); f@59999 is late for [0, 60000), its one window;
-- a@130000 (/y) in [120000, 150000) and [120000, 180000).
SELECT page, window_start, window_end, COUNT(*) AS views
FROM TABLE(CUMULATE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '30' SECOND, INTERVAL '1' MINUTE))
GROUP BY page, window_start, window_end;
