/* SPDX-License-Identifier: MIT */
/* ts_text.c - timestamp units and timestamp text for callers of the
 * public API (tdm_ts_unit_name, tdm_time_parse).
 *
 * The public tdm_ts_unit values are the connectors' TDM__UNIT_* values
 * (checked below at compile time), so both sides name a unit alike and
 * the conversions of ts.c serve both: a tool parses "--now 2026-01-01T
 * 00:00:00Z" exactly as a source parses its timestamp field.  Used by
 * `tidemark analyze`.
 */
#include "connect/conn.h"

_Static_assert((int)TDM_TS_UNIT_MS == (int)TDM__UNIT_MS &&
                   (int)TDM_TS_UNIT_S == (int)TDM__UNIT_S &&
                   (int)TDM_TS_UNIT_US == (int)TDM__UNIT_US &&
                   (int)TDM_TS_UNIT_NS == (int)TDM__UNIT_NS &&
                   (int)TDM_TS_UNIT_ISO8601 == (int)TDM__UNIT_ISO8601,
               "tdm_ts_unit and TDM__UNIT_* must agree");

/* The name of a unit (see tidemark.h). */
const char *tdm_ts_unit_name(tdm_ts_unit unit)
{
    return tdm__conn_unit_name((int)unit);
}

/* Converts timestamp text (see tidemark.h). */
tdm_err tdm_time_parse(const char *text, size_t len, tdm_ts_unit unit,
                       tdm_time_ms *out)
{
    if (!text || !out || unit < TDM_TS_UNIT_MS || unit > TDM_TS_UNIT_ISO8601)
        return TDM_ERR_INVAL;
    return tdm__ts_from_text(text, len, (int)unit, out);
}
