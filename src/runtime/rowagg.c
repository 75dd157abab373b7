/* SPDX-License-Identifier: MIT */
/* rowagg.c - the aggregates of a job's window over typed rows: count,
 * sum, min, max, avg, count_distinct, first and last, any number of them
 * per window, as one user aggregate (tdm_aggregate_methods_v2) of
 * the window operator.  The window operator keeps one accumulator per
 * window (a fixed slot per aggregate) and calls add/merge/result, which
 * return TDM_ERR_NOMEM when an allocation fails; add reads the row and
 * the input it came from (whose field indexes apply) from the context
 * (tdm_agg_ctx), or merges the context's partial accumulator (two-phase
 * aggregation) - the subtask hands them over with each push
 * (tdm_winop_push_ctx), nothing is set on the aggregate beforehand.
 *
 * Nulls are skipped by every function but count (which counts records):
 * a window whose values are all null yields null.  first and last follow
 * arrival order at the window's subtask, merged by arrival sequence for
 * sessions.  count_distinct is exact: a small open-addressing set per
 * window holding the values (strings copied).
 */
#include <string.h>

#include "core/decimal.h"
#include "core/map.h"
#include "runtime/rt.h"
#include "state/ckpt_codec.h"
#include "window/win.h"

/* ---- Distinct sets ----
 * A tdm__map (core/map.h) of the values' bytes: fixed-size values as
 * their 8 bytes (so equality is exact, no collision can merge two
 * values), strings as their bytes.  Iterated in insertion order. */

typedef tdm__map dset;

/* Inserts a value's bytes (copied).  Returns false on OOM (the set is
 * unchanged). */
static bool dset_add(dset *s, const void *p, size_t len)
{
    uint64_t *v;
    return tdm__map_put(s, p, len, tdm__hash_bytes(p, len), &v, NULL) == TDM_OK;
}

/* Frees the set and its value copies (NULL is fine). */
static void dset_free(dset *s)
{
    tdm__map_destroy(s);
}

/* ---- Accumulators ---- */

/* One aggregate's slot in the window's accumulator. */
typedef struct aslot {
    union {
        int64_t i;
        double d;
        char *s; /* first/last strings: 4-byte length, then bytes */
        dset *set;
    } v;
    int64_t n;    /* values added (records, for count) */
    uint64_t seq; /* arrival sequence of the first/last value */
} aslot;

struct tdm__rowagg {
    int n;
    tdm__agg_spec *specs; /* borrowed from the node */
    tdm_type *types;      /* input field type per aggregate */
    int n_inputs;
    int **idx; /* [input][aggregate] field index */
    uint64_t seq;
    char *buf; /* result packing scratch */
    size_t cap;
};

/* int64, timestamp and bool values live in the int member. */
static bool is_int(tdm_type t)
{
    return t != TDM_TYPE_DOUBLE && t != TDM_TYPE_STRING;
}

/* Result types: count and count_distinct int64, avg double, sum
 * int64 or double, min/max/first/last as the input.  sum and avg of a
 * decimal(p,s) are decimal(18,s): exact scaled int64 (Flink widens sum
 * to DECIMAL(38,s); 18 digits are what an int64 holds). */
tdm_type tdm__rowagg_type(tdm__aggfn fn, tdm_type in)
{
    switch (fn) {
    case TDM__FN_COUNT:
    case TDM__FN_COUNT_DISTINCT:
        return TDM_TYPE_INT64;
    case TDM__FN_AVG:
        return tdm__is_decimal(in)
                   ? TDM_TYPE_DECIMAL_OF(18, TDM_DECIMAL_SCALE(in))
                   : TDM_TYPE_DOUBLE;
    case TDM__FN_SUM:
        if (tdm__is_decimal(in))
            return TDM_TYPE_DECIMAL_OF(18, TDM_DECIMAL_SCALE(in));
        return in == TDM_TYPE_DOUBLE ? TDM_TYPE_DOUBLE : TDM_TYPE_INT64;
    default:
        return in;
    }
}

/* ---- Decimal sums ----
 * A decimal's sum (and avg's running sum) stays a scaled int64.  Instead
 * of saturating like an int64 sum, which would print a wrong amount, a
 * sum beyond the int64 range becomes DEC_OVERFLOW for good - no parsed
 * decimal is that value (|v| < 10^18) - and the result is null, as
 * Flink's decimal arithmetic gives null on overflow.  The marker is
 * the sum's value, so a checkpoint keeps it with no format change. */

#define DEC_OVERFLOW INT64_MIN

static int64_t dec_add(int64_t a, int64_t b)
{
    int64_t r;
    if (a == DEC_OVERFLOW || b == DEC_OVERFLOW ||
        __builtin_add_overflow(a, b, &r))
        return DEC_OVERFLOW;
    return r;
}

/* avg of a decimal: the sum over the count at the input's scale,
 * rounded half away from zero (Flink keeps more digits: DECIMAL(38,
 * max(6,s)); an int64 cannot). */
static void dec_avg(const aslot *a, tdm__val *v)
{
    if (!a->n || a->v.i == DEC_OVERFLOW) {
        v->null = 1;
        return;
    }
    int64_t q = a->v.i / a->n, r = a->v.i % a->n;
    uint64_t twice = 2 * (r < 0 ? 0 - (uint64_t)r : (uint64_t)r);
    if (twice >= (uint64_t)a->n)
        q += a->v.i < 0 ? -1 : 1;
    v->u.i = q;
}

/* A string as 4 length bytes and the bytes; NULL on OOM. */
static char *str_copy(const char *p, uint32_t len)
{
    char *s = tdm__malloc(4 + (size_t)len);
    if (s) {
        memcpy(s, &len, 4);
        if (len)
            memcpy(s + 4, p, len);
    }
    return s;
}

/* Stores value @p v of type @p t as a first/last value.  False on OOM
 * (the slot unchanged). */
static bool keep_value(tdm__rowagg *ra, aslot *a, tdm_type t, const tdm__val *v)
{
    if (t == TDM_TYPE_STRING) {
        char *s = str_copy(v->u.s.p, v->u.s.len);
        if (!s)
            return false;
        if (a->n)
            tdm__free(a->v.s);
        a->v.s = s;
    } else {
        a->v.i = v->u.i; /* the double's bits alike */
    }
    a->n = 1;
    a->seq = ra->seq;
    return true;
}

/* Adds a value to the window's distinct set (created on first use).
 * False on OOM. */
static bool add_distinct(aslot *a, tdm_type t, const tdm__val *v)
{
    if (!a->v.set) {
        a->v.set = tdm__map_new();
        if (!a->v.set)
            return false;
    }
    bool ok;
    if (t == TDM_TYPE_STRING) {
        ok = dset_add(a->v.set, v->u.s.p, v->u.s.len);
    } else {
        int64_t bits = v->u.i;
        if (t == TDM_TYPE_DOUBLE && v->u.d == 0)
            bits = 0; /* -0.0 counts as 0.0 */
        ok = dset_add(a->v.set, &bits, sizeof bits);
    }
    a->n = (int64_t)tdm__map_count(a->v.set);
    return ok;
}

/* Adds one row of input @p input to every aggregate of accumulator
 * @p acc.  Returns TDM_OK, or TDM_ERR_NOMEM when a distinct set or a
 * string copy could not grow (the other aggregates still took the
 * row). */
static tdm_err add_row(tdm__rowagg *ra, void *acc, int input,
                       const tdm__row *row)
{
    aslot *slots = acc;
    const int *idx = ra->idx[input];
    bool ok = true;
    ra->seq++;
    for (int k = 0; k < ra->n; k++) {
        aslot *a = &slots[k];
        tdm__aggfn fn = ra->specs[k].fn;
        if (fn == TDM__FN_COUNT) {
            a->n++;
            continue;
        }
        const tdm__val *v = &row->v[idx[k]];
        if (v->null)
            continue;
        tdm_type t = ra->types[k];
        switch (fn) {
        case TDM__FN_SUM:
            if (__builtin_expect(tdm__is_decimal(t), 0)) {
                a->v.i = dec_add(a->v.i, v->u.i);
            } else if (is_int(t)) {
                if (__builtin_add_overflow(a->v.i, v->u.i, &a->v.i))
                    a->v.i = v->u.i > 0 ? INT64_MAX : INT64_MIN;
            } else {
                a->v.d += v->u.d;
            }
            a->n++;
            break;
        case TDM__FN_AVG:
            if (__builtin_expect(tdm__is_decimal(t), 0))
                a->v.i = dec_add(a->v.i, v->u.i);
            else
                a->v.d += is_int(t) ? (double)v->u.i : v->u.d;
            a->n++;
            break;
        case TDM__FN_MIN:
        case TDM__FN_MAX: {
            bool less = is_int(t) ? v->u.i < a->v.i : v->u.d < a->v.d;
            bool more = is_int(t) ? v->u.i > a->v.i : v->u.d > a->v.d;
            if (!a->n || (fn == TDM__FN_MIN ? less : more))
                a->v.i = v->u.i;
            a->n++;
            break;
        }
        case TDM__FN_COUNT_DISTINCT:
            ok &= add_distinct(a, t, v);
            break;
        case TDM__FN_FIRST:
            if (!a->n)
                ok &= keep_value(ra, a, t, v);
            break;
        case TDM__FN_LAST:
            ok &= keep_value(ra, a, t, v);
            break;
        default:
            break;
        }
    }
    return ok ? TDM_OK : TDM_ERR_NOMEM;
}

/* Folds @p from into @p into when session windows merge; the window
 * operator clears @p from afterwards (destroy_acc), so what is taken
 * from it is detached.  Counts and sums add, minimum and maximum
 * compare, distinct sets unite (moving the whole set when the target
 * has none), and first/last keep the value with the smaller/larger
 * arrival sequence - the order the rows reached this subtask.  Returns
 * TDM_OK, or TDM_ERR_NOMEM when a distinct set could not grow (the
 * rest is merged; both accumulators stay releasable). */
static tdm_err ra_merge(void *ud, void *into_acc, void *from_acc)
{
    tdm__rowagg *ra = ud;
    aslot *into = into_acc;
    aslot *from = from_acc;
    tdm_err err = TDM_OK;
    for (int k = 0; k < ra->n; k++) {
        aslot *a = &into[k], *b = &from[k];
        tdm_type t = ra->types[k];
        switch (ra->specs[k].fn) {
        case TDM__FN_COUNT:
            a->n += b->n;
            break;
        case TDM__FN_SUM:
            if (tdm__is_decimal(t)) {
                a->v.i = dec_add(a->v.i, b->v.i);
            } else if (is_int(t)) {
                if (__builtin_add_overflow(a->v.i, b->v.i, &a->v.i))
                    a->v.i = b->v.i > 0 ? INT64_MAX : INT64_MIN;
            } else {
                a->v.d += b->v.d;
            }
            a->n += b->n;
            break;
        case TDM__FN_AVG:
            if (tdm__is_decimal(t))
                a->v.i = dec_add(a->v.i, b->v.i);
            else
                a->v.d += b->v.d;
            a->n += b->n;
            break;
        case TDM__FN_MIN:
        case TDM__FN_MAX: {
            if (!b->n)
                break;
            bool less = is_int(t) ? b->v.i < a->v.i : b->v.d < a->v.d;
            bool more = is_int(t) ? b->v.i > a->v.i : b->v.d > a->v.d;
            if (!a->n || (ra->specs[k].fn == TDM__FN_MIN ? less : more))
                a->v = b->v;
            a->n += b->n;
            break;
        }
        case TDM__FN_COUNT_DISTINCT:
            if (!b->v.set)
                break;
            if (!a->v.set) {
                a->v.set = b->v.set;
                b->v.set = NULL;
            } else {
                size_t pos = 0, len;
                const void *p;
                while (tdm__map_next(b->v.set, &pos, &p, &len))
                    if (!dset_add(a->v.set, p, len))
                        err = TDM_ERR_NOMEM;
            }
            a->n = (int64_t)tdm__map_count(a->v.set);
            b->n = 0;
            break;
        case TDM__FN_FIRST:
        case TDM__FN_LAST: {
            if (!b->n)
                break;
            bool take =
                !a->n || (ra->specs[k].fn == TDM__FN_FIRST ? b->seq < a->seq
                                                           : b->seq > a->seq);
            if (!take)
                break;
            if (t == TDM_TYPE_STRING) {
                if (a->n)
                    tdm__free(a->v.s);
                a->v.s = b->v.s;
                b->v.s = NULL;
                b->n = 0;
            } else {
                a->v = b->v;
            }
            a->n = 1;
            a->seq = b->seq;
            break;
        }
        }
    }
    return err;
}

/* Adds a record to the window's accumulator: the context's row, read
 * with the field indexes of the context's input, or - two-phase
 * aggregation - the context's partial accumulator, merged.  A partial
 * holds only what tdm__rowagg_two_phase allows (counts, integer minima
 * and maxima), which merging reads and never detaches, so the borrowed
 * partial is left as it was. */
static tdm_err ra_add(void *ud, void *acc, const tdm_record *rec,
                      const tdm_agg_ctx *ctx)
{
    (void)rec;
    if (ctx->partial)
        return ra_merge(ud, acc, (void *)(uintptr_t)ctx->partial);
    if (!ctx->row || ctx->input < 0 ||
        ctx->input >= ((tdm__rowagg *)ud)->n_inputs)
        return TDM_ERR_INVAL; /* not a job's row */
    return add_row(ud, acc, ctx->input, ctx->row);
}

/* Frees what a window's accumulator holds (sets, string copies). */
static void ra_destroy_acc(void *ud, void *acc)
{
    tdm__rowagg *ra = ud;
    aslot *slots = acc;
    for (int k = 0; k < ra->n; k++) {
        aslot *a = &slots[k];
        switch (ra->specs[k].fn) {
        case TDM__FN_COUNT_DISTINCT:
            dset_free(a->v.set);
            a->v.set = NULL;
            break;
        case TDM__FN_FIRST:
        case TDM__FN_LAST:
            if (ra->types[k] == TDM_TYPE_STRING && a->n)
                tdm__free(a->v.s);
            a->v.s = NULL;
            break;
        default:
            break;
        }
    }
}

/* Packs the results: n tdm__val (strings as offsets), then the bytes.
 * The window operator copies them into the result event; the subtask
 * unpacks them into output columns.  An empty aggregate (every value
 * null) is null; count and count_distinct are 0 then.  Returns TDM_OK
 * or TDM_ERR_NOMEM (the operator skips the firing and fails the call
 * that fired it). */
static tdm_err ra_result(void *ud, const void *acc, tdm_result_out *out)
{
    tdm__rowagg *ra = ud;
    const aslot *slots = acc;
    size_t head = (size_t)ra->n * sizeof(tdm__val), need = head;
    for (int k = 0; k < ra->n; k++) {
        tdm__aggfn fn = ra->specs[k].fn;
        if ((fn == TDM__FN_FIRST || fn == TDM__FN_LAST) &&
            ra->types[k] == TDM_TYPE_STRING && slots[k].n) {
            uint32_t l;
            memcpy(&l, slots[k].v.s, 4);
            need += l;
        }
    }
    if (need > ra->cap) {
        char *b = tdm__realloc(ra->buf, need);
        if (!b)
            return TDM_ERR_NOMEM;
        ra->buf = b;
        ra->cap = need;
    }
    tdm__val *vals = (tdm__val *)ra->buf;
    size_t off = 0;
    for (int k = 0; k < ra->n; k++) {
        const aslot *a = &slots[k];
        tdm__val *v = &vals[k];
        memset(v, 0, sizeof *v);
        tdm_type t = ra->types[k];
        switch (ra->specs[k].fn) {
        case TDM__FN_COUNT:
        case TDM__FN_COUNT_DISTINCT:
            v->u.i = a->n;
            break;
        case TDM__FN_AVG:
            if (tdm__is_decimal(t))
                dec_avg(a, v);
            else if (a->n)
                v->u.d = a->v.d / (double)a->n;
            v->null |= !a->n;
            break;
        case TDM__FN_FIRST:
        case TDM__FN_LAST:
            if (a->n && t == TDM_TYPE_STRING) {
                uint32_t l;
                memcpy(&l, a->v.s, 4);
                memcpy(ra->buf + head + off, a->v.s + 4, l);
                v->u.s.p = (const char *)(uintptr_t)off;
                v->u.s.len = l;
                off += l;
            } else {
                v->u.i = a->v.i;
            }
            v->null = !a->n;
            break;
        default: /* sum, min, max */
            v->u.i = a->v.i;
            v->null = !a->n || (tdm__is_decimal(t) && a->v.i == DEC_OVERFLOW);
            break;
        }
    }
    return tdm_result_set_bytes(out, ra->buf, need);
}

/* Reads the values ra_result packed. */
bool tdm__rowagg_unpack(const void *bytes, size_t len, int n,
                        const tdm_type *types, tdm__val *out)
{
    size_t head = (size_t)n * sizeof(tdm__val);
    if (!bytes || len < head)
        return false;
    memcpy(out, bytes, head);
    const char *base = (const char *)bytes + head;
    for (int k = 0; k < n; k++) {
        if (types[k] != TDM_TYPE_STRING || out[k].null)
            continue;
        uintptr_t off = (uintptr_t)out[k].u.s.p;
        if (off > len - head || out[k].u.s.len > len - head - off)
            return false;
        out[k].u.s.p = base + off;
    }
    return true;
}

/* ---- Checkpoint codec ----
 * One accumulator (docs/checkpoints.md, "Operator state"): uvar slot
 * count, then per slot a u8 function code and
 *   count:           svar n
 *   sum, avg, min,
 *   max:             u64 value bits (int64 or double), svar n
 *   count_distinct:  uvar m, then m values: u64 bits, or for strings
 *                    byte strings (varint length, bytes)
 *   first, last:     u8 present; if 1: uvar arrival sequence, then u64
 *                    bits or a byte string
 * Loading re-inserts distinct values (hashes are recomputed, duplicates
 * refused) and moves the aggregate's arrival counter past every loaded
 * sequence, so rows after a restore count as later than restored ones. */

static tdm_err ra_save(void *ud, const void *acc, tdm__enc *e)
{
    tdm__rowagg *ra = ud;
    const aslot *slots = acc;
    tdm__enc_uvar(e, (uint64_t)ra->n);
    for (int k = 0; k < ra->n; k++) {
        const aslot *a = &slots[k];
        tdm__aggfn fn = ra->specs[k].fn;
        bool str = ra->types[k] == TDM_TYPE_STRING;
        tdm__enc_u8(e, (uint8_t)fn);
        switch (fn) {
        case TDM__FN_COUNT:
            tdm__enc_svar(e, a->n);
            break;
        case TDM__FN_COUNT_DISTINCT: {
            size_t pos = 0, len;
            const void *p;
            tdm__enc_uvar(e, (uint64_t)tdm__map_count(a->v.set));
            while (tdm__map_next(a->v.set, &pos, &p, &len)) {
                uint64_t bits;
                if (str) {
                    tdm__enc_bytes(e, p, len);
                } else {
                    memcpy(&bits, p, sizeof bits);
                    tdm__enc_u64(e, bits);
                }
            }
            break;
        }
        case TDM__FN_FIRST:
        case TDM__FN_LAST:
            tdm__enc_u8(e, a->n ? 1 : 0);
            if (!a->n)
                break;
            tdm__enc_uvar(e, a->seq);
            if (str) {
                uint32_t l;
                memcpy(&l, a->v.s, 4);
                tdm__enc_bytes(e, a->v.s + 4, l);
            } else {
                tdm__enc_u64(e, (uint64_t)a->v.i);
            }
            break;
        default: /* sum, avg, min, max */
            tdm__enc_u64(e, (uint64_t)a->v.i);
            tdm__enc_svar(e, a->n);
            break;
        }
    }
    return TDM_OK;
}

/* Reads a value count that must be >= 0. */
static tdm_err load_count(tdm__dec *d, int64_t *n)
{
    if (tdm__dec_svar(d, n) != TDM_OK)
        return TDM_ERR_PARSE;
    if (*n < 0)
        return tdm__dec_fail(d, "negative value count");
    return TDM_OK;
}

/* Loads one count_distinct slot into @p a (zeroed). */
static tdm_err load_distinct(tdm__dec *d, aslot *a, tdm_type t)
{
    uint64_t m;
    if (tdm__dec_uvar(d, &m) != TDM_OK)
        return TDM_ERR_PARSE;
    if (m == 0)
        return TDM_OK;
    /* Each value takes at least 1 byte (strings) or 8 bytes. */
    if (m > tdm__dec_left(d) / (t == TDM_TYPE_STRING ? 1 : 8))
        return tdm__dec_fail(d, "bad distinct value count");
    a->v.set = tdm__map_new();
    if (!a->v.set)
        return TDM_ERR_NOMEM;
    for (uint64_t i = 0; i < m; i++) {
        size_t before = tdm__map_count(a->v.set);
        bool ok;
        if (t == TDM_TYPE_STRING) {
            const void *p;
            size_t len;
            if (tdm__dec_bytes(d, &p, &len) != TDM_OK)
                return TDM_ERR_PARSE;
            if (len > UINT32_MAX)
                return tdm__dec_fail(d, "distinct string too long");
            ok = dset_add(a->v.set, len ? p : "", len);
        } else {
            uint64_t bits;
            if (tdm__dec_u64(d, &bits) != TDM_OK)
                return TDM_ERR_PARSE;
            if (t == TDM_TYPE_DOUBLE && bits == 0x8000000000000000ULL)
                return tdm__dec_fail(d, "distinct -0.0 (stored as 0.0)");
            ok = dset_add(a->v.set, &bits, sizeof bits);
        }
        if (!ok)
            return TDM_ERR_NOMEM;
        if (tdm__map_count(a->v.set) == before)
            return tdm__dec_fail(d, "duplicate distinct value");
    }
    a->n = (int64_t)tdm__map_count(a->v.set);
    return TDM_OK;
}

/* Loads one first/last slot into @p a (zeroed). */
static tdm_err load_kept(tdm__rowagg *ra, tdm__dec *d, aslot *a, tdm_type t)
{
    uint8_t has;
    uint64_t seq;
    if (tdm__dec_u8(d, &has) != TDM_OK)
        return TDM_ERR_PARSE;
    if (has > 1)
        return tdm__dec_fail(d, "bad first/last flag");
    if (!has)
        return TDM_OK;
    if (tdm__dec_uvar(d, &seq) != TDM_OK)
        return TDM_ERR_PARSE;
    if (seq == 0)
        return tdm__dec_fail(d, "bad arrival sequence");
    if (t == TDM_TYPE_STRING) {
        const void *p;
        size_t len;
        if (tdm__dec_bytes(d, &p, &len) != TDM_OK)
            return TDM_ERR_PARSE;
        if (len > UINT32_MAX - 4)
            return tdm__dec_fail(d, "first/last string too long");
        a->v.s = str_copy(p, (uint32_t)len);
        if (!a->v.s)
            return TDM_ERR_NOMEM;
    } else {
        uint64_t bits;
        if (tdm__dec_u64(d, &bits) != TDM_OK)
            return TDM_ERR_PARSE;
        a->v.i = (int64_t)bits;
    }
    a->n = 1;
    a->seq = seq;
    if (seq > ra->seq)
        ra->seq = seq;
    return TDM_OK;
}

static tdm_err ra_load(void *ud, void *acc, tdm__dec *d)
{
    tdm__rowagg *ra = ud;
    aslot *slots = acc;
    uint64_t n;
    if (tdm__dec_uvar(d, &n) != TDM_OK)
        return TDM_ERR_PARSE;
    if (n != (uint64_t)ra->n)
        return tdm__dec_fail(d, "aggregate count differs");
    for (int k = 0; k < ra->n; k++) {
        aslot *a = &slots[k];
        tdm__aggfn fn = ra->specs[k].fn;
        tdm_type t = ra->types[k];
        uint8_t code;
        tdm_err err = TDM_OK;
        if (tdm__dec_u8(d, &code) != TDM_OK)
            return TDM_ERR_PARSE;
        if (code != (uint8_t)fn)
            return tdm__dec_fail(d, "aggregate function differs");
        switch (fn) {
        case TDM__FN_COUNT:
            err = load_count(d, &a->n);
            break;
        case TDM__FN_COUNT_DISTINCT:
            err = load_distinct(d, a, t);
            break;
        case TDM__FN_FIRST:
        case TDM__FN_LAST:
            err = load_kept(ra, d, a, t);
            break;
        default: { /* sum, avg, min, max */
            uint64_t bits;
            if (tdm__dec_u64(d, &bits) != TDM_OK)
                return TDM_ERR_PARSE;
            a->v.i = (int64_t)bits;
            err = load_count(d, &a->n);
            if (err == TDM_OK && !a->n && bits != 0)
                err = tdm__dec_fail(d, "value without a count");
            break;
        }
        }
        if (err != TDM_OK)
            return err;
    }
    return TDM_OK;
}

/* ---- Construction ---- */

/* Copies the types and field indexes; borrows the specs. */
tdm_err tdm__rowagg_new(const tdm__agg_spec *specs, int n,
                        const tdm_type *types, int n_inputs,
                        int *const *field_idx, tdm__rowagg **out)
{
    *out = NULL;
    tdm__rowagg *ra = tdm__calloc(1, sizeof *ra);
    if (!ra)
        return TDM_ERR_NOMEM;
    ra->n = n;
    ra->specs = (tdm__agg_spec *)specs;
    ra->n_inputs = n_inputs;
    ra->types = tdm__calloc((size_t)n, sizeof *ra->types);
    ra->idx = tdm__calloc((size_t)n_inputs, sizeof *ra->idx);
    if (!ra->types || !ra->idx)
        goto fail;
    memcpy(ra->types, types, (size_t)n * sizeof *types);
    for (int i = 0; i < n_inputs; i++) {
        ra->idx[i] = tdm__calloc((size_t)n, sizeof(int));
        if (!ra->idx[i])
            goto fail;
        memcpy(ra->idx[i], field_idx[i], (size_t)n * sizeof(int));
    }
    *out = ra;
    return TDM_OK;

fail:
    tdm__rowagg_destroy(ra);
    return TDM_ERR_NOMEM;
}

/* The tdm_aggregate over this state (ud = @p ra). */
tdm_err tdm__rowagg_aggregate(tdm__rowagg *ra, tdm_aggregate **out)
{
    tdm_aggregate_methods_v2 m = {
        .version = 2,
        .acc_size = (size_t)ra->n * sizeof(aslot),
        .add = ra_add,
        .merge = ra_merge,
        .result = ra_result,
        .destroy_acc = ra_destroy_acc,
    };
    tdm_err err = tdm_aggregate_new_custom_v2(&m, ra, out, NULL, 0);
    if (err == TDM_OK)
        err = tdm__aggregate_set_codec(*out, ra_save, ra_load);
    if (err != TDM_OK) {
        tdm_aggregate_destroy(*out);
        *out = NULL;
    }
    return err;
}

/* Bytes of one accumulator (every aggregate's slot). */
size_t tdm__rowagg_acc_size(const tdm__rowagg *ra)
{
    return (size_t)ra->n * sizeof(aslot);
}

/* Adds @p row of input @p input to @p acc, a zeroed or earlier-added
 * accumulator of tdm__rowagg_acc_size bytes. */
tdm_err tdm__rowagg_add(tdm__rowagg *ra, void *acc, int input,
                        const tdm__row *row)
{
    return add_row(ra, acc, input, row);
}

/* Whether a list of aggregates can run in two phases with the same
 * result bits (see rt.h). */
bool tdm__rowagg_two_phase(const tdm__agg_spec *specs, int n,
                           const tdm_type *types)
{
    for (int k = 0; k < n; k++) {
        switch (specs[k].fn) {
        case TDM__FN_COUNT:
            break;
        case TDM__FN_MIN:
        case TDM__FN_MAX:
            if (!is_int(types[k]))
                return false;
            break;
        default:
            return false;
        }
    }
    return true;
}

/* Frees the aggregate state (NULL is fine). */
void tdm__rowagg_destroy(tdm__rowagg *ra)
{
    if (!ra)
        return;
    if (ra->idx)
        for (int i = 0; i < ra->n_inputs; i++)
            tdm__free(ra->idx[i]);
    tdm__free(ra->idx);
    tdm__free(ra->types);
    tdm__free(ra->buf);
    tdm__free(ra);
}
