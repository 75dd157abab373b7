/* SPDX-License-Identifier: MIT */
/* file_parts.c - the part files of an exactly-once file sink: their
 * names, the order those names sort in, and the move aside of an old
 * run's output when a fresh start replaces it.
 *
 * With checkpoints on, writer w of a file sink at "dir/base" never writes
 * "dir/base" itself (docs/checkpoints.md, "File sink parts"):
 *
 *   dir/.base.part-<w>.inprogress             rows since the last pre-commit
 *   dir/.base.part-<id>-<w>.pending           pre-committed at checkpoint id
 *   dir/base.part-<id>-<w>                    committed: visible
 *   dir/base.replaced-<id>/                   what a fresh start replaced
 *
 * with <id> in ten digits and <w> in decimal.  The checkpoint comes
 * first in the name (P1) because that is the order a consumer can rely
 * on across rescales: within one checkpoint epoch every key is written
 * by one writer (the key's subtask in that run), and epochs follow each
 * other, so the visible parts of a sink in name order hold every key's
 * rows in the order they were produced, whatever the parallelism of each
 * run.  Names by writer first ("part-<w>-<id>", before session 11) only
 * kept a writer's own rows in order, and a rescale moves keys between
 * writers.  Those older names are still read (P2): a checkpoint taken by
 * an older tidemark lists pending parts under them, and recovery must
 * find them.
 *
 * A fresh start (no checkpoint restored) must never delete what an
 * earlier run committed, nor hide it before the new run has replaced it:
 * a fresh run killed before its first checkpoint leaves the old run able
 * to resume.  So a fresh start deletes nothing; once its first
 * checkpoint is durable, and before any of its parts becomes visible,
 * the runtime calls tdm__parts_supersede(): every part older than the
 * new run's first checkpoint moves into "dir/base.replaced-<first>/"
 * (S1), where nothing that reads "base.part-*" sees it and nothing is
 * lost.  Pending parts of checkpoints that never became durable were
 * never committed and go (S3).  The move is idempotent (S2: a part already
 * moved is no longer listed), so a crash in the middle is finished by the next
 * restore of the new run.  New ids start above every part and every
 * replaced-folder present (tdm__parts_top), so a new part can never take an old
 * one's name, even when the checkpoint folder was emptied by hand.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "connect/conn.h"
#include "core/fileio.h"

#define ID_DIGITS 10

/* Length of the run of decimal digits at @p p. */
static size_t digits(const char *p)
{
    return strspn(p, "0123456789");
}

static uint64_t decimal(const char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (uint64_t)(p[i] - '0');
    return v;
}

/* Parses "A-B" (and, for an in-progress part, "A") after ".part-":
 * the current form has the ten-digit id first (P1), the old form the
 * writer first (P2); @p rest is what follows. */
static bool parse_fields(const char *p, tdm__part *pt, const char **rest)
{
    size_t a = digits(p);
    if (a == 0 || a > ID_DIGITS)
        return false;
    if (p[a] != '-') { /* an in-progress part: the writer alone */
        if (a > 9)
            return false;
        pt->writer = (int)decimal(p, a);
        *rest = p + a;
        return true;
    }
    size_t b = digits(p + a + 1);
    if (a == ID_DIGITS && b >= 1 && b <= 9) { /* P1: <id>-<w> */
        pt->id = decimal(p, a);
        pt->writer = (int)decimal(p + a + 1, b);
    } else if (b == ID_DIGITS && a <= 9) { /* P2: <w>-<id> */
        pt->writer = (int)decimal(p, a);
        pt->id = decimal(p + a + 1, b);
        pt->legacy = true;
    } else {
        return false;
    }
    *rest = p + a + 1 + b;
    return true;
}

bool tdm__part_parse(const char *base, const char *name, tdm__part *pt)
{
    size_t bl = strlen(base);
    bool hidden = name[0] == '.';
    const char *p = name + hidden, *rest = NULL;

    memset(pt, 0, sizeof *pt);
    if (strncmp(p, base, bl) != 0 || strncmp(p + bl, ".part-", 6) != 0)
        return false;
    if (!parse_fields(p + bl + 6, pt, &rest))
        return false;
    if (hidden && pt->id == 0 && !pt->legacy &&
        strcmp(rest, ".inprogress") == 0)
        pt->kind = TDM__PART_INPROGRESS;
    else if (hidden && pt->id > 0 && strcmp(rest, ".pending") == 0)
        pt->kind = TDM__PART_PENDING;
    else if (!hidden && pt->id > 0 && *rest == '\0')
        pt->kind = TDM__PART_VISIBLE;
    return pt->kind != 0;
}

void tdm__part_path(char *out, size_t n, const char *dir, const char *base,
                    int kind, uint64_t id, int writer)
{
    if (kind == TDM__PART_INPROGRESS)
        snprintf(out, n, "%s/.%s.part-%d.inprogress", dir, base, writer);
    else if (kind == TDM__PART_PENDING)
        snprintf(out, n, "%s/.%s.part-%010llu-%d.pending", dir, base,
                 (unsigned long long)id, writer);
    else
        snprintf(out, n, "%s/%s.part-%010llu-%d", dir, base,
                 (unsigned long long)id, writer);
}

void tdm__part_legacy_path(char *out, size_t n, const char *dir,
                           const char *base, int kind, uint64_t id, int writer)
{
    if (kind == TDM__PART_PENDING)
        snprintf(out, n, "%s/.%s.part-%d-%010llu.pending", dir, base, writer,
                 (unsigned long long)id);
    else
        snprintf(out, n, "%s/%s.part-%d-%010llu", dir, base, writer,
                 (unsigned long long)id);
}

tdm_err tdm__part_split(const char *path, char **dir, char **base, char *errbuf,
                        size_t errbuf_size)
{
    const char *slash = strrchr(path, '/');
    size_t dlen = slash ? (size_t)(slash - path) : 0;
    const char *b = slash ? slash + 1 : path;

    *dir = slash ? tdm__strndup(path, dlen ? dlen : 1) : tdm__strndup(".", 1);
    *base = tdm__strndup(b, strlen(b));
    if (!*dir || !*base) {
        tdm__free(*dir);
        tdm__free(*base);
        *dir = *base = NULL;
        return TDM_ERR_NOMEM;
    }
    if (!**base)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_INVAL,
                         "path '%s' names a folder", path);
    return TDM_OK;
}

/* The id of a "base.replaced-<id>" folder name, 0 for anything else. */
static uint64_t replaced_id(const char *base, const char *name)
{
    size_t bl = strlen(base);
    const char *p = name + bl + 10;
    if (strncmp(name, base, bl) != 0 ||
        strncmp(name + bl, ".replaced-", 10) != 0 || digits(p) != ID_DIGITS ||
        p[ID_DIGITS] != '\0')
        return 0;
    return decimal(p, ID_DIGITS);
}

/* Lists @p path's folder with its dir/base split (every out NULL on an
 * error, which names the path). */
typedef struct listing {
    char *dir, *base;
    char **names;
    size_t n;
} listing;

static void listing_free(listing *l)
{
    tdm__fio_list_free(l->names, l->n);
    tdm__free(l->dir);
    tdm__free(l->base);
    memset(l, 0, sizeof *l);
}

static tdm_err listing_open(listing *l, const char *path, char *errbuf,
                            size_t errbuf_size)
{
    struct stat st;
    memset(l, 0, sizeof *l);
    tdm_err err = tdm__part_split(path, &l->dir, &l->base, errbuf, errbuf_size);
    if (err == TDM_OK && stat(l->dir, &st) != 0 && errno == ENOENT)
        return TDM_OK; /* no folder yet: nothing was ever written */
    if (err == TDM_OK)
        err = tdm__fio_list(l->dir, &l->names, &l->n, errbuf, errbuf_size);
    if (err != TDM_OK)
        listing_free(l);
    return err;
}

tdm_err tdm__parts_top(const char *path, uint64_t *top, char *errbuf,
                       size_t errbuf_size)
{
    listing l;
    tdm_err err = listing_open(&l, path, errbuf, errbuf_size);

    *top = 0;
    for (size_t i = 0; err == TDM_OK && i < l.n; i++) {
        tdm__part pt;
        uint64_t id = tdm__part_parse(l.base, l.names[i], &pt)
                          ? pt.id
                          : replaced_id(l.base, l.names[i]);
        if (id > *top)
            *top = id;
    }
    listing_free(&l);
    return err;
}

/* Moves one old part into @p aside (S1): a visible part keeps its name;
 * a pending part of a checkpoint at or below @p committed was committed
 * (its checkpoint is durable; a crash came before its rename) and
 * arrives visible.  An existing target is never replaced. */
static tdm_err move_part(const listing *l, const char *name,
                         const tdm__part *pt, const char *aside,
                         uint64_t committed, char *errbuf, size_t errbuf_size)
{
    char from[4300], to[4300];
    struct stat st;

    snprintf(from, sizeof from, "%s/%s", l->dir, name);
    if (pt->kind == TDM__PART_PENDING && pt->id <= committed)
        tdm__part_path(to, sizeof to, aside, l->base, TDM__PART_VISIBLE, pt->id,
                       pt->writer);
    else
        snprintf(to, sizeof to, "%s/%s", aside, name);
    if (lstat(to, &st) == 0)
        return tdm__errf(errbuf, errbuf_size, TDM_ERR_IO,
                         "cannot move '%s' aside: '%s' exists (not "
                         "replaced)",
                         from, to);
    return tdm__fio_rename(from, to, errbuf, errbuf_size);
}

tdm_err tdm__parts_supersede(const char *path, uint64_t first,
                             uint64_t committed, size_t *moved, char *errbuf,
                             size_t errbuf_size)
{
    listing l;
    char aside[4300] = "";
    tdm_err err = listing_open(&l, path, errbuf, errbuf_size);

    *moved = 0;
    for (size_t i = 0; err == TDM_OK && i < l.n; i++) {
        tdm__part pt;
        if (!tdm__part_parse(l.base, l.names[i], &pt) ||
            pt.kind == TDM__PART_INPROGRESS || pt.id >= first)
            continue;
        if (pt.kind == TDM__PART_PENDING && pt.id > committed) {
            char junk[4300]; /* S3: never committed, never visible */
            snprintf(junk, sizeof junk, "%s/%s", l.dir, l.names[i]);
            err = tdm__fio_unlink(junk, errbuf, errbuf_size);
            continue;
        }
        if (!aside[0]) {
            snprintf(aside, sizeof aside, "%s/%s.replaced-%010llu", l.dir,
                     l.base, (unsigned long long)first);
            err = tdm__fio_mkdir_p(aside, errbuf, errbuf_size);
        }
        if (err == TDM_OK)
            err = move_part(&l, l.names[i], &pt, aside, committed, errbuf,
                            errbuf_size);
        if (err == TDM_OK)
            (*moved)++;
    }
    if (err == TDM_OK && *moved > 0)
        err = tdm__fio_fsync_dir(aside, errbuf, errbuf_size);
    if (err == TDM_OK && *moved > 0)
        err = tdm__fio_fsync_dir(l.dir, errbuf, errbuf_size);
    listing_free(&l);
    return err;
}
