/* SPDX-License-Identifier: MIT */
/* src_parts.h - a source subtask's per-partition arrays and names: the
 * arrays (finished and reported flags, unit evidence, touched list,
 * replay floors, horizons, pauses, fence key sets, hot and published
 * partition metrics) grow together to cover every split the reader has;
 * new partitions get the names metrics label them with (a file source's
 * globbed files dealt round-robin, a field's value, a version-2
 * connector's own name).
 *
 * Invariant: t->part_cap >= t->n_parts, and every array has part_cap
 * entries; the published ones (t->met.parts) move only under t->met.mx.
 * Used by task_source.c (the scan, the poll) and by tdm__rt_source_task_init.
 */
#ifndef TDM_RT_SRC_PARTS_H
#define TDM_RT_SRC_PARTS_H

#include "runtime/task_source.h"

/* Makes the per-partition arrays hold at least @p need entries. */
tdm_err tdm__src_parts_reserve(tdm__rt_src_task *t, int need);

/* Makes the arrays and the reader cover partition @p p (partitions
 * named by a field appear as rows arrive; @p row is the first row of
 * @p p then, NULL at setup).  Splits a restored reader already has
 * (partitions named by a field that the checkpoint knew) are not
 * added again. */
tdm_err tdm__src_parts_ensure(tdm__rt_src_task *t, int p, const tdm__row *row);

#endif /* TDM_RT_SRC_PARTS_H */
