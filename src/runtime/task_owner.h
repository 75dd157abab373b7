/* SPDX-License-Identifier: MIT */
/* task_owner.h - the owner file of a task (task_owner.c says why). */
#ifndef TDM_RUNTIME_TASK_OWNER_H
#define TDM_RUNTIME_TASK_OWNER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/core.h"

/* The longest path of a task's checkpoint folder plus its suffixes. */
#define TDM__TASK_PATH_MAX 4096

/* Takes the task whose checkpoints are in @p dir: writes the next owner
 * epoch into "<dir>.owner" (read + 1, this process named), durably,
 * and returns it in *epoch.  TDM_OK, TDM_ERR_IO, TDM_ERR_INVAL. */
tdm_err tdm__task_owner_take(const char *dir, int64_t *epoch, char *errbuf,
                             size_t errbuf_size);

/* Whether task @p task, run from @p dir under owner epoch @p epoch, is
 * still this process's (epoch 0: not a hosted task, always TDM_OK).
 * TDM_ERR_STATE with the new owner named when another process took it
 * over; TDM_ERR_IO when the file cannot be read. */
tdm_err tdm__task_owner_check(const char *dir, int64_t task, int64_t epoch,
                              char *errbuf, size_t errbuf_size);

/* This process's name in owner files and changelog owner records:
 * "<host>-<pid>". */
void tdm__task_owner_name(char *out, size_t n);

/* Whether the checkpoint lock of @p dir (ckpt_store's "<dir>/LOCK") is
 * free now: false while a process of this machine, an older owner of the
 * task, still has the task's checkpoints open. */
bool tdm__task_owner_lock_free(const char *dir);

#endif
