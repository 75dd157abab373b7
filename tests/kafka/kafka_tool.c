/* SPDX-License-Identifier: MIT */
/* kafka_tool.c - tdm_kafka_tool: the small Kafka client the Kafka tests
 * use to put data into the mock cluster and to read what tidemark wrote
 * or committed, without any Kafka installation.
 *
 *   produce BOOT TOPIC [--partition N | --partition-field F]
 *           [--key-field F | --key K] [--ts-field F] [--null-field F]
 *           FILE...
 *       JSON lines; message key from a field (or K for every line),
 *       timestamp (epoch ms) from a field, partition fixed, from an integer
 * field, or by the key. With --null-field, a line whose field F is true is
 * produced with a null value (a tombstone; key, time and partition as above),
 * one whose field F is "empty" with an empty, not null, value. consume BOOT
 * TOPIC [--timestamps | --offsets | --headers] every partition from the
 * beginning to its end, one line per message: partition TAB key TAB value
 * ("(null)" for none); with
 *       --offsets: partition TAB offset TAB key TAB value.
 *   committed BOOT GROUP TOPIC
 *       per partition: partition TAB offset TAB metadata.
 *   offsets BOOT TOPIC
 *       per partition: partition TAB low TAB high (end) offset.
 * Exit status 0, 1 on a Kafka error, 2 on bad usage.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <librdkafka/rdkafka.h>

/* How long any one command may wait for the cluster. */
#define TIMEOUT_MS 30000

static int usage(void)
{
    fprintf(stderr,
            "usage: tdm_kafka_tool produce BOOT TOPIC [--partition N | "
            "--partition-field F] [--key-field F | --key K] [--ts-field F] "
            "[--null-field F] FILE...\n"
            "       tdm_kafka_tool consume BOOT TOPIC [--timestamps | "
            "--offsets | --headers]\n"
            "       tdm_kafka_tool committed BOOT GROUP TOPIC\n"
            "       tdm_kafka_tool offsets BOOT TOPIC\n");
    return 2;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Delivery report callback of produce: counts failures in the int the
 * client's opaque points to. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque)
{
    int *failed = opaque;
    (void)rk;
    if (m->err && (*failed)++ == 0)
        fprintf(stderr, "tdm_kafka_tool: delivery: %s\n",
                rd_kafka_err2str(m->err));
}

/* A client of @p type on @p boot with @p extra (key, value, ..., NULL)
 * properties; with @p failed, delivery failures are counted there.
 * NULL after printing why. */
static rd_kafka_t *client(rd_kafka_type_t type, const char *boot,
                          const char *const *extra, int *failed)
{
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (failed != NULL) {
        rd_kafka_conf_set_opaque(conf, failed);
        rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    }
    if (rd_kafka_conf_set(conf, "bootstrap.servers", boot, err, sizeof err) !=
        RD_KAFKA_CONF_OK)
        goto bad;
    if (rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err) !=
        RD_KAFKA_CONF_OK)
        goto bad;
    for (int i = 0; extra != NULL && extra[i] != NULL; i += 2)
        if (rd_kafka_conf_set(conf, extra[i], extra[i + 1], err, sizeof err) !=
            RD_KAFKA_CONF_OK)
            goto bad;
    rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof err);
    if (rk == NULL) {
        fprintf(stderr, "tdm_kafka_tool: %s\n", err);
        return NULL; /* rd_kafka_new freed nothing: conf is ours */
    }
    return rk;
bad:
    fprintf(stderr, "tdm_kafka_tool: %s\n", err);
    rd_kafka_conf_destroy(conf);
    return NULL;
}

/* Number of partitions of @p topic (waits for the metadata), -1. */
static int partition_count(rd_kafka_t *rk, const char *topic)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    int n = -1;
    if (rkt == NULL)
        return -1;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, rkt, &md, TIMEOUT_MS);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR && md->topic_cnt == 1)
        e = md->topics[0].err;
    else if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
        e = RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
        n = md->topics[0].partition_cnt;
    else
        fprintf(stderr, "tdm_kafka_tool: metadata of %s: %s\n", topic,
                rd_kafka_err2str(e));
    if (md != NULL)
        rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    return n;
}

/* ---- produce ---- */

/* Text of a JSON field for a key: strings as they are, numbers and
 * booleans as JSON text; NULL when absent or null. */
static char *field_text(json_t *obj, const char *name)
{
    json_t *v = json_object_get(obj, name);
    if (v == NULL || json_is_null(v))
        return NULL;
    if (json_is_string(v))
        return strdup(json_string_value(v));
    return json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
}

static int cmd_produce(int argc, char **argv)
{
    const char *boot = argv[0], *topic = argv[1];
    const char *key_field = NULL, *ts_field = NULL, *part_field = NULL;
    const char *null_field = NULL, *fixed_key = NULL;
    int32_t fixed = RD_KAFKA_PARTITION_UA;
    int first_file = -1, rc = 0;
    long n_msgs = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--partition") == 0 && i + 1 < argc)
            fixed = (int32_t)atoi(argv[++i]);
        else if (strcmp(argv[i], "--partition-field") == 0 && i + 1 < argc)
            part_field = argv[++i];
        else if (strcmp(argv[i], "--key-field") == 0 && i + 1 < argc)
            key_field = argv[++i];
        else if (strcmp(argv[i], "--key") == 0 && i + 1 < argc)
            fixed_key = argv[++i];
        else if (strcmp(argv[i], "--ts-field") == 0 && i + 1 < argc)
            ts_field = argv[++i];
        else if (strcmp(argv[i], "--null-field") == 0 && i + 1 < argc)
            null_field = argv[++i];
        else if (argv[i][0] == '-' && argv[i][1] == '-')
            return usage();
        else if (first_file < 0)
            first_file = i;
    }
    if (first_file < 0)
        return usage();
    static const char *const props[] = {"enable.idempotence", "true",
                                        "linger.ms", "5", NULL};
    int failed_deliveries = 0;
    rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, boot, props, &failed_deliveries);
    if (rk == NULL)
        return 1;
    for (int i = first_file; i < argc && rc == 0; i++) {
        if (argv[i][0] == '-' && argv[i][1] == '-') {
            i++; /* an option and its value */
            continue;
        }
        FILE *f = fopen(argv[i], "r");
        char *line = NULL;
        size_t cap = 0;
        ssize_t len;
        long lineno = 0;
        if (f == NULL) {
            fprintf(stderr, "tdm_kafka_tool: %s: %s\n", argv[i],
                    strerror(errno));
            rc = 1;
            break;
        }
        while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
            lineno++;
            while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
                line[--len] = '\0';
            if (len == 0)
                continue;
            json_error_t jerr;
            json_t *obj = json_loadb(line, (size_t)len, 0, &jerr);
            char *key = NULL;
            int64_t ts = 0;
            int32_t part = fixed;
            const char *val = line;
            size_t val_len = (size_t)len;
            if (obj != NULL && json_is_object(obj) && null_field != NULL) {
                json_t *nv = json_object_get(obj, null_field);
                if (json_is_true(nv)) {
                    val = NULL; /* a tombstone */
                    val_len = 0;
                } else if (json_is_string(nv) &&
                           strcmp(json_string_value(nv), "empty") == 0) {
                    val = ""; /* empty, not null */
                    val_len = 0;
                }
            }
            if (obj != NULL && json_is_object(obj)) {
                if (key_field != NULL)
                    key = field_text(obj, key_field);
                if (ts_field != NULL &&
                    json_is_integer(json_object_get(obj, ts_field)))
                    ts = json_integer_value(json_object_get(obj, ts_field));
                if (part_field != NULL &&
                    json_is_integer(json_object_get(obj, part_field)))
                    part = (int32_t)json_integer_value(
                        json_object_get(obj, part_field));
            }
            if (fixed_key != NULL && key == NULL)
                key = strdup(fixed_key);
            /* A malformed line is produced as it is (tests of dead
             * letters need them), without key or time (but with K). */
            rd_kafka_resp_err_t e;
            do {
                e = rd_kafka_producev(
                    rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(part),
                    RD_KAFKA_V_KEY(key, key ? strlen(key) : 0),
                    RD_KAFKA_V_VALUE((void *)val, val_len),
                    RD_KAFKA_V_TIMESTAMP(ts),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
                if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                    rd_kafka_poll(rk, 50);
            } while (e == RD_KAFKA_RESP_ERR__QUEUE_FULL);
            if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
                fprintf(stderr, "tdm_kafka_tool: %s:%ld: %s\n", argv[i], lineno,
                        rd_kafka_err2str(e));
                rc = 1;
            }
            n_msgs++;
            free(key);
            json_decref(obj);
            rd_kafka_poll(rk, 0);
        }
        free(line);
        fclose(f);
    }
    if (rd_kafka_flush(rk, TIMEOUT_MS) != RD_KAFKA_RESP_ERR_NO_ERROR ||
        rd_kafka_outq_len(rk) > 0) {
        fprintf(stderr, "tdm_kafka_tool: %d messages not delivered\n",
                rd_kafka_outq_len(rk));
        rc = 1;
    }
    if (failed_deliveries > 0)
        rc = 1;
    rd_kafka_destroy(rk);
    if (rc == 0)
        fprintf(stderr, "tdm_kafka_tool: produced %ld messages to %s\n", n_msgs,
                topic);
    return rc;
}

/* ---- consume ---- */

/* Prints TAB and the message's headers as name=value;name=value
 * ("-" when it has none). */
static void print_headers(const rd_kafka_message_t *m)
{
    rd_kafka_headers_t *h = NULL;
    const char *name;
    const void *val;
    size_t len;
    putchar('\t');
    if (rd_kafka_message_headers(m, &h) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        putchar('-');
        return;
    }
    for (size_t i = 0; rd_kafka_header_get_all(h, i, &name, &val, &len) ==
                       RD_KAFKA_RESP_ERR_NO_ERROR;
         i++) {
        printf("%s%s=", i ? ";" : "", name);
        if (val != NULL)
            fwrite(val, 1, len, stdout);
    }
}

/* Prints one message as partition TAB key TAB value (then the
 * timestamp or the headers when asked). */
static void print_message(const rd_kafka_message_t *m, int with_ts,
                          int with_off, int with_hdr)
{
    printf("%" PRId32 "\t", m->partition);
    if (with_off)
        printf("%" PRId64 "\t", m->offset);
    if (m->key != NULL)
        fwrite(m->key, 1, m->key_len, stdout);
    else
        fputs("(null)", stdout);
    putchar('\t');
    if (m->payload != NULL)
        fwrite(m->payload, 1, m->len, stdout);
    else
        fputs("(null)", stdout);
    if (with_ts) {
        rd_kafka_timestamp_type_t tt;
        printf("\t%" PRId64, rd_kafka_message_timestamp(m, &tt));
    }
    if (with_hdr)
        print_headers(m);
    putchar('\n');
}

static int cmd_consume(int argc, char **argv)
{
    const char *boot = argv[0], *topic = argv[1];
    int with_ts = argc > 2 && strcmp(argv[2], "--timestamps") == 0;
    int with_off = argc > 2 && strcmp(argv[2], "--offsets") == 0;
    int with_hdr = argc > 2 && strcmp(argv[2], "--headers") == 0;
    if (argc > 3 || (argc > 2 && !with_ts && !with_off && !with_hdr))
        return usage();
    static const char *const props[] = {
        "enable.partition.eof", "true",  "group.id", "tdm-kafka-tool",
        "enable.auto.commit",   "false", NULL};
    rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, boot, props, NULL);
    if (rk == NULL)
        return 1;
    int rc = 0;
    int n = partition_count(rk, topic);
    if (n < 0) {
        rd_kafka_destroy(rk);
        return 1;
    }
    /* Partitions already empty count as ended through their own EOF
     * event, which librdkafka sends for them too. */
    rd_kafka_topic_partition_list_t *list =
        rd_kafka_topic_partition_list_new(n);
    for (int p = 0; p < n; p++)
        rd_kafka_topic_partition_list_add(list, topic, p)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_resp_err_t e = rd_kafka_assign(rk, list);
    rd_kafka_topic_partition_list_destroy(list);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "tdm_kafka_tool: assign: %s\n", rd_kafka_err2str(e));
        rd_kafka_destroy(rk);
        return 1;
    }
    char *ended = calloc((size_t)n, 1);
    int n_ended = 0;
    int64_t deadline = now_ms() + TIMEOUT_MS;
    while (ended != NULL && n_ended < n) {
        if (now_ms() > deadline) {
            fprintf(stderr,
                    "tdm_kafka_tool: %d of %d partitions did not "
                    "reach their end in %d ms\n",
                    n - n_ended, n, TIMEOUT_MS);
            rc = 1;
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
        if (m == NULL)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            if (m->partition >= 0 && m->partition < n && !ended[m->partition]) {
                ended[m->partition] = 1;
                n_ended++;
            }
        } else if (m->err) {
            fprintf(stderr, "tdm_kafka_tool: %s\n", rd_kafka_message_errstr(m));
            rc = 1;
            rd_kafka_message_destroy(m);
            break;
        } else {
            print_message(m, with_ts, with_off, with_hdr);
        }
        rd_kafka_message_destroy(m);
    }
    free(ended);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    return rc;
}

/* ---- committed, offsets ---- */

static int cmd_committed(int argc, char **argv)
{
    if (argc != 3)
        return usage();
    const char *boot = argv[0], *group = argv[1], *topic = argv[2];
    const char *const props[] = {"group.id", group, "enable.auto.commit",
                                 "false", NULL};
    rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, boot, props, NULL);
    if (rk == NULL)
        return 1;
    int rc = 0;
    int n = partition_count(rk, topic);
    if (n < 0) {
        rd_kafka_destroy(rk);
        return 1;
    }
    rd_kafka_topic_partition_list_t *list =
        rd_kafka_topic_partition_list_new(n);
    for (int p = 0; p < n; p++)
        rd_kafka_topic_partition_list_add(list, topic, p);
    rd_kafka_resp_err_t e = rd_kafka_committed(rk, list, TIMEOUT_MS);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        fprintf(stderr, "tdm_kafka_tool: committed: %s\n", rd_kafka_err2str(e));
        rc = 1;
    }
    for (int i = 0; rc == 0 && i < list->cnt; i++) {
        const rd_kafka_topic_partition_t *tp = &list->elems[i];
        printf("%" PRId32 "\t%" PRId64 "\t", tp->partition, tp->offset);
        if (tp->metadata != NULL && tp->metadata_size > 0)
            fwrite(tp->metadata, 1, tp->metadata_size, stdout);
        putchar('\n');
    }
    rd_kafka_topic_partition_list_destroy(list);
    rd_kafka_destroy(rk);
    return rc;
}

static int cmd_offsets(int argc, char **argv)
{
    if (argc != 2)
        return usage();
    rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, argv[0], NULL, NULL);
    if (rk == NULL)
        return 1;
    int rc = 0;
    int n = partition_count(rk, argv[1]);
    for (int p = 0; p < n && rc == 0; p++) {
        int64_t lo = -1, hi = -1;
        rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(
            rk, argv[1], p, &lo, &hi, TIMEOUT_MS);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
            fprintf(stderr, "tdm_kafka_tool: offsets of %s[%d]: %s\n", argv[1],
                    p, rd_kafka_err2str(e));
            rc = 1;
        } else {
            printf("%d\t%" PRId64 "\t%" PRId64 "\n", p, lo, hi);
        }
    }
    rd_kafka_destroy(rk);
    return n < 0 ? 1 : rc;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return usage();
    if (strcmp(argv[1], "produce") == 0)
        return cmd_produce(argc - 2, argv + 2);
    if (strcmp(argv[1], "consume") == 0)
        return cmd_consume(argc - 2, argv + 2);
    if (strcmp(argv[1], "committed") == 0)
        return cmd_committed(argc - 2, argv + 2);
    if (strcmp(argv[1], "offsets") == 0)
        return cmd_offsets(argc - 2, argv + 2);
    return usage();
}
