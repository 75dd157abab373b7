/* SPDX-License-Identifier: MIT */
/* demo.c - the README's demo: clicks per user in 10 s tumbling event-time
 * windows, bounded out-of-orderness of 2 s (periodic watermarks every
 * 200 ms), 5 s allowed lateness and a late side output, on bundled data
 * (examples/data/clicks.csv).
 *
 * The file replays arrival times, so processing time is a manual clock
 * moved line by line and the output is the same on every run.  The demo
 * uses only tidemark.h.  It shows a window firing on time, a late refire
 * with the updated count, a record too late for any window going to the
 * late side output, and a malformed line dead-lettered with file:line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tidemark.h"

static const char *timing_name(tdm_pane_timing t)
{
    switch (t) {
    case TDM_PANE_EARLY:
        return "early";
    case TDM_PANE_ON_TIME:
        return "on_time";
    default:
        return "late";
    }
}

/* Prints everything the window operator emits. */
static void on_output(void *opaque, const tdm_event *ev)
{
    (void)opaque;
    size_t klen = 0;
    const char *key;
    tdm_time_ms start = 0, end = 0;
    switch (tdm_event_get_type(ev)) {
    case TDM_EVENT_WATERMARK:
        if (tdm_event_time(ev) == TDM_TIME_MAX)
            printf("watermark  end of input\n");
        else
            printf("watermark  %" PRId64 "\n", tdm_event_time(ev));
        break;
    case TDM_EVENT_RESULT:
        key = tdm_event_key(ev, &klen);
        tdm_event_window(ev, &start, &end);
        printf("RESULT     %-6.*s [%" PRId64 ", %" PRId64 ") clicks=%g "
               "pane=%" PRId64 " %s%s\n",
               (int)klen, key, start, end, tdm_event_value(ev),
               tdm_event_pane_index(ev), timing_name(tdm_event_pane_timing(ev)),
               tdm_event_is_update(ev) ? " (updates the previous result)" : "");
        break;
    case TDM_EVENT_LATE: {
        const tdm_record *rec = tdm_event_record(ev, 0);
        key = tdm_record_key(rec, &klen);
        printf("LATE       %-6.*s ts=%" PRId64 " -> late side output\n",
               (int)klen, key, tdm_record_ts(rec));
        break;
    }
    default:
        break;
    }
}

/* Forwards the generator's watermarks and statuses into the operator. */
static void gen_to_op(void *opaque, const tdm_event *ev)
{
    tdm_winop *op = opaque;
    if (tdm_event_get_type(ev) == TDM_EVENT_WATERMARK)
        tdm_winop_watermark(op, 0, tdm_event_time(ev));
    else if (tdm_event_get_type(ev) == TDM_EVENT_STATUS)
        tdm_winop_status(op, 0, tdm_event_is_idle(ev));
}

/* Parses a decimal int64 field; returns 0 on success. */
static int parse_i64(const char *s, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end != '\0')
        return -1;
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "examples/data/clicks.csv";
    char err[256] = "";
    int rc = 1;
    long lineno = 0, bad = 0, records = 0;
    FILE *f = NULL;
    tdm_clock *clk = NULL;
    tdm_wm_strategy *strat = NULL;
    tdm_wmgen *gen = NULL;
    tdm_winop *op = NULL;
    tdm_record *rec = NULL;
    tdm_assigner *asg = NULL;
    tdm_aggregate *agg = NULL;

    if (!(f = fopen(path, "r"))) {
        fprintf(stderr, "demo: %s: %s\n", path, strerror(errno));
        goto fail;
    }
    if (tdm_clock_new_manual(0, &clk) || tdm_record_new(&rec) ||
        tdm_wm_strategy_new(TDM_WM_BOUNDED, 2000, &strat, err, sizeof err) ||
        tdm_assigner_new_tumbling(10000, 0, &asg, err, sizeof err) ||
        tdm_aggregate_new(TDM_AGG_COUNT, &agg)) {
        fprintf(stderr, "demo: setup failed: %s\n", err);
        goto fail;
    }
    tdm_err e = tdm_winop_new(asg, NULL, agg, 1, clk, on_output, NULL, &op, err,
                              sizeof err);
    asg = NULL; /* the operator took ownership, even on failure */
    agg = NULL;
    if (e || tdm_winop_set_allowed_lateness(op, 5000, err, sizeof err) ||
        tdm_winop_set_late_output(op, 1) ||
        tdm_wmgen_new(strat, clk, gen_to_op, op, &gen)) {
        fprintf(stderr, "demo: setup failed: %s\n", err);
        goto fail;
    }
    printf("tidemark %s demo: clicks per user, 10 s tumbling windows,\n"
           "2 s out-of-orderness, 5 s allowed lateness, late side output\n\n",
           tdm_version());

    char line[512];
    while (fgets(line, sizeof line, f)) {
        lineno++;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char *fields[4];
        int n = 0;
        for (char *p = strtok(line, ","); p && n < 4; p = strtok(NULL, ","))
            fields[n++] = p;
        int64_t arrival, ts, clicks;
        const char *what = NULL;
        if (n != 4)
            what = "expected 4 fields: arrival_ms,user,event_ts_ms,clicks";
        else if (parse_i64(fields[0], &arrival))
            what = "field 'arrival_ms': expected an integer";
        else if (parse_i64(fields[2], &ts))
            what = "field 'event_ts_ms': expected an integer";
        else if (parse_i64(fields[3], &clicks))
            what = "field 'clicks': expected an integer";
        if (what) {
            fflush(stdout);
            fprintf(stderr, "%s:%ld: %s -> dead letter\n", path, lineno, what);
            printf("DEAD       %s:%ld (%s)\n", path, lineno, what);
            bad++;
            continue;
        }
        /* Processing time moves to the line's arrival time. */
        if (tdm_clock_set(clk, arrival) == TDM_OK) {
            tdm_wmgen_advance(gen);
            tdm_winop_advance(op);
        }
        tdm_record_set(rec, fields[1], strlen(fields[1]), ts, (double)clicks);
        tdm_wmgen_assign(gen, rec);
        if (tdm_winop_push(op, 0, rec) != TDM_OK)
            fprintf(stderr, "%s:%ld: %s\n", path, lineno, tdm_winop_errmsg(op));
        tdm_wmgen_on_event(gen, rec);
        records++;
    }
    tdm_winop_end(op);
    printf("\n%ld records, %ld dead-lettered, %" PRId64
           " late to side output, %" PRId64 " dropped\n",
           records, bad, tdm_winop_late_emitted(op),
           tdm_winop_late_dropped(op));
    rc = 0;
fail:
    if (f)
        fclose(f);
    tdm_wmgen_destroy(gen);
    tdm_winop_destroy(op);
    tdm_wm_strategy_destroy(strat);
    tdm_assigner_destroy(asg);
    tdm_aggregate_destroy(agg);
    tdm_record_destroy(rec);
    tdm_clock_destroy(clk);
    return rc;
}
