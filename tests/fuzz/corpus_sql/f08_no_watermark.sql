CREATE TABLE p (`user` STRING, page STRING, ts_ms BIGINT) WITH ('connector' = 'filesystem', 'path' = 'sql_clicks.jsonl', 'format' = 'json');
SELECT `user`, ts_ms FROM p WHERE page = '/y';
