SELECT window_start, window_end, COUNT(*) AS n FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE, INTERVAL '30' SECOND)) GROUP BY window_start, window_end;
