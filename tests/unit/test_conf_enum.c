/* SPDX-License-Identifier: MIT */
/* test_conf_enum.c - the enums conf_enum.h generates from the ENUM rows
 * of conf_table.def agree with the table: every ENUM row has its enum,
 * its '|'-joined choices text lists the constants' texts in order, and
 * parsing a choice's text gives the choice's constant (the value code
 * compares with).  The table is expanded here a third time, into a list
 * of rows with their constants. */
#include <string.h>

#include "harness.h"
#include "runtime/rt.h"

typedef struct choice {
    const char *name; /* "TDM__TRIGGER_COUNT" */
    int value;
    const char *text; /* "count" */
} choice;

typedef struct enum_row {
    tdm__scope scope;
    const char *key;
    const char *type; /* "tdm__trigger_kind" */
    const choice *choices;
    int n;
} enum_row;

#define X(sc, k, ty, df, mn, mx, un, ch, de)                                   \
    TDM__CONF_ENUM_ROW_##ty({TDM__SCOPE_##sc, k, ch}, )
#define CHOICES(type, items)                                                   \
#type, (const choice[]){items }, (int)(sizeof((const choice[]){items}) /   \
                                           sizeof(choice))
#define CH(constant, text) {#constant, (int)(constant), text},
static const enum_row enum_rows[] = {
#include "runtime/conf_table.def"
};
#undef X
#undef CHOICES
#undef CH

#define N_ENUM_ROWS ((int)(sizeof enum_rows / sizeof enum_rows[0]))

/* The list above holds every ENUM row of the table, once. */
TDM_TEST(every_enum_row_has_its_enum)
{
    int n, found = 0;
    const tdm__conf_row *rows = tdm__conf_rows(&n);
    for (int i = 0; i < n; i++) {
        if (rows[i].type != TDM__CT_ENUM)
            continue;
        found++;
        int hits = 0;
        for (int e = 0; e < N_ENUM_ROWS; e++)
            hits += enum_rows[e].scope == rows[i].scope &&
                    strcmp(enum_rows[e].key, rows[i].key) == 0;
        ASSERT_EQ(hits, 1);
    }
    ASSERT_EQ(found, N_ENUM_ROWS);
    ASSERT_TRUE(N_ENUM_ROWS >= 25);
}

/* Constants count from 0 in the order of the choices text, and parsing
 * each text gives its constant. */
TDM_TEST(enum_values_agree_with_the_choices)
{
    const tdm__conf_row *rows = tdm__conf_rows(NULL);
    for (int e = 0; e < N_ENUM_ROWS; e++) {
        const enum_row *er = &enum_rows[e];
        int row = tdm__conf_find(er->scope, er->key);
        ASSERT_TRUE(row >= 0);
        ASSERT_EQ(rows[row].type, TDM__CT_ENUM);
        ASSERT_TRUE(strncmp(er->type, "tdm__", 5) == 0);
        char joined[256] = "";
        for (int k = 0; k < er->n; k++) {
            const choice *ch = &er->choices[k];
            ASSERT_EQ(ch->value, k);
            ASSERT_TRUE(strncmp(ch->name, "TDM__", 5) == 0);
            if (k)
                strcat(joined, "|");
            strcat(joined, ch->text);
            tdm__conf_val v = {0};
            ASSERT_OK(tdm__conf_parse(row, ch->text, false, &v, NULL, 0));
            ASSERT_EQ(v.i, ch->value);
            tdm__conf_val_free(&v);
        }
        ASSERT_STR_EQ(rows[row].choices, joined);
    }
}

/* A few constants by name, as the runtime uses them. */
TDM_TEST(enum_constants_by_name)
{
    int row = tdm__conf_find(TDM__SCOPE_WINDOW, "trigger");
    tdm__conf_val v = {0};
    ASSERT_OK(tdm__conf_parse(row, "count", false, &v, NULL, 0));
    ASSERT_EQ(v.i, TDM__TRIGGER_COUNT);
    row = tdm__conf_find(TDM__SCOPE_WINDOW, "window.type");
    ASSERT_OK(tdm__conf_parse(row, "global", false, &v, NULL, 0));
    ASSERT_EQ(v.i, TDM__WINDOW_TYPE_GLOBAL);
    row = tdm__conf_find(TDM__SCOPE_SOURCE, "type");
    ASSERT_OK(tdm__conf_parse(row, "kafka", false, &v, NULL, 0));
    ASSERT_EQ(v.i, TDM__SOURCE_TYPE_KAFKA);
    row = tdm__conf_find(TDM__SCOPE_JOB, "restart.strategy");
    ASSERT_OK(tdm__conf_parse(row, "fixed-delay", false, &v, NULL, 0));
    ASSERT_EQ(v.i, TDM__RESTART_STRATEGY_FIXED_DELAY);
    tdm__conf_val_free(&v);
}
