CREATE TABLE o (n BIGINT, s STRING) WITH ('connector' = 'print');
INSERT INTO o SELECT page, ts_ms FROM clicks WHERE ts_ms < 2000;
