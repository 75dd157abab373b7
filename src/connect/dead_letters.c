/* SPDX-License-Identifier: MIT */
/* dead_letters.c - the run's dead-letter file for callers of the public
 * API (tdm_dead_letters_open / _write / _close).
 *
 * A thin handle over the text sink's file object, opened as a run opens
 * its job key dead_letter, so a tool's bad-record file has the run's
 * lines byte for byte.  Invariant: the handle owns exactly one open sink
 * object from open until close.  Used by `tidemark analyze --dead-letter`.
 */
#include "connect/connect.h"

struct tdm_dead_letters {
    tdm__sinkobj *sink;
};

/* Creates the file (see tidemark.h). */
tdm_err tdm_dead_letters_open(const char *path, tdm_dead_letters **out,
                              char *errbuf, size_t errbuf_size)
{
    if (!path || !out)
        return TDM_ERR_INVAL;
    *out = NULL;
    tdm_dead_letters *dl = tdm__calloc(1, sizeof *dl);
    if (!dl)
        return TDM_ERR_NOMEM;
    tdm__sink_conf conf = {.name = "dead_letter",
                           .type = TDM__SINK_FILE,
                           .path = path,
                           .format = TDM__FMT_JSON};
    tdm_err err = tdm__text_sink.open(&conf, 0, &dl->sink, errbuf, errbuf_size);
    if (err != TDM_OK)
        goto fail;
    *out = dl;
    return TDM_OK;
fail:
    tdm__free(dl);
    return err == TDM_ERR_NOMEM ? err : TDM_ERR_IO;
}

/* Appends one bad record (see tidemark.h). */
tdm_err tdm_dead_letters_write(tdm_dead_letters *dl, const char *location,
                               const char *reason, const char *raw,
                               size_t raw_len)
{
    if (!dl)
        return TDM_ERR_INVAL;
    return tdm__text_sink.write_dead(dl->sink, location, reason, raw, raw_len);
}

/* Closes the file and frees the handle (see tidemark.h). */
tdm_err tdm_dead_letters_close(tdm_dead_letters *dl, char *errbuf,
                               size_t errbuf_size)
{
    if (!dl)
        return TDM_OK;
    tdm_err err = tdm__text_sink.close(dl->sink, errbuf, errbuf_size);
    tdm__free(dl);
    return err;
}
