/* SPDX-License-Identifier: MIT */
/* test_conf_kafka.c - the Kafka keys of the configuration table: the
 * pass-through PROPS type ("kafka.*": set, replace, remove, order, bad
 * names), the new job keys, and the validation of Kafka sources and sinks
 * (every message names the node and the key). */
#include <string.h>

#include "conf_kit.h"
#include "harness.h"
#include "runtime/rt.h"

/* A valid job: kafka source -> tumbling count -> kafka sink. */
static tdm_job *kafka_job(void)
{
    tdm_job *job;
    ASSERT_OK(tdm_job_new(&job));
    tdm_node *s = add(job, TDM_NODE_SOURCE, "clicks");
    set(s, "type", "kafka");
    set(s, "brokers", "127.0.0.1:9092");
    set(s, "topics", "clicks");
    set(s, "schema", "user:string, page:string, ts:int64");
    set(s, "timestamp.field", "ts");
    tdm_node *w = add(job, TDM_NODE_WINDOW, "counts");
    set(w, "from", "clicks");
    set(w, "key_by", "page");
    set(w, "window.size", "10s");
    set(w, "sink", "out");
    tdm_node *o = add(job, TDM_NODE_SINK, "out");
    set(o, "type", "kafka");
    set(o, "brokers", "127.0.0.1:9092");
    set(o, "topic", "counts");
    return job;
}

static void expect_invalid(tdm_job *job, const char *want)
{
    char msg[512];
    ASSERT_ERR(tdm_job_validate(job, msg, sizeof msg), TDM_ERR_INVAL);
    if (strcmp(msg, want) != 0)
        tdm_test_fail(__FILE__, __LINE__, "message \"%s\", want \"%s\"", msg,
                      want);
}

static void expect_valid(tdm_job *job)
{
    char msg[512] = "";
    if (tdm_job_validate(job, msg, sizeof msg) != TDM_OK)
        tdm_test_fail(__FILE__, __LINE__, "invalid: %s", msg);
}

/* Any key under "kafka." lands in the PROPS row, the prefix cut: pairs
 * in the order first set, a second set replaces the value in place, an
 * empty value removes the pair. */
TDM_TEST(props_set_replace_remove)
{
    tdm_job *job = kafka_job();
    tdm_node *s = tdm_job_node(job, "clicks");
    ASSERT_TRUE(tdm__conf_find(TDM__SCOPE_SOURCE, "kafka.session.timeout.ms") ==
                tdm__conf_find(TDM__SCOPE_SOURCE, "kafka.*"));
    ASSERT_EQ(tdm__conf_find(TDM__SCOPE_SOURCE, "kafka."), -1);
    ASSERT_EQ(tdm__conf_find(TDM__SCOPE_WINDOW, "kafka.x"), -1);
    set(s, "kafka.session.timeout.ms", "4000");
    set(s, "kafka.heartbeat.interval.ms", "500");
    set(s, "kafka.session.timeout.ms", "6000");
    const tdm__conf_val *v = tdm__node_val(s, "kafka.*");
    ASSERT_EQ(v->n_props, 2);
    ASSERT_TRUE(v->set);
    ASSERT_STR_EQ(v->props[0], "session.timeout.ms");
    ASSERT_STR_EQ(v->props[1], "6000");
    ASSERT_STR_EQ(v->props[2], "heartbeat.interval.ms");
    ASSERT_STR_EQ(v->props[3], "500");
    ASSERT_STR_EQ(tdm__conf_prop(v, "heartbeat.interval.ms"), "500");
    ASSERT_TRUE(tdm__conf_prop(v, "nope") == NULL);
    set(s, "kafka.session.timeout.ms", "");
    ASSERT_EQ(v->n_props, 1);
    ASSERT_STR_EQ(v->props[0], "heartbeat.interval.ms");
    set(s, "kafka.not.there", ""); /* removing nothing is fine */
    ASSERT_EQ(v->n_props, 1);
    expect_valid(job);
    tdm_job_destroy(job);
}

/* Names with blanks or '*', and the row's own key with a value, are
 * rejected with the key in the message. */
TDM_TEST(props_reject_bad_names)
{
    tdm_job *job = kafka_job();
    tdm_node *s = tdm_job_node(job, "clicks");
    char msg[256];
    ASSERT_ERR(tdm_node_set(s, "kafka.a b", "1", msg, sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "kafka.a b: expected a property name without blanks "
                       "or '*', e.g. \"kafka.session.timeout.ms\"");
    ASSERT_ERR(tdm_node_set(s, "kafka.*", "x", msg, sizeof msg), TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "kafka.*: set one property at a time, e.g. "
                       "\"kafka.session.timeout.ms\"");
    ASSERT_ERR(tdm_node_set(s, "kafkax", "1", msg, sizeof msg), TDM_ERR_INVAL);
    ASSERT_EQ(tdm__node_val(s, "kafka.*")->n_props, 0);
    tdm_job_destroy(job);
}

/* Job keys: commit.interval at least 10 ms, on_cancel's choices. */
TDM_TEST(job_keys_commit_interval_and_on_cancel)
{
    tdm_job *job = kafka_job();
    char msg[256];
    ASSERT_EQ(tdm__job_int(job, "commit.interval"), 1000);
    ASSERT_EQ(tdm__job_int(job, "on_cancel"), 0); /* auto */
    ASSERT_OK(tdm_job_set(job, "commit.interval", "200ms", msg, sizeof msg));
    ASSERT_EQ(tdm__job_int(job, "commit.interval"), 200);
    ASSERT_ERR(tdm_job_set(job, "commit.interval", "5ms", msg, sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "commit.interval: expected a duration of at least "
                       "10ms, got \"5ms\"");
    ASSERT_OK(tdm_job_set(job, "on_cancel", "stop", msg, sizeof msg));
    ASSERT_EQ(tdm__job_int(job, "on_cancel"), 2);
    ASSERT_ERR(tdm_job_set(job, "on_cancel", "halt", msg, sizeof msg),
               TDM_ERR_INVAL);
    ASSERT_STR_EQ(msg, "on_cancel: expected one of auto, drain, stop, got "
                       "\"halt\"");
    tdm_job_destroy(job);
}

/* The enum indexes are the connector constants minus one (run.c maps
 * them so). */
TDM_TEST(enum_indexes_match_connector_constants)
{
    tdm_job *job = kafka_job();
    tdm_node *s = tdm_job_node(job, "clicks");
    tdm_node *o = tdm_job_node(job, "out");
    ASSERT_EQ(tdm__node_int(s, "type") + 1, TDM__SRC_KAFKA);
    ASSERT_EQ(tdm__node_int(o, "type") + 1, TDM__SINK_KAFKA);
    ASSERT_EQ(tdm__node_int(s, "start") + 1, TDM__KSTART_COMMITTED);
    set(s, "start", "earliest");
    ASSERT_EQ(tdm__node_int(s, "start") + 1, TDM__KSTART_EARLIEST);
    set(s, "start", "latest");
    ASSERT_EQ(tdm__node_int(s, "start") + 1, TDM__KSTART_LATEST);
    set(s, "start", "timestamp");
    ASSERT_EQ(tdm__node_int(s, "start") + 1, TDM__KSTART_TIMESTAMP);
    tdm_job_destroy(job);
}

/* Where to connect and what to read. */
TDM_TEST(kafka_source_needs_brokers_and_one_topic_choice)
{
    tdm_job *job = kafka_job();
    tdm_node *s = tdm_job_node(job, "clicks");
    set(s, "brokers", "");
    expect_invalid(job, "source \"clicks\": brokers: required for kafka "
                        "sources (\"host:port,...\", or "
                        "kafka.bootstrap.servers)");
    set(s, "kafka.bootstrap.servers", "127.0.0.1:9092");
    expect_valid(job);
    set(s, "topic_pattern", "^click.*");
    expect_invalid(job, "source \"clicks\": topic_pattern: set either topics "
                        "or topic_pattern, not both");
    set(s, "topics", "");
    expect_valid(job);
    set(s, "topic_pattern", "click.*");
    expect_invalid(job, "source \"clicks\": topic_pattern: must start with "
                        "'^' (a regular expression), got \"click.*\"");
    set(s, "topic_pattern", "");
    expect_invalid(job, "source \"clicks\": topics: required for kafka "
                        "sources (a comma-separated list, or set "
                        "topic_pattern)");
    set(s, "topics", "a,,b");
    expect_invalid(job, "source \"clicks\": topics: expected comma-separated "
                        "topic names, got \"a,,b\" (an empty name)");
    set(s, "topics", "a, b");
    expect_valid(job);
    tdm_job_destroy(job);
}

/* start.timestamp exactly with start: timestamp, in a readable form. */
TDM_TEST(kafka_start_timestamp)
{
    tdm_job *job = kafka_job();
    tdm_node *s = tdm_job_node(job, "clicks");
    set(s, "start", "timestamp");
    expect_invalid(job, "source \"clicks\": start.timestamp: required with "
                        "start: timestamp (epoch milliseconds or "
                        "ISO-8601)");
    set(s, "start.timestamp", "yesterday");
    expect_invalid(job, "source \"clicks\": start.timestamp: expected epoch "
                        "milliseconds or ISO-8601 like "
                        "\"2026-12-02T10:00:00Z\", got \"yesterday\"");
    set(s, "start.timestamp", "2026-12-02T10:00:00Z");
    expect_valid(job);
    set(s, "start.timestamp", "1764669600000");
    expect_valid(job);
    set(s, "start", "earliest");
    expect_invalid(job, "source \"clicks\": start.timestamp: only used with "
                        "start: timestamp");
    tdm_job_destroy(job);
}

/* key.field is a string field; timestamps from the message need no
 * timestamp.field and forbid one; no partition.field. */
TDM_TEST(kafka_key_and_timestamp_fields)
{
    tdm_job *job = kafka_job();
    tdm_node *s = tdm_job_node(job, "clicks");
    set(s, "key.field", "nope");
    expect_invalid(job, "source \"clicks\": key.field: field \"nope\" is not "
                        "in the schema of source \"clicks\"");
    set(s, "key.field", "ts");
    expect_invalid(job, "source \"clicks\": key.field: \"ts\" is int64, "
                        "expected string (it receives the message key)");
    set(s, "key.field", "user");
    expect_valid(job);
    set(s, "timestamp.source", "message");
    expect_invalid(job, "source \"clicks\": timestamp.field: the event time "
                        "comes from the message (timestamp.source: "
                        "message); remove timestamp.field or set "
                        "timestamp.source: field");
    set(s, "timestamp.field", "");
    expect_valid(job);
    set(s, "partition.field", "page");
    expect_invalid(job, "source \"clicks\": partition.field: kafka sources "
                        "are partitioned by their topic partitions; remove "
                        "it");
    tdm_job_destroy(job);
}

/* metadata.FIELD: KEY (Flink's METADATA columns): known keys, each once,
 * into a field of its type that neither the message key nor the event
 * time fills; the runtime plan gets each field's index by kind. */
TDM_TEST(kafka_metadata_fields)
{
    tdm_job *job = kafka_job();
    tdm_node *s = tdm_job_node(job, "clicks");
    set(s, "schema",
        "user:string, page:string, ts:int64, p:int64, "
        "o:int64, mt:timestamp, t:string");
    set(s, "metadata.p", "partition");
    set(s, "metadata.o", "offset");
    set(s, "metadata.mt", "timestamp");
    set(s, "metadata.t", "topic");
    expect_valid(job);
    set(s, "metadata.o", "headers");
    expect_invalid(job, "source \"clicks\": metadata.o: unknown metadata "
                        "\"headers\" (known: timestamp, partition, offset, "
                        "topic)");
    set(s, "metadata.o", "partition");
    expect_invalid(job, "source \"clicks\": metadata.o: the partition "
                        "already goes to field \"p\"");
    set(s, "metadata.o", "offset");
    set(s, "metadata.t", "");
    set(s, "metadata.page", "offset");
    expect_invalid(job, "source \"clicks\": metadata.page: the offset "
                        "already goes to field \"o\"");
    set(s, "metadata.page", "");
    set(s, "metadata.user", "partition");
    set(s, "metadata.p", "");
    expect_invalid(job, "source \"clicks\": metadata.user: \"user\" is "
                        "string, expected int64 (it receives the partition)");
    set(s, "metadata.user", "");
    set(s, "metadata.nope", "topic");
    expect_invalid(job, "source \"clicks\": metadata.nope: field \"nope\" "
                        "is not in the schema of source \"clicks\"");
    set(s, "metadata.nope", "");
    set(s, "metadata.ts", "timestamp");
    set(s, "metadata.mt", "");
    expect_invalid(job, "source \"clicks\": metadata.ts: \"ts\" is "
                        "timestamp.field; for the message time as event time "
                        "set timestamp.source: message instead of "
                        "timestamp.field");
    set(s, "timestamp.field", "");
    set(s, "timestamp.source", "message");
    expect_valid(job);
    set(s, "key.field", "t");
    set(s, "metadata.t", "topic");
    expect_invalid(job, "source \"clicks\": metadata.t: \"t\" is key.field "
                        "(it receives the message key)");
    tdm_job_destroy(job);
}

/* Kafka-only keys on other sources and sinks are mistakes. */
TDM_TEST(kafka_keys_only_on_kafka_nodes)
{
    tdm_job *job = kafka_job();
    tdm_node *s = tdm_job_node(job, "clicks");
    tdm_node *o = tdm_job_node(job, "out");
    set(s, "type", "file");
    set(s, "path", "/nonexistent.jsonl");
    expect_invalid(job, "source \"clicks\": brokers: only kafka sources take "
                        "it (type is not kafka)");
    set(s, "brokers", "");
    set(s, "topics", "");
    set(s, "kafka.client.id", "x");
    expect_invalid(job, "source \"clicks\": kafka.client.id: only kafka "
                        "sources take kafka.* properties");
    set(s, "kafka.client.id", "");
    set(s, "metadata.ts", "offset");
    expect_invalid(job, "source \"clicks\": metadata.ts: only kafka sources "
                        "have message metadata (type is not kafka)");
    set(s, "metadata.ts", "");
    set(s, "timestamp.source", "message");
    expect_invalid(job, "source \"clicks\": timestamp.source: message "
                        "timestamps exist only for kafka sources");
    set(s, "timestamp.source", "field");
    expect_valid(job);
    set(o, "type", "stdout");
    expect_invalid(job, "sink \"out\": brokers: only kafka sinks take it "
                        "(type is not kafka)");
    tdm_job_destroy(job);
}

/* A Kafka sink needs brokers and a topic and writes JSON. */
TDM_TEST(kafka_sink_validation)
{
    tdm_job *job = kafka_job();
    tdm_node *o = tdm_job_node(job, "out");
    set(o, "topic", "");
    expect_invalid(job, "sink \"out\": topic: required for kafka sinks");
    set(o, "topic", "counts");
    set(o, "format", "csv");
    expect_invalid(job, "sink \"out\": format: kafka sinks write JSON "
                        "(format: json)");
    set(o, "format", "json");
    set(o, "brokers", "");
    expect_invalid(job, "sink \"out\": brokers: required for kafka sinks "
                        "(\"host:port,...\", or kafka.bootstrap.servers)");
    set(o, "kafka.bootstrap.servers", "127.0.0.1:9092");
    set(o, "kafka.linger.ms", "1");
    expect_valid(job);
    tdm_job_destroy(job);
}

/* A Kafka sink's delivery key states what the job's checkpointing gives
 * (R-V-DL1, R-V-DL2); other sinks do not take it. */
TDM_TEST(kafka_sink_delivery)
{
    tdm_job *job = kafka_job();
    tdm_node *o = tdm_job_node(job, "out");
    set(o, "delivery", "at_least_once");
    expect_valid(job);
    set(o, "delivery", "exactly_once");
    expect_invalid(job, "sink \"out\": delivery: exactly_once needs "
                        "checkpointing: set checkpoint.dir (and "
                        "checkpoint.interval; in SQL, SET "
                        "'tidemark.checkpoint.dir' and "
                        "'execution.checkpointing.interval'), or leave "
                        "delivery out for at-least-once");
    char msg[256];
    ASSERT_OK(
        tdm_job_set(job, "checkpoint.dir", "/nonexistent/ck", msg, sizeof msg));
    expect_valid(job);
    set(o, "delivery", "at_least_once");
    expect_invalid(job, "sink \"out\": delivery: at_least_once does not "
                        "apply to a checkpointed job (checkpoint.dir is "
                        "set): its kafka sink writes in transactions "
                        "committed with each checkpoint, exactly once; "
                        "write delivery: exactly_once, or leave delivery "
                        "out");
    set(o, "delivery", "auto");
    expect_valid(job);
    set(o, "type", "stdout");
    set(o, "brokers", "");
    set(o, "topic", "");
    set(o, "delivery", "exactly_once");
    expect_invalid(job, "sink \"out\": delivery: only kafka sinks take it "
                        "(type is not kafka)");
    tdm_job_destroy(job);
}

/* Alignment: a group needs a positive drift and the drift a group. */
TDM_TEST(alignment_keys)
{
    tdm_job *job = kafka_job();
    tdm_node *s = tdm_job_node(job, "clicks");
    set(s, "watermark.alignment.group", "g");
    expect_invalid(job, "source \"clicks\": watermark.alignment.max_drift: "
                        "required (> 0) with watermark.alignment.group");
    set(s, "watermark.alignment.max_drift", "1s");
    expect_valid(job);
    set(s, "watermark.alignment.group", "");
    expect_invalid(job, "source \"clicks\": watermark.alignment.group: "
                        "required with watermark.alignment.max_drift "
                        "(sources with the same group are aligned)");
    tdm_job_destroy(job);
}
