/* SPDX-License-Identifier: MIT */
/* analyze_unit.c - timestamps written in another unit, anywhere in the
 * input.
 *
 * The runtime's own unit check (and analyze's "unit" warning) looks at
 * the first 100 timestamps of a partition: it catches a file written in
 * seconds, not a writer that slips one record in seconds among millions
 * in milliseconds.  Such a record is 56 years behind its partition; left
 * in, it becomes the maximum lag, every tail quantile above its share,
 * and a recommended bound of 500000h.  So the scan (analyze_scan.c)
 * classifies every timestamp, after --unit converted it to ms, by
 * magnitude:
 *
 *   below 1e8        not an epoch time of this era (counters, tests)
 *   [1e8, 1e11)      epoch seconds read as ms
 *   [1e11, 1e14)     epoch ms: 1973-03-03 .. 5138, what we expect
 *   [1e14, 1e17)     epoch microseconds read as ms
 *   1e17 and above   epoch nanoseconds read as ms
 *
 * and leaves every record of the second, fourth and fifth rows (a
 * "suspect") out of its measurements.  This file says where the first one
 * is: the scan only knows its position in the input, the public scan API
 * has no line numbers for good records, so the file is read once more,
 * line by line, up to the first line whose timestamp field is a suspect
 * (one file per partition: the suspect's own file; with a partition
 * field: the files in order).  Standard input cannot be read twice: the
 * record's position is given instead.  Then it words the warning: how
 * many, where, the value as written, what it reads as in the unit it
 * seems to be in, and that the records were left out.
 */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "analyze.h"
#include "cli.h"

/* Longest line read when locating (longer lines are skipped). */
#define LINE_MAX_BYTES 65536

/* Units from the smallest to the largest count per second. */
static const tdm_ts_unit ladder[] = {TDM_TS_UNIT_S, TDM_TS_UNIT_MS,
                                     TDM_TS_UNIT_US, TDM_TS_UNIT_NS};

/* The magnitude class of @p ts (see analyze.h and the file comment). */
int tdm__analyze_unit_class(tdm_time_ms ts)
{
    if (ts < INT64_C(100000000))
        return TDM__AN_CLASS_NONE;
    if (ts < INT64_C(100000000000))
        return TDM__AN_CLASS_S;
    if (ts < INT64_C(100000000000000))
        return TDM__AN_CLASS_MS;
    return ts < INT64_C(100000000000000000) ? TDM__AN_CLASS_US
                                            : TDM__AN_CLASS_NS;
}

/* The unit a value of class @p k seems to be written in, given that the
 * input is read in @p unit; 0 when off the ladder. */
static tdm_ts_unit seeming_unit(int unit, int k)
{
    int at = -1;
    for (int i = 0; i < 4; i++)
        if ((int)ladder[i] == unit)
            at = i;
    int want = at + (k - TDM__AN_CLASS_MS);
    return at < 0 || want < 0 || want > 3 ? (tdm_ts_unit)0 : ladder[want];
}

/* ---- Reading a line's timestamp text ---- */

/* JSON: the text of field @p name of @p line in @p buf; false when the
 * line is not an object with that field as a number or string. */
static bool json_text(const char *line, const char *name, char *buf, size_t n)
{
    json_t *root = json_loads(line, JSON_DECODE_ANY, NULL);
    json_t *v =
        root && json_is_object(root) ? json_object_get(root, name) : NULL;
    bool ok = true;
    if (json_is_integer(v))
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(buf, n, "%.17g", json_real_value(v));
    else if (json_is_string(v))
        snprintf(buf, n, "%s", json_string_value(v));
    else
        ok = false;
    json_decref(root);
    return ok;
}

/* CSV: column @p col of @p line (delimiter @p d, surrounding quotes
 * dropped) in @p buf; false when the line has fewer columns. */
static bool csv_text(const char *line, int col, char d, char *buf, size_t n)
{
    const char *p = line;
    for (int k = 0; k < col; k++) {
        p = strchr(p, d);
        if (!p)
            return false;
        p++;
    }
    size_t len = strcspn(p, (char[]){d, '\r', '\n', '\0'});
    if (len >= 2 && p[0] == '"' && p[len - 1] == '"') {
        p++;
        len -= 2;
    }
    snprintf(buf, n, "%.*s", (int)len, p);
    return true;
}

/* The column of @p name among the names of @p list ("a,b" or a schema
 * "a:int64, b:string"), -1 when absent. */
static int column_of(const char *list, char d, const char *name)
{
    int col = 0;
    size_t nl = strlen(name);
    for (const char *p = list; p && *p; col++) {
        while (*p == ' ' || *p == '"')
            p++;
        size_t len = strcspn(p, (char[]){d, ':', '"', '\r', '\n', '\0'});
        if (len == nl && strncmp(p, name, nl) == 0)
            return col;
        p = strchr(p, d);
        if (p)
            p++;
    }
    return -1;
}

static bool is_blank(const char *line)
{
    for (const char *p = line; *p && *p != '\n'; p++)
        if (*p != ' ' && *p != '\t' && *p != '\r')
            return false;
    return true;
}

/* ---- Locating ---- */

/* What a search looks for and what it found. */
typedef struct locate {
    const tdm__an_opts *o;
    int format;
    int col;   /* CSV column of the timestamp, -1: unknown */
    long line; /* 1-based line of the first suspect, 0: none */
    char raw[64];
} locate;

/* True when line @p text's timestamp is a suspect (its text in
 * l->raw). */
static bool line_is_suspect(locate *l, const char *text)
{
    char buf[64];
    bool got = l->format == TDM__AN_FMT_CSV
                   ? l->col >= 0 && csv_text(text, l->col, l->o->csv_delimiter,
                                             buf, sizeof buf)
                   : json_text(text, l->o->ts_field, buf, sizeof buf);
    tdm_time_ms ms;
    if (!got || tdm_time_parse(buf, strlen(buf), (tdm_ts_unit)l->o->unit,
                               &ms) != TDM_OK)
        return false;
    int k = tdm__analyze_unit_class(ms);
    if (k == TDM__AN_CLASS_NONE || k == TDM__AN_CLASS_MS)
        return false;
    snprintf(l->raw, sizeof l->raw, "%s", buf);
    return true;
}

/* Reads @p path up to its first suspect line; true when found. */
static bool search_file(locate *l, const char *path)
{
    FILE *f = fopen(path, "r");
    char *line = f ? malloc(LINE_MAX_BYTES) : NULL;
    bool found = false,
         header = l->format == TDM__AN_FMT_CSV && l->o->csv_header;
    long n = 0;
    while (line && !found && fgets(line, LINE_MAX_BYTES, f)) {
        n++;
        if (is_blank(line))
            continue;
        if (header) {
            header = false;
            l->col = column_of(line, l->o->csv_delimiter, l->o->ts_field);
            continue;
        }
        found = line_is_suspect(l, line);
    }
    if (found)
        l->line = n;
    free(line);
    if (f)
        fclose(f);
    return found;
}

/* Where the first suspect was written, into s->suspect_where and
 * s->suspect_raw. */
static tdm_err find_suspect(const tdm__an_opts *o, tdm__an_scan *s, int format)
{
    locate l = {.o = o, .format = format, .col = -1};
    char where[1024];
    if (format == TDM__AN_FMT_CSV && !o->csv_header && o->schema)
        l.col = column_of(o->schema, ',', o->ts_field);
    int from = s->by_field ? 0 : s->suspect_part;
    int to = s->by_field ? s->n_files : s->suspect_part + 1;
    const char *file = NULL;
    for (int i = from; i < to && i < s->n_files && !file; i++)
        if (strcmp(s->files[i], "-") != 0 && search_file(&l, s->files[i]))
            file = s->files[i];
    if (file)
        snprintf(where, sizeof where, "%s:%ld", file, l.line);
    else
        snprintf(where, sizeof where, "record %lld of the input",
                 (long long)s->suspect_first + 1);
    if (!file)
        snprintf(l.raw, sizeof l.raw, "%lld (as ms)",
                 (long long)s->suspect_value);
    s->suspect_where = tdm__cli_strndup(where, strlen(where));
    s->suspect_raw = tdm__cli_strndup(l.raw, strlen(l.raw));
    return s->suspect_where && s->suspect_raw ? TDM_OK : TDM_ERR_NOMEM;
}

/* ---- The warning ---- */

static void iso(tdm_time_ms t, char *buf, size_t n)
{
    tdm__cli_time(t, 0, "-inf", "+inf", buf, n);
}

/* "; as seconds it is 2026-01-01T00:00:00Z" for the unit the value
 * seems to be in, or "" when it cannot be read that way. */
static void read_as(const tdm__an_opts *o, const tdm__an_scan *s, char *buf,
                    size_t n)
{
    tdm_ts_unit u = seeming_unit(o->unit, s->suspect_class);
    static const char *const names[] = {"", "milliseconds", "seconds",
                                        "microseconds", "nanoseconds"};
    tdm_time_ms ms;
    char t[48];
    buf[0] = 0;
    if (!u || tdm_time_parse(s->suspect_raw, strlen(s->suspect_raw), u, &ms) !=
                  TDM_OK)
        return;
    iso(ms, t, sizeof t);
    snprintf(buf, n, "; it looks like epoch %s: read so, it is %s", names[u],
             t);
}

/* Partitions holding suspects. */
static int suspect_parts(const tdm__an_scan *s)
{
    int k = 0;
    for (int p = 0; p < s->n_parts; p++)
        k += s->parts[p].unit_suspects > 0;
    return k;
}

/* Locates the first suspect and words the warning (see analyze.h). */
tdm_err tdm__analyze_unit_report(const tdm__an_opts *o, tdm__an_scan *s,
                                 int format)
{
    if (s->suspects == 0)
        return TDM_OK;
    tdm_err err = find_suspect(o, s, format);
    if (err != TDM_OK)
        return err;
    char as[160], t[48];
    read_as(o, s, as, sizeof as);
    iso(s->suspect_value, t, sizeof t);
    double share =
        s->records ? 100.0 * (double)s->suspects / (double)s->records : 0;
    int np = suspect_parts(s);
    return tdm__analyze_warn(
        s, "unit_mixed",
        "%lld records (%.3g%% of %lld, in %d partition%s) have timestamps "
        "in another unit than --unit %s: the first is at %s, value %s, "
        "which read as %s is %s%s.  They are left out of the "
        "out-of-orderness, the gaps and the recommendations (one such "
        "record would be years behind its partition); the what-if replays "
        "them as a run would see them, and the target does not count "
        "them.  Fix the writer, or drop them with the source's filter",
        (long long)s->suspects, share, (long long)s->records, np,
        np == 1 ? "" : "s", tdm_ts_unit_name((tdm_ts_unit)o->unit),
        s->suspect_where, s->suspect_raw,
        tdm_ts_unit_name((tdm_ts_unit)o->unit), t, as);
}
