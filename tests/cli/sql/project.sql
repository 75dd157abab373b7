-- A projection with a computed column and a filter, written to a file
-- sink by INSERT INTO (columns by position, named by the sink table).
CREATE TABLE out_rows (who STRING, at_ms BIGINT, next_ms BIGINT) WITH (
  'connector' = 'print'
);
INSERT INTO out_rows
SELECT `user`, ts_ms, ts_ms + 1
FROM clicks
WHERE page = '/x' AND ts_ms BETWEEN 1000 AND 61000 AND `user` <> 'b';
