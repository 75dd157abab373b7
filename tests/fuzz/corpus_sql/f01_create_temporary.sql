CREATE TEMPORARY TABLE t (a BIGINT) WITH ('connector' = 'blackhole');
