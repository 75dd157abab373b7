/* SPDX-License-Identifier: MIT */
/* generator.c - the built-in source of synthetic clicks or sensor
 * readings, for the demo, tests and benchmarks.
 *
 * Record i (0 <= i < generator.records) is a pure function of (seed, i),
 * so the stream is the same whatever the parallelism and however it is
 * polled:
 *   partition  i % partitions; partitions are dealt round-robin to
 *              subtasks (partition p to subtask p % count), and a subtask
 *              emits its records in increasing i;
 *   position   TDM__GEN_EPOCH_MS + floor(i * 1000 / rate): event time
 *              advances at `rate` records per second;
 *   key k      uniform over [0, keys), or Zipf with exponent `skew`
 *              (P(k) proportional to 1 / (k + 1)^skew; exact through a
 *              CDF table up to 2^20 keys, a continuous approximation
 *              above);
 *   ts         position - uniform{0..max_delay}, and for a late_fraction
 *              of the records also - late_delay;
 *   clicks     user "u<k>", page "p<k % 50>" (each user visits one page,
 *              so a page has at most ceil(keys / 50) distinct users), ts;
 *   sensors    sensor "s<k>", value uniform over 0.00..39.99, ts.
 * The idle partition emits nothing while its position lies in
 * [idle_from, idle_from + idle_for) after the epoch (for good when
 * idle_for is 0).  Fields are found in the schema by name (user, page,
 * sensor, value, ts); absent ones are left out.
 *
 * Checkpoints (version 3): a partition's position is its next round r
 * (its next record is r * partitions + p); a restored subtask starts at
 * the lowest round of its partitions and passes over partitions whose
 * round is still ahead, so partitions taken over from different old
 * subtasks (another parallelism) each continue exactly where they were.
 *
 * Speed: no formatting calls per row - digits are written straight into
 * the batch arena - and one 64-bit mix per random draw.
 */
#include <math.h>
#include <string.h>

#include "connect/conn.h"
#include "state/ckpt_codec.h"

#define ZIPF_TABLE_MAX ((int64_t)1 << 20)
/* Names of keys below this many are rendered once, at open (8 bytes per
 * key: small enough to stay in cache). */
#define NAME_TABLE_MAX ((int64_t)1 << 16)

/* A pre-rendered name: its bytes (unused ones zero) and length. */
typedef struct gen_name {
    char s[7];
    uint8_t len;
} gen_name;

struct tdm__source {
    tdm__source_conf conf;
    int f_key, f_page, f_value, f_ts; /* schema indexes, -1: absent */
    int64_t total, n_part, rate, keys;
    int64_t *parts; /* this subtask's partitions, ascending */
    int n_parts;
    uint8_t *fin; /* per local partition: reported finished */
    int n_done;
    int64_t round;       /* records round * n_part + parts[next] */
    int64_t round_base;  /* round * n_part (saturated) */
    uint64_t key1, key2; /* per-seed keys of the two draws of a record */
    int next;
    int64_t *start;        /* after restore: first round of each partition */
    int64_t start_max;     /* the highest of them */
    double *cdf;           /* Zipf CDF (keys entries) or NULL */
    double zipf_s, zipf_h; /* continuous approximation */
    bool zipf_approx;
    double key_scale;        /* keys, for uniform draws */
    int64_t ms_per_record;   /* 1000 / rate when exact, else 0 */
    double ms_per_rec_f;     /* 1000.0 / rate */
    gen_name *key_names;     /* "u<k>" / "s<k>" for k < keys, or NULL */
    gen_name page_names[50]; /* "p0" .. "p49" */
};

/* A uniform double in [0, 1) from the top 53 bits. */
static inline double unit(uint64_t r)
{
    return (double)(r >> 11) * (1.0 / 9007199254740992.0);
}

/* The schema text of generated rows (see conn.h). */
const char *tdm__generator_schema(int gen_kind)
{
    if (gen_kind == TDM__GEN_NEXMARK)
        return tdm__nexmark_schema();
    return gen_kind == TDM__GEN_SENSORS
               ? "sensor:string, value:double, ts:timestamp"
               : "user:string, page:string, ts:timestamp";
}

static void gen_close(tdm__source *src)
{
    if (!src)
        return;
    tdm__free(src->parts);
    tdm__free(src->fin);
    tdm__free(src->start);
    tdm__free(src->cdf);
    tdm__free(src->key_names);
    tdm__free(src);
}

/* floor(i * 1000 / rate) without overflow.  The common case avoids the
 * integer division (the hot path's most expensive step): a double
 * estimate through the precomputed 1000 / rate, corrected to the exact
 * floor with integer multiplications. */
static inline int64_t position_ms(const tdm__source *src, int64_t i)
{
    int64_t num, q;

    if (src->ms_per_record > 0) /* rate divides 1000 */
        return __builtin_mul_overflow(i, src->ms_per_record, &q) ? INT64_MAX
                                                                 : q;
    if (i <= (INT64_C(1) << 50) / 1000 && src->rate <= (INT64_C(1) << 30)) {
        num = i * 1000;
        q = (int64_t)((double)i * src->ms_per_rec_f);
        while (q > 0 && q * src->rate > num)
            q--;
        while ((q + 1) * src->rate <= num)
            q++;
        return q;
    }
    {
        int64_t d = i / src->rate, r = i % src->rate, a, b;
        if (__builtin_mul_overflow(d, (int64_t)1000, &a))
            return INT64_MAX;
        if (!__builtin_mul_overflow(r, (int64_t)1000, &b))
            return tdm__time_add_sat(a, b / src->rate);
        return tdm__time_add_sat(
            a, (int64_t)((double)r * 1000.0 / (double)src->rate));
    }
}

/* Builds the key distribution. */
static tdm_err init_keys(tdm__source *src)
{
    double s = src->conf.gen_skew;

    src->key_scale = (double)src->keys;
    if (s <= 0)
        return TDM_OK;
    if (src->keys > ZIPF_TABLE_MAX) {
        /* Inverse of the integral of x^-s over [1, keys + 1]. */
        src->zipf_approx = true;
        src->zipf_s = s;
        if (fabs(s - 1.0) < 1e-12)
            src->zipf_h = log((double)src->keys + 1.0);
        else
            src->zipf_h =
                (pow((double)src->keys + 1.0, 1.0 - s) - 1.0) / (1.0 - s);
        return TDM_OK;
    }
    src->cdf = tdm__malloc((size_t)src->keys * sizeof *src->cdf);
    if (!src->cdf)
        return TDM_ERR_NOMEM;
    {
        double sum = 0;
        for (int64_t k = 0; k < src->keys; k++) {
            sum += pow((double)(k + 1), -s);
            src->cdf[k] = sum;
        }
        for (int64_t k = 0; k < src->keys; k++)
            src->cdf[k] /= sum;
        src->cdf[src->keys - 1] = 1.0; /* no rounding gap at the top */
    }
    return TDM_OK;
}

/* Draws a key from the top 53 bits of @p r. */
static inline int64_t draw_key(const tdm__source *src, uint64_t r)
{
    double u = unit(r);
    int64_t k;

    if (src->cdf) {
        /* The first k with cdf[k] > u. */
        int64_t lo = 0, hi = src->keys - 1;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (src->cdf[mid] > u)
                hi = mid;
            else
                lo = mid + 1;
        }
        return lo;
    }
    if (src->zipf_approx) {
        double s = src->zipf_s, x;
        if (fabs(s - 1.0) < 1e-12)
            x = exp(u * src->zipf_h);
        else
            x = pow(1.0 + u * src->zipf_h * (1.0 - s), 1.0 / (1.0 - s));
        k = (int64_t)x - 1;
    } else {
        k = (int64_t)(u * src->key_scale);
    }
    if (k < 0)
        k = 0;
    if (k >= src->keys)
        k = src->keys - 1;
    return k;
}

static tdm_err init_names(tdm__source *src);

/* Checks that schema field @p name, if present, has an allowed type. */
static tdm_err field(const tdm__source_conf *conf, const char *name,
                     tdm_type t1, tdm_type t2, int *out, char *errbuf,
                     size_t errbuf_size)
{
    int f = tdm__schema_find(conf->schema, name);
    *out = f;
    if (f >= 0 && conf->schema->fields[f].type != t1 &&
        conf->schema->fields[f].type != t2)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "generator field '%s' has the wrong type", name);
    return TDM_OK;
}

/* Opens the partitions of subtask @p index of @p count.  TDM_OK,
 * TDM_ERR_INVAL (bad settings or schema field types), NOMEM. */
static tdm_err gen_open(const tdm__source_conf *conf, int index, int count,
                        tdm__dead_fn dead, void *dead_ud, tdm__source **out,
                        int *n_partitions, char *errbuf, size_t errbuf_size)
{
    tdm__source *src = NULL;
    tdm_err err;
    bool sensors;

    *out = NULL;
    *n_partitions = 0;
    if (!conf || !conf->schema || count < 1 || index < 0 || index >= count)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "generator: bad arguments");
    if (conf->gen_rate < 1 || conf->gen_keys < 1 || conf->gen_partitions < 1 ||
        conf->gen_records < 0 || conf->gen_max_delay < 0 ||
        conf->gen_late_delay < 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "generator.rate, keys and partitions must be >= 1, "
                         "records and delays >= 0");
    src = tdm__calloc(1, sizeof *src);
    if (!src)
        return TDM_ERR_NOMEM;
    src->conf = *conf;
    src->total = conf->gen_records;
    src->n_part = conf->gen_partitions;
    src->rate = conf->gen_rate;
    src->keys = conf->gen_keys;
    src->key1 =
        tdm__hash_gen_mix64((uint64_t)conf->gen_seed * TDM__HASH_GOLDEN + 1);
    src->key2 =
        tdm__hash_gen_mix64((uint64_t)conf->gen_seed * TDM__HASH_GOLDEN + 2);
    src->ms_per_record = 1000 % src->rate == 0 ? 1000 / src->rate : 0;
    src->ms_per_rec_f = 1000.0 / (double)src->rate;
    sensors = conf->gen_kind == TDM__GEN_SENSORS;
    src->f_page = src->f_value = -1;
    if ((err = field(conf, sensors ? "sensor" : "user", TDM_TYPE_STRING,
                     TDM_TYPE_STRING, &src->f_key, errbuf, errbuf_size)) ||
        (err = field(conf, "ts", TDM_TYPE_TIMESTAMP, TDM_TYPE_INT64, &src->f_ts,
                     errbuf, errbuf_size)))
        goto fail;
    if (sensors)
        err = field(conf, "value", TDM_TYPE_DOUBLE, TDM_TYPE_DOUBLE,
                    &src->f_value, errbuf, errbuf_size);
    else
        err = field(conf, "page", TDM_TYPE_STRING, TDM_TYPE_STRING,
                    &src->f_page, errbuf, errbuf_size);
    if (err != TDM_OK)
        goto fail;
    /* Partitions p with p % count == index. */
    for (int64_t p = index; p < src->n_part; p += count)
        src->n_parts++;
    src->parts = tdm__calloc((size_t)(src->n_parts ? src->n_parts : 1),
                             sizeof *src->parts);
    src->fin = tdm__calloc((size_t)(src->n_parts ? src->n_parts : 1), 1);
    if (!src->parts || !src->fin) {
        err = TDM_ERR_NOMEM;
        goto fail;
    }
    for (int64_t p = index, j = 0; p < src->n_part; p += count)
        src->parts[j++] = p;
    err = init_keys(src);
    if (err == TDM_OK)
        err = init_names(src);
    if (err != TDM_OK)
        goto fail;
    *n_partitions = src->n_parts;
    *out = src;
    return TDM_OK;
fail:
    gen_close(src);
    return err;
}

/* "00" "01" ... "99": two digits per division by 100. */
static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233"
    "34353637383940414243444546474849505152535455565758596061626364656667"
    "6869707172737475767778798081828384858687888990919293949596979899";

/* Number of decimal digits of @p k (comparisons, no division). */
static inline size_t n_digits(uint64_t k)
{
    size_t n = 1;
    for (uint64_t p = 10; k >= p; p *= 10) {
        n++;
        if (p > UINT64_MAX / 10)
            break;
    }
    return n;
}

/* Writes "<prefix><k>" as string field @p f of @p row: straight into the
 * arena (digits from the right, two at a time) when there is room, else
 * through tdm__batch_set_string. */
static inline tdm_err put_name(tdm__batch *b, tdm__row *row, int f, char prefix,
                               uint64_t k)
{
    char tmp[24], *dst;
    size_t len = 1 + n_digits(k), at = len;

    dst = b->arena_cap - b->arena_used >= len ? b->arena + b->arena_used : tmp;
    dst[0] = prefix;
    while (k >= 100) {
        size_t two = (size_t)(k % 100) * 2;
        k /= 100;
        dst[--at] = digit_pairs[two + 1];
        dst[--at] = digit_pairs[two];
    }
    if (k >= 10) {
        dst[--at] = digit_pairs[k * 2 + 1];
        dst[--at] = digit_pairs[k * 2];
    } else {
        dst[--at] = (char)('0' + k);
    }
    if (dst == tmp)
        return tdm__batch_set_string(b, row, f, tmp, len);
    b->arena_used += len;
    row->v[f].u.s.p = dst;
    row->v[f].u.s.len = (uint32_t)len;
    row->v[f].null = 0;
    return TDM_OK;
}

/* Renders "<prefix><k>" into a table entry (k < 10^6). */
static void render_name(gen_name *e, char prefix, uint64_t k)
{
    size_t len = 1 + n_digits(k), at = len;
    memset(e, 0, sizeof *e);
    e->s[0] = prefix;
    do {
        e->s[--at] = (char)('0' + k % 10);
        k /= 10;
    } while (k > 0);
    e->len = (uint8_t)len;
}

/* Builds the name tables (keys below NAME_TABLE_MAX only). */
static tdm_err init_names(tdm__source *src)
{
    char prefix = src->conf.gen_kind == TDM__GEN_SENSORS ? 's' : 'u';
    for (uint64_t k = 0; k < 50; k++)
        render_name(&src->page_names[k], 'p', k);
    if (src->keys > NAME_TABLE_MAX)
        return TDM_OK;
    src->key_names = tdm__malloc((size_t)src->keys * sizeof *src->key_names);
    if (!src->key_names)
        return TDM_ERR_NOMEM;
    for (int64_t k = 0; k < src->keys; k++)
        render_name(&src->key_names[k], prefix, (uint64_t)k);
    return TDM_OK;
}

/* Writes a pre-rendered name as string field @p f of @p row: one 8-byte
 * copy into the arena when it has room for all eight (the bytes past
 * the name are left over and overwritten by the next string). */
static inline tdm_err put_table_name(tdm__batch *b, tdm__row *row, int f,
                                     const gen_name *e)
{
    char *dst;
    if (b->arena_cap - b->arena_used < sizeof *e)
        return tdm__batch_set_string(b, row, f, e->s, e->len);
    dst = b->arena + b->arena_used;
    memcpy(dst, e, sizeof *e);
    b->arena_used += e->len;
    row->v[f].u.s.p = dst;
    row->v[f].u.s.len = e->len;
    row->v[f].null = 0;
    return TDM_OK;
}

/* Generates record @p i of local partition @p j into @p b. */
static tdm_err generate(tdm__source *src, tdm__batch *b, int64_t i, int j)
{
    const tdm__source_conf *c = &src->conf;
    /* Two independent draws (different keys, so the two mixes run in
     * parallel rather than one after the other). */
    uint64_t r1 = tdm__hash_gen_mix64((uint64_t)i ^ src->key1);
    uint64_t r2 = tdm__hash_gen_mix64((uint64_t)i ^ src->key2);
    int64_t pos = position_ms(src, i), ts;
    tdm__row *row;
    tdm_err err;

    if (src->parts[j] == c->gen_idle_partition && pos >= c->gen_idle_from &&
        (c->gen_idle_for == 0 ||
         pos < tdm__time_add_sat(c->gen_idle_from, c->gen_idle_for)))
        return TDM_OK;
    /* As tdm__batch_add, without zeroing values that are set below. */
    row = &b->rows[b->n++];
    row->flags = 0;
    for (int f = 0; f < c->schema->n; f++) {
        row->v[f].null = 1;
        row->v[f].u.i = 0;
    }
    ts = tdm__time_add_sat(TDM__GEN_EPOCH_MS, pos);
    if (c->gen_max_delay > 0)
        ts = tdm__time_sub_sat(
            ts, (int64_t)(unit(r2) * ((double)c->gen_max_delay + 1.0)));
    if (c->gen_late_fraction > 0 &&
        unit(tdm__hash_gen_mix64(r2 ^ 0x5851f42d4c957f2dULL)) <
            c->gen_late_fraction)
        ts = tdm__time_sub_sat(ts, c->gen_late_delay);
    if (ts == TDM_TIME_MIN)
        ts++;
    row->ts = ts;
    row->partition = (uint32_t)j;
    uint64_t k = (uint64_t)draw_key(src, r1);
    if (src->f_key >= 0) {
        if (src->key_names)
            err = put_table_name(b, row, src->f_key, &src->key_names[k]);
        else
            err = put_name(b, row, src->f_key,
                           c->gen_kind == TDM__GEN_SENSORS ? 's' : 'u', k);
        if (err != TDM_OK)
            goto fail;
    }
    if (src->f_page >= 0) {
        err = put_table_name(b, row, src->f_page, &src->page_names[k % 50]);
        if (err != TDM_OK)
            goto fail;
    }
    if (src->f_value >= 0) {
        row->v[src->f_value].u.d = (double)((r2 & 0xfffff) % 4000) / 100.0;
        row->v[src->f_value].null = 0;
    }
    if (src->f_ts >= 0) {
        row->v[src->f_ts].u.i = ts;
        row->v[src->f_ts].null = 0;
    }
    return TDM_OK;
fail:
    tdm__batch_drop_last(b);
    return err;
}

/* Appends up to @p max records in increasing index order.  After a
 * restore (start set) partitions whose round is still ahead are passed
 * over until every partition has caught up; start is then dropped. */
static tdm_err gen_poll(tdm__source *src, tdm__batch *b, size_t max,
                        uint8_t *finished, int *eof)
{
    size_t limit = b->n + max > b->cap ? b->cap : b->n + max;

    *eof = 0;
    while (src->n_done < src->n_parts && b->n < limit) {
        int j = src->next;
        int64_t i;
        if (j == src->n_parts) {
            src->next = j = 0;
            src->round++;
            if (__builtin_mul_overflow(src->round, src->n_part,
                                       &src->round_base))
                src->round_base = INT64_MAX;
            if (src->start && src->round >= src->start_max) {
                tdm__free(src->start);
                src->start = NULL;
            }
        }
        src->next++;
        if (src->start && src->round < src->start[j])
            continue; /* restored further along */
        if (__builtin_add_overflow(src->round_base, src->parts[j], &i) ||
            i >= src->total) {
            if (!src->fin[j]) {
                src->fin[j] = 1;
                src->n_done++;
                if (finished)
                    finished[j] = 1;
            }
            continue;
        }
        tdm_err err = generate(src, b, i, j);
        if (err != TDM_OK)
            return err;
    }
    if (src->n_done == src->n_parts)
        *eof = 1;
    return TDM_OK;
}

/* ---- Checkpoints ---- */

/* The next round of local partition @p j: the poll loop has passed it in
 * the current round when j < next. */
static int64_t next_round(const tdm__source *src, int j)
{
    int64_t r = j < src->next ? src->round + 1 : src->round;
    if (src->start && src->start[j] > r)
        r = src->start[j];
    return r;
}

/* Encodes this subtask's partitions (docs/checkpoints.md). */
static tdm_err gen_snapshot(tdm__source *src, struct tdm__enc *e, char *errbuf,
                            size_t errbuf_size)
{
    (void)errbuf;
    (void)errbuf_size;
    tdm__enc_begin(e, TDM__SNAP_TAG_GENERATOR);
    tdm__enc_uvar(e, TDM__SNAP_SOURCE_VERSION);
    tdm__enc_uvar(e, (uint64_t)src->n_part);
    tdm__enc_uvar(e, (uint64_t)src->n_parts);
    for (int j = 0; j < src->n_parts; j++) {
        tdm__enc_uvar(e, (uint64_t)src->parts[j]);
        tdm__enc_uvar(e, (uint64_t)next_round(src, j));
        tdm__enc_u8(e, src->fin[j]);
    }
    tdm__enc_end(e);
    return e->oom ? TDM_ERR_NOMEM : TDM_OK;
}

/* Reads the merged sections of the old subtasks (see connect.h) and
 * keeps the rounds of this subtask's partitions; every one of them must
 * be listed exactly once. */
static tdm_err gen_restore(tdm__source *src, struct tdm__dec *d, char *errbuf,
                           size_t errbuf_size)
{
    tdm__dec body;
    int64_t *start =
        tdm__calloc((size_t)(src->n_parts ? src->n_parts : 1), sizeof *start);
    uint8_t *seen = tdm__calloc((size_t)(src->n_parts ? src->n_parts : 1), 1);
    tdm_err err = TDM_OK;

    memset(&body, 0, sizeof body);
    if (!start || !seen) {
        err = TDM_ERR_NOMEM;
        goto out;
    }
    while (tdm__dec_left(d) > 0) {
        uint64_t tag, version, n_part, n;
        if (tdm__dec_section(d, &tag, &body) != TDM_OK) {
            err = tdm__conn_snap_error(&src->conf, d, errbuf, errbuf_size);
            goto out;
        }
        if (tag != TDM__SNAP_TAG_GENERATOR)
            tdm__dec_fail(&body, "not a generator section");
        tdm__dec_uvar(&body, &version);
        if (!body.err && version != TDM__SNAP_SOURCE_VERSION)
            tdm__dec_fail(&body, "unknown generator version");
        tdm__dec_uvar(&body, &n_part);
        if (!body.err && n_part != (uint64_t)src->n_part)
            tdm__dec_fail(&body, "generator.partitions differs from the "
                                 "checkpoint's");
        tdm__dec_uvar(&body, &n);
        if (!body.err && n > tdm__dec_left(&body))
            tdm__dec_fail(&body, "too many partitions");
        for (uint64_t k = 0; !body.err && k < n; k++) {
            uint64_t p, r;
            uint8_t fin;
            tdm__dec_uvar(&body, &p);
            tdm__dec_uvar(&body, &r);
            if (tdm__dec_u8(&body, &fin) != TDM_OK)
                break;
            if (p >= n_part || r > INT64_MAX || fin > 1) {
                tdm__dec_fail(&body, "bad partition entry");
                break;
            }
            /* Local partitions are ascending: p = index + j * count. */
            for (int j = 0; j < src->n_parts; j++) {
                if ((uint64_t)src->parts[j] != p)
                    continue;
                if (seen[j]) {
                    tdm__dec_fail(&body, "partition listed twice");
                    break;
                }
                seen[j] = 1;
                if (fin && r < (uint64_t)((src->total - p + src->n_part - 1) /
                                          src->n_part)) {
                    tdm__dec_fail(&body, "partition finished before its "
                                         "end");
                    break;
                }
                src->fin[j] = fin;
                /* Any round from total / partitions + 1 on is past the
                 * end: clamp, so that passing over partitions ahead
                 * stays bounded. */
                uint64_t past = (uint64_t)(src->total / src->n_part) + 1;
                start[j] = (int64_t)(r < past ? r : past);
            }
        }
        if (body.err) {
            err = tdm__conn_snap_error(&src->conf, &body, errbuf, errbuf_size);
            goto out;
        }
    }
    if (d->err) {
        err = tdm__conn_snap_error(&src->conf, d, errbuf, errbuf_size);
        goto out;
    }
    int64_t min = INT64_MAX;
    for (int j = 0; j < src->n_parts; j++) {
        if (!seen[j]) {
            err = tdm__errf(errbuf, errbuf_size, TDM_ERR_PARSE,
                            "source '%s' checkpoint: generator partition "
                            "%lld is missing",
                            src->conf.name ? src->conf.name : "?",
                            (long long)src->parts[j]);
            goto out;
        }
        if (start[j] < min)
            min = start[j];
    }
    src->n_done = 0;
    for (int j = 0; j < src->n_parts; j++)
        src->n_done += src->fin[j];
    int64_t max = min;
    for (int j = 0; j < src->n_parts; j++)
        if (start[j] > max)
            max = start[j];
    if (src->n_parts > 0) {
        src->round = min;
        src->start_max = max;
        src->next = 0;
        if (__builtin_mul_overflow(src->round, src->n_part, &src->round_base))
            src->round_base = INT64_MAX;
        tdm__free(src->start);
        src->start = NULL;
        if (max > min) { /* else nothing to pass over */
            src->start = start;
            start = NULL;
        }
    }
out:
    tdm__free(start);
    tdm__free(seen);
    return err;
}

const tdm__source_vtab tdm__generator_source = {
    .version = 3,
    .open = gen_open,
    .poll = gen_poll,
    .close = gen_close,
    .snapshot = gen_snapshot,
    .restore = gen_restore,
};
