/* SPDX-License-Identifier: MIT */
/* analyze_job.c - `tidemark analyze --job JOB.yaml [SOURCE] [INPUT...]`:
 * the settings of a source, and of the window reading it, from the job
 * file instead of repeated on the command line.
 *
 * The file is loaded by the loader `run` and `validate` use (yaml_job.c),
 * so the same keys mean the same things and a mistake is reported at the
 * same file:line:col.  From the chosen source it takes what the scan
 * needs to read the input as the job would: `path` (the inputs), `format`,
 * `csv.header`, `csv.delimiter`, `schema`, `timestamp.field`,
 * `timestamp.unit` and `partition.field`; from the job `batch.size` and
 * `timestamp_guard`; from the first window whose `from` names the source
 * its `window.*` (the what-if window), `key_by` (the what-if key),
 * `allowed_lateness` and `late_output`; and the source's watermark: with
 * `watermark.strategy: bounded` its `max_out_of_orderness` is the job's
 * current bound, which the report measures and the recommendation is
 * phrased against ("your job has 2s; at that bound 3.1% of records are
 * late").
 *
 * The command line wins.  An option given there replaces the job's
 * value for this analysis (INPUT replaces `path`: analyze a sample file
 * with the job's parsing), and every replaced value is listed in the
 * report with where the job set it, so nobody wonders which one was used.
 * Refusing would have been the other choice; it would make the common
 * "same job, another sample file" or "what if the window were 1m" runs
 * impossible without editing the job.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyze.h"
#include "cli.h"

/* ---- Notes ---- */

static int note(tdm__an_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Adds a note for the report; -1 when out of memory. */
static int note(tdm__an_opts *o, const char *fmt, ...)
{
    char buf[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **n = realloc(o->notes, (size_t)(o->n_notes + 1) * sizeof *n);
    if (!n)
        return -1;
    o->notes = n;
    n[o->n_notes] = tdm__cli_strndup(buf, strlen(buf));
    if (!n[o->n_notes])
        return -1;
    o->n_notes++;
    return 0;
}

/* "job.yaml:12:5" for (@p node, @p key) as the file set it, else the
 * file's name. */
static const char *where(const tdm__cli_job *cj, const char *node,
                         const char *key, char *buf, size_t n)
{
    snprintf(buf, n, "%s", cj->file);
    for (size_t i = 0; i < cj->n_entries; i++) {
        const tdm__cli_entry *e = &cj->entries[i];
        if (e->node && strcmp(e->node, node) == 0 && strcmp(e->key, key) == 0 &&
            e->line > 0)
            snprintf(buf, n, "%s:%d:%d", cj->file, e->line, e->col);
    }
    return buf;
}

/* Notes that option @p opt (value @p mine) replaced (@p node, @p key)
 * when both were set and differ. */
static int overrides(tdm__an_opts *o, const char *opt, const char *mine,
                     const char *node, const char *key)
{
    const tdm__cli_job *cj = o->job;
    const char *theirs = tdm__cli_job_value(cj, node, key);
    char at[512];
    if (!theirs || !mine || strcmp(theirs, mine) == 0)
        return 0;
    return note(o, "%s %s (command line) replaces %s: %s (%s)", opt, mine, key,
                theirs, where(cj, node, key, at, sizeof at));
}

/* ---- The source ---- */

static int fail(FILE *err, const char *fmt, const char *a, const char *b)
{
    fprintf(err, "tidemark analyze: ");
    fprintf(err, fmt, a, b);
    fputc('\n', err);
    return TDM_EXIT_USAGE;
}

/* The source analyzed: an input naming a source (taken out of the
 * inputs), else the job's only source.  NULL with a message. */
static const char *pick_source(tdm__an_opts *o, FILE *err)
{
    const tdm__cli_job *cj = o->job;
    const char *only = NULL;
    char names[512] = "";
    int n = 0;
    for (int i = 0; i < o->n_inputs; i++) {
        tdm_node *node = tdm_job_node(cj->job, o->inputs[i]);
        if (!node || tdm_node_kind_of(node) != TDM_NODE_SOURCE)
            continue;
        const char *name = o->inputs[i];
        memmove(&o->inputs[i], &o->inputs[i + 1],
                (size_t)(o->n_inputs - i - 1) * sizeof *o->inputs);
        o->n_inputs--;
        return name;
    }
    for (size_t i = 0; i < cj->n_decls; i++) {
        if (cj->decls[i].kind != TDM_NODE_SOURCE)
            continue;
        only = cj->decls[i].name;
        size_t l = strlen(names);
        snprintf(names + l, sizeof names - l, "%s%s", n++ ? ", " : "", only);
    }
    if (n == 1)
        return only;
    fail(err,
         n == 0 ? "--job %s: the job has no source%s"
                : "--job %s: the job has several sources (%s): name the one "
                  "to analyze after the job file",
         cj->file, names);
    return NULL;
}

/* The inputs: the command line's, else the source's path (stdin for a
 * stdin source). */
static int source_inputs(tdm__an_opts *o, const char *src, tdm_node *node,
                         FILE *err)
{
    const char *type = tdm_node_get(node, "type");
    const char *path = tdm_node_get(node, "path");
    if (o->n_inputs > 0)
        return overrides(o, "INPUT", o->inputs[0], src, "path") ? -1 : 0;
    if (strcmp(type, "stdin") == 0)
        path = "-";
    else if (strcmp(type, "file") != 0 || !path[0])
        return fail(err,
                    "--job: source %s is of type %s: analyze reads files; "
                    "give INPUT (a sample of its records as JSON lines or "
                    "CSV)",
                    src, type);
    o->inputs[o->n_inputs++] = path;
    return 0;
}

/* The tdm_ts_unit named @p name (the table's choices). */
static int unit_of(const char *name)
{
    for (int u = TDM_TS_UNIT_MS; u <= TDM_TS_UNIT_ISO8601; u++)
        if (strcmp(tdm_ts_unit_name((tdm_ts_unit)u), name) == 0)
            return u;
    return TDM_TS_UNIT_MS;
}

/* How the source's records are read: format, CSV, schema, fields, unit;
 * the job's batch size and guard. */
static int source_parsing(tdm__an_opts *o, const tdm__an_given *given,
                          const char *src, tdm_node *node)
{
    const tdm_job *job = o->job->job;
    const char *v;
    int bad = 0;
    if (!given->format)
        o->format = strcmp(tdm_node_get(node, "format"), "csv") == 0
                        ? TDM__AN_FMT_CSV
                        : TDM__AN_FMT_JSON;
    if (!given->csv_header)
        o->csv_header = tdm_node_get_int(node, "csv.header") != 0;
    if (!given->csv_delimiter && (v = tdm_node_get(node, "csv.delimiter"))[0])
        o->csv_delimiter = v[0];
    if (!o->schema && (v = tdm_node_get(node, "schema"))[0])
        o->schema = v;
    else
        bad |= overrides(o, "--schema", o->schema, src, "schema");
    if (!o->ts_field && (v = tdm_node_get(node, "timestamp.field"))[0])
        o->ts_field = v;
    else
        bad |= overrides(o, "--ts-field", o->ts_field, src, "timestamp.field");
    if (!o->partition_field && (v = tdm_node_get(node, "partition.field"))[0])
        o->partition_field = v;
    else
        bad |= overrides(o, "--partition-field", o->partition_field, src,
                         "partition.field");
    if (!given->unit)
        o->unit = unit_of(tdm_node_get(node, "timestamp.unit"));
    if (!given->batch_size)
        o->batch_size = (int)tdm_job_get_int(job, "batch.size");
    if (!given->guard)
        o->guard = tdm_job_get_int(job, "timestamp_guard");
    return bad;
}

/* The source's current watermark: a bounded one's bound. */
static int source_watermark(tdm__an_opts *o, const char *src, tdm_node *node)
{
    char at[512];
    const char *strategy = tdm_node_get(node, "watermark.strategy");
    o->job_strategy = strategy;
    if (strcmp(strategy, "bounded") == 0) {
        o->job_has_bound = true;
        o->job_bound = tdm_node_get_int(node, "watermark.max_out_of_orderness");
        return 0;
    }
    return note(o,
                "source %s uses watermark.strategy %s (%s): the report "
                "compares no current bound",
                src, strategy,
                where(o->job, src, "watermark.strategy", at, sizeof at));
}

/* ---- The window ---- */

/* True when fields list @p from ("a, b") names @p src. */
static bool names(const char *from, const char *src)
{
    size_t l = strlen(src);
    for (const char *p = from; *p;) {
        p += strspn(p, " ,[]");
        size_t n = strcspn(p, " ,[]");
        if (n == l && strncmp(p, src, l) == 0)
            return true;
        p += n;
    }
    return false;
}

/* The first window reading @p src (its name), NULL when none. */
static const char *find_window(const tdm__cli_job *cj, const char *src)
{
    for (size_t i = 0; i < cj->n_decls; i++) {
        if (cj->decls[i].kind != TDM_NODE_WINDOW)
            continue;
        tdm_node *w = tdm_job_node(cj->job, cj->decls[i].name);
        if (w && names(tdm_node_get(w, "from"), src))
            return cj->decls[i].name;
    }
    return NULL;
}

/* The what-if window from window node @p w, as --window would give it;
 * false (with a note) for what the what-if cannot model. */
static bool window_of(tdm__an_opts *o, const char *name, tdm_node *w)
{
    char a[32], b[32], c[32], text[128];
    tdm_window_kind k = tdm_node_window_kind(w);
    o->win_size = tdm_node_get_int(w, "window.size");
    o->win_slide = tdm_node_get_int(w, "window.slide");
    o->win_offset = tdm_node_get_int(w, "window.offset");
    o->win_gap = tdm_node_get_int(w, "window.gap");
    tdm_duration_format(o->win_size, a, sizeof a);
    tdm_duration_format(o->win_slide, b, sizeof b);
    tdm_duration_format(
        k == TDM_WINDOW_KIND_SESSION ? o->win_gap : o->win_offset, c, sizeof c);
    if (k == TDM_WINDOW_KIND_TUMBLING) {
        o->win_type = TDM__AN_TUMBLING;
        snprintf(text, sizeof text, "tumbling:%s%s%s", a,
                 o->win_offset ? ":" : "", o->win_offset ? c : "");
    } else if (k == TDM_WINDOW_KIND_SLIDING) {
        o->win_type = TDM__AN_SLIDING;
        snprintf(text, sizeof text, "sliding:%s:%s%s%s", a, b,
                 o->win_offset ? ":" : "", o->win_offset ? c : "");
    } else if (k == TDM_WINDOW_KIND_SESSION) {
        o->win_type = TDM__AN_SESSION;
        snprintf(text, sizeof text, "session:%s", c);
    } else {
        return false;
    }
    if (tdm_node_processing_time(w) ||
        tdm_node_trigger(w) != TDM_TRIGGER_KIND_DEFAULT)
        note(o,
             "window %s has a trigger or time the what-if does not "
             "model: it replays the event-time trigger",
             name);
    o->window_buf = tdm__cli_strndup(text, strlen(text));
    o->window_text = o->window_buf ? o->window_buf : "?";
    return true;
}

/* The window reading the source: the what-if's window (unless --window),
 * key (unless --key-field), the current lateness and late output. */
static int source_window(tdm__an_opts *o, const tdm__an_given *given,
                         const char *src)
{
    const char *name = find_window(o->job, src);
    if (!name)
        return note(o,
                    "no window of the job reads source %s: the what-if "
                    "uses %s",
                    src, o->window_text);
    tdm_node *w = tdm_job_node(o->job->job, name);
    const char *key = tdm_node_get(w, "key_by");
    o->job_window = name;
    o->job_lateness = tdm_node_get_int(w, "allowed_lateness");
    if (tdm_node_get(w, "late_output")[0])
        o->job_late_output = tdm_node_get(w, "late_output");
    if (!o->key_fields && key[0])
        o->key_fields = key;
    else if (o->key_fields &&
             overrides(o, "--key-field", o->key_fields, name, "key_by"))
        return -1;
    if (given->window) {
        char at[512];
        return note(o,
                    "--window %s (command line) replaces the window of "
                    "%s (%s)",
                    o->window_text, name,
                    where(o->job, name, "window.type", at, sizeof at));
    }
    if (!window_of(o, name, w))
        return note(o,
                    "window %s is not tumbling, sliding or session: the "
                    "what-if uses %s",
                    name, o->window_text);
    return 0;
}

/* ---- Entry ---- */

/* Fills @p o from the job file (see analyze.h and the file comment). */
int tdm__analyze_job(tdm__an_opts *o, const tdm__an_given *given, FILE *err)
{
    int rc = tdm__cli_job_load(o->job_file, &o->job, err);
    if (rc != TDM_EXIT_OK)
        return rc;
    const char *src = pick_source(o, err);
    if (!src)
        return TDM_EXIT_USAGE;
    tdm_node *node = tdm_job_node(o->job->job, src);
    if (strcmp(tdm_node_get(node, "time"), "event") != 0)
        return fail(err, "--job: source %s is not in event time (time: %s)",
                    src, tdm_node_get(node, "time"));
    o->job_source = src;
    rc = source_inputs(o, src, node, err);
    if (rc > 0)
        return rc;
    if (rc < 0 || source_parsing(o, given, src, node) ||
        source_watermark(o, src, node) || source_window(o, given, src)) {
        fprintf(err, "tidemark analyze: out of memory\n");
        return TDM_EXIT_RUNTIME;
    }
    return TDM_EXIT_OK;
}

/* Frees what tdm__analyze_job allocated (see analyze.h). */
void tdm__analyze_job_free(tdm__an_opts *o)
{
    for (int i = 0; i < o->n_notes; i++)
        free(o->notes[i]);
    free(o->notes);
    free(o->window_buf);
    tdm__cli_job_free(o->job);
    o->notes = NULL;
    o->n_notes = 0;
    o->window_buf = NULL;
    o->job = NULL;
}
