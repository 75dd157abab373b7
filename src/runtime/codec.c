/* SPDX-License-Identifier: MIT */
/* codec.c - turning rows into bytes and back: the key bytes that the
 * key-partitioned exchange hashes and keyed operators group by, the
 * packed rows that joins buffer as record payloads, a one-line text
 * rendering for dead letters, and ISO-8601 formatting for messages.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "core/decimal.h"
#include "runtime/rt.h"

/* Grows @p kb to hold @p need bytes (doubling, so a subtask's key
 * buffer settles after its longest key: no allocation per record). */
static tdm_err kb_reserve(tdm__keybuf *kb, size_t need)
{
    if (need <= kb->cap)
        return TDM_OK;
    size_t cap = kb->cap ? kb->cap : 64;
    while (cap < need)
        cap *= 2;
    char *p = tdm__realloc(kb->p, cap);
    if (!p)
        return TDM_ERR_NOMEM;
    kb->p = p;
    kb->cap = cap;
    return TDM_OK;
}

/* ---- Keys ---- */

/* Encoding per field: tag 0 (null) or 1, then 8 bytes for fixed-size
 * types or a 4-byte length and the bytes for strings. */
tdm_err tdm__key_encode(const tdm__row *row, const int *idx, int n,
                        tdm__keybuf *kb, const char **key, size_t *len)
{
    if (n == 1 && row->schema->fields[idx[0]].type == TDM_TYPE_STRING) {
        const tdm__val *v = &row->v[idx[0]];
        if (!v->null && (v->u.s.len == 0 || v->u.s.p[0] != 0)) {
            /* The hot case: the string itself. */
            *key = v->u.s.len ? v->u.s.p : "";
            *len = v->u.s.len;
            return TDM_OK;
        }
        /* Null is "\0"; a string starting with NUL gets one more. */
        size_t l = v->null ? 0 : v->u.s.len;
        if (kb_reserve(kb, l + 1) != TDM_OK)
            return TDM_ERR_NOMEM;
        kb->p[0] = 0;
        if (l)
            memcpy(kb->p + 1, v->u.s.p, l);
        kb->len = l + 1;
        *key = kb->p;
        *len = kb->len;
        return TDM_OK;
    }
    size_t need = 0;
    for (int k = 0; k < n; k++) {
        const tdm__val *v = &row->v[idx[k]];
        need += 1;
        if (v->null)
            continue;
        need += row->schema->fields[idx[k]].type == TDM_TYPE_STRING
                    ? 4 + v->u.s.len
                    : 8;
    }
    if (kb_reserve(kb, need) != TDM_OK)
        return TDM_ERR_NOMEM;
    char *o = kb->p;
    for (int k = 0; k < n; k++) {
        const tdm__val *v = &row->v[idx[k]];
        if (v->null) {
            *o++ = 0;
            continue;
        }
        *o++ = 1;
        switch (row->schema->fields[idx[k]].type) {
        case TDM_TYPE_STRING: {
            uint32_t l = v->u.s.len;
            memcpy(o, &l, 4);
            if (l)
                memcpy(o + 4, v->u.s.p, l);
            o += 4 + l;
            break;
        }
        case TDM_TYPE_DOUBLE: {
            /* -0.0 and 0.0 compare equal, so they must key alike. */
            double d = v->u.d == 0 ? 0.0 : v->u.d;
            memcpy(o, &d, 8);
            o += 8;
            break;
        }
        default:
            memcpy(o, &v->u.i, 8);
            o += 8;
            break;
        }
    }
    kb->len = (size_t)(o - kb->p);
    *key = kb->p ? kb->p : "";
    *len = kb->len;
    return TDM_OK;
}

/* Inverse of tdm__key_encode for the given field types. */
bool tdm__key_decode(const char *key, size_t len, const tdm_type *types, int n,
                     tdm__val *out)
{
    if (n == 1 && types[0] == TDM_TYPE_STRING) {
        memset(out, 0, sizeof *out);
        if (len == 1 && key[0] == 0) {
            out->null = 1;
        } else {
            bool esc = len > 0 && key[0] == 0;
            out->u.s.p = key + esc;
            out->u.s.len = (uint32_t)(len - esc);
        }
        return true;
    }
    const char *p = key, *e = key + len;
    for (int k = 0; k < n; k++) {
        memset(&out[k], 0, sizeof out[k]);
        if (p >= e)
            return false;
        if (*p++ == 0) {
            out[k].null = 1;
            continue;
        }
        if (types[k] == TDM_TYPE_STRING) {
            uint32_t l;
            if (e - p < 4)
                return false;
            memcpy(&l, p, 4);
            p += 4;
            if ((size_t)(e - p) < l)
                return false;
            out[k].u.s.p = p;
            out[k].u.s.len = l;
            p += l;
        } else {
            if (e - p < 8)
                return false;
            memcpy(&out[k].u.i, p, 8); /* the double's bytes alike */
            p += 8;
        }
    }
    return p == e;
}

/* ---- Packed rows ---- */

/* What precedes a packed row's values: its timestamp, its number of
 * values and its flags (the guard flag survives buffering). */
typedef struct pack_hdr {
    int64_t ts;
    uint32_t n, flags;
} pack_hdr;

/* Layout: header, n values (strings as offsets from the string area),
 * string bytes. */
size_t tdm__row_packed_size(const tdm__row *row)
{
    int n = row->schema->n;
    size_t strs = 0;
    /* The schema first: a row without string fields is not read. */
    for (int i = 0; i < n; i++)
        if (row->schema->fields[i].type == TDM_TYPE_STRING && !row->v[i].null)
            strs += row->v[i].u.s.len;
    return sizeof(pack_hdr) + (size_t)n * sizeof(tdm__val) + strs;
}

void tdm__row_pack_into(const tdm__row *row, void *dst)
{
    int n = row->schema->n;
    const tdm__field *f = row->schema->fields;
    pack_hdr h = {row->ts, (uint32_t)n, row->flags};
    memcpy(dst, &h, sizeof h);
    char *vals = (char *)dst + sizeof h;
    char *s = vals + (size_t)n * sizeof(tdm__val);
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        /* The value's bytes as they are (padding included), a string's
         * pointer then replaced by its offset. */
        const tdm__val *v = &row->v[i];
        char *o = vals + (size_t)i * sizeof *v;
        memcpy(o, v, sizeof *v);
        if (!v->null && f[i].type == TDM_TYPE_STRING) {
            uint32_t l = v->u.s.len;
            if (l)
                memcpy(s + off, v->u.s.p, l);
            const char *as_off = (const char *)(uintptr_t)off;
            memcpy(o + offsetof(tdm__val, u.s.p), &as_off, sizeof as_off);
            off += l;
        }
    }
}

tdm_err tdm__row_pack(const tdm__row *row, tdm__keybuf *kb)
{
    size_t len = tdm__row_packed_size(row);
    if (kb_reserve(kb, len) != TDM_OK)
        return TDM_ERR_NOMEM;
    tdm__row_pack_into(row, kb->p);
    kb->len = len;
    return TDM_OK;
}

/* Missing or short bytes give a row of nulls with no timestamp. */
void tdm__row_unpack(const void *p, size_t len, const tdm__schema *schema,
                     tdm__val *vals, tdm__row *out)
{
    pack_hdr h;
    memset(out, 0, sizeof *out);
    out->schema = schema;
    out->v = vals;
    if (!p || len < sizeof h) {
        out->ts = TDM_TIME_MIN;
        for (int i = 0; i < schema->n; i++) {
            memset(&vals[i], 0, sizeof vals[i]);
            vals[i].null = 1;
        }
        return;
    }
    memcpy(&h, p, sizeof h);
    out->ts = h.ts;
    out->flags = h.flags;
    const char *base = p;
    size_t head = sizeof h + (size_t)schema->n * sizeof(tdm__val);
    memcpy(vals, base + sizeof h, (size_t)schema->n * sizeof(tdm__val));
    for (int i = 0; i < schema->n; i++)
        if (!vals[i].null && schema->fields[i].type == TDM_TYPE_STRING)
            vals[i].u.s.p = base + head + (uintptr_t)vals[i].u.s.p;
}

bool tdm__row_pack_valid(const void *p, size_t len, const tdm__schema *schema)
{
    pack_hdr h;
    size_t head = sizeof h + (size_t)schema->n * sizeof(tdm__val);
    if (!p || len < head)
        return false;
    memcpy(&h, p, sizeof h);
    if (h.n != (uint32_t)schema->n)
        return false;
    size_t area = len - head;
    const char *vals = (const char *)p + sizeof h;
    for (int i = 0; i < schema->n; i++) {
        tdm__val v;
        memcpy(&v, vals + (size_t)i * sizeof v, sizeof v);
        if (v.null || schema->fields[i].type != TDM_TYPE_STRING)
            continue;
        /* The offset, kept in the pointer's bytes, and the length must
         * both lie inside the string area (no pointer is formed). */
        uintptr_t off = (uintptr_t)v.u.s.p;
        if (off > area || v.u.s.len > area - off)
            return false;
    }
    return true;
}

/* ---- Text ---- */

/* ISO-8601 UTC with milliseconds when not whole seconds; "+inf"/"-inf"
 * for the extremes. */
void tdm__format_iso(tdm_time_ms ms, char *buf, size_t n)
{
    if (ms == TDM_TIME_MIN || ms == TDM_TIME_MAX)
        snprintf(buf, n, "%s", ms == TDM_TIME_MIN ? "-inf" : "+inf");
    else if (!tdm_time_format(ms, 0, buf, n))
        snprintf(buf, n, "%lldms", (long long)ms);
}

/* Appends printf output at *o, never past @p n (always terminated). */
static void app(char *buf, size_t n, size_t *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Formatting never overruns: the output is cut at n - 1. */
static void app(char *buf, size_t n, size_t *o, const char *fmt, ...)
{
    if (*o + 1 >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *o, n - *o, fmt, ap);
    va_end(ap);
    if (w > 0)
        *o = *o + (size_t)w >= n ? n - 1 : *o + (size_t)w;
}

/* JSON-like text, cut to fit @p n. */
void tdm__row_render(const tdm__row *row, char *buf, size_t n)
{
    size_t o = 0;
    if (!n)
        return;
    buf[0] = 0;
    app(buf, n, &o, "{");
    for (int i = 0; i < row->schema->n; i++) {
        const tdm__field *f = &row->schema->fields[i];
        const tdm__val *v = &row->v[i];
        app(buf, n, &o, "%s\"%s\": ", i ? ", " : "", f->name);
        if (v->null) {
            app(buf, n, &o, "null");
            continue;
        }
        switch (f->type) {
        case TDM_TYPE_STRING:
            app(buf, n, &o, "\"");
            for (uint32_t k = 0; k < v->u.s.len; k++) {
                unsigned char c = (unsigned char)v->u.s.p[k];
                if (c == '"' || c == '\\')
                    app(buf, n, &o, "\\%c", c);
                else if (c < 0x20)
                    app(buf, n, &o, "\\u%04x", c);
                else
                    app(buf, n, &o, "%c", c);
            }
            app(buf, n, &o, "\"");
            break;
        case TDM_TYPE_DOUBLE:
            app(buf, n, &o, "%.17g", v->u.d);
            break;
        case TDM_TYPE_BOOL:
            app(buf, n, &o, "%s", v->u.i ? "true" : "false");
            break;
        default:
            if (tdm__is_decimal(f->type)) { /* 1658.20, not 165820 */
                char d[32];
                tdm__dec_format(d, sizeof d, v->u.i,
                                TDM_DECIMAL_SCALE(f->type));
                app(buf, n, &o, "%s", d);
            } else {
                app(buf, n, &o, "%lld", (long long)v->u.i);
            }
            break;
        }
    }
    app(buf, n, &o, "}");
}
