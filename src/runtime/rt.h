/* SPDX-License-Identifier: MIT */
/* rt.h - internals of the job runtime: the configuration table and typed
 * values (conf.c), the job and node layouts behind the public tdm_job and
 * tdm_node (job.c), the execution plan, queues and subtasks (run.c,
 * queue.c, task_*.c), and the hooks unit tests use to plug in their own
 * sources, sinks and clock.  Nothing here is public.
 */
#ifndef TDM_RT_H
#define TDM_RT_H

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "connect/connect.h"
#include "core/hist.h"
#include "runtime/row.h"
#include "runtime/spec.h"
#include "state/state.h"
#include "state/wstore.h"

/* ====================================================================== */
/* The configuration table (conf.c)                                        */
/* ====================================================================== */

typedef enum tdm__scope {
    TDM__SCOPE_JOB = 0,
    TDM__SCOPE_SOURCE,
    TDM__SCOPE_WINDOW,
    TDM__SCOPE_JOIN,
    TDM__SCOPE_SINK
} tdm__scope;

typedef enum tdm__ctype {
    TDM__CT_STRING = 0,
    TDM__CT_INT,
    TDM__CT_DOUBLE,
    TDM__CT_BOOL,
    TDM__CT_DURATION,
    TDM__CT_ENUM,
    TDM__CT_SCHEMA,
    TDM__CT_AGGREGATES,
    TDM__CT_FIELDS,
    TDM__CT_PROPS /* key "prefix.*": pass-through properties */
} tdm__ctype;

/* One row of conf_table.def. */
typedef struct tdm__conf_row {
    tdm__scope scope;
    const char *key;
    tdm__ctype type;
    const char *def;
    int64_t imin, imax; /* INT, DURATION */
    double dmin, dmax;  /* DOUBLE */
    const char *unit;
    const char *choices;
    const char *desc;
} tdm__conf_row;

/* Aggregate functions of the AGGREGATES type. */
typedef enum tdm__aggfn {
    TDM__FN_COUNT = 0,
    TDM__FN_SUM,
    TDM__FN_MIN,
    TDM__FN_MAX,
    TDM__FN_AVG,
    TDM__FN_COUNT_DISTINCT,
    TDM__FN_FIRST,
    TDM__FN_LAST
} tdm__aggfn;

typedef struct tdm__agg_spec {
    tdm__aggfn fn;
    char *field; /* NULL for count */
    char *as;    /* output column name */
} tdm__agg_spec;

/* A parsed value.  Which members are meaningful depends on the row's
 * type; everything is owned by the value (tdm__conf_val_free). */
typedef struct tdm__conf_val {
    bool set;            /* given explicitly (not the default) */
    char *text;          /* the text it was parsed from */
    int64_t i;           /* INT, DURATION (ms), BOOL (0/1), ENUM (choice
                            index = its conf_enum.h constant) */
    double d;            /* DOUBLE */
    tdm__schema schema;  /* SCHEMA (n == 0: none) */
    tdm__agg_spec *aggs; /* AGGREGATES */
    int n_aggs;
    char **fields; /* FIELDS */
    int n_fields;
    char **props; /* PROPS: 2 * n_props strings, name then value,
                     the prefix removed, in the order first set */
    int n_props;
} tdm__conf_val;

/* The table: *n receives the number of rows. */
const tdm__conf_row *tdm__conf_rows(int *n);
/* Row index of @p key in @p scope, or -1.  A key "p.<name>" (name not
 * empty) finds the PROPS row "p.*" when no row is named exactly. */
int tdm__conf_find(tdm__scope scope, const char *key);
/* Sets property @p key of the PROPS row @p row ("kafka.session.timeout.ms"
 * for row "kafka.*") to @p value in *v: a property set again is replaced,
 * an empty value removes it.  Messages start with the key.  TDM_OK,
 * TDM_ERR_INVAL (not a PROPS row, empty or blank-containing name),
 * TDM_ERR_NOMEM (v unchanged). */
tdm_err tdm__conf_set_prop(int row, const char *key, const char *value,
                           tdm__conf_val *v, char *errbuf, size_t errbuf_size);
/* The value of property @p name (without the prefix) in a PROPS value,
 * or NULL when it is not set. */
const char *tdm__conf_prop(const tdm__conf_val *v, const char *name);
/* Parses @p text for row @p row into *out (freed first), checking the
 * type, the bounds (unless @p is_default) and the choices.  Messages
 * start with the key: `window.size: expected a duration like "5s" or
 * "200ms", got "5 parsecs"`.  TDM_OK, TDM_ERR_INVAL, TDM_ERR_NOMEM. */
tdm_err tdm__conf_parse(int row, const char *text, bool is_default,
                        tdm__conf_val *out, char *errbuf, size_t errbuf_size);
/* Releases what a value holds and zeroes it. */
void tdm__conf_val_free(tdm__conf_val *v);
/* Parses a duration ("250ms", "5s", "1m30s", "-2h", bare ms) into *ms.
 * Returns false on malformed or overflowing text. */
bool tdm__conf_duration(const char *text, int64_t *ms);
/* Formats @p ms with the largest unit that divides it ("90s", "2h"). */
void tdm__conf_format_duration(int64_t ms, char *buf, size_t n);
/* The name of an aggregate function ("count_distinct"). */
const char *tdm__conf_aggfn_name(tdm__aggfn fn);
/* The text of choice @p value (a conf_enum.h constant) of the ENUM key
 * @p key of @p scope into @p buf ("fixed-delay"); "" when the key is not
 * an ENUM or the value is out of range. */
void tdm__conf_enum_text(tdm__scope scope, const char *key, int64_t value,
                         char *buf, size_t size);

/* ====================================================================== */
/* Jobs and nodes (job.c)                                                  */
/* ====================================================================== */

/* A user filter or map of a source. */
typedef struct tdm__udf {
    bool is_map;
    tdm_filter_fn filter;
    tdm_map_fn map;
    void *ud;
} tdm__udf;

struct tdm_node {
    tdm_job *job;
    tdm_node_kind kind;
    tdm__scope scope;
    char *name;
    tdm__conf_val *vals; /* one per table row (only this scope's used) */
    tdm__udf *udfs;
    int n_udfs, cap_udfs;
    /* The filter and compute.* keys compiled by tdm_job_validate (expr.c;
     * NULL: neither key), run before the udfs. */
    struct tdm__src_exprs *exprs;
    /* Test hooks (NULL: the connectors chosen by "type"). */
    const tdm__source_vtab *src_vt;
    const tdm__sink_vtab *sink_vt;
    /* The effective schema of a source: its own, or a generator's. */
    tdm__schema gen_schema;
    int gen_kind;
    /* A window's or join's output stream as other operators read it
     * (docs/runtime.md, Chained operators): computed by tdm_job_validate
     * (n == 0: not yet). */
    tdm__schema out_schema;
    /* The typed keys of its kind (spec.h), refilled whenever one is set
     * (tdm__node_spec_fill) and read instead of keys by name. */
    tdm__node_spec spec;
};

typedef struct tdm__run tdm__run;
typedef struct tdm__run_record tdm__run_record;

struct tdm_job {
    tdm__conf_val *vals; /* one per table row (JOB scope used) */
    tdm__job_spec spec;  /* the typed vals, refilled whenever one is set */
    tdm_node **nodes;
    int n_nodes, cap_nodes;
    tdm_progress_cb progress;
    void *progress_ud;
    tdm_log_cb log;
    void *log_ud;
    pthread_mutex_t log_mu;
    /* Processing time (test hook; NULL: wall-clock anchored monotonic). */
    tdm_clock_fn clock_fn;
    void *clock_ud;
    int64_t clock_base_real, clock_base_mono;
    /* The record of its runs (run_record.h): run state, counters and
     * what the metrics side keeps; made and freed with the job
     * (job_api.c), never touched by the definition's code. */
    tdm__run_record *rec;
    /* A task's job (task.id): where its Kafka sources' durable
     * positions go (its task host commits them to the group); NULL
     * elsewhere. */
    tdm__task_commit_fn *task_commit;
    void *task_commit_ud;
    /* A task's job with checkpoint.store: changelog: its partition of
     * the changelog topic, where each checkpoint goes before it is
     * durable (task_changelog.h; owned by the task host); NULL
     * elsewhere. */
    struct tdm__tclog *changelog;
};

/* 1 while a run of the job that owns @p rec goes on (run_record.c): the
 * definition refuses changes then. */
int tdm__run_record_running(const tdm__run_record *rec);

/* Why the job's restart.* and checkpoint.tolerable_failed keys cannot
 * apply, in @p buf; NULL when they can (restart.c, for
 * tdm_job_validate). */
const char *tdm__rt_restart_refusal(const tdm_job *job, char *buf, size_t n);
/* Why @p job cannot run as tasks (scale_out: tasks) as configured, in
 * @p buf, or NULL (task_rules.c). */
const char *tdm__task_refusal(const tdm_job *job, char *buf, size_t len);
/* Makes an empty job definition, every job key at its default and the
 * log on stderr; no run record yet (job.c; tdm_job_new in job_api.c adds
 * it).  TDM_OK or TDM_ERR_NOMEM. */
tdm_err tdm__job_alloc(tdm_job **out);
/* Frees the job's definition: its nodes, key values and log lock, then
 * the job (job.c; the run record is freed before, by job_api.c's
 * tdm_job_destroy). */
void tdm__job_free(tdm_job *job);
/* Value of key @p key of a node (the table's row for its scope); a zeroed
 * static value when the key does not exist (a programming error). */
const tdm__conf_val *tdm__node_val(const tdm_node *n, const char *key);
/* Shorthands on tdm__node_val. */
int64_t tdm__node_int(const tdm_node *n, const char *key);
const char *tdm__node_str(const tdm_node *n, const char *key);
/* Value of a job-level key. */
const tdm__conf_val *tdm__job_val(const tdm_job *job, const char *key);
int64_t tdm__job_int(const tdm_job *job, const char *key);
const char *tdm__job_str(const tdm_job *job, const char *key);
/* Compiles the `filter` and `compute.*` keys of source @p n (borrowed)
 * against its schema (job_exprs.c); @p ts_field (or NULL) names the
 * field the event time is read from, which compute may not assign.  On
 * success *out receives the set (owned by the caller), or NULL when the
 * source has neither key.  On failure errbuf holds "filter: column N:
 * ..." or "compute.<field>: ..." (a key of the table first, so that the
 * CLI can place the message in the file).  Returns TDM_OK, TDM_ERR_INVAL
 * or TDM_ERR_NOMEM. */
tdm_err tdm__src_exprs_compile(const tdm_node *n, const char *ts_field,
                               struct tdm__src_exprs **out, char *errbuf,
                               size_t errbuf_size);
/* Frees a set (NULL is fine; job_exprs.c). */
void tdm__src_exprs_destroy(struct tdm__src_exprs *x);
/* Fills @p n's spec from its keys (spec.c; not while a run reads it:
 * keys are set only while the job is not running). */
void tdm__node_spec_fill(tdm_node *n);
/* Fills @p job's spec from its job-level keys (spec.c; likewise). */
void tdm__job_spec_fill(tdm_job *job);
/* The schema of a source node: its "schema" key or, for a generator
 * without one, the generator's fixed schema.  NULL if neither. */
const tdm__schema *tdm__node_schema(const tdm_node *n);
/* "source", "window", "join" or "sink" (static text). */
const char *tdm__node_kind_name(tdm_node_kind kind);
/* Sends one line to the job's log callback (serialised). */
void tdm__job_log(tdm_job *job, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Processing time of the job, in epoch-anchored milliseconds that never
 * go backwards. */
tdm_time_ms tdm__job_now(tdm_job *job);

/* The test-only seams of the job (tdm__node_set_source_vtab,
 * tdm__job_set_clock, tdm__job_queue_waits, ...) are declared in
 * testhooks.h. */

/* ====================================================================== */
/* Key encoding and row codecs (codec.c)                                   */
/* ====================================================================== */

/* Keys are the bytes of the key fields, each as a tag byte (0 null,
 * 1 present) then 8 bytes (int64, timestamp, bool, double with -0.0
 * folded into 0.0) or a 4-byte length and the string bytes.  Equal field
 * values give equal bytes, so union inputs whose key fields have the same
 * types key alike.  The common single string key is its own bytes (no
 * copy), with null as "\0" and a string starting with NUL escaped by one
 * more: still one value, one encoding. */
typedef struct tdm__keybuf {
    char *p;
    size_t len, cap;
} tdm__keybuf;

/* Encodes fields @p idx[0..n) of @p row; *key and *len receive the
 * bytes, in @p kb or (single string key) in the row itself.  TDM_OK or
 * TDM_ERR_NOMEM. */
tdm_err tdm__key_encode(const tdm__row *row, const int *idx, int n,
                        tdm__keybuf *kb, const char **key, size_t *len);
/* The key of a row when it is its own bytes - a single string key, not
 * null and not starting with NUL (see above) - without a copy: true with
 * *key pointing into the row's string (or a static ""), false when the
 * key must be encoded. */
static inline bool tdm__key_inplace(const tdm__row *row, const int *idx, int n,
                                    const char **key, size_t *len)
{
    if (n == 1 && row->schema->fields[idx[0]].type == TDM_TYPE_STRING) {
        const tdm__val *v = &row->v[idx[0]];
        if (!v->null && (v->u.s.len == 0 || v->u.s.p[0] != 0)) {
            *key = v->u.s.len ? v->u.s.p : "";
            *len = v->u.s.len;
            return true;
        }
    }
    return false;
}
/* Length of the key bytes of one non-null fixed-width field: the tag
 * byte 1 and the 8 value bytes. */
#define TDM__KEY_FIXED_LEN 9
/* The 8 value bytes of a non-null fixed-width field (any type but
 * string) as tdm__key_encode writes them after the tag, read as one
 * native-order word: the int64 (timestamps and bools too) or the
 * double's bits with -0.0 folded into 0.0. */
static inline uint64_t tdm__key_fixed_bits(const tdm__val *v, tdm_type type)
{
    uint64_t u;
    if (type == TDM_TYPE_DOUBLE) {
        double d = v->u.d == 0 ? 0.0 : v->u.d;
        memcpy(&u, &d, 8);
    } else {
        memcpy(&u, &v->u.i, 8);
    }
    return u;
}
/* Writes the TDM__KEY_FIXED_LEN key bytes of a non-null fixed-width
 * field whose value bytes are @p bits (tdm__key_fixed_bits) to @p out:
 * the same bytes as tdm__key_encode of that single field. */
static inline void tdm__key_fixed_put(uint64_t bits, char *out)
{
    out[0] = 1;
    memcpy(out + 1, &bits, 8);
}
/* tdm__keys_hash of the TDM__KEY_FIXED_LEN key bytes of @p bits
 * (tdm__key_fixed_put): the routing hash of a single fixed-width key.
 * On a little-endian machine it is spelled out on the value itself:
 * the 9 bytes' first word is the tag 1 and the low 7 value bytes
 * (1 | bits << 8), the tail word is bits.  Going through the bytes
 * instead made the compiler store them and load a word straddling the
 * two stores, a store-forwarding stall that was half of a two-phase
 * flush at parallelism 2.  test_rt_keys checks that both agree. */
static inline uint64_t tdm__key_fixed_hash(uint64_t bits)
{
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) &&             \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && TDM__KEY_FIXED_LEN == 9
    return tdm__hash_fixed9(bits, TDM__HASH_ROUTE);
#else
    char b[TDM__KEY_FIXED_LEN];
    tdm__key_fixed_put(bits, b);
    return tdm__keys_hash(b, TDM__KEY_FIXED_LEN);
#endif
}

/* tdm__ws_hash of the TDM__KEY_FIXED_LEN key bytes of @p bits: the
 * window store's hash of a single fixed-width key, spelled out on the
 * value like tdm__key_fixed_hash and for the same reason (a window
 * subtask hashed each partial row's key bytes just written to a buffer:
 * a store-forwarding stall per partial).  test_rt_keys checks that both
 * agree. */
static inline uint64_t tdm__key_fixed_ws_hash(uint64_t bits)
{
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) &&             \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && TDM__KEY_FIXED_LEN == 9
    return tdm__ws_mix(1 | bits << 8, bits, tdm__ws_seed(TDM__KEY_FIXED_LEN));
#else
    char b[TDM__KEY_FIXED_LEN];
    tdm__key_fixed_put(bits, b);
    return tdm__ws_hash(b, TDM__KEY_FIXED_LEN);
#endif
}
/* tdm__key_encode with its hot cases inlined: a single string key read
 * in place, and a single non-null fixed-width key written into @p kb
 * once it has room (its first use goes through tdm__key_encode, which
 * grows it). */
static inline tdm_err tdm__key_get(const tdm__row *row, const int *idx, int n,
                                   tdm__keybuf *kb, const char **key,
                                   size_t *len)
{
    if (tdm__key_inplace(row, idx, n, key, len))
        return TDM_OK;
    if (n == 1 && kb->cap >= TDM__KEY_FIXED_LEN) {
        tdm_type type = row->schema->fields[idx[0]].type;
        const tdm__val *v = &row->v[idx[0]];
        if (type != TDM_TYPE_STRING && !v->null) {
            tdm__key_fixed_put(tdm__key_fixed_bits(v, type), kb->p);
            kb->len = TDM__KEY_FIXED_LEN;
            *key = kb->p;
            *len = TDM__KEY_FIXED_LEN;
            return TDM_OK;
        }
    }
    return tdm__key_encode(row, idx, n, kb, key, len);
}
/* Decodes an encoded key into @p out (n values of @p types); strings
 * point into @p key.  Returns false when the bytes are malformed. */
bool tdm__key_decode(const char *key, size_t len, const tdm_type *types, int n,
                     tdm__val *out);
/* The key group of a key's hash, as Flink's KeyGroupRangeAssignment
 * (hash mod key_groups), with the modulo replaced by a multiply-shift
 * range reduction (the high 32 bits of the hash scaled to [0, groups)):
 * as uniform, and no division on the per-record path. */
static inline int tdm__key_group(uint64_t hash, int key_groups)
{
    return (int)(((hash >> 32) * (uint64_t)key_groups) >> 32);
}
/* The subtask that owns a key group: group * P / key_groups, so every
 * subtask owns one contiguous range of groups (the runtime keeps the
 * answers in a table). */
static inline int tdm__key_subtask(int group, int key_groups, int parallelism)
{
    return (int)((int64_t)group * parallelism / key_groups);
}

/* Serialises a row (timestamp, values, strings) into @p kb, for
 * operators that buffer records (joins keep the payload bytes). */
tdm_err tdm__row_pack(const tdm__row *row, tdm__keybuf *kb);
/* The same in two steps, to pack straight into memory of the caller's:
 * the bytes tdm__row_pack makes of @p row, and writing them at @p dst
 * (tdm__row_packed_size bytes, any alignment).  Both borrow @p row. */
size_t tdm__row_packed_size(const tdm__row *row);
void tdm__row_pack_into(const tdm__row *row, void *dst);
/* Rebuilds a row from tdm__row_pack bytes: @p vals must hold the
 * schema's n values; strings point into @p p. */
void tdm__row_unpack(const void *p, size_t len, const tdm__schema *schema,
                     tdm__val *vals, tdm__row *out);
/* Whether @p len bytes at @p p can be a tdm__row_pack of @p schema: long
 * enough, the value count matching, every string inside the string area.
 * Bytes from outside (a repartition topic) are checked with this before
 * tdm__row_unpack, which trusts its input. */
bool tdm__row_pack_valid(const void *p, size_t len, const tdm__schema *schema);
/* Renders a row as one line of JSON-like text (for dead letters). */
void tdm__row_render(const tdm__row *row, char *buf, size_t n);
/* Formats epoch ms as ISO-8601 UTC ("2024-12-02T10:00:00Z"). */
void tdm__format_iso(tdm_time_ms ms, char *buf, size_t n);
/* Reads a source's start.timestamp: whole epoch milliseconds (fewer than
 * 19 digits, optional minus) or ISO-8601 text.  True with *out set; false
 * for anything else (job.c reports it at validation). */
bool tdm__start_ts_parse(const char *s, tdm_time_ms *out);

/* ====================================================================== */
/* Row aggregates (rowagg.c)                                               */
/* ====================================================================== */

/* The tdm_aggregate_methods (version 2) the window subtasks use for every
 * aggregate list except a single count: each push gives the row and its
 * input (whose field indexes apply), or a two-phase partial, in the
 * tdm_agg_ctx (tdm_winop_push_ctx); add, merge and result return
 * TDM_ERR_NOMEM when an allocation fails.  Results are packed into the
 * result bytes as n tdm__val followed by string bytes
 * (tdm__rowagg_unpack). */
typedef struct tdm__rowagg tdm__rowagg;

/* Creates the aggregate state for @p n aggregates; @p field_idx[in][a] is
 * the field index of aggregate a in input in (-1 for count), @p types[a]
 * the input field type.  The result types are tdm__rowagg_type. */
tdm_err tdm__rowagg_new(const tdm__agg_spec *specs, int n,
                        const tdm_type *types, int n_inputs,
                        int *const *field_idx, tdm__rowagg **out);
/* Builds the tdm_aggregate (takes no ownership of @p ra, which must
 * outlive it). */
tdm_err tdm__rowagg_aggregate(tdm__rowagg *ra, tdm_aggregate **out);
/* The output type of aggregate @p fn over a field of type @p in. */
tdm_type tdm__rowagg_type(tdm__aggfn fn, tdm_type in);
/* Decodes result bytes into @p out (n values of the output @p types;
 * strings point into  bytes).  False when the bytes are malformed. */
bool tdm__rowagg_unpack(const void *bytes, size_t len, int n,
                        const tdm_type *types, tdm__val *out);
/* Two-phase aggregation (localagg.c): the source's local phase keeps
 * accumulators of this layout and size, adds rows of its input to them
 * with tdm__rowagg_add (TDM_OK or TDM_ERR_NOMEM), and the window subtask
 * merges each partial into its windows by pushing a record whose context
 * names the partial (tdm_agg_ctx.partial; the record has no row). */
size_t tdm__rowagg_acc_size(const tdm__rowagg *ra);
tdm_err tdm__rowagg_add(tdm__rowagg *ra, void *acc, int input,
                        const tdm__row *row);
/* Whether aggregates @p specs over input types @p types give the same
 * result bits in two phases as in one: count, and min and max of integer
 * fields (int64, timestamp, bool).  Sums and averages depend on the
 * order of the additions: an int64 sum saturates (MAX + 1 - MAX is 0 in
 * one order, 1 in another), an average adds int64 values as doubles
 * (rounding past 2^53), and floating point is not associative; double
 * min and max depend on the order of -0.0 and 0.0 or a NaN;
 * count_distinct, first and last are not mergeable partials here. */
bool tdm__rowagg_two_phase(const tdm__agg_spec *specs, int n,
                           const tdm_type *types);
void tdm__rowagg_destroy(tdm__rowagg *ra);

/* ====================================================================== */
/* Queues (queue.c)                                                        */
/* ====================================================================== */

/* What travels between subtasks: a batch segment, or a control item in
 * order with the batches of its channel.  BARRIER(n) (t = checkpoint
 * id n) separates a channel's items before checkpoint n from those
 * after it. */
typedef enum tdm__item_kind {
    TDM__ITEM_BATCH = 1,
    TDM__ITEM_WATERMARK,
    TDM__ITEM_STATUS,
    TDM__ITEM_END,
    TDM__ITEM_BARRIER,
    TDM__ITEM_FENCE,  /* keys of a revoked split (outbox.h, tdm__rt_fence) */
    TDM__ITEM_PARTIAL /* partial accumulators (outbox.h, tdm__rt_partials) */
} tdm__item_kind;

struct tdm__sbatch;

/* One row of a batch segment as the source routed it: its index, and
 * what a window subtask needs of it to push it - the timestamp and the
 * key bytes - so that the consumer need not read the row itself.  Rows
 * are written on the source's core; every cache line of them a consumer
 * reads must travel to its core and back before the batch is refilled,
 * and these few bytes are a fraction of the row's.  The key is one of:
 *   - key_len == TDM__SEL_FIXED: a single non-null fixed-width field,
 *     its value bytes in fixed (tdm__key_fixed_bits; the key bytes are
 *     tdm__key_fixed_put of them, tdm__sel_key);
 *   - key != NULL: key_len bytes at key, in the batch's arena (a single
 *     string read in place, tdm__key_inplace) or static (the one-byte
 *     key of a null single field);
 *   - key == NULL: any other key; the consumer encodes it from the row.
 * A string key never has TDM__SEL_FIXED bytes (a batch holds less). */
#define TDM__SEL_FIXED UINT32_MAX
typedef struct tdm__sel {
    uint32_t row;
    uint32_t key_len;
    union {
        const char *key; /* into the batch's arena, static, or NULL */
        uint64_t fixed;  /* key_len == TDM__SEL_FIXED */
    };
    tdm_time_ms ts;
} tdm__sel;

/* The key bytes of a selected row when the source put them in the
 * selection: true with (*key, *len) set - a fixed-width key written to
 * @p buf (TDM__KEY_FIXED_LEN bytes) - or false when the consumer must
 * encode the key from the row. */
static inline bool tdm__sel_key(const tdm__sel *sl, char *buf, const char **key,
                                size_t *len)
{
    if (sl->key_len == TDM__SEL_FIXED) {
        tdm__key_fixed_put(sl->fixed, buf);
        *key = buf;
        *len = TDM__KEY_FIXED_LEN;
        return true;
    }
    *key = sl->key;
    *len = sl->key_len;
    return sl->key != NULL;
}

typedef struct tdm__item {
    uint8_t kind;
    int32_t ch;   /* input channel at the consumer */
    int32_t idle; /* STATUS */
    uint32_t n;
    tdm_time_ms t;         /* WATERMARK */
    tdm_time_ms dt;        /* WATERMARK: the data watermark under it, below t
                            * while a source's fallback drives (op_fallback.h);
                            * t otherwise */
    struct tdm__sbatch *b; /* BATCH: the source batch (one reference) */
    const tdm__sel *sel;   /* BATCH: the selected rows */
    union {
        void *fence;   /* FENCE: an tdm__rt_fence the consumer frees;
                          PARTIAL: an tdm__rt_partials it frees */
        int64_t at_us; /* WATERMARK, END: when the source sent it
                        * (tdm__mono_us), for result latency */
    };
} tdm__item;

/* A bounded multi-producer single-consumer queue with one channel per
 * producer; each channel holds at most @p per_channel items, so a full
 * channel blocks only its producer. */
typedef struct tdm__queue {
    pthread_mutex_t mu;
    pthread_cond_t not_empty;
    pthread_cond_t *not_full; /* one per channel */
    tdm__item *ring;
    size_t cap, head, count;
    int n_ch, per_ch;
    int *ch_count;
    bool consumer_waiting;
    bool poked;      /* tdm__queue_poke: the next pop returns */
    size_t wake_at;  /* lazy pushes wake a sleeping consumer from here */
    int64_t signals; /* consumer wake-ups sent (tests) */
    const atomic_int *abort;
    _Atomic int64_t *waits;
    /* Per channel: the producer's own wait counter (NULL: none). */
    _Atomic int64_t **ch_waits;
} tdm__queue;

tdm_err tdm__queue_init(tdm__queue *q, int n_channels, int per_channel,
                        const atomic_int *abort, _Atomic int64_t *waits);
/* Appends @p it on channel it->ch, waiting while the channel is full.
 * Returns false (nothing queued) when the run aborts. */
bool tdm__queue_push(tdm__queue *q, const tdm__item *it);
/* tdm__queue_push for a producer that will push again soon: a sleeping
 * consumer is woken only once wake_at items wait (4, or the channel
 * capacity if smaller), so a busy pipeline makes one wake-up per few
 * batches instead of one per batch.  The producer must call
 * tdm__queue_kick before it blocks or slows down (a poll that did not
 * fill its batch), so that no item waits for longer than that.  Returns
 * as tdm__queue_push. */
bool tdm__queue_push_lazy(tdm__queue *q, const tdm__item *it);
/* Wakes the consumer if it sleeps while items wait (after lazy pushes). */
void tdm__queue_kick(tdm__queue *q);
/* Takes up to @p max items in order; waits up to @p timeout_ms (< 0:
 * forever, until an item or abort).  Returns the number taken. */
size_t tdm__queue_pop(tdm__queue *q, tdm__item *out, size_t max,
                      int64_t timeout_ms);
/* Checkpoint alignment (docs/checkpoints.md, "In the runtime"): the
 * consumer took @p n items of channel @p ch that it holds back (the
 * channel is blocked by a barrier); they count against the channel's
 * capacity again, so its producer stops instead of filling the queue.
 * tdm__queue_release gives the capacity back once they are handled. */
void tdm__queue_hold(tdm__queue *q, int ch, int n);
void tdm__queue_release(tdm__queue *q, int ch, int n);
/* Wakes every waiter (after abort was set). */
void tdm__queue_wake(tdm__queue *q);
/* Makes the consumer's current or next tdm__queue_pop return, with no
 * item if none waits (a question for the subtask between batches). */
void tdm__queue_poke(tdm__queue *q);
void tdm__queue_fini(tdm__queue *q);

/* A source subtask's batches: the rows of one poll plus, per target
 * (downstream subtask of a consumer), the indexes routed to it.  A batch
 * returns to its pool when the producer and every consumer that got a
 * segment of it are done with it. */
typedef struct tdm__sbatch {
    tdm__batch *b;
    struct tdm__pool *pool;
    tdm__sel *sel;            /* n_targets * cap selected rows */
    uint32_t *sel_n;          /* per target: rows selected */
    uint32_t *sel_sent;       /* per target: rows already sent */
    uint32_t *counts;         /* the padded block sel_n and sel_sent live in */
    struct tdm__sbatch *next; /* free list / all list */
    struct tdm__sbatch *all_next;
    /* Consumers update refs while the producer reads the fields above,
     * and neighbouring allocations, for every row it routes: 64 bytes
     * on either side keep refs off their cache lines. */
    char pad0_[64];
    atomic_int refs;
    char pad1_[64];
} tdm__sbatch;

typedef struct tdm__pool {
    pthread_mutex_t mu;
    pthread_cond_t freed;
    tdm__sbatch *free_list;
    tdm__sbatch *all;
    int n_all, max;
    int n_free;      /* batches on the free list */
    int wake_at;     /* a waiting producer is woken with this many free */
    int64_t signals; /* producer wake-ups sent (tests) */
    bool waiting;
    /* Called (pool unlocked) before the producer waits for a batch: the
     * source subtask kicks the queues it pushed to lazily. */
    void (*before_wait)(void *ud);
    void *before_wait_ud;
    const tdm__schema *schema;
    size_t batch_cap;
    int n_targets;
    const atomic_int *abort;
    tdm_job *job;
    _Atomic int64_t *waits; /* the producer's own wait counter, or NULL */
} tdm__pool;

tdm_err tdm__pool_init(tdm__pool *p, const tdm__schema *schema,
                       size_t batch_cap, int n_targets, int max,
                       const atomic_int *abort, tdm_job *job);
/* A cleared batch with one reference (the caller's), waiting while
 * @p max batches are out.  A waiting producer is woken when half the
 * pool is free again (at least one batch), not at every release:
 * it then fills several batches in a row instead of trading one wake-up
 * per batch with its consumers.  NULL on abort or NOMEM (*err says
 * which). */
tdm__sbatch *tdm__pool_get(tdm__pool *p, tdm_err *err);
/* Drops one reference; the last one returns the batch to its pool. */
void tdm__sbatch_release(tdm__sbatch *sb);
void tdm__pool_wake(tdm__pool *p);
void tdm__pool_fini(tdm__pool *p);

#endif /* TDM_RT_H */
