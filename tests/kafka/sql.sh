#!/bin/sh
# SPDX-License-Identifier: MIT
# sql.sh - a SQL job over Kafka (the kafka connector's options mapped to
# tidemark's keys, docs/sql.md): the clicks of tests/cli/data/
# sql_clicks.jsonl in one partition of the topic clicks, read from the
# earliest offset to the end ('scan.startup.mode', 'scan.bounded.mode'),
# per-record watermarks exactly max - 5 s, and the tumble query of
# tests/cli/sql/tumble.sql INSERTed INTO a kafka table (topic views).
# The values on views must be the hand-derived rows of
# tests/cli/expected/sql_tumble.jsonl; with a METADATA column or an
# option of another connector the script is refused.  The same query
# again with 'sink.delivery-guarantee' = 'exactly-once' and checkpoints
# (topic views_eo: transactions committed with each checkpoint) gives the
# same rows; exactly-once without checkpoints, and at-least-once with
# them, are refused.
# Usage: sql.sh TIDEMARK SOURCE_DIR MOCK TOOL
. "$(dirname "$0")/lib.sh"
kafka_init "$@"

start_mock clicks:1 views:1 views_eo:1
produce clicks --partition 0 "$SRC/tests/cli/data/sql_clicks.jsonl"

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

# Refused: a METADATA column; a filesystem option on a kafka table.
printf "CREATE TABLE k (a BIGINT, o BIGINT METADATA FROM 'offset') WITH ('connector' = 'kafka', 'topic' = 'clicks');\nSELECT a FROM k;\n" >"$W/meta.sql"
if "$TM" sql "$W/meta.sql" >"$W/meta.out" 2>&1; then
    fail "a METADATA column was accepted"
fi
grep -q "METADATA columns are not supported yet" "$W/meta.out" ||
    fail "METADATA: $(cat "$W/meta.out")"
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
