/* SPDX-License-Identifier: MIT */
/* mock_cluster.c - tdm_kafka_mock: librdkafka's in-process mock cluster
 * as a stand-alone process, so that the scripts in tests/kafka run real
 * `tidemark run` processes against brokers without a Kafka installation.
 * It creates the topics asked for, writes the bootstrap address to a file
 * (atomically: F.tmp then rename) and serves until SIGTERM, SIGINT or the
 * death of its parent.
 *
 * Usage: tdm_kafka_mock [--brokers N] [--topic NAME:PARTITIONS]...
 *                       [--delay APIKEY:MS] --bootstrap-file F
 *
 * --delay answers the first 4096 requests of one protocol request type
 * (e.g. 26, EndTxn: a transaction's commit) on every broker MS
 * milliseconds late, so a test can act while such a request is under
 * way.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

/* Set by the signal handler; the main loop polls it. */
static volatile sig_atomic_t stop_flag;

static void on_signal(int sig)
{
    (void)sig;
    stop_flag = 1;
}

static int usage(void)
{
    fprintf(stderr, "usage: tdm_kafka_mock [--brokers N] "
                    "[--topic NAME:PARTITIONS]... [--delay APIKEY:MS] "
                    "--bootstrap-file F\n");
    return 2;
}

/* Parses "name:partitions" into @p name (size n) and *parts. */
static int parse_topic(const char *arg, char *name, size_t n, int *parts)
{
    const char *colon = strrchr(arg, ':');
    char *end;
    if (colon == NULL || colon == arg || (size_t)(colon - arg) >= n)
        return -1;
    long p = strtol(colon + 1, &end, 10);
    if (*end != '\0' || p < 1 || p > 1000)
        return -1;
    memcpy(name, arg, (size_t)(colon - arg));
    name[colon - arg] = '\0';
    *parts = (int)p;
    return 0;
}

/* Writes @p text and a newline to @p path through a temporary file and
 * a rename, so that a reader never sees a partial address. */
static int write_atomic(const char *path, const char *text)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
        return -1;
    FILE *f = fopen(tmp, "w");
    if (f == NULL)
        return -1;
    int bad = fprintf(f, "%s\n", text) < 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int brokers = 3;
    int delay_key = -1, delay_ms = 0;
    const char *bootstrap_file = NULL;
    char err[512];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--brokers") == 0 && i + 1 < argc) {
            brokers = atoi(argv[++i]);
            if (brokers < 1 || brokers > 16)
                return usage();
        } else if (strcmp(argv[i], "--bootstrap-file") == 0 && i + 1 < argc) {
            bootstrap_file = argv[++i];
        } else if (strcmp(argv[i], "--topic") == 0 && i + 1 < argc) {
            i++; /* Checked below, once the cluster exists. */
        } else if (strcmp(argv[i], "--delay") == 0 && i + 1 < argc) {
            if (sscanf(argv[++i], "%d:%d", &delay_key, &delay_ms) != 2 ||
                delay_key < 0 || delay_key > 1000 || delay_ms < 0 ||
                delay_ms > 60000)
                return usage();
        } else {
            return usage();
        }
    }
    if (bootstrap_file == NULL)
        return usage();

    /* Die with the test script that started us, even on kill -9. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1)
        return 1;
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);

    /* The cluster lives inside a client handle; a producer is the
     * lightest.  Its own log stays quiet unless something breaks. */
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", err, sizeof err);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (rk == NULL) {
        fprintf(stderr, "tdm_kafka_mock: %s\n", err);
        return 1;
    }
    rd_kafka_mock_cluster_t *mc = rd_kafka_mock_cluster_new(rk, brokers);
    if (mc == NULL) {
        fprintf(stderr, "tdm_kafka_mock: cannot create the cluster\n");
        rd_kafka_destroy(rk);
        return 1;
    }
    int rc = 0;
    /* Delayed answers: one stack entry per request (no error). */
    for (int b = 1; delay_key >= 0 && b <= brokers && rc == 0; b++)
        for (int k = 0; k < 4096 && rc == 0; k++)
            if (rd_kafka_mock_broker_push_request_error_rtts(
                    mc, b, (int16_t)delay_key, 1, RD_KAFKA_RESP_ERR_NO_ERROR,
                    delay_ms) != RD_KAFKA_RESP_ERR_NO_ERROR)
                rc = 1;
    for (int i = 1; i < argc && rc == 0; i++) {
        if (strcmp(argv[i], "--topic") != 0) {
            if (strcmp(argv[i], "--brokers") == 0 ||
                strcmp(argv[i], "--bootstrap-file") == 0 ||
                strcmp(argv[i], "--delay") == 0)
                i++;
            continue;
        }
        char name[256];
        int parts;
        if (parse_topic(argv[++i], name, sizeof name, &parts) != 0) {
            fprintf(stderr,
                    "tdm_kafka_mock: --topic %s: expected "
                    "NAME:PARTITIONS (1 to 1000)\n",
                    argv[i]);
            rc = 2;
            break;
        }
        rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(mc, name, parts, 1);
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
            fprintf(stderr, "tdm_kafka_mock: topic %s: %s\n", name,
                    rd_kafka_err2str(e));
            rc = 1;
        }
    }
    if (rc == 0 &&
        write_atomic(bootstrap_file, rd_kafka_mock_cluster_bootstraps(mc))) {
        fprintf(stderr, "tdm_kafka_mock: %s: %s\n", bootstrap_file,
                strerror(errno));
        rc = 1;
    }
    /* Serve until told to stop; the brokers run on the cluster's own
     * threads, this one only waits. */
    struct timespec tick = {0, 50 * 1000 * 1000};
    while (rc == 0 && !stop_flag)
        nanosleep(&tick, NULL);
    rd_kafka_mock_cluster_destroy(mc);
    rd_kafka_destroy(rk);
    return rc;
}
