SELECT * FROM (SELECT `user`, ts_ms FROM clicks) WHERE ts_ms > 60000;
