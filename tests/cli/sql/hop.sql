-- All views per 1-minute window every 30 s.  f@59999 is late for
-- [0, 60000) only: it counts in [30000, 90000).
SELECT window_start, window_end, COUNT(*) AS views
FROM TABLE(HOP(TABLE clicks, DESCRIPTOR(ts), INTERVAL '30' SECOND, INTERVAL '1' MINUTE))
GROUP BY window_start, window_end;
