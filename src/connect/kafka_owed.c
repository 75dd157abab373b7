/* SPDX-License-Identifier: MIT */
/* kafka_owed.c - the positions a task host owes its consumer group.
 *
 * A task host commits each task's durable input position to the group
 * (kafka_members.c), for lag tools.  The commit is asynchronous and the
 * group refuses it whenever the membership is in motion: a rebalance in
 * progress, a generation that just ended, a member the coordinator
 * dropped while this process was paused.  While a task runs, its next
 * checkpoint commits again and repairs that.  Its last commit (the final
 * checkpoint when it stops) has no next one, so a refusal then would
 * leave the group's offset behind for good, and lag tools would show lag
 * on a job that has read everything.
 *
 * So a member keeps, per partition, the newest position it asked for and
 * what the group answered: asked (in flight), taken, or refused.  Before
 * the member leaves the group it serves the group (the rebalance that
 * refused it ends) and asks again for every refused position, unless
 * the group already holds that position or a later one (a task's
 * positions only grow, from owner to owner, so a later offset is a newer
 * owner's and must not be overwritten).
 *
 * An answer for an older offset than the newest asked is stale: a
 * success says nothing of the newer one, and a refusal is repaired by
 * the newer one in flight.  Answers for one partition arrive in the
 * order asked (one connection to the coordinator), so for equal offsets
 * the last answer is the group's word.
 *
 * Pure bookkeeping under a mutex: tasks ask from their own threads, the
 * answers come on the host's, inside its poll.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "connect/kafka_members.h"
#include "connect/kafka.h"

typedef struct {
    char *topic;
    int32_t part;
    int64_t offset;
    char meta[TDM__KMETA_MAX];
    int state; /* OW_ASKED, OW_TAKEN, OW_REFUSED */
} owed;

enum { OW_ASKED, OW_TAKEN, OW_REFUSED };

struct tdm__kowed {
    pthread_mutex_t mu;
    owed *v;
    int n, cap;
};

tdm__kowed *tdm__kowed_new(void)
{
    tdm__kowed *o = tdm__calloc(1, sizeof *o);
    if (o)
        pthread_mutex_init(&o->mu, NULL);
    return o;
}

void tdm__kowed_free(tdm__kowed *o)
{
    if (!o)
        return;
    for (int i = 0; i < o->n; i++)
        tdm__free(o->v[i].topic);
    tdm__free(o->v);
    pthread_mutex_destroy(&o->mu);
    tdm__free(o);
}

/* The entry of (@p topic, @p part), or NULL.  Under the mutex. */
static owed *find(tdm__kowed *o, const char *topic, int32_t part)
{
    for (int i = 0; i < o->n; i++)
        if (o->v[i].part == part && strcmp(o->v[i].topic, topic) == 0)
            return &o->v[i];
    return NULL;
}

/* A new entry for (@p topic, @p part), or NULL (no memory).  Under the
 * mutex. */
static owed *add(tdm__kowed *o, const char *topic, int32_t part)
{
    if (o->n == o->cap) {
        int cap = o->cap ? 2 * o->cap : 8;
        owed *v = tdm__realloc(o->v, (size_t)cap * sizeof *v);
        if (!v)
            return NULL;
        o->v = v;
        o->cap = cap;
    }
    owed *e = &o->v[o->n];
    memset(e, 0, sizeof *e);
    e->topic = tdm__strndup(topic, strlen(topic));
    if (!e->topic)
        return NULL;
    e->part = part;
    o->n++;
    return e;
}

bool tdm__kowed_ask(tdm__kowed *o, const char *topic, int32_t part,
                    int64_t offset, const char *meta)
{
    pthread_mutex_lock(&o->mu);
    owed *e = find(o, topic, part);
    if (!e)
        e = add(o, topic, part);
    if (e) {
        /* R-KO-1: the newest ask is the one owed. */
        e->offset = offset;
        snprintf(e->meta, sizeof e->meta, "%s", meta);
        e->state = OW_ASKED;
    }
    pthread_mutex_unlock(&o->mu);
    return e != NULL;
}

void tdm__kowed_answer(tdm__kowed *o, const char *topic, int32_t part,
                       int64_t offset, bool ok)
{
    pthread_mutex_lock(&o->mu);
    owed *e = find(o, topic, part);
    /* R-KO-2: an answer for an older ask is stale. */
    if (e && e->offset == offset)
        e->state = ok ? OW_TAKEN : OW_REFUSED;
    pthread_mutex_unlock(&o->mu);
}

void tdm__kowed_held(tdm__kowed *o, const char *topic, int32_t part,
                     int64_t committed)
{
    pthread_mutex_lock(&o->mu);
    owed *e = find(o, topic, part);
    /* R-KO-3: the group holds it, or a newer owner's later position. */
    if (e && e->state == OW_REFUSED && committed >= e->offset)
        e->state = OW_TAKEN;
    pthread_mutex_unlock(&o->mu);
}

void tdm__kowed_count(tdm__kowed *o, int *asked, int *refused)
{
    int a = 0, r = 0;
    pthread_mutex_lock(&o->mu);
    for (int i = 0; i < o->n; i++) {
        a += o->v[i].state == OW_ASKED;
        r += o->v[i].state == OW_REFUSED;
    }
    pthread_mutex_unlock(&o->mu);
    *asked = a;
    *refused = r;
}

int tdm__kowed_refused(tdm__kowed *o, tdm__kowed_fn *fn, void *ud)
{
    int k = 0;
    pthread_mutex_lock(&o->mu);
    for (int i = 0; i < o->n; i++) {
        const owed *e = &o->v[i];
        if (e->state != OW_REFUSED)
            continue;
        k++;
        if (fn)
            fn(ud, e->topic, e->part, e->offset, e->meta);
    }
    pthread_mutex_unlock(&o->mu);
    return k;
}
