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
    static const tdm_metric ids[] = {
        TDM_METRIC_WM_INPUT, TDM_METRIC_WM_OUTPUT, TDM_METRIC_MAX_TS,
        TDM_METRIC_INPUT_WM, TDM_METRIC_CH_WM,     TDM_METRIC_P_WM,
        TDM_METRIC_P_MAX_TS};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i] == id)
            return 1;
    return 0;
}

/* The old rest.c switch agg_kind, as two lists (the rest summed). */
static tdm_metric_agg was_agg(tdm_metric id)
{
    static const tdm_metric mins[] = {TDM_METRIC_WM_INPUT,
                                      TDM_METRIC_WM_OUTPUT, TDM_METRIC_IDLE,
                                      TDM_METRIC_INPUT_WM};
    static const tdm_metric maxs[] = {
        TDM_METRIC_WM_LAG,         TDM_METRIC_LAST_RECORD_AGE,
        TDM_METRIC_MAX_TS,         TDM_METRIC_TS_UNIT,
        TDM_METRIC_ALIGN_DRIFT,    TDM_METRIC_LAG_P50,
        TDM_METRIC_LAG_P99,        TDM_METRIC_LAG_P999,
        TDM_METRIC_LAG_MAX,        TDM_METRIC_RESULT_LAT_P50,
        TDM_METRIC_RESULT_LAT_P99};
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
    ASSERT_EQ(tdm_metric_kind_of(TDM_METRIC_WM_LAG),
                  TDM_METRIC_KIND_DURATION);
    ASSERT_EQ(tdm_metric_kind_of(TDM_METRIC_CKPT_FAILED_AT),
                  TDM_METRIC_KIND_CLOCK_TIME);
    ASSERT_EQ(tdm_metric_kind_of(TDM_METRIC_IDLE), TDM_METRIC_KIND_FLAG);
    ASSERT_EQ(tdm_metric_kind_of(TDM_METRIC_RECORDS_IN),
                  TDM_METRIC_KIND_COUNT);
    ASSERT_EQ(tdm_metric_kind_of(TDM_METRIC_TS_UNIT),
                  TDM_METRIC_KIND_CODE);
    ASSERT_EQ(tdm_metric_kind_of(TDM_METRIC_COUNT_),
                  TDM_METRIC_KIND_COUNT);
    ASSERT_EQ(tdm_metric_is_event_time((tdm_metric)-1), 0);
    ASSERT_EQ(tdm_metric_combine((tdm_metric)9999), TDM_METRIC_AGG_SUM);
}
