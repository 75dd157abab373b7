/* SPDX-License-Identifier: MIT */
/* err.c - error names and messages, generated from TDM_ERR_MAP in
 * tidemark.h (the one table), and the helpers that format detail messages
 * into caller buffers and per-handle message slots.
 */
#include <stdio.h>

#include "core.h"

const char *tdm_strerror(int err)
{
    switch (err) {
    case TDM_OK:
        return "success";
#define TDM__ERR_MSG(name, val, msg)                                           \
    case TDM_ERR_##name:                                                       \
        return msg;
        TDM_ERR_MAP(TDM__ERR_MSG)
#undef TDM__ERR_MSG
    default:
        return "unknown error";
    }
}

const char *tdm_err_name(int err)
{
    switch (err) {
    case TDM_OK:
        return "TDM_OK";
#define TDM__ERR_NAME(name, val, msg)                                          \
    case TDM_ERR_##name:                                                       \
        return "TDM_ERR_" #name;
        TDM_ERR_MAP(TDM__ERR_NAME)
#undef TDM__ERR_NAME
    default:
        return "TDM_ERR_UNKNOWN";
    }
}

/* Formats a message into (errbuf, size) when errbuf is not NULL and
 * returns err unchanged. */
tdm_err tdm__errf(char *errbuf, size_t errbuf_size, tdm_err err,
                  const char *fmt, ...)
{
    if (errbuf && errbuf_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(errbuf, errbuf_size, fmt, ap);
        va_end(ap);
    }
    return err;
}

/* Formats a message into a handle's message slot and returns err. */
tdm_err tdm__msgf(tdm__msg *m, tdm_err err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->text, sizeof m->text, fmt, ap);
    va_end(ap);
    return err;
}

const char *tdm_version(void)
{
    return TDM_VERSION;
}

int tdm_version_number(void)
{
    return TDM_VERSION_NUMBER;
}
