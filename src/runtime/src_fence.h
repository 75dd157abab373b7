/* SPDX-License-Identifier: MIT */
/* src_fence.h - the source subtask's key fence: when a version-2
 * split is revoked while running, the keys it read whose results are not
 * settled yet go to the window subtasks owning them in FENCE items, after
 * the rows sent so far, so that its next owner writes their windows.
 *
 * State: its own struct, tdm__src_fence_state (t->fence): fk, per split
 * and consumer edge a key set filled per row by the outbox's router
 * (tdm__outbox_track_key) and pruned at each commit; fk_cap splits
 * (grown with the partition arrays, src_parts.c).
 * Hooks: on_split_finished (tdm__src_fence_send), after a commit
 * (tdm__src_fence_prune).
 */
#ifndef TDM_RT_SRC_FENCE_H
#define TDM_RT_SRC_FENCE_H

#include "runtime/outbox.h"

/* Key fence: per split and consumer edge (index p * n_edges + e), key ->
 * highest commit horizon of its records; fk_cap splits. */
typedef struct tdm__src_fence_state {
    struct tdm__rt_keyset *fk;
    int fk_cap;
} tdm__src_fence_state;

/* Key fence: split @p p was revoked while running.  Its keys with a
 * record whose results are not settled yet go, each to the window
 * subtask that owns it, in a FENCE item after the rows sent so far (so
 * every record of the split is in the operator before its keys are
 * fenced).  Out of memory fails the run. */
void tdm__src_fence_send(tdm__rt_src_task *t, int p);

/* Split @p p finished (reported to the reader): a revoked split's keys
 * are fenced (tdm__src_fence_send), and the split's key sets freed. */
void tdm__src_fence_on_finished(tdm__rt_src_task *t, int p);

/* After a commit with results settled up to @p done: keys whose records'
 * results are all settled need no fence. */
void tdm__src_fence_prune(tdm__rt_src_task *t, tdm_time_ms done);

/* Frees every split's key sets (NULL-safe parts). */
void tdm__src_fence_free(tdm__rt_src_task *t);

/* Grows this component's per-split arrays from @p old to @p cap entries
 * (the new ones initialised); TDM_OK or TDM_ERR_NOMEM, the arrays then
 * still valid at their old size (src_parts.c's reserve). */
tdm_err tdm__src_fence_grow(tdm__rt_src_task *t, int old, int cap);

#endif /* TDM_RT_SRC_FENCE_H */
