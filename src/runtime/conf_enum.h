/* SPDX-License-Identifier: MIT */
/* conf_enum.h - one C enum per ENUM key of conf_table.def.
 *
 * Each ENUM row of the table lists its choices as CH(CONSTANT, "text")
 * items; this header expands the table a second time and turns every such
 * list into `typedef enum tdm__window_type { TDM__WINDOW_TYPE_TUMBLING,
 * TDM__WINDOW_TYPE_SLIDING, ... } tdm__window_type;`.  The invariant: the
 * constant of a choice is its index in the row's '|'-joined choices text,
 * which is what tdm__conf_parse stores in tdm__conf_val.i, because both
 * come from the same list in the same order.  Code compares parsed ENUM
 * values only with these constants (never with bare numbers), so
 * reordering the choices of a row cannot change behaviour silently.
 * Users: rt.h (the typed node specs, node_spec.c) and the run, operator
 * and validation code reading them; tests/unit/test_conf_enum.c checks
 * every row against its enum.
 */
#ifndef TDM_CONF_ENUM_H
#define TDM_CONF_ENUM_H

/* Only ENUM rows produce a declaration (variadic: an expanded CHOICES
 * holds commas). */
#define TDM__CONF_ENUM_ROW_STRING(...)
#define TDM__CONF_ENUM_ROW_INT(...)
#define TDM__CONF_ENUM_ROW_DOUBLE(...)
#define TDM__CONF_ENUM_ROW_BOOL(...)
#define TDM__CONF_ENUM_ROW_DURATION(...)
#define TDM__CONF_ENUM_ROW_ENUM(...) __VA_ARGS__
#define TDM__CONF_ENUM_ROW_SCHEMA(...)
#define TDM__CONF_ENUM_ROW_AGGREGATES(...)
#define TDM__CONF_ENUM_ROW_FIELDS(...)
#define TDM__CONF_ENUM_ROW_PROPS(...)

#define X(sc, k, ty, df, mn, mx, un, ch, de) TDM__CONF_ENUM_ROW_##ty(ch)
#define CHOICES(type, items) typedef enum type { items } type;
#define CH(constant, text) constant,
#include "runtime/conf_table.def"
#undef X
#undef CHOICES
#undef CH

#endif
