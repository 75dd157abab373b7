SELECT page, window_start, window_end, COUNT(*) AS n FROM TABLE(SESSION(TABLE clicks PARTITION BY page, DESCRIPTOR(ts), INTERVAL '10' SECOND)) GROUP BY page, window_start, window_end;
