/* SPDX-License-Identifier: MIT */
/* test_kafka_snap.c - the Kafka connectors' logic that needs no broker
 * (src/connect/kafka_common.c, text_sink.c's exported JSON): the commit
 * metadata text "tdm1 wm=<ms>" (and " top=<ms>" of a clean hand-over),
 * the choice of the snapshot whose offsets may be committed (design
 * section 6: newest with wm < processed and horizon <= done), the bounded
 * ring, the per-partition commit decision (base offset, floor,
 * metadata-only refreshes), the librdkafka configuration order and error
 * naming, and the JSON keys and values the Kafka sink produces.
 * Expected values are worked out by hand in the comments.
 */
#include "harness.h"
#include "connect/kafka.h"
#include "testhooks.h"

/* ---- Metadata ---- */

TDM_TEST(meta_format_is_tdm1_wm)
{
    char buf[TDM__KMETA_MAX];
    ASSERT_EQ(tdm__kafka_meta_format(60000, TDM_TIME_MIN, buf, sizeof buf), 13);
    ASSERT_STR_EQ(buf, "tdm1 wm=60000");
    tdm__kafka_meta_format(-5, TDM_TIME_MIN, buf, sizeof buf);
    ASSERT_STR_EQ(buf, "tdm1 wm=-5");
    /* The extremes fit: 8 + 20 characters. */
    tdm__kafka_meta_format(TDM_TIME_MIN, TDM_TIME_MIN, buf, sizeof buf);
    ASSERT_STR_EQ(buf, "tdm1 wm=-9223372036854775808");
    tdm__kafka_meta_format(TDM_TIME_MAX, TDM_TIME_MIN, buf, sizeof buf);
    ASSERT_STR_EQ(buf, "tdm1 wm=9223372036854775807");
}

TDM_TEST(meta_parse_round_trips_and_rejects_other_text)
{
    tdm_time_ms wm = 0;
    static const tdm_time_ms vals[] = {
        0, 1, -1, 1767225600000, TDM_TIME_MIN, TDM_TIME_MAX};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        char buf[TDM__KMETA_MAX];
        size_t n =
            tdm__kafka_meta_format(vals[i], TDM_TIME_MIN, buf, sizeof buf);
        ASSERT_EQ(tdm__kafka_meta_parse(buf, n, &wm, NULL), 1);
        ASSERT_EQ(wm, vals[i]);
    }
    /* Not NUL-terminated: only n bytes count. */
    ASSERT_EQ(tdm__kafka_meta_parse("tdm1 wm=123456", 11, &wm, NULL), 1);
    ASSERT_EQ(wm, 123);

    static const char *bad[] = {
        "",
        "tdm1 wm=",
        "tdm1 wm=12x",
        "tdm2 wm=5",
        " tdm1 wm=5",
        "tdm1 wm=+5",
        "tdm1 wm= 5",
        "tdm1 wm=-",
        "tdm1 wm=5 ",
        "tdm1 wm=9223372036854775808",
        "some other client's metadata",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wm = 7;
        ASSERT_EQ(tdm__kafka_meta_parse(bad[i], strlen(bad[i]), &wm, NULL), 0);
        ASSERT_EQ(wm, TDM_TIME_MIN);
    }
    wm = 7;
    ASSERT_EQ(tdm__kafka_meta_parse(NULL, 0, &wm, NULL), 0);
    ASSERT_EQ(wm, TDM_TIME_MIN);
}

/* A clean hand-over adds " top=<ms>": "tdm1 wm=60000 top=65000" (23
 * characters); the widest, both extremes, fits TDM__KMETA_MAX. */
TDM_TEST(meta_top_round_trips)
{
    char buf[TDM__KMETA_MAX];
    tdm_time_ms wm = 0, top = 0;
    ASSERT_EQ(tdm__kafka_meta_format(60000, 65000, buf, sizeof buf), 23);
    ASSERT_STR_EQ(buf, "tdm1 wm=60000 top=65000");
    ASSERT_EQ(tdm__kafka_meta_parse(buf, 23, &wm, &top), 1);
    ASSERT_EQ(wm, 60000);
    ASSERT_EQ(top, 65000);
    size_t n =
        tdm__kafka_meta_format(TDM_TIME_MIN, TDM_TIME_MAX, buf, sizeof buf);
    ASSERT_EQ(n, 8 + 20 + 5 + 19);
    ASSERT_EQ(tdm__kafka_meta_parse(buf, n, &wm, &top), 1);
    ASSERT_EQ(wm, TDM_TIME_MIN);
    ASSERT_EQ(top, TDM_TIME_MAX);
    /* Without top (a running member's commit): top is MIN. */
    ASSERT_EQ(tdm__kafka_meta_parse("tdm1 wm=5", 9, &wm, &top), 1);
    ASSERT_EQ(top, TDM_TIME_MIN);
    static const char *bad[] = {
        "tdm1 wm=5 top=",
        "tdm1 wm=5 top=x",
        "tdm1 wm=5  top=6",
        "tdm1 wm=5 top=6 ",
        "tdm1 wm=5 tip=6",
        "tdm1 wm=5 top=+6",
        "tdm1 wm=5 top=-9223372036854775808",
        "tdm1 wm= top=6",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        wm = top = 7;
        ASSERT_EQ(tdm__kafka_meta_parse(bad[i], strlen(bad[i]), &wm, &top), 0);
        ASSERT_EQ(wm, TDM_TIME_MIN);
        ASSERT_EQ(top, TDM_TIME_MIN);
    }
}

/* A final commit at the same offset and watermark still writes when
 * only the top changes (the hand-over becomes clean). */
TDM_TEST(kcommit_top_change_is_due)
{
    tdm__ksnaps r = {0};
    tdm__kcommit_in in = {
        .p = 0,
        .base = 10,
        .committed = 10,
        .meta_wm = 50,
        .floor = TDM_TIME_MIN,
        .top = 70,
        .meta_top = TDM_TIME_MIN,
        .handover = true,
    };
    int64_t off;
    tdm_time_ms wm;
    uint64_t seq;
    ASSERT_EQ(tdm__kcommit_choose(&r, &in, 60, 50, &off, &wm, &seq), 1);
    ASSERT_EQ(off, 10);
    ASSERT_EQ(wm, 50);
    in.meta_top = 70;
    ASSERT_EQ(tdm__kcommit_choose(&r, &in, 60, 50, &off, &wm, &seq), 0);
    tdm__ksnap_free(&r);
}

/* ---- Snapshots ---- */

/* Three snapshots of two partitions (one-minute tumbling windows, no
 * lateness: horizon C(ts) = window end - 1):
 *   S1 wm 1000: next {10, 20}, hz {59999, MIN}    (p1 has no row yet)
 *   S2 wm 2000: next {15, 20}, hz {119999, MIN}
 *   S3 wm 3000: next {18, 25}, hz {119999, 179999} */
static void three(tdm__ksnaps *r)
{
    int64_t n1[] = {10, 20}, n2[] = {15, 20}, n3[] = {18, 25};
    tdm_time_ms h1[] = {59999, TDM_TIME_MIN};
    tdm_time_ms h2[] = {119999, TDM_TIME_MIN};
    tdm_time_ms h3[] = {119999, 179999};
    memset(r, 0, sizeof *r);
    ASSERT_OK(tdm__ksnap_push(r, 1000, n1, h1, 2));
    ASSERT_OK(tdm__ksnap_push(r, 2000, n2, h2, 2));
    ASSERT_OK(tdm__ksnap_push(r, 3000, n3, h3, 2));
}

TDM_TEST(pick_newest_processed_snapshot_within_done)
{
    tdm__ksnaps r;
    const tdm__ksnap *s;
    three(&r);
    /* processed 2500: S1 and S2 are processed (wm < 2500).  done 60000:
     * for p0 S2's horizon 119999 is too far, S1's 59999 is not -> 10;
     * for p1 S2 (horizon MIN) -> 20. */
    s = tdm__ksnap_pick(&r, 0, 2500, 60000);
    ASSERT_TRUE(s != NULL);
    ASSERT_EQ(s->seq, 1);
    ASSERT_EQ(s->next[0], 10);
    s = tdm__ksnap_pick(&r, 1, 2500, 60000);
    ASSERT_TRUE(s != NULL);
    ASSERT_EQ(s->seq, 2);
    ASSERT_EQ(s->next[1], 20);
    /* processed MAX (the end), done 120000: p0 takes S3 (119999 <=
     * 120000) -> 18; p1's S3 horizon 179999 is beyond, S2 -> 20. */
    s = tdm__ksnap_pick(&r, 0, TDM_TIME_MAX, 120000);
    ASSERT_EQ(s->seq, 3);
    ASSERT_EQ(s->next[0], 18);
    s = tdm__ksnap_pick(&r, 1, TDM_TIME_MAX, 120000);
    ASSERT_EQ(s->seq, 2);
    ASSERT_EQ(s->next[1], 20);
    tdm__ksnap_free(&r);
}

TDM_TEST(pick_is_strict_on_processed_and_inclusive_on_done)
{
    tdm__ksnaps r;
    three(&r);
    /* wm 1000 is not < processed 1000: nothing is processed yet. */
    ASSERT_TRUE(tdm__ksnap_pick(&r, 0, 1000, TDM_TIME_MAX) == NULL);
    ASSERT_TRUE(tdm__ksnap_pick(&r, 1, 1000, TDM_TIME_MAX) == NULL);
    /* processed 1001: S1; done exactly its horizon 59999 qualifies,
     * 59998 does not. */
    ASSERT_EQ(tdm__ksnap_pick(&r, 0, 1001, 59999)->next[0], 10);
    ASSERT_TRUE(tdm__ksnap_pick(&r, 0, 1001, 59998) == NULL);
    /* A partition no snapshot covers. */
    ASSERT_TRUE(tdm__ksnap_pick(&r, 2, TDM_TIME_MAX, TDM_TIME_MAX) == NULL);
    ASSERT_TRUE(tdm__ksnap_pick(&r, -1, TDM_TIME_MAX, TDM_TIME_MAX) == NULL);
    tdm__ksnap_free(&r);
}

TDM_TEST(pick_skips_unknown_offsets_and_narrow_snapshots)
{
    tdm__ksnaps r;
    int64_t n4[] = {-1, 30, 7};
    tdm_time_ms h4[] = {TDM_TIME_MIN, TDM_TIME_MIN, TDM_TIME_MIN};
    three(&r);
    /* S4 wm 4000: p0's offset unknown (revoked when marked), p2 new. */
    ASSERT_OK(tdm__ksnap_push(&r, 4000, n4, h4, 3));
    /* p0 falls back to S3 (18); p1 takes S4 (30); p2 only S4 covers. */
    ASSERT_EQ(tdm__ksnap_pick(&r, 0, TDM_TIME_MAX, TDM_TIME_MAX)->next[0], 18);
    ASSERT_EQ(tdm__ksnap_pick(&r, 1, TDM_TIME_MAX, TDM_TIME_MAX)->next[1], 30);
    ASSERT_EQ(tdm__ksnap_pick(&r, 2, TDM_TIME_MAX, TDM_TIME_MAX)->next[2], 7);
    /* Before S4 is processed p2 has nothing. */
    ASSERT_TRUE(tdm__ksnap_pick(&r, 2, 4000, TDM_TIME_MAX) == NULL);
    tdm__ksnap_free(&r);
}

TDM_TEST(drop_before_keeps_newer_snapshots)
{
    tdm__ksnaps r;
    three(&r);
    tdm__ksnap_drop_before(&r, 2);
    ASSERT_EQ(r.count, 2);
    /* S1 is gone: processed 1500 allowed only S1, now nothing. */
    ASSERT_TRUE(tdm__ksnap_pick(&r, 0, 1500, TDM_TIME_MAX) == NULL);
    ASSERT_EQ(tdm__ksnap_pick(&r, 0, 2500, TDM_TIME_MAX)->seq, 2);
    /* Dropping before a sequence already gone changes nothing. */
    tdm__ksnap_drop_before(&r, 1);
    ASSERT_EQ(r.count, 2);
    tdm__ksnap_drop_before(&r, 100);
    ASSERT_EQ(r.count, 0);
    ASSERT_TRUE(tdm__ksnap_pick(&r, 0, TDM_TIME_MAX, TDM_TIME_MAX) == NULL);
    tdm__ksnap_free(&r);
}

TDM_TEST(full_ring_drops_oldest_so_commits_lag_never_overshoot)
{
    tdm__ksnaps r;
    memset(&r, 0, sizeof r);
    /* 300 marks, wm = i, next = 100 + i, horizon = i.  The ring keeps
     * the newest 256: i = 45 .. 300. */
    for (int i = 1; i <= 300; i++) {
        int64_t nx = 100 + i;
        tdm_time_ms hz = i;
        ASSERT_OK(tdm__ksnap_push(&r, i, &nx, &hz, 1));
    }
    ASSERT_EQ(r.count, TDM__KSNAP_MAX);
    ASSERT_EQ(r.ring[r.head].seq, 45);
    /* processed 45 would allow i <= 44, all dropped: no commit (rather
     * than a later offset). */
    ASSERT_TRUE(tdm__ksnap_pick(&r, 0, 45, TDM_TIME_MAX) == NULL);
    /* processed 46: i = 45 -> offset 145. */
    ASSERT_EQ(tdm__ksnap_pick(&r, 0, 46, TDM_TIME_MAX)->next[0], 145);
    /* done 200 limits to i = 200 -> 300. */
    ASSERT_EQ(tdm__ksnap_pick(&r, 0, TDM_TIME_MAX, 200)->next[0], 300);
    tdm__ksnap_free(&r);
    ASSERT_EQ(r.count, 0);
}

TDM_TEST(push_out_of_memory_leaves_ring_unchanged)
{
    tdm__ksnaps r;
    int64_t nx[] = {1, 2};
    tdm_time_ms hz[] = {0, 0};
    three(&r);
    tdm__alloc_fail_after(1);
    ASSERT_ERR(tdm__ksnap_push(&r, 9000, nx, hz, 2), TDM_ERR_NOMEM);
    tdm__alloc_fail_after(0);
    ASSERT_EQ(r.count, 3);
    ASSERT_EQ(tdm__ksnap_pick(&r, 0, TDM_TIME_MAX, TDM_TIME_MAX)->seq, 3);
    tdm__ksnap_free(&r);
}

/* ---- Commit decisions ---- */

TDM_TEST(commit_moves_to_picked_offset_with_done_as_metadata)
{
    tdm__ksnaps r;
    tdm__kcommit_in in = {.p = 0,
                          .base = 0,
                          .committed = 0,
                          .meta_wm = TDM_TIME_MIN,
                          .floor = TDM_TIME_MIN};
    int64_t off;
    tdm_time_ms wm;
    uint64_t seq;
    three(&r);
    /* processed 2500, done 60000: S1 for p0 (offset 10, see above); the
     * offset moves from 0, so it is due even in a busy group. */
    ASSERT_EQ(tdm__kcommit_choose(&r, &in, 2500, 60000, &off, &wm, &seq), 1);
    ASSERT_EQ(off, 10);
    ASSERT_EQ(wm, 60000);
    ASSERT_EQ(seq, 1);
    /* Committed already at 10 with that metadata: nothing to do. */
    in.committed = 10;
    in.meta_wm = 60000;
    in.quiet = true;
    ASSERT_EQ(tdm__kcommit_choose(&r, &in, 2500, 60000, &off, &wm, &seq), 0);
    /* A committed offset ahead of the pick (the previous owner's) is
     * never moved back. */
    in.committed = 12;
    ASSERT_EQ(tdm__kcommit_choose(&r, &in, 2500, 70000, &off, &wm, &seq), 0);
    tdm__ksnap_free(&r);
}

TDM_TEST(commit_metadata_alone_only_in_handover_or_quiet_group)
{
    tdm__ksnaps r;
    tdm__kcommit_in in = {.p = 0,
                          .base = 10,
                          .committed = 10,
                          .meta_wm = 50000,
                          .floor = TDM_TIME_MIN};
    int64_t off;
    tdm_time_ms wm;
    uint64_t seq;
    three(&r);
    /* done 60000 picks S1 (offset 10 = committed); the metadata would go
     * 50000 -> 60000.  Busy group, periodic: not due. */
    ASSERT_EQ(tdm__kcommit_choose(&r, &in, 2500, 60000, &off, &wm, &seq), 0);
    ASSERT_EQ(seq, 1);
    in.quiet = true;
    ASSERT_EQ(tdm__kcommit_choose(&r, &in, 2500, 60000, &off, &wm, &seq), 1);
    ASSERT_EQ(off, 10);
    ASSERT_EQ(wm, 60000);
    in.quiet = false;
    in.handover = true;
    ASSERT_EQ(tdm__kcommit_choose(&r, &in, 2500, 60000, &off, &wm, &seq), 1);
    tdm__ksnap_free(&r);
}

TDM_TEST(commit_without_snapshot_uses_base_and_keeps_floor)
{
    tdm__ksnaps r;
    /* Resumed at offset 5 from a previous owner whose floor is 90000;
     * our operators are behind it (done 60000) and nothing is
     * processed yet (processed 1000 allows no snapshot). */
    tdm__kcommit_in in = {.p = 0,
                          .base = 5,
                          .committed = 5,
                          .meta_wm = 90000,
                          .floor = 90000,
                          .handover = true};
    int64_t off;
    tdm_time_ms wm;
    uint64_t seq;
    three(&r);
    /* The metadata never goes below the floor: nothing changes. */
    ASSERT_EQ(tdm__kcommit_choose(&r, &in, 1000, 60000, &off, &wm, &seq), 0);
    ASSERT_EQ(seq, 0);
    ASSERT_EQ(off, 5);
    ASSERT_EQ(wm, 90000);
    /* Once done passes the floor the hand-over refreshes it. */
    ASSERT_EQ(tdm__kcommit_choose(&r, &in, 1000, 95000, &off, &wm, &seq), 1);
    ASSERT_EQ(off, 5);
    ASSERT_EQ(wm, 95000);
    /* Started from the beginning, never committed: the base (0) with
     * done as the floor for the next owner. */
    in.base = 0;
    in.committed = -1;
    in.meta_wm = TDM_TIME_MIN;
    in.floor = TDM_TIME_MIN;
    in.handover = false;
    ASSERT_EQ(tdm__kcommit_choose(&r, &in, 1000, 30000, &off, &wm, &seq), 1);
    ASSERT_EQ(off, 0);
    ASSERT_EQ(wm, 30000);
    /* Unknown base and no snapshot: no commit. */
    in.base = -1;
    ASSERT_EQ(tdm__kcommit_choose(&r, &in, 1000, 30000, &off, &wm, &seq), 0);
    tdm__ksnap_free(&r);
}

/* ---- librdkafka configuration ---- */

static const char *get(rd_kafka_conf_t *c, const char *key)
{
    static char buf[256];
    size_t n = sizeof buf;
    if (rd_kafka_conf_get(c, key, buf, &n) != RD_KAFKA_CONF_OK)
        return "?";
    return buf;
}

TDM_TEST(conf_user_properties_override_defaults_and_brokers)
{
    static const char *const defaults[] = {"linger.ms", "5", "acks", "all",
                                           NULL};
    const char *props[] = {"linger.ms", "50", "client.id", "me"};
    tdm__klog lg = {0};
    rd_kafka_conf_t *c = NULL;
    char err[256] = "";
    ASSERT_OK(
        tdm__kafka_conf("a:1", props, 2, defaults, &lg, &c, err, sizeof err));
    ASSERT_STR_EQ(get(c, "linger.ms"), "50");
    ASSERT_STR_EQ(get(c, "acks"), "-1"); /* "all" as librdkafka shows it */
    ASSERT_STR_EQ(get(c, "client.id"), "me");
    ASSERT_STR_EQ(get(c, "bootstrap.servers"), "a:1");
    rd_kafka_conf_destroy(c);
    /* kafka.bootstrap.servers wins over brokers. */
    const char *bs[] = {"bootstrap.servers", "b:2"};
    ASSERT_OK(tdm__kafka_conf("a:1", bs, 1, NULL, &lg, &c, err, sizeof err));
    ASSERT_STR_EQ(get(c, "bootstrap.servers"), "b:2");
    rd_kafka_conf_destroy(c);
}

TDM_TEST(conf_error_names_the_kafka_property)
{
    const char *props[] = {"no.such.thing", "1"};
    const char *bad_val[] = {"linger.ms", "soon"};
    rd_kafka_conf_t *c = (rd_kafka_conf_t *)&c;
    char err[256] = "";
    ASSERT_ERR(tdm__kafka_conf(NULL, props, 1, NULL, NULL, &c, err, sizeof err),
               TDM_ERR_INVAL);
    ASSERT_TRUE(c == NULL);
    ASSERT_TRUE(strncmp(err, "kafka.no.such.thing: ", 21) == 0);
    ASSERT_TRUE(strstr(err, "No such configuration property") != NULL);
    ASSERT_ERR(
        tdm__kafka_conf(NULL, bad_val, 1, NULL, NULL, &c, err, sizeof err),
        TDM_ERR_INVAL);
    ASSERT_TRUE(strncmp(err, "kafka.linger.ms: ", 17) == 0);
}

/* Collects log lines. */
static char logged[512];
static void log_line(void *ud, const char *line)
{
    (void)ud;
    snprintf(logged, sizeof logged, "%s", line);
}

TDM_TEST(log_lines_carry_the_prefix)
{
    tdm__klog lg = {.fn = log_line};
    snprintf(lg.prefix, sizeof lg.prefix, "kafka source 'in'[1]");
    tdm__kafka_logf(&lg, "assigned %d partition(s): %s", 1, "t[0]");
    ASSERT_STR_EQ(logged, "kafka source 'in'[1]: assigned 1 partition(s): "
                          "t[0]");
    tdm__kafka_logf(NULL, "nothing");
}

/* ---- The Kafka sink's keys and values ---- */

/* A result of key user = "a", count 3, window [0, 60000), pane 0. */
static tdm__out_row result(tdm__col *cols)
{
    tdm__out_row row;
    memset(&row, 0, sizeof row);
    memset(cols, 0, 2 * sizeof *cols);
    cols[0].name = "user";
    cols[0].type = TDM_TYPE_STRING;
    cols[0].v.u.s.p = "a";
    cols[0].v.u.s.len = 1;
    cols[1].name = "n";
    cols[1].type = TDM_TYPE_INT64;
    cols[1].v.u.i = 3;
    row.cols = cols;
    row.n_cols = 2;
    row.n_key_cols = 1;
    row.has_window = 1;
    row.win_start = 0;
    row.win_end = 60000;
    row.timing = TDM_PANE_ON_TIME;
    return row;
}

static const char *text(tdm__sbuf *b)
{
    static char buf[512];
    ASSERT_TRUE(!b->oom && b->len < sizeof buf);
    memcpy(buf, b->p, b->len);
    buf[b->len] = '\0';
    b->len = 0;
    return buf;
}

TDM_TEST(sink_keys_are_group_key_and_window_for_upsert)
{
    tdm__col cols[2];
    tdm__out_row row = result(cols);
    tdm__sbuf b = {0};
    tdm__json_key(&row, false, &b);
    ASSERT_STR_EQ(text(&b), "{\"user\":\"a\"}");
    tdm__json_key(&row, true, &b);
    ASSERT_STR_EQ(text(&b),
                  "{\"user\":\"a\",\"window_start\":0,\"window_end\":60000}");
    /* A join pair has no window: the key columns only. */
    row.has_window = 0;
    tdm__json_key(&row, true, &b);
    ASSERT_STR_EQ(text(&b), "{\"user\":\"a\"}");
    tdm__sbuf_free(&b);
}

TDM_TEST(sink_values_are_the_text_sink_lines_without_newline)
{
    tdm__col cols[2];
    tdm__out_row row = result(cols);
    tdm__sbuf b = {0};
    static const char base[] =
        "{\"user\":\"a\",\"n\":3,\"window_start\":0,\"window_end\":60000,"
        "\"timing\":\"on_time\",\"pane\":0,\"update\":false";
    char want[256];

    /* Append, and upsert into a keyed topic: no "op". */
    snprintf(want, sizeof want, "%s}", base);
    tdm__json_result(&row, 0, false, NULL, &b);
    ASSERT_STR_EQ(text(&b), want);
    tdm__json_result(&row, 1, false, NULL, &b);
    ASSERT_STR_EQ(text(&b), want);
    /* Upsert as a stream of lines (stdout) marks them. */
    snprintf(want, sizeof want, "%s,\"op\":\"upsert\"}", base);
    tdm__json_result(&row, 1, true, NULL, &b);
    ASSERT_STR_EQ(text(&b), want);
    /* Retract mode: "+" and "-". */
    snprintf(want, sizeof want, "%s,\"op\":\"+\"}", base);
    tdm__json_result(&row, 2, false, NULL, &b);
    ASSERT_STR_EQ(text(&b), want);
    row.change = TDM__CHANGE_RETRACT;
    snprintf(want, sizeof want, "%s,\"op\":\"-\"}", base);
    tdm__json_result(&row, 2, false, NULL, &b);
    ASSERT_STR_EQ(text(&b), want);
    /* select (the key "select"): the values carry the chosen columns;
     * retract's "op" stays. */
    static const char *const items[] = {"n AS uv", "window_start", NULL};
    tdm__sel *sel = NULL;
    ASSERT_OK(tdm__sel_new(items, 2, &sel, NULL, 0));
    tdm__json_result(&row, 2, false, sel, &b);
    ASSERT_STR_EQ(text(&b), "{\"uv\":3,\"window_start\":0,\"op\":\"-\"}");
    tdm__sel_free(sel);
    /* Dead letters. */
    tdm__json_dead("t[2]@17", "empty line", "", 0, &b);
    ASSERT_STR_EQ(text(&b), "{\"location\":\"t[2]@17\",\"reason\":"
                            "\"empty line\",\"raw\":\"\"}");
    tdm__sbuf_free(&b);
}
