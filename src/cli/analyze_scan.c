/* SPDX-License-Identifier: MIT */
/* analyze_scan.c - the single pass of `tidemark analyze` over its input.
 *
 * The input is read through the public source scan (tdm_source_scan_*,
 * over a one-source job holding the settings), exactly as a `tidemark
 * run` file source reads it at parallelism 1: the same line reader and
 * JSON/CSV parsers, one partition per file (or per value of the partition
 * field), files interleaved one batch at a time.  So the records, their
 * order, their partitions and the dead letters are the ones the runtime
 * would see, and the sample kept for the what-if replays (the first N
 * records) is the runtime's input, not an approximation of it.
 *
 * Per record it measures, in bounded memory (fixed-size histograms, state
 * per partition, per time slice and per hour of event time only - at
 * most TDM__AN_HOURS hours):
 *   lag     how far the timestamp is behind the highest timestamp already
 *           seen in its partition (0 when not behind): the quantity a
 *           bounded-out-of-orderness watermark must cover;
 *   delay   arrival - event time, when an arrival field is given;
 *   gap     how long its partition said nothing before it: the rise of
 *           the arrival time, or without one of the highest event time
 *           over all partitions, since the partition's previous record;
 * and it collects evidence for the warnings (timestamp unit, timestamps
 * in the future).  Records caught by the timestamp guard (more than
 * `guard` ahead of now) are counted but kept out of the lag and gaps, as
 * the runtime keeps them out of its watermarks.
 *
 * Unit mix-ups are looked for in every record, not only the first ones.
 * After --unit has converted it, an epoch timestamp of this era lies in
 * [1e11, 1e14) ms (1973 .. 5138); one that lies 1000 or more times below
 * or above (seconds, micro- or nanoseconds where milliseconds were
 * expected) says that its writer used another unit.  Such a record is a
 * suspect: counted, its first occurrence located (file:line, found by
 * reading that file again after the pass) and left out of every
 * measurement, because one epoch-seconds value among milliseconds is
 * 56 years behind its partition and would make every tail quantile, and
 * so every recommendation, absurd.  Values below 1e8 ms (the first day
 * of 1970) are not epoch times of this era at all (counters, synthetic
 * data) and are never suspects.  The what-if still replays suspects, as
 * the runtime would see them.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "analyze.h"
#include "cli.h"

/* Bad lines reported on the log before they are only counted. */
#define MAX_LOGGED_BAD 10
/* Timestamps per partition the unit check looks at. */
#define UNIT_SAMPLE 100

/* The name of the source node a scan reads through. */
#define SOURCE "analyze"

/* Everything the pass needs besides the results. */
typedef struct scan_ctx {
    const tdm__an_opts *o;
    tdm__an_scan *s;
    int format;   /* TDM__AN_FMT_*, the extension decided */
    tdm_job *job; /* holds the source node the scan reads */
    tdm_node *node;
    tdm_source_scan *sc;
    int arrival_idx; /* schema index or -1 */
    int key_idx[16];
    int n_key;
    tdm_dead_letters *dead;
    tdm_err dead_err;
    char *errbuf;
    size_t errbuf_size;
    tdm_time_ms gmax;         /* highest timestamp (not guarded) */
    tdm_time_ms first_mark;   /* the first gap mark of the input */
    tdm_time_ms last_mark;    /* the latest gap mark */
    tdm_time_ms guard_limit;  /* now + guard (TDM_TIME_MAX: off) */
    tdm_time_ms future_limit; /* now + 1 h */
    int hour_at;              /* the hour the last record fell into */
} scan_ctx;

/* ---- Warnings ---- */

/* Adds a warning (see analyze.h). */
tdm_err tdm__analyze_warn(tdm__an_scan *s, const char *kind, const char *fmt,
                          ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (s->n_warnings == s->cap_warnings) {
        int cap = s->cap_warnings ? 2 * s->cap_warnings : 8;
        tdm__an_warning *w = realloc(s->warnings, (size_t)cap * sizeof *w);
        if (!w)
            return TDM_ERR_NOMEM;
        s->warnings = w;
        s->cap_warnings = cap;
    }
    tdm__an_warning *w = &s->warnings[s->n_warnings];
    w->kind = tdm__cli_strndup(kind, strlen(kind));
    w->message = tdm__cli_strndup(msg, strlen(msg));
    if (!w->kind || !w->message) {
        free(w->kind);
        free(w->message);
        return TDM_ERR_NOMEM;
    }
    s->n_warnings++;
    return TDM_OK;
}

/* ---- Inputs ---- */

/* Appends a copy of @p path to the scan's file list. */
static tdm_err add_file(tdm__an_scan *s, const char *path)
{
    char **f = realloc(s->files, (size_t)(s->n_files + 1) * sizeof *f);
    if (!f)
        return TDM_ERR_NOMEM;
    s->files = f;
    f[s->n_files] = tdm__cli_strndup(path, strlen(path));
    if (!f[s->n_files])
        return TDM_ERR_NOMEM;
    s->n_files++;
    return TDM_OK;
}

/* Expands the inputs: "-" is standard input, a name with glob characters
 * is a pattern (sorted matches, folders left out, as the file source
 * expands its path), anything else a file. */
static tdm_err expand_inputs(scan_ctx *c)
{
    const tdm__an_opts *o = c->o;
    for (int i = 0; i < o->n_inputs; i++) {
        const char *in = o->inputs[i];
        tdm_err err;
        if (strcmp(in, "-") == 0 || !strpbrk(in, "*?[")) {
            err = add_file(c->s, in);
            if (err != TDM_OK)
                return err;
            continue;
        }
        glob_t g;
        memset(&g, 0, sizeof g);
        int rc = glob(in, 0, NULL, &g);
        if (rc == GLOB_NOSPACE) {
            globfree(&g);
            return TDM_ERR_NOMEM;
        }
        size_t added = 0;
        for (size_t k = 0; rc == 0 && k < g.gl_pathc; k++) {
            int fd = open(g.gl_pathv[k], O_RDONLY | O_DIRECTORY);
            if (fd >= 0) {
                close(fd);
                continue;
            }
            err = add_file(c->s, g.gl_pathv[k]);
            if (err != TDM_OK) {
                globfree(&g);
                return err;
            }
            added++;
        }
        globfree(&g);
        if (added == 0)
            return tdm__cli_errf(c->errbuf, c->errbuf_size, TDM_ERR_IO,
                                 "no file matches '%s'", in);
    }
    return TDM_OK;
}

/* True when @p line holds only blanks (space, tab, CR) before its
 * newline, as the sources skip such lines. */
static bool is_blank(const char *line)
{
    for (const char *p = line; *p && *p != '\n'; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r')
            return false;
    return true;
}

/* The JSON type of field @p name in the first non-blank line of the
 * first regular input, as a schema type name; "string" when unknown. */
static const char *sniff_type(const scan_ctx *c, const char *name)
{
    const tdm__an_scan *s = c->s;
    if (c->format != TDM__AN_FMT_JSON || s->n_files == 0 ||
        strcmp(s->files[0], "-") == 0)
        return "string";
    /* Only a regular file can be read twice (not a pipe). */
    struct stat sb;
    if (stat(s->files[0], &sb) != 0 || !S_ISREG(sb.st_mode))
        return "string";
    FILE *f = fopen(s->files[0], "r");
    if (!f)
        return "string";
    char line[8192];
    const char *type = "string";
    while (fgets(line, sizeof line, f)) {
        if (is_blank(line))
            continue;
        json_t *root = json_loads(line, JSON_DECODE_ANY, NULL);
        json_t *v =
            root && json_is_object(root) ? json_object_get(root, name) : NULL;
        if (json_is_integer(v))
            type = "int64";
        else if (json_is_real(v))
            type = "double";
        else if (json_is_boolean(v))
            type = "bool";
        json_decref(root);
        break;
    }
    fclose(f);
    return type;
}

/* Appends "name:type" to the schema text unless the field is there. */
static void schema_add(char *buf, size_t n, const char *name, const char *type)
{
    size_t nl = strlen(name);
    const char *p = buf;
    while ((p = strstr(p, name)) != NULL) {
        bool starts = p == buf || (p - buf >= 2 && p[-2] == ',');
        if (starts && p[nl] == ':')
            return;
        p += nl;
    }
    size_t used = strlen(buf);
    snprintf(buf + used, n - used, "%s%s:%s", used ? ", " : "", name, type);
}

/* The input format: --format, else CSV when an input ends in ".csv". */
static int decide_format(const scan_ctx *c)
{
    if (c->o->format)
        return c->o->format;
    int format = TDM__AN_FMT_JSON;
    for (int i = 0; i < c->s->n_files; i++) {
        size_t l = strlen(c->s->files[i]);
        if (l >= 4 && strcmp(c->s->files[i] + l - 4, ".csv") == 0)
            format = TDM__AN_FMT_CSV;
    }
    return format;
}

/* The schema text: --schema, or the timestamp field as a timestamp, the
 * arrival field likewise and the partition and key fields with the type
 * their first value has. */
static void schema_text(const scan_ctx *c, char *text, size_t n)
{
    const tdm__an_opts *o = c->o;
    if (o->schema) {
        snprintf(text, n, "%s", o->schema);
        return;
    }
    schema_add(text, n, o->ts_field, "timestamp");
    if (o->arrival_field)
        schema_add(text, n, o->arrival_field, "timestamp");
    if (o->partition_field)
        schema_add(text, n, o->partition_field,
                   sniff_type(c, o->partition_field));
    if (o->key_fields) {
        char keys[512];
        snprintf(keys, sizeof keys, "%s", o->key_fields);
        for (char *k = strtok(keys, ","); k; k = strtok(NULL, ","))
            schema_add(text, n, k, sniff_type(c, k));
    }
}

/* Sets one key of the source node; a refusal (not expected: the options
 * were checked) is reported with the library's message. */
static tdm_err node_set(scan_ctx *c, const char *key, const char *value)
{
    return tdm_node_set(c->node, key, value, c->errbuf, c->errbuf_size);
}

/* A job with one file source node holding the settings of the pass: the
 * runtime reads the input through it (tdm_source_scan). */
static tdm_err make_source(scan_ctx *c, const char *schema)
{
    const tdm__an_opts *o = c->o;
    char batch[32],
        delim[2] = {o->csv_delimiter ? o->csv_delimiter : ',', '\0'};
    snprintf(batch, sizeof batch, "%d", o->batch_size);
    tdm_err err = tdm_job_new(&c->job);
    if (err == TDM_OK)
        err =
            tdm_job_set(c->job, "batch.size", batch, c->errbuf, c->errbuf_size);
    if (err == TDM_OK)
        err = tdm_job_add_node(c->job, TDM_NODE_SOURCE, SOURCE, &c->node,
                               c->errbuf, c->errbuf_size);
    if (err != TDM_OK)
        return err;
    const char *format = c->format == TDM__AN_FMT_CSV ? "csv" : "json";
    if ((err = node_set(c, "type", "file")) != TDM_OK ||
        (err = node_set(c, "format", format)) != TDM_OK ||
        (err = node_set(c, "csv.header", o->csv_header ? "true" : "false")) !=
            TDM_OK ||
        (err = node_set(c, "csv.delimiter", delim)) != TDM_OK ||
        (err = node_set(c, "schema", schema)) != TDM_OK ||
        (err = node_set(c, "timestamp.field", o->ts_field)) != TDM_OK ||
        (err = node_set(c, "timestamp.unit",
                        tdm_ts_unit_name((tdm_ts_unit)o->unit))) != TDM_OK)
        return err;
    if (o->partition_field)
        err = node_set(c, "partition.field", o->partition_field);
    return err;
}

/* The field of option @p opt named @p name, or -1 with the message. */
static int find_field(scan_ctx *c, const char *opt, const char *name)
{
    int i = tdm_node_field_index(c->node, name);
    if (i < 0)
        tdm__cli_errf(c->errbuf, c->errbuf_size, TDM_ERR_INVAL,
                      "%s: \"%s\" is not in the schema", opt, name);
    return i;
}

/* Checks that every field an option names is in the schema, as a time
 * where it must be one, and notes the arrival and key fields. */
static tdm_err check_fields(scan_ctx *c)
{
    const tdm__an_opts *o = c->o;
    int ts = find_field(c, "--ts-field", o->ts_field);
    if (ts < 0)
        return TDM_ERR_INVAL;
    if (tdm_node_field_type(c->node, ts) == TDM_TYPE_BOOL)
        return tdm__cli_errf(c->errbuf, c->errbuf_size, TDM_ERR_INVAL,
                             "--ts-field: \"%s\" is a bool", o->ts_field);
    if (o->partition_field &&
        find_field(c, "--partition-field", o->partition_field) < 0)
        return TDM_ERR_INVAL;
    c->arrival_idx = -1;
    if (o->arrival_field) {
        c->arrival_idx = tdm_node_field_index(c->node, o->arrival_field);
        if (c->arrival_idx < 0 ||
            tdm_node_field_type(c->node, c->arrival_idx) == TDM_TYPE_BOOL)
            return tdm__cli_errf(c->errbuf, c->errbuf_size, TDM_ERR_INVAL,
                                 "--arrival-field: \"%s\" is not a time "
                                 "field of the schema",
                                 o->arrival_field);
    }
    if (!o->key_fields)
        return TDM_OK;
    char keys[512];
    snprintf(keys, sizeof keys, "%s", o->key_fields);
    for (char *k = strtok(keys, ","); k; k = strtok(NULL, ",")) {
        int i = find_field(c, "--key-field", k);
        if (i < 0)
            return TDM_ERR_INVAL;
        if (c->n_key == (int)(sizeof c->key_idx / sizeof c->key_idx[0]))
            return tdm__cli_errf(c->errbuf, c->errbuf_size, TDM_ERR_INVAL,
                                 "--key-field: at most 16 fields");
        c->key_idx[c->n_key++] = i;
    }
    return TDM_OK;
}

/* Builds the source the pass reads (see the functions above). */
static tdm_err build_conf(scan_ctx *c)
{
    char text[2048] = "", msg[256] = "";
    c->format = decide_format(c);
    schema_text(c, text, sizeof text);
    tdm_err err = tdm_schema_check(text, msg, sizeof msg);
    if (err != TDM_OK)
        return tdm__cli_errf(c->errbuf, c->errbuf_size, err, "--schema: %s",
                             msg[0] ? msg : tdm_strerror(err));
    err = make_source(c, text);
    return err == TDM_OK ? check_fields(c) : err;
}

/* ---- Dead letters ---- */

/* The parsers' dead-letter callback: count, log the first few with
 * their location and reason, and write them to --dead-letter. */
static void on_dead(void *ud, const char *location, const char *reason,
                    const char *raw, size_t raw_len)
{
    scan_ctx *c = ud;
    int64_t n = c->s->bad++;
    if (n < MAX_LOGGED_BAD && c->o->log)
        fprintf(c->o->log, "tidemark analyze: bad record at %s: %s\n", location,
                reason);
    else if (n == MAX_LOGGED_BAD && c->o->log)
        fprintf(c->o->log,
                "tidemark analyze: further bad records are "
                "counted, not shown%s\n",
                c->dead ? " (all are in the dead-letter file)" : "");
    if (c->dead && c->dead_err == TDM_OK)
        c->dead_err =
            tdm_dead_letters_write(c->dead, location, reason, raw, raw_len);
}

/* ---- Per-partition state ---- */

/* Makes partition @p p exist, named as the scan names it (the file, or
 * the partition field's value); "?" for one the scan does not know. */
static tdm_err ensure_part(scan_ctx *c, uint32_t p)
{
    tdm__an_scan *s = c->s;
    if ((int)p < s->n_parts)
        return TDM_OK;
    if ((int)p >= s->cap_parts) {
        int cap = s->cap_parts ? s->cap_parts : 16;
        while (cap <= (int)p)
            cap *= 2;
        tdm__an_part *np = realloc(s->parts, (size_t)cap * sizeof *np);
        if (!np)
            return TDM_ERR_NOMEM;
        memset(np + s->cap_parts, 0, (size_t)(cap - s->cap_parts) * sizeof *np);
        s->parts = np;
        s->cap_parts = cap;
    }
    while (s->n_parts <= (int)p) {
        tdm__an_part *pt = &s->parts[s->n_parts];
        const char *name = "?";
        size_t len = 1;
        if (tdm_source_scan_partition_name(c->sc, s->n_parts, &name, &len) !=
            TDM_OK) {
            name = "?";
            len = 1;
        }
        pt->name = tdm__cli_strndup(name, len);
        if (!pt->name)
            return TDM_ERR_NOMEM;
        pt->min_ts = TDM_TIME_MAX;
        pt->max_ts = TDM_TIME_MIN;
        if (s->n_parts < TDM__AN_PART_HISTS) {
            pt->lag = calloc(1, sizeof *pt->lag);
            if (!pt->lag || tdm__cli_hist_init(pt->lag) != TDM_OK)
                return TDM_ERR_NOMEM;
        }
        s->n_parts++;
    }
    return TDM_OK;
}

/* ---- Slices over time ---- */

/* Halves the number of slices by merging neighbours (slice k becomes
 * slices 2k and 2k+1), doubling the slice length.  Histograms are moved,
 * not copied: slice k's old histogram was already merged when k < 2k. */
static void merge_slices(tdm__an_scan *s)
{
    int half = s->n_slices / 2;
    for (int k = 0; k < half; k++) {
        tdm__an_slice *d = &s->slices[k];
        tdm__an_slice *a = &s->slices[2 * k], *b = &s->slices[2 * k + 1];
        if (k > 0) {
            tdm__cli_hist tmp = d->lag;
            d->lag = a->lag;
            a->lag = tmp;
            d->first = a->first;
            d->records = a->records;
            d->max_ts = a->max_ts;
        }
        tdm__cli_hist_merge(&d->lag, &b->lag);
        d->records += b->records;
        if (b->max_ts > d->max_ts)
            d->max_ts = b->max_ts;
    }
    for (int k = half; k < s->n_slices; k++) {
        tdm__cli_hist_reset(&s->slices[k].lag);
        s->slices[k].records = 0;
    }
    s->n_slices = half;
    s->slice_len *= 2;
}

/* The slice record @p idx falls into (started when needed). */
static tdm__an_slice *slice_for(tdm__an_scan *s, int64_t idx)
{
    if (s->n_slices > 0 && s->slices[s->n_slices - 1].records < s->slice_len)
        return &s->slices[s->n_slices - 1];
    if (s->n_slices == TDM__AN_SLICES)
        merge_slices(s);
    if (s->n_slices > 0 && s->slices[s->n_slices - 1].records < s->slice_len)
        return &s->slices[s->n_slices - 1];
    tdm__an_slice *sl = &s->slices[s->n_slices];
    if (!sl->lag.b && tdm__cli_hist_init(&sl->lag) != TDM_OK)
        return NULL;
    sl->first = idx;
    sl->records = 0;
    sl->max_ts = TDM_TIME_MIN;
    sl->spike = false;
    s->n_slices++;
    return sl;
}

/* ---- The sample ---- */

/* The id of key (@p k, @p len), interned on first sight. */
static tdm_err intern_key(tdm__an_sample *sm, const char *k, size_t len,
                          uint32_t *id)
{
    uint64_t h = tdm__cli_hash_bytes(k, len);
    if (sm->n_kslots) {
        size_t mask = sm->n_kslots - 1;
        for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
            uint32_t e = sm->kslots[i];
            if (!e)
                break;
            size_t off = sm->koff[e - 1], el = sm->koff[e] - off;
            if (el == len &&
                (len == 0 || memcmp(sm->kbytes + off, k, len) == 0)) {
                *id = e - 1;
                return TDM_OK;
            }
        }
    }
    /* A new key: room for its bytes, its offset and a slot. */
    if (sm->kused + len > sm->kcap) {
        size_t cap = sm->kcap ? sm->kcap : 4096;
        while (cap < sm->kused + len)
            cap *= 2;
        char *nb = realloc(sm->kbytes, cap);
        if (!nb)
            return TDM_ERR_NOMEM;
        sm->kbytes = nb;
        sm->kcap = cap;
    }
    if (sm->n_keys + 2 > sm->cap_keys) {
        uint32_t cap = sm->cap_keys ? 2 * sm->cap_keys : 256;
        size_t *no = realloc(sm->koff, (size_t)cap * sizeof *no);
        if (!no)
            return TDM_ERR_NOMEM;
        if (sm->cap_keys == 0)
            no[0] = 0;
        sm->koff = no;
        sm->cap_keys = cap;
    }
    if (2 * ((size_t)sm->n_keys + 1) > sm->n_kslots) {
        size_t ns = sm->n_kslots ? 2 * sm->n_kslots : 512;
        uint32_t *slots = calloc(ns, sizeof *slots);
        if (!slots)
            return TDM_ERR_NOMEM;
        for (uint32_t e = 0; e < sm->n_keys; e++) {
            size_t off = sm->koff[e];
            size_t i = (size_t)tdm__cli_hash_bytes(sm->kbytes + off,
                                                   sm->koff[e + 1] - off) &
                       (ns - 1);
            while (slots[i])
                i = (i + 1) & (ns - 1);
            slots[i] = e + 1;
        }
        free(sm->kslots);
        sm->kslots = slots;
        sm->n_kslots = ns;
    }
    if (len)
        memcpy(sm->kbytes + sm->kused, k, len);
    sm->kused += len;
    sm->koff[sm->n_keys + 1] = sm->kused;
    size_t i = (size_t)h & (sm->n_kslots - 1);
    while (sm->kslots[i])
        i = (i + 1) & (sm->n_kslots - 1);
    sm->kslots[i] = sm->n_keys + 1;
    *id = sm->n_keys++;
    return TDM_OK;
}

/* Appends a record to the sample. */
static tdm_err sample_add(tdm__an_sample *sm, tdm_time_ms ts, uint32_t part,
                          uint32_t key, uint8_t flags)
{
    if (sm->n == sm->cap) {
        int64_t cap = sm->cap ? 2 * sm->cap : 4096;
        tdm_time_ms *t = realloc(sm->ts, (size_t)cap * sizeof *t);
        if (!t)
            return TDM_ERR_NOMEM;
        sm->ts = t;
        uint32_t *p = realloc(sm->part, (size_t)cap * sizeof *p);
        if (!p)
            return TDM_ERR_NOMEM;
        sm->part = p;
        uint32_t *k = realloc(sm->key, (size_t)cap * sizeof *k);
        if (!k)
            return TDM_ERR_NOMEM;
        sm->key = k;
        uint8_t *g = realloc(sm->guarded, (size_t)cap);
        if (!g)
            return TDM_ERR_NOMEM;
        sm->guarded = g;
        sm->cap = cap;
    }
    sm->ts[sm->n] = ts;
    sm->part[sm->n] = part;
    sm->key[sm->n] = key;
    sm->guarded[sm->n] = flags;
    sm->n++;
    return TDM_OK;
}

/* Records that split @p split finished before sample record sm->n. */
static tdm_err sample_event(tdm__an_sample *sm, uint32_t split, int kind)
{
    if (sm->n_ev == sm->cap_ev) {
        int64_t cap = sm->cap_ev ? 2 * sm->cap_ev : 64;
        tdm__an_split_ev *e = realloc(sm->ev, (size_t)cap * sizeof *e);
        if (!e)
            return TDM_ERR_NOMEM;
        sm->ev = e;
        sm->cap_ev = cap;
    }
    sm->ev[sm->n_ev].at = sm->n;
    sm->ev[sm->n_ev].split = split;
    sm->ev[sm->n_ev].kind = (uint8_t)kind;
    sm->n_ev++;
    return TDM_OK;
}

/* ---- Per record ---- */

/* The arrival time of @p row in ms, false when it has none (null, or
 * not a time in the unit). */
static bool arrival_of(const scan_ctx *c, const tdm_row *row, tdm_time_ms *out)
{
    return tdm_source_scan_field_time(c->sc, row, c->arrival_idx, out) ==
           TDM_OK;
}

/* Collects unit evidence as the runtime's unit check does: epoch seconds
 * lie in [1e8, 1e11), micro- and nanoseconds at or above 1e14. */
static void unit_observe(tdm__an_part *pt, tdm_time_ms ts)
{
    if (pt->unit_n >= UNIT_SAMPLE)
        return;
    if (pt->unit_n++ == 0)
        pt->unit_first = ts;
    if (ts >= INT64_C(100000000) && ts < INT64_C(100000000000))
        pt->unit_small++;
    else if (ts >= INT64_C(100000000000000))
        pt->unit_big++;
}

/* True when @p ts is an epoch time of another unit than the input's
 * (see the file comment; ISO-8601 text carries its own unit). */
static bool is_suspect(const scan_ctx *c, tdm_time_ms ts)
{
    int k = tdm__analyze_unit_class(ts);
    return c->o->unit != TDM_TS_UNIT_ISO8601 && k != TDM__AN_CLASS_NONE &&
           k != TDM__AN_CLASS_MS;
}

/* Counts a suspect; the first one is remembered for the warning. */
static void note_suspect(tdm__an_scan *s, tdm__an_part *pt, uint32_t p,
                         int64_t idx, tdm_time_ms ts)
{
    if (s->suspects++ == 0) {
        s->suspect_first = idx;
        s->suspect_part = (int)p;
        s->suspect_part_idx = pt->records;
        s->suspect_value = ts;
        s->suspect_class = tdm__analyze_unit_class(ts);
    }
    pt->unit_suspects++;
}

/* Out-of-orderness of a record not guarded: how far @p ts is behind
 * its partition's maximum so far, into the histograms and maxima;
 * returns it. */
static int64_t measure_lag(scan_ctx *c, tdm__an_part *pt, tdm__an_slice *sl,
                           tdm_time_ms ts)
{
    tdm__an_scan *s = c->s;
    int64_t lag = 0;
    if (pt->max_ts != TDM_TIME_MIN && ts < pt->max_ts)
        lag = tdm_time_sub(pt->max_ts, ts);
    if (ts > pt->max_ts)
        pt->max_ts = ts;
    if (ts < pt->min_ts)
        pt->min_ts = ts;
    if (lag > 0) {
        pt->out_of_order++;
        if (lag > pt->max_lag)
            pt->max_lag = lag;
    }
    tdm__cli_hist_add(&s->lag, lag);
    if (pt->lag)
        tdm__cli_hist_add(pt->lag, lag);
    tdm__cli_hist_add(&sl->lag, lag);
    if (ts > c->gmax)
        c->gmax = ts;
    if (ts < s->min_ts)
        s->min_ts = ts;
    sl->max_ts = c->gmax;
    return lag;
}

/* The start of the UTC hour holding @p ts. */
static tdm_time_ms hour_of(tdm_time_ms ts)
{
    tdm_time_ms rem = ts % TDM__AN_HOUR_MS;
    return ts - (rem < 0 ? rem + TDM__AN_HOUR_MS : rem);
}

/* The first hour in s->hours starting at or after @p start. */
static int hour_search(const tdm__an_scan *s, tdm_time_ms start)
{
    int lo = 0, hi = s->n_hours;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (s->hours[mid].start < start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The hour holding @p ts (see analyze.h). */
int tdm__analyze_hour_index(const tdm__an_scan *s, tdm_time_ms ts)
{
    tdm_time_ms start = hour_of(ts);
    int k = hour_search(s, start);
    return k < s->n_hours && s->hours[k].start == start ? k : -1;
}

/* Adds @p lag to the histogram of the hour holding @p ts: found by
 * bisection (records mostly come in order, so the last hour used is
 * tried first), or inserted in order while the table has room; the
 * records of an hour that finds none are only counted.  TDM_OK or
 * TDM_ERR_NOMEM. */
static tdm_err measure_hour(scan_ctx *c, tdm_time_ms ts, int64_t lag)
{
    tdm__an_scan *s = c->s;
    tdm_time_ms start = hour_of(ts);
    if (c->hour_at < s->n_hours && s->hours[c->hour_at].start == start) {
        tdm__cli_hist_add(&s->hours[c->hour_at].lag, lag);
        return TDM_OK;
    }
    int k = hour_search(s, start);
    if (k == s->n_hours || s->hours[k].start != start) {
        if (s->n_hours == TDM__AN_HOURS) {
            s->hours_untabled++;
            return TDM_OK;
        }
        if (!s->hours) {
            s->hours = calloc(TDM__AN_HOURS, sizeof *s->hours);
            if (!s->hours)
                return TDM_ERR_NOMEM;
        }
        tdm__an_hour h = {.start = start};
        if (tdm__cli_hist_init(&h.lag) != TDM_OK)
            return TDM_ERR_NOMEM;
        memmove(&s->hours[k + 1], &s->hours[k],
                (size_t)(s->n_hours - k) * sizeof *s->hours);
        s->hours[k] = h;
        s->n_hours++;
    }
    c->hour_at = k;
    tdm__cli_hist_add(&s->hours[k].lag, lag);
    return TDM_OK;
}

/* The gap mark of a record: its arrival time when the arrival field is
 * given (false when the record has none usable: no gap then), else the
 * highest event time.  The arrival delay goes into its histogram. */
static bool gap_mark(scan_ctx *c, const tdm_row *row, tdm_time_ms ts,
                     tdm_time_ms *mark)
{
    tdm__an_scan *s = c->s;
    tdm_time_ms arr = TDM_TIME_MIN;
    *mark = c->gmax;
    if (c->arrival_idx < 0)
        return true;
    if (!arrival_of(c, row, &arr)) {
        s->arrival_missing++;
        return false;
    }
    int64_t d = tdm_time_sub(arr, ts);
    if (d < 0) {
        s->arrival_negative++;
        d = 0;
    }
    tdm__cli_hist_add(&s->arrival, d);
    *mark = arr;
    return true;
}

/* The gap is the mark's rise since the partition's previous record (or
 * since the input's first record for its first one).  The highest event
 * time never falls; arrival times may, and a fall counts as no gap.
 * Marks are kept per partition as a maximum, so a late arrival cannot
 * fake a silence. */
static void measure_gap(scan_ctx *c, tdm__an_part *pt, tdm_time_ms mark)
{
    if (c->first_mark == TDM_TIME_MIN)
        c->first_mark = mark;
    if (mark > c->last_mark)
        c->last_mark = mark;
    tdm_time_ms from = pt->has_prev ? pt->prev_mark : c->first_mark;
    int64_t gap = mark > from ? tdm_time_sub(mark, from) : 0;
    tdm__cli_hist_add(&c->s->gaps, gap);
    if (!pt->has_prev || gap > pt->max_gap) {
        pt->max_gap = gap;
        pt->gap_from = from;
        pt->gap_to = mark;
    }
    if (!pt->has_prev || mark > pt->prev_mark)
        pt->prev_mark = mark;
    pt->has_prev = true;
}

/* The sample: what the replay's window needs of the record (its key
 * interned to an id, timestamp, partition, guard flag). */
static tdm_err sample_record(scan_ctx *c, const tdm_row *row, tdm_time_ms ts,
                             uint32_t p, uint8_t flags)
{
    tdm__an_sample *sm = &c->s->sample;
    uint32_t key = 0;
    tdm_err err = TDM_OK;
    if (c->n_key > 0) {
        const char *k;
        size_t kl;
        err = tdm_source_scan_key(c->sc, row, c->key_idx, c->n_key, &k, &kl);
        if (err != TDM_OK)
            return err;
        err = intern_key(sm, k, kl, &key);
    } else if (sm->n_keys == 0) {
        err = intern_key(sm, "", 0, &key);
    }
    if (err == TDM_OK)
        err = sample_add(sm, ts, p, key, flags);
    return err;
}

/* Measures one parsed record and keeps it in the sample.  @p idx is its
 * position in the input (0-based). */
static tdm_err on_record(scan_ctx *c, const tdm_row *row, int partition,
                         int64_t idx)
{
    tdm__an_scan *s = c->s;
    uint32_t p = (uint32_t)partition;
    tdm_err err = ensure_part(c, p);
    if (err != TDM_OK)
        return err;
    tdm__an_part *pt = &s->parts[p];
    tdm_time_ms ts = tdm_row_ts(row);
    bool guarded = ts > c->guard_limit;
    bool suspect = is_suspect(c, ts);
    if (suspect)
        note_suspect(s, pt, p, idx, ts);
    pt->records++;
    if (c->o->unit == TDM_TS_UNIT_MS)
        unit_observe(pt, ts);
    if (ts > c->future_limit) {
        if (s->future++ == 0)
            s->future_first = idx;
        if (ts > s->future_max)
            s->future_max = ts;
    }
    tdm__an_slice *sl = slice_for(s, idx);
    if (!sl)
        return TDM_ERR_NOMEM;
    sl->records++;

    /* A record the runtime's timestamp guard would catch does not move
     * its partition's watermark there, so here it moves no maximum and
     * has no lag or gap; it is still pushed into the what-if window.  A
     * suspect (another unit) is left out of the measurements likewise. */
    if (guarded) {
        pt->guarded++;
        s->guarded++;
    } else if (!suspect) {
        tdm_time_ms mark;
        err = measure_hour(c, ts, measure_lag(c, pt, sl, ts));
        if (err != TDM_OK)
            return err;
        if (gap_mark(c, row, ts, &mark))
            measure_gap(c, pt, mark);
    }
    if (s->sample.n < c->o->sample)
        return sample_record(c, row, ts, p,
                             (guarded ? TDM__AN_GUARDED : 0) |
                                 (suspect ? TDM__AN_SUSPECT : 0));
    return TDM_OK;
}

/* Gaps that run to the end of the input: a partition silent since its
 * last record while the others went on. */
static void close_gaps(scan_ctx *c)
{
    tdm__an_scan *s = c->s;
    if (c->last_mark == TDM_TIME_MIN)
        return;
    for (int p = 0; p < s->n_parts; p++) {
        tdm__an_part *pt = &s->parts[p];
        if (!pt->has_prev)
            continue;
        int64_t gap = tdm_time_sub(c->last_mark, pt->prev_mark);
        if (gap <= 0)
            continue;
        tdm__cli_hist_add(&s->gaps, gap);
        if (gap > pt->max_gap) {
            pt->max_gap = gap;
            pt->gap_from = pt->prev_mark;
            pt->gap_to = c->last_mark;
            pt->gap_at_end = true;
        }
    }
}

/* ---- Warnings after the pass ---- */

static void iso(tdm_time_ms t, char *buf, size_t n)
{
    tdm__cli_time(t, 0, "-inf", "+inf", buf, n);
}

/* Timestamp unit: the runtime's verdict, on the first partition with
 * evidence (more than half of its first 100 values). */
static tdm_err warn_unit(tdm__an_scan *s)
{
    for (int p = 0; p < s->n_parts; p++) {
        const tdm__an_part *pt = &s->parts[p];
        const char *what = NULL, *unit = NULL;
        tdm_time_ms as_ms = 0;
        if (pt->unit_n == 0)
            continue;
        if (pt->unit_small * 2 > pt->unit_n) {
            what = "seconds";
            unit = "s";
            as_ms = pt->unit_first * 1000;
        } else if (pt->unit_big * 2 > pt->unit_n) {
            bool ns = pt->unit_first >= INT64_C(100000000000000000);
            what = ns ? "nanoseconds" : "microseconds";
            unit = ns ? "ns" : "us";
            as_ms = pt->unit_first / (ns ? 1000000 : 1000);
        }
        if (!what)
            continue;
        char a[48], b[48];
        iso(pt->unit_first, a, sizeof a);
        iso(as_ms, b, sizeof b);
        return tdm__analyze_warn(
            s, "unit",
            "timestamps look like %s, not milliseconds: %lld of the first "
            "%d values of partition %s are in the range of epoch %s "
            "(first: %lld = %s; read as %s it is %s); use --unit %s here "
            "and timestamp.unit: %s in the job%s",
            what, (long long)(what[0] == 's' ? pt->unit_small : pt->unit_big),
            pt->unit_n, pt->name, what, (long long)pt->unit_first, a, what, b,
            unit, unit,
            pt->unit_suspects > 0 ? " (until then, its records are left out "
                                    "of the measurements: see unit_mixed)"
                                  : "");
    }
    return TDM_OK;
}

/* The remaining warnings: future timestamps, partitions without data,
 * broken monotonicity claims, arrivals before events. */
static tdm_err warn_rest(const scan_ctx *c)
{
    tdm__an_scan *s = c->s;
    const tdm__an_opts *o = c->o;
    tdm_err err = TDM_OK;
    char a[48], b[48], d[32];
    if (s->future > 0) {
        iso(o->now, a, sizeof a);
        iso(s->future_max, b, sizeof b);
        err = tdm__analyze_warn(
            s, "future",
            "%lld records have timestamps more than 1h after now (%s); the "
            "first is record %lld, the latest %s.  The runtime's "
            "timestamp_guard (default 1h) keeps such records from "
            "advancing the watermark%s",
            (long long)s->future, a, (long long)s->future_first + 1, b,
            o->guard > 0 ? "; here they are left out of the lag as well" : "");
        if (err != TDM_OK)
            return err;
    }
    for (int p = 0; p < s->n_parts; p++) {
        const tdm__an_part *pt = &s->parts[p];
        if (pt->records == 0)
            err = tdm__analyze_warn(s, "no_data",
                                    "partition %s has no records: its "
                                    "watermark never moves and holds back "
                                    "every window until the input ends "
                                    "(or until it is marked idle)",
                                    pt->name);
        if (err != TDM_OK)
            return err;
    }
    for (int e = 0; e < o->n_expect; e++) {
        bool found = false;
        for (int p = 0; p < s->n_parts && !found; p++)
            found = strcmp(s->parts[p].name, o->expect[e]) == 0 &&
                    s->parts[p].records > 0;
        if (!found)
            err = tdm__analyze_warn(s, "no_data",
                                    "expected partition %s has no records: "
                                    "with it in the job its watermark "
                                    "holds back every window unless an "
                                    "idle timeout is set",
                                    o->expect[e]);
        if (err != TDM_OK)
            return err;
    }
    for (int p = 0; o->claim_monotonic && p < s->n_parts; p++) {
        const tdm__an_part *pt = &s->parts[p];
        if (pt->out_of_order == 0)
            continue;
        tdm__analyze_fmt_dur(pt->max_lag, d, sizeof d);
        err = tdm__analyze_warn(
            s, "not_monotonic",
            "partition %s was claimed monotonic but %lld of its %lld "
            "records arrive behind its highest timestamp, by up to %s: "
            "with watermark.strategy monotonous they are behind the "
            "watermark",
            pt->name, (long long)pt->out_of_order, (long long)pt->records, d);
        if (err != TDM_OK)
            return err;
    }
    if (s->arrival_missing > 0) {
        err =
            tdm__analyze_warn(s, "arrival_missing",
                              "%lld records have no usable arrival time "
                              "in field %s: they are left out of the "
                              "delay and the gaps",
                              (long long)s->arrival_missing, o->arrival_field);
        if (err != TDM_OK)
            return err;
    }
    if (s->arrival_negative > 0)
        err = tdm__analyze_warn(s, "arrival_before_event",
                                "%lld records arrived before their event "
                                "time (arrival < timestamp): the clocks "
                                "disagree; their delay counts as 0",
                                (long long)s->arrival_negative);
    return err;
}

/* ---- The pass ---- */

/* Sets up the context and the scan's histograms. */
static tdm_err start(scan_ctx *c, const tdm__an_opts *o, tdm__an_scan *s,
                     char *errbuf, size_t errbuf_size)
{
    memset(s, 0, sizeof *s);
    memset(c, 0, sizeof *c);
    c->o = o;
    c->s = s;
    c->errbuf = errbuf;
    c->errbuf_size = errbuf_size;
    c->gmax = TDM_TIME_MIN;
    c->first_mark = TDM_TIME_MIN;
    c->last_mark = TDM_TIME_MIN;
    c->guard_limit =
        o->guard > 0 ? tdm_time_add(o->now, o->guard) : TDM_TIME_MAX;
    c->future_limit = tdm_time_add(o->now, TDM__AN_FUTURE_MS);
    s->min_ts = TDM_TIME_MAX;
    s->max_ts = TDM_TIME_MIN;
    s->future_max = TDM_TIME_MIN;
    s->slice_len = 1;
    s->by_field = o->partition_field != NULL;
    s->has_arrival = o->arrival_field != NULL;
    if (tdm__cli_hist_init(&s->lag) != TDM_OK ||
        tdm__cli_hist_init(&s->gaps) != TDM_OK ||
        tdm__cli_hist_init(&s->arrival) != TDM_OK)
        return TDM_ERR_NOMEM;
    return TDM_OK;
}

/* Opens the inputs: the globs expanded, the source built, the
 * dead-letter file created, the scan opened over the files. */
static tdm_err open_inputs(scan_ctx *c)
{
    tdm_err err = expand_inputs(c);
    if (err == TDM_OK)
        err = build_conf(c);
    if (err == TDM_OK && c->o->dead_letter) {
        char msg[256] = "";
        err =
            tdm_dead_letters_open(c->o->dead_letter, &c->dead, msg, sizeof msg);
        if (err != TDM_OK)
            err = tdm__cli_errf(c->errbuf, c->errbuf_size, TDM_ERR_IO,
                                "--dead-letter: %s",
                                msg[0] ? msg : tdm_strerror(err));
    }
    if (err != TDM_OK)
        return err;
    return tdm_source_scan_new(c->job, SOURCE, (const char *const *)c->s->files,
                               c->s->n_files, on_dead, c, &c->sc, c->errbuf,
                               c->errbuf_size);
}

/* Takes every item of the scan: records are measured; a file that ended
 * is noted in the sample after the rows of its batch, as the runtime
 * tells its reader. */
static tdm_err read_all(scan_ctx *c)
{
    tdm__an_scan *s = c->s;
    const tdm__an_opts *o = c->o;
    for (;;) {
        tdm_scan_item item;
        const tdm_row *row;
        int p;
        tdm_err err = tdm_source_scan_next(c->sc, &item, &row, &p);
        if (err != TDM_OK) {
            const char *m = tdm_source_scan_errmsg(c->sc);
            return tdm__cli_errf(c->errbuf, c->errbuf_size, err, "%s",
                                 m[0] ? m : tdm_strerror(err));
        }
        if (item == TDM_SCAN_END)
            return TDM_OK;
        if (item == TDM_SCAN_RECORD)
            err = on_record(c, row, p, s->records++);
        else if (s->sample.n < o->sample || s->records <= o->sample)
            err = sample_event(&s->sample, (uint32_t)p, TDM__AN_EV_FINISHED);
        if (err != TDM_OK)
            return err;
        if (c->dead_err != TDM_OK)
            return tdm__cli_errf(c->errbuf, c->errbuf_size, TDM_ERR_IO,
                                 "--dead-letter: writing '%s' failed",
                                 o->dead_letter);
    }
}

/* Closes the dead-letter file and the scan; an error closing the file
 * becomes the pass's when it had none. */
static tdm_err finish(scan_ctx *c, tdm_err err)
{
    if (c->dead) {
        char msg[256] = "";
        tdm_err e2 = tdm_dead_letters_close(c->dead, msg, sizeof msg);
        if (e2 != TDM_OK && err == TDM_OK)
            err = tdm__cli_errf(c->errbuf, c->errbuf_size, TDM_ERR_IO,
                                "--dead-letter: %s",
                                msg[0] ? msg : tdm_strerror(e2));
    }
    tdm_source_scan_destroy(c->sc);
    tdm_job_destroy(c->job);
    return err;
}

/* Reads every input once (see analyze.h and the file comment). */
tdm_err tdm__analyze_scan(const tdm__an_opts *o, tdm__an_scan *s, char *errbuf,
                          size_t errbuf_size)
{
    scan_ctx c;
    tdm_err err = start(&c, o, s, errbuf, errbuf_size);
    if (err == TDM_OK)
        err = open_inputs(&c);
    if (err != TDM_OK)
        return finish(&c, err);
    s->sample.initial_splits = s->by_field ? 0 : s->n_files;
    if (!s->by_field)
        err = ensure_part(&c, (uint32_t)s->n_files - 1);
    if (err == TDM_OK)
        err = read_all(&c);
    if (err != TDM_OK)
        return finish(&c, err);
    s->sample.complete = s->records <= o->sample;
    s->max_ts = c.gmax;
    close_gaps(&c);
    err = warn_unit(s);
    if (err == TDM_OK)
        err = tdm__analyze_unit_report(o, s, c.format);
    if (err == TDM_OK)
        err = warn_rest(&c);
    return finish(&c, err);
}

/* Frees what a scan holds (see analyze.h). */
void tdm__analyze_scan_free(tdm__an_scan *s)
{
    if (!s)
        return;
    tdm__cli_hist_fini(&s->lag);
    tdm__cli_hist_fini(&s->gaps);
    tdm__cli_hist_fini(&s->arrival);
    for (int i = 0; i < s->n_files; i++)
        free(s->files[i]);
    free(s->files);
    for (int p = 0; p < s->n_parts; p++) {
        free(s->parts[p].name);
        if (s->parts[p].lag) {
            tdm__cli_hist_fini(s->parts[p].lag);
            free(s->parts[p].lag);
        }
    }
    free(s->parts);
    for (int k = 0; k < TDM__AN_SLICES; k++)
        tdm__cli_hist_fini(&s->slices[k].lag);
    for (int k = 0; k < s->n_hours; k++)
        tdm__cli_hist_fini(&s->hours[k].lag);
    free(s->hours);
    tdm__an_sample *sm = &s->sample;
    free(sm->ts);
    free(sm->part);
    free(sm->key);
    free(sm->guarded);
    free(sm->ev);
    free(sm->kbytes);
    free(sm->koff);
    free(sm->kslots);
    for (int w = 0; w < s->n_warnings; w++) {
        free(s->warnings[w].kind);
        free(s->warnings[w].message);
    }
    free(s->warnings);
    free(s->suspect_where);
    free(s->suspect_raw);
    memset(s, 0, sizeof *s);
}
