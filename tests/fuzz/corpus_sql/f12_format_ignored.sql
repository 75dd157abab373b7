CREATE TABLE o (n BIGINT) WITH ('connector' = 'blackhole', 'format' = 'csv');
INSERT INTO o SELECT ts_ms FROM clicks;
