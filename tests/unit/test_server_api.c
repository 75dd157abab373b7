/* SPDX-License-Identifier: MIT */
/* test_server_api.c - the public accessors the embedded server reads
 * instead of the runtime's internals: the kind and combining columns of
 * TDM_METRIC_MAP (which replaced two hand switches in server/rest.c;
 * the old switches are written out here once more, as the expectation)
 * and the facts of a job's configuration.
 */
#include "harness.h"

/* The old rest.c switch tdm__metric_is_time, as a list. */
static int was_time(tdm_metric id)
{
    static const tdm_metric ids[] = {TDM_METRIC_WM_INPUT, TDM_METRIC_WM_OUTPUT,
                                     TDM_METRIC_MAX_TS, TDM_METRIC_INPUT_WM,
                                     TDM_METRIC_CH_WM, TDM_METRIC_P_WM,
                                     TDM_METRIC_P_MAX_TS,
                                     /* Added after the switch: the
                                      * fallback's data watermark. */
                                     TDM_METRIC_WM_DATA};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

/* The old rest.c switch agg_kind, as two lists (the rest summed). */
static tdm_metric_agg was_agg(tdm_metric id)
{
    static const tdm_metric mins[] = {TDM_METRIC_WM_INPUT, TDM_METRIC_WM_OUTPUT,
                                      TDM_METRIC_IDLE, TDM_METRIC_INPUT_WM,
                                      /* Added after the switches. */
                                      TDM_METRIC_WM_DATA};
    static const tdm_metric maxs[] = {
        TDM_METRIC_WM_LAG, TDM_METRIC_LAST_RECORD_AGE, TDM_METRIC_MAX_TS,
        TDM_METRIC_TS_UNIT, TDM_METRIC_ALIGN_DRIFT, TDM_METRIC_LAG_P50,
        TDM_METRIC_LAG_P99, TDM_METRIC_LAG_P999, TDM_METRIC_LAG_MAX,
        TDM_METRIC_RESULT_LAT_P50, TDM_METRIC_RESULT_LAT_P99,
        /* Added after the switches: the time rates (core/busy.h). */
        TDM_METRIC_BUSY_RATE, TDM_METRIC_BP_RATE, TDM_METRIC_IDLE_RATE,
        TDM_METRIC_SINK_RATE,
        /* And the fallback watermark's (docs/live-settings.md). */
        TDM_METRIC_WM_SOURCE, TDM_METRIC_FB_STRETCH};
    for (size_t i = 0; i < sizeof mins / sizeof mins[0]; i++)
        if (mins[i] == id)
            return TDM_METRIC_AGG_MIN;
    for (size_t i = 0; i < sizeof maxs / sizeof maxs[0]; i++)
        if (maxs[i] == id)
            return TDM_METRIC_AGG_MAX;
    return TDM_METRIC_AGG_SUM;
}

/* Every row says what the two switches said. */
TDM_TEST(metric_columns_match_the_old_switches)
{
    for (int i = 0; i < TDM_METRIC_COUNT_; i++) {
        tdm_metric id = (tdm_metric)i;
        ASSERT_EQ(tdm_metric_is_event_time(id), was_time(id));
        ASSERT_EQ(tdm_metric_combine(id), was_agg(id));
    }
}

/* A point in time and a duration, both "ms", are told apart; ids
 * outside the table get the neutral answers. */
TDM_TEST(metric_kinds)
{
    ASSERT_STR_EQ(tdm_metric_unit(TDM_METRIC_WM_INPUT),
                  tdm_metric_unit(TDM_METRIC_WM_LAG));
    ASSERT_EQ(tdm_metric_kind_of(TDM_METRIC_WM_INPUT),
              TDM_METRIC_KIND_EVENT_TIME);
    ASSERT_EQ(tdm_metric_kind_of(TDM_METRIC_WM_LAG), TDM_METRIC_KIND_DURATION);
    ASSERT_EQ(tdm_metric_kind_of(TDM_METRIC_CKPT_FAILED_AT),
              TDM_METRIC_KIND_CLOCK_TIME);
    ASSERT_EQ(tdm_metric_kind_of(TDM_METRIC_IDLE), TDM_METRIC_KIND_FLAG);
    ASSERT_EQ(tdm_metric_kind_of(TDM_METRIC_RECORDS_IN), TDM_METRIC_KIND_COUNT);
    ASSERT_EQ(tdm_metric_kind_of(TDM_METRIC_TS_UNIT), TDM_METRIC_KIND_CODE);
    ASSERT_EQ(tdm_metric_kind_of(TDM_METRIC_COUNT_), TDM_METRIC_KIND_COUNT);
    ASSERT_EQ(tdm_metric_is_event_time((tdm_metric)-1), 0);
    ASSERT_EQ(tdm_metric_combine((tdm_metric)9999), TDM_METRIC_AGG_SUM);
}

/* Job keys read back: text as set or defaulted, numbers only for
 * numbers (a duration in ms), nothing for unknown keys. */
TDM_TEST(job_keys_read_back)
{
    tdm_job *job;
    char err[256];
    ASSERT_OK(tdm_job_new(&job));
    ASSERT_STR_EQ(tdm_job_get(job, "name"), "job");
    ASSERT_OK(tdm_job_set(job, "name", "clicks", err, sizeof err));
    ASSERT_STR_EQ(tdm_job_get(job, "name"), "clicks");
    ASSERT_EQ(tdm_job_get_int(job, "timestamp_guard"), 3600000);
    ASSERT_OK(tdm_job_set(job, "http.header_timeout", "2s", err, sizeof err));
    ASSERT_EQ(tdm_job_get_int(job, "http.header_timeout"), 2000);
    ASSERT_EQ(tdm_job_get_int(job, "name"), 0);
    ASSERT_EQ(tdm_job_get_int(job, "restart.strategy"), 0);
    ASSERT_STR_EQ(tdm_job_get(job, "no.such.key"), "");
    ASSERT_EQ(tdm_job_get_int(job, "no.such.key"), 0);
    ASSERT_EQ(tdm_job_is_running(job), 0);
    ASSERT_EQ(tdm_job_is_restarting(job), 0);
    ASSERT_EQ(tdm_job_start_time(job), 0);
    ASSERT_EQ(tdm_job_checkpoint_failure(job, err, sizeof err), 0);
    ASSERT_STR_EQ(err, "");
    tdm_job_destroy(job);
}

/* Choices come back as enums, decoded by name. */
TDM_TEST(node_choices_read_back)
{
    tdm_job *job;
    tdm_node *w, *j, *s;
    char err[256];
    ASSERT_OK(tdm_job_new(&job));
    ASSERT_OK(tdm_job_add_node(job, TDM_NODE_WINDOW, "w", &w, err, sizeof err));
    ASSERT_OK(tdm_job_add_node(job, TDM_NODE_JOIN, "j", &j, err, sizeof err));
    ASSERT_OK(tdm_job_add_node(job, TDM_NODE_SOURCE, "s", &s, err, sizeof err));
    ASSERT_EQ(tdm_node_kind_of(w), TDM_NODE_WINDOW);
    ASSERT_STR_EQ(tdm_node_kind_name(tdm_node_kind_of(j)), "join");
    ASSERT_EQ(tdm_node_window_kind(w), TDM_WINDOW_KIND_TUMBLING);
    ASSERT_EQ(tdm_node_window_kind(j), TDM_WINDOW_KIND_NONE);
    ASSERT_EQ(tdm_node_window_kind(s), TDM_WINDOW_KIND_NONE);
    ASSERT_OK(tdm_node_set(j, "type", "window", err, sizeof err));
    ASSERT_OK(tdm_node_set(j, "window.type", "sliding", err, sizeof err));
    ASSERT_EQ(tdm_node_window_kind(j), TDM_WINDOW_KIND_SLIDING);
    ASSERT_OK(tdm_node_set(w, "window.type", "cumulate", err, sizeof err));
    ASSERT_EQ(tdm_node_window_kind(w), TDM_WINDOW_KIND_CUMULATE);
    ASSERT_OK(tdm_node_set(w, "window.step", "10m", err, sizeof err));
    ASSERT_EQ(tdm_node_get_int(w, "window.step"), 600000);
    ASSERT_OK(tdm_node_set(w, "window.type", "global", err, sizeof err));
    ASSERT_EQ(tdm_node_window_kind(w), TDM_WINDOW_KIND_GLOBAL);
    ASSERT_EQ(tdm_node_processing_time(w), 0);
    ASSERT_OK(tdm_node_set(w, "window.time", "processing", err, sizeof err));
    ASSERT_EQ(tdm_node_processing_time(w), 1);
    ASSERT_EQ(tdm_node_trigger(w), TDM_TRIGGER_KIND_DEFAULT);
    ASSERT_OK(tdm_node_set(w, "trigger", "count", err, sizeof err));
    ASSERT_EQ(tdm_node_trigger(w), TDM_TRIGGER_KIND_COUNT);
    ASSERT_STR_EQ(tdm_trigger_name(TDM_TRIGGER_KIND_COUNT), "count");
    ASSERT_STR_EQ(tdm_trigger_name(TDM_TRIGGER_KIND_PROCESSING_TIME),
                  "processing_time");
    ASSERT_STR_EQ(tdm_trigger_name((tdm_trigger_kind)42), "");
    ASSERT_EQ(tdm_node_trigger(s), TDM_TRIGGER_KIND_DEFAULT);
    ASSERT_OK(
        tdm_node_set(s, "watermark.idle_timeout", "30s", err, sizeof err));
    ASSERT_EQ(tdm_node_get_int(s, "watermark.idle_timeout"), 30000);
    ASSERT_EQ(tdm_node_get_int(w, "watermark.idle_timeout"), 0);
    ASSERT_STR_EQ(tdm_node_get(s, "timestamp.unit"), "ms");
    tdm_job_destroy(job);
}
