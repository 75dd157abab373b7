SELECT `user`, ts_ms + 1 AS n FROM (SELECT `user`, ts_ms FROM clicks) s;
