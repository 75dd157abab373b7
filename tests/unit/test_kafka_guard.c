/* SPDX-License-Identifier: MIT */
/* test_kafka_guard.c - issue 20's Kafka operations guards that need no
 * broker: the check of a node's kafka.* properties (kafka_common.c:
 * librdkafka's verdict on names and values, the properties tidemark owns,
 * consumer properties on a sink, producer properties on a source without
 * repartition) and the broker guard's states and messages
 * (kafka_guard.c: down from the start, up on contact, down again on
 * "all brokers down" or an authentication failure, and the error once
 * the timeout has passed with the probe failing against a closed port).
 */
#include "harness.h"
#include "connect/kafka.h"

/* check(...) of one property: the error code, the message in err. */
static char err[512];
static tdm_err check1(const char *key, const char *val, bool sink,
                      bool producer_ok)
{
    const char *props[] = {key, val};
    err[0] = '\0';
    return tdm__kafka_check_props(props, 1, sink, producer_ok, err, sizeof err);
}

TDM_TEST(props_unknown_names_and_bad_values_in_librdkafkas_words)
{
    ASSERT_ERR(check1("no.such.thing", "1", false, false), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "kafka.no.such.thing: No such configuration") ==
                err);
    ASSERT_ERR(check1("session.timeout.ms", "soon", false, false),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "Invalid value") != NULL);
    ASSERT_OK(check1("session.timeout.ms", "45000", false, false));
    ASSERT_OK(check1("bootstrap.servers", "a:1", true, false));
}

TDM_TEST(props_owned_by_tidemark_are_refused_with_the_reason)
{
    ASSERT_ERR(check1("transactional.id", "x", true, false), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "kafka.transactional.id: not allowed: tidemark "
                            "sets the transactional id itself") == err);
    ASSERT_ERR(check1("transactional.id", "x", false, true), TDM_ERR_INVAL);
    ASSERT_ERR(check1("enable.auto.commit", "true", false, false),
               TDM_ERR_INVAL);
    ASSERT_ERR(check1("auto.commit.enable", "true", false, false),
               TDM_ERR_INVAL);
    ASSERT_ERR(check1("enable.auto.offset.store", "true", false, false),
               TDM_ERR_INVAL);
    ASSERT_ERR(check1("group.id", "g", false, false), TDM_ERR_INVAL);
    ASSERT_ERR(check1("auto.offset.reset", "latest", false, false),
               TDM_ERR_INVAL);
    ASSERT_ERR(check1("enable.partition.eof", "true", false, false),
               TDM_ERR_INVAL);
    /* Defaults a user may tune. */
    ASSERT_OK(check1("isolation.level", "read_committed", false, false));
    ASSERT_OK(check1("partition.assignment.strategy", "range", false, false));
    ASSERT_OK(check1("enable.idempotence", "false", true, false));
    ASSERT_OK(check1("acks", "1", true, false));
}

TDM_TEST(props_for_the_other_kind_of_client_are_refused)
{
    ASSERT_ERR(check1("session.timeout.ms", "45000", true, false),
               TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "a consumer property") != NULL);
    ASSERT_ERR(check1("linger.ms", "20", false, false), TDM_ERR_INVAL);
    ASSERT_TRUE(strstr(err, "a producer property") != NULL);
    /* A re-partitioning source produces too. */
    ASSERT_OK(check1("linger.ms", "20", false, true));
    /* Both kinds: fine everywhere. */
    ASSERT_OK(check1("client.id", "me", true, false));
    ASSERT_OK(check1("client.id", "me", false, false));
}

/* A producer aimed at @p brokers (nothing is produced). */
static rd_kafka_t *producer(const char *brokers)
{
    char why[256];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    if (rd_kafka_conf_set(c, "bootstrap.servers", brokers, why, sizeof why) !=
        RD_KAFKA_CONF_OK)
        return NULL;
    rd_kafka_conf_set(c, "log_level", "0", why, sizeof why);
    return rd_kafka_new(RD_KAFKA_PRODUCER, c, why, sizeof why);
}

TDM_TEST(guard_states_and_messages)
{
    tdm__kguard g;
    char msg[512];
    rd_kafka_t *rk = producer("127.0.0.1:1");
    ASSERT_TRUE(rk != NULL);
    ASSERT_OK(tdm__kguard_init(&g, 1000, "127.0.0.1:1"));
    ASSERT_TRUE(atomic_load(&g.down_since) >= 0); /* down from the start */
    /* Within the timeout: fine, whatever the probe says. */
    ASSERT_OK(tdm__kguard_check(&g, rk, msg, sizeof msg));
    /* Long down, never reached: the error names the brokers. */
    atomic_store(&g.down_since, tdm__mono_ms() - 5000);
    atomic_store(&g.last_probe, INT64_MIN / 2);
    tdm__kguard_error(&g, RD_KAFKA_RESP_ERR__TRANSPORT, "refused here");
    ASSERT_ERR(tdm__kguard_check(&g, rk, msg, sizeof msg), TDM_ERR_IO);
    ASSERT_TRUE(strstr(msg, "cannot reach any of its brokers 127.0.0.1:1 "
                            "for ") == msg);
    ASSERT_TRUE(strstr(msg, "(brokers.timeout): refused here") != NULL);
    /* Contact: up; a transport error alone keeps it up. */
    tdm__kguard_up(&g);
    ASSERT_EQ(atomic_load(&g.down_since), -1);
    tdm__kguard_error(&g, RD_KAFKA_RESP_ERR__TRANSPORT, "one broker");
    ASSERT_EQ(atomic_load(&g.down_since), -1);
    ASSERT_OK(tdm__kguard_check(&g, rk, msg, sizeof msg));
    /* All brokers down after contact: "lost". */
    tdm__kguard_error(&g, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, "1/1 down");
    ASSERT_TRUE(atomic_load(&g.down_since) >= 0);
    atomic_store(&g.down_since, tdm__mono_ms() - 5000);
    atomic_store(&g.last_probe, INT64_MIN / 2);
    ASSERT_ERR(tdm__kguard_check(&g, rk, msg, sizeof msg), TDM_ERR_IO);
    ASSERT_TRUE(strstr(msg, "lost every one of its brokers") == msg);
    /* An authentication failure says so. */
    tdm__kguard_up(&g);
    tdm__kguard_error(&g, RD_KAFKA_RESP_ERR__AUTHENTICATION, "bad password");
    atomic_store(&g.down_since, tdm__mono_ms() - 5000);
    atomic_store(&g.last_probe, INT64_MIN / 2);
    ASSERT_ERR(tdm__kguard_check(&g, rk, msg, sizeof msg), TDM_ERR_IO);
    ASSERT_TRUE(strstr(msg, "authentication failed with brokers") == msg);
    ASSERT_TRUE(strstr(msg, "bad password") != NULL);
    tdm__kguard_destroy(&g);
    tdm__kguard_destroy(&g); /* idempotent */
    rd_kafka_destroy(rk);
}

TDM_TEST(guard_with_no_timeout_never_fails)
{
    tdm__kguard g;
    char msg[256];
    ASSERT_OK(tdm__kguard_init(&g, 0, NULL));
    atomic_store(&g.down_since, tdm__mono_ms() - 3600000);
    ASSERT_OK(tdm__kguard_check(&g, NULL, msg, sizeof msg));
    tdm__kguard_destroy(&g);
    tdm__kguard_destroy(NULL);
    tdm__kguard_up(NULL);
    tdm__kguard_error(NULL, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, NULL);
}
