#!/bin/sh
# SPDX-License-Identifier: MIT
# sql.sh - a SQL job over Kafka (the kafka connector's options mapped to
# tidemark's keys, docs/sql.md): the clicks of tests/cli/data/
# sql_clicks.jsonl in one partition of the topic clicks, read from the
# earliest offset to the end ('scan.startup.mode', 'scan.bounded.mode'),
# per-record watermarks exactly max - 5 s, and the tumble query of
# tests/cli/sql/tumble.sql INSERTed INTO a kafka table (topic views).
# The values on views must be the hand-derived rows of
# tests/cli/expected/sql_tumble.jsonl.  Then METADATA columns (below);
# an unknown metadata key or an option of another connector is refused.
# The same query again with 'sink.delivery-guarantee' = 'exactly-once'
# and checkpoints (topic views_eo: transactions committed with each
# checkpoint) gives the same rows; exactly-once without checkpoints, and
# at-least-once with them, are refused.
# Usage: sql.sh TIDEMARK SOURCE_DIR MOCK TOOL
. "$(dirname "$0")/lib.sh"
kafka_init "$@"

start_mock clicks:1 views:1 views_eo:1
# Message times are the clicks' own (ts_ms), for the METADATA case below.
produce clicks --partition 0 --ts-field ts_ms "$SRC/tests/cli/data/sql_clicks.jsonl"

cat >"$W/views.sql" <<SQLEOF
CREATE TABLE clicks (
  \`user\` STRING,
  page STRING,
  ts_ms BIGINT,
  ts AS TO_TIMESTAMP_LTZ(ts_ms, 3),
  WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks',
  'properties.bootstrap.servers' = '$BOOT',
  'properties.group.id' = 'sql-views',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);
CREATE TABLE views (
  window_start TIMESTAMP(3),
  window_end TIMESTAMP(3),
  page STRING,
  views BIGINT,
  users BIGINT
) WITH (
  'connector' = 'kafka',
  'topic' = 'views',
  'properties.bootstrap.servers' = '$BOOT',
  'format' = 'json',
  'sink.delivery-guarantee' = 'at-least-once'
);
INSERT INTO views
SELECT window_start, window_end, page, COUNT(*) AS views,
       COUNT(DISTINCT \`user\`) AS users
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(ts), INTERVAL '1' MINUTE))
GROUP BY window_start, window_end, page;
SQLEOF
"$TM" sql "$W/views.sql" --quiet >"$W/sql.stdout" 2>"$W/sql.log" &
p=$!
track "$p"
wait_pid "$p" 60 || fail "tidemark sql exited with status $WAIT_RC"
consume views >"$W/views.tsv"
values_of "$W/views.tsv" >"$W/views.jsonl"
same_lines "$SRC/tests/cli/expected/sql_tumble.jsonl" "$W/views.jsonl"

# METADATA columns: each click's partition (0), offset (its line number
# from 0) and message time (its ts_ms), the message time being the event
# time (watermark max - 5 s after every message).  A Kafka source feeds
# a window (not a sink), so the values are checked through aggregates
# per minute: [0, 60000) has offsets 0-3 (f@59999, offset 5, comes after
# e@64999 at offset 4 and the watermark 59999: Flink's late filter drops
# it), [60000, 120000) 4, 6, 7 and the last 8.  CURRENT_WATERMARK is the
# watermark before each row: none, -4000, -3000, -2000 in the first
# minute, 54999, 59999, 59999 in the second, 65000 in the third; wm is
# its maximum, window_time window_end - 1.  The job --explain prints
# runs as YAML (metadata: and timestamp.source: message) to the same
# rows.
cat >"$W/meta.sql" <<SQLEOF
CREATE TABLE clicks (
  \`user\` STRING,
  ts_ms BIGINT,
  p INT METADATA FROM 'partition',
  o BIGINT METADATA FROM 'offset' VIRTUAL,
  \`timestamp\` TIMESTAMP_LTZ(3) METADATA,
  WATERMARK FOR \`timestamp\` AS \`timestamp\` - INTERVAL '5' SECOND
) WITH (
  'connector' = 'kafka',
  'topic' = 'clicks',
  'properties.bootstrap.servers' = '$BOOT',
  'properties.group.id' = 'sql-meta',
  'scan.startup.mode' = 'earliest-offset',
  'scan.bounded.mode' = 'latest-offset',
  'format' = 'json',
  'scan.watermark.emit.strategy' = 'on-event'
);
SELECT window_start, window_time, COUNT(*) AS n, MIN(p) AS p,
       MIN(o) AS omin, MAX(o) AS omax, SUM(o) AS osum,
       MAX(\`timestamp\`) AS tmax, MAX(CURRENT_WATERMARK(\`timestamp\`)) AS wm
FROM TABLE(TUMBLE(TABLE clicks, DESCRIPTOR(\`timestamp\`), INTERVAL '1' MINUTE))
WHERE CURRENT_WATERMARK(\`timestamp\`) IS NULL
   OR \`timestamp\` > CURRENT_WATERMARK(\`timestamp\`)
GROUP BY window_start, window_end;
SQLEOF
cat >"$W/meta.want" <<'WANTEOF'
{"window_start":0,"window_time":59999,"n":4,"p":0,"omin":0,"omax":3,"osum":6,"tmax":59999,"wm":-2000}
{"window_start":60000,"window_time":119999,"n":3,"p":0,"omin":4,"omax":7,"osum":17,"tmax":70000,"wm":59999}
{"window_start":120000,"window_time":179999,"n":1,"p":0,"omin":8,"omax":8,"osum":8,"tmax":130000,"wm":65000}
WANTEOF
"$TM" sql "$W/meta.sql" --quiet >"$W/meta.out" 2>"$W/meta.log" ||
    fail "METADATA: $(cat "$W/meta.log")"
same_lines "$W/meta.want" "$W/meta.out"
"$TM" sql --explain "$W/meta.sql" >"$W/meta.explain" ||
    fail "METADATA --explain: $(cat "$W/meta.explain")"
grep -q "metadata.p: partition" "$W/meta.explain" &&
    grep -q "timestamp.source: message" "$W/meta.explain" ||
    fail "METADATA --explain: $(cat "$W/meta.explain")"
sed -n '/^== The job, as YAML ==$/,$p' "$W/meta.explain" | sed 1d |
    sed 's/sql-meta/yaml-meta/' >"$W/meta.yaml"
"$TM" run "$W/meta.yaml" --quiet >"$W/meta.yout" 2>"$W/meta.ylog" ||
    fail "METADATA as YAML: $(cat "$W/meta.ylog")"
same_lines "$W/meta.want" "$W/meta.yout"

# Refused: an unknown metadata key; a filesystem option on a kafka table.
printf "CREATE TABLE k (a BIGINT, h STRING METADATA FROM 'headers') WITH ('connector' = 'kafka', 'topic' = 'clicks');\nSELECT a FROM k;\n" >"$W/meta_bad.sql"
if "$TM" sql "$W/meta_bad.sql" >"$W/meta_bad.out" 2>&1; then
    fail "an unknown METADATA key was accepted"
fi
grep -q "unknown Kafka metadata 'headers' (known: 'timestamp', 'partition', 'offset', 'topic')" "$W/meta_bad.out" ||
    fail "METADATA 'headers': $(cat "$W/meta_bad.out")"
printf "CREATE TABLE k (a BIGINT) WITH ('connector' = 'kafka', 'topic' = 'clicks', 'path' = 'x');\nSELECT a FROM k;\n" >"$W/opt.sql"
if "$TM" sql "$W/opt.sql" >"$W/opt.out" 2>&1; then
    fail "a filesystem option on a kafka table was accepted"
fi
grep -q "option 'path' does not apply to a kafka source table" "$W/opt.out" ||
    fail "path: $(cat "$W/opt.out")"
# Exactly-once: the sink's delivery key, checked against checkpointing.
sed -e "s|'sink.delivery-guarantee' = 'at-least-once'|'sink.delivery-guarantee' = 'exactly-once'|" \
    -e "s|'topic' = 'views'|'topic' = 'views_eo'|" \
    "$W/views.sql" >"$W/eo-body.sql"
{
    echo "SET 'tidemark.checkpoint.dir' = '$W/ck';"
    echo "SET 'execution.checkpointing.interval' = '200 ms';"
    cat "$W/eo-body.sql"
} >"$W/eo.sql"
"$TM" sql "$W/eo.sql" --quiet >"$W/eo.stdout" 2>"$W/eo.log" &
p=$!
track "$p"
wait_pid "$p" 60 || fail "exactly-once: tidemark sql exited with status $WAIT_RC"
consume views_eo >"$W/views_eo.tsv"
values_of "$W/views_eo.tsv" >"$W/views_eo.jsonl"
same_lines "$SRC/tests/cli/expected/sql_tumble.jsonl" "$W/views_eo.jsonl"
if "$TM" sql "$W/eo-body.sql" >"$W/eo-nock.out" 2>&1; then
    fail "exactly-once without checkpoints was accepted"
fi
grep -q "delivery: exactly_once needs checkpointing" "$W/eo-nock.out" ||
    fail "exactly-once without checkpoints: $(cat "$W/eo-nock.out")"
sed "s|'exactly-once'|'at-least-once'|" "$W/eo.sql" >"$W/alo.sql"
if "$TM" sql "$W/alo.sql" >"$W/alo.out" 2>&1; then
    fail "at-least-once with checkpoints was accepted"
fi
grep -q "delivery: at_least_once does not apply to a checkpointed job" \
    "$W/alo.out" || fail "at-least-once with checkpoints: $(cat "$W/alo.out")"
echo "sql.sh: ok"
