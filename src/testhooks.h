/* SPDX-License-Identifier: MIT */
/* testhooks.h - every seam the tests reach into the library through.
 *
 * The library is a product: it never kills its host, counts faults or
 * reads test switches from the environment.  The tests need all three,
 * so those seams are compiled only when the build option TDM_TEST_HOOKS
 * is on (scripts/test.sh turns it on; a default build leaves it off and
 * `nm -g --defined-only libtidemark.a` shows none of the names in part
 * 1 below).  Part 2 lists internal functions that exist only for tests:
 * they are ordinary code, compiled in every build, but declared here and
 * not in their module's header, so that the production headers say only
 * what production code uses.
 *
 * Part 1, the seams (TDM_TEST_HOOKS only):
 *
 *   seam                       for                        used by
 *   ------------------------   ------------------------   ----------------
 *   tdm__alloc_fail_after      the N-th allocation fails  unit tests of
 *                              (NOMEM paths; an atomic    every module
 *                              counter, runtime threads   (test_state,
 *                              allocate too)              test_winop, ...)
 *   tdm__fio_fault*            the N-th file operation    test_fileio,
 *                              of a kind fails with an    test_ckpt_store,
 *                              errno, or SIGKILLs the     test_rt_ckpt,
 *                              process (KILL)             test_sink_2pc
 *   TDM_FIO_FAULT=spec         the same from the          tests/crash/,
 *     (environment)            environment, read at the   cli/checkpoint*.sh,
 *                              first file operation       cli/ckpt_fail.sh,
 *                                                         kafka/checkpoint.sh
 *   TDM_KAFKA_MOCK_KILL=N      SIGKILL just before the    kafka/checkpoint.sh
 *     (environment)            N-th Kafka transaction
 *                              commit with messages
 *   TDM_KAFKA_MOCK_MARKER=1    commit the marker offset   kafka/checkpoint.sh
 *     (environment)            plainly too (the mock
 *                              cluster drops
 *                              transactional ones)
 *   TDM_TEST_CLOCK_FILE=PATH   processing time is the     cli/stuck.sh
 *     (environment)            ms written in PATH (read
 *                              at every reading, never
 *                              back; runtime/job.c)
 *
 * When TDM_TEST_HOOKS is off, tests/hooks_off.c stands in for the part-1
 * functions in the test executables: arming a fault ends the case with
 * exit code 77, which CTest reports as skipped (SKIP_RETURN_CODE), and
 * the shell tests that set the environment switches are not registered
 * (CMakeLists.txt, docs/design-notes.md "Test hooks").
 *
 * Part 2 (every build): see the declarations below; each says which
 * tests call it.  The server's one (tdm__history_count) stays in
 * server.h: the server includes nothing below tidemark.h and core.h.
 */
#ifndef TDM_TESTHOOKS_H
#define TDM_TESTHOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "tidemark.h"
#include "core/fileio.h"

/* The modules' types by name only, so that every defining file, low
 * layer or high, can include this header to check its definitions
 * against these declarations (C11 allows a typedef to be repeated). */
typedef struct tdm__keys tdm__keys;
typedef struct tdm__timers tdm__timers;
typedef struct tdm__kwm tdm__kwm;
typedef struct tdm__batch tdm__batch;
typedef struct tdm__source_conf tdm__source_conf;
typedef struct tdm__nx_conf tdm__nx_conf;
typedef struct tdm__nx_event tdm__nx_event;
typedef struct tdm__nx_strings tdm__nx_strings;
typedef struct tdm__source_vtab tdm__source_vtab;
typedef struct tdm__sink_vtab tdm__sink_vtab;
struct tdm__enc;
struct tdm__dec;

/* ==== Part 1: seams, compiled only with TDM_TEST_HOOKS ==== */

/* The n-th allocation from now on (1 = the next) fails, and every one
 * after it until reset with n = 0.  Process-wide and atomic. */
void tdm__alloc_fail_after(long n);

/* The "errno" that makes the chosen file operation kill the process with
 * SIGKILL just before it would run, instead of failing: a crash at an
 * exact point of a write protocol (kill -9 tests). */
#define TDM__FIO_KILL (-1)

/* Arms a fault: the @p n-th operation of kind @p op from now (1 = the
 * next one) fails with errno @p err; with @p sticky every later operation
 * of that kind fails too.  n <= 0 disarms that kind.  Re-arming a kind
 * restarts its count.  Other kinds keep their state. */
void tdm__fio_fault(tdm__fio_op op, long n, int err, int sticky);
/* Disarms every kind and resets the counters. */
void tdm__fio_fault_clear(void);
/* How many operations of kind @p op ran (or were failed) since it was
 * last armed or cleared. */
long tdm__fio_fault_count(tdm__fio_op op);
/* How many operations were failed by injection since the last
 * tdm__fio_fault_clear() (all kinds). */
long tdm__fio_fault_fired(void);
/* Parses and arms a spec "KIND:N:ERRNO[:sticky]", several separated by
 * ',' (e.g. "fsync:3:ENOSPC,rename:1:EIO"); N-M in place of N fails the
 * N-th to the M-th operation (a disk full for a while: "mkdir:1-3:ENOSPC"
 * fails three checkpoints, then the disk has room again).  KIND is open,
 * write, fsync, rename, unlink, read, mkdir or list; ERRNO is ENOSPC,
 * EIO, EDQUOT, EROFS, EACCES, ENOENT, a decimal number, or KILL
 * (TDM__FIO_KILL).  Returns TDM_OK or TDM_ERR_INVAL with a message; on
 * error nothing is armed.  Borrows @p spec.  The environment variable
 * TDM_FIO_FAULT goes through this at the first file operation of the
 * process (a bad value is ignored and reported once on stderr, since
 * there is no caller to return it to). */
tdm_err tdm__fio_fault_parse(const char *spec, char *errbuf,
                             size_t errbuf_size);
/* The name of a kind ("fsync"), for messages. */
const char *tdm__fio_op_name(tdm__fio_op op);
/* For fileio.c only: the errno an armed fault assigns to this operation
 * of kind @p op (counting it), or 0; may SIGKILL the process. */
int tdm__fio_fault_hit(tdm__fio_op op);

/* ==== Part 2: internal functions that only tests call (every build) ==== */

/* state/keys.c: the reference count of a live id (test_state). */
uint32_t tdm__keys_refs(const tdm__keys *ks, uint32_t id);
/* state/timers.c: the smallest registered time, TDM_TIME_MAX when empty
 * (test_state). */
tdm_time_ms tdm__timers_peek(const tdm__timers *t);

/* time/wmgen.c: one channel's generator alone: emitter state, generator
 * core, time left to the next periodic emission (test_snap_time; the
 * runtime checkpoints whole readers). */
tdm_err tdm__wmgen_snapshot(const tdm_wmgen *gen, struct tdm__enc *e);
tdm_err tdm__wmgen_restore(tdm_wmgen *gen, struct tdm__dec *d);
/* time/reader.c: one split alone (a split section), restored into split
 * @p split of a reader without touching the reader's own state.  INVAL
 * (bad index).  (test_snap_time.) */
tdm_err tdm__reader_split_snapshot(const tdm_reader *r, int split,
                                   struct tdm__enc *e);
tdm_err tdm__reader_split_restore(tdm_reader *r, int split, struct tdm__dec *d);

/* window/winop.c: makes a new operator (before any input) use the
 * general path even when the lean one applies, so that tests can compare
 * the two.  Returns TDM_OK, or TDM_ERR_STATE after the first input
 * (test_winop, test_snap_ops). */
tdm_err tdm__winop_disable_lean(tdm_winop *op);

/* connect/json.c: tdm__json_parse_line_mode in the automatic mode
 * (test_connect_json).  Parses one line of text into a new row of @p b
 * (tdm__batch_add), filling the schema's fields and row->ts from
 * ts_field/ts_unit (event time).  Returns TDM_OK, or TDM_ERR_PARSE with a
 * reason in (reason, n) naming the field; the caller then drops the row
 * and dead-letters the line.  An empty (or all-blank) line is
 * TDM_ERR_PARSE "empty line". */
tdm_err tdm__json_parse_line(const tdm__source_conf *conf, const char *line,
                             size_t len, tdm__batch *b, char *reason, size_t n);
/* connect/kafka_shuffle.c: number of distinct writers heard from on
 * @p p, 0 for unknown p (test_kafka_shuffle). */
int tdm__kwm_writers(const tdm__kwm *t, int p);

/* connect/nexmark.c, the definition's reference computations, against
 * which the bulk paths are checked (test_nexmark; bench/nexmark_ref.c,
 * the reference runner of tests/cli/nexmark_*.sh):
 * - the price (1.3.4) of a uniform draw u = @p m / 2^53 (the low 53 bits
 *   of @p m): round(10^(6u) * 100), bit for bit what the definition's
 *   llround(pow(10, 6u) * 100) gives, without pow in the common case;
 * - the c-th event (c = events emitted before it, from 0);
 * - an event's strings (nexmark.h, tdm__nx_strings) in @p buf. */
int64_t tdm__nx_price_of(uint64_t m);
void tdm__nx_event_at(const tdm__nx_conf *c, int64_t count, tdm__nx_event *out);
void tdm__nx_strings_of(const tdm__nx_event *ev, char *buf, size_t cap,
                        tdm__nx_strings *out);

/* runtime/job.c, the job's seams for the runtime's unit tests
 * (test_rt_*, test_diagnose, test_server through test_rt_kit.h and
 * test_rt_feed.h): */
/* Makes source node @p n read through @p vt instead of its "type"; the
 * node still needs a "schema".  Keeps a reference to @p vt. */
void tdm__node_set_source_vtab(tdm_node *n, const tdm__source_vtab *vt);
/* Makes sink node @p n write through @p vt. */
void tdm__node_set_sink_vtab(tdm_node *n, const tdm__sink_vtab *vt);
/* Replaces the job's processing-time clock (fn must be thread-safe and
 * never go backwards). */
void tdm__job_set_clock(tdm_job *job, tdm_clock_fn fn, void *ud);
/* Times a source subtask waited for a full queue or for a free batch
 * since the run started (backpressure). */
int64_t tdm__job_queue_waits(const tdm_job *job);
/* Source batches currently allocated / the most at once. */
int64_t tdm__job_batches_live(const tdm_job *job);
int64_t tdm__job_batches_peak(const tdm_job *job);

#endif
