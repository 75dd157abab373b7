/* SPDX-License-Identifier: MIT */
/*
** runner.c - tidemark-conformance [--verbose] PATH...: runs conformance
** vectors (FORMAT.md) through the public API (include/tidemark.h) only.
**
** PATH is a vector file or a folder (its *.json, sorted by name).  Prints
** "PASS name" or "FAIL name: first difference" per vector, then "N passed,
** N failed"; exits 1 if any vector failed or could not be read, 2 on usage.
*/
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "conformance.h"

/* Totals over the whole run. */
struct tally {
    int passed;
    int failed;
    int verbose;
};

/* The base name of @p path without a trailing ".json", into @p buf. */
static void base_name(const char *path, char *buf, size_t size)
{
    const char *slash = strrchr(path, '/');
    size_t len;

    snprintf(buf, size, "%s", slash && slash[1] ? slash + 1 : path);
    len = strlen(buf);
    if (len > 5 && strcmp(buf + len - 5, ".json") == 0)
        buf[len - 5] = '\0';
}

/* Prints a list of canonical items, one per line, for --verbose. */
static void print_items(const char *title, const json_t *items)
{
    const json_t *it;
    size_t i;

    printf("    %s (%zu):\n", title, json_array_size(items));
    json_array_foreach(items, i, it)
    {
        char *r = conf_render(it);

        printf("      after %lld: %s\n",
               (long long)json_integer_value(json_object_get(it, "after")), r);
        conf_render_free(r);
    }
}

/* Runs one vector file and prints its line. */
static void run_file(const char *path, struct tally *t)
{
    char name[256], why[CONF_MSG] = "";
    struct conf_vector v;
    json_error_t jerr;
    json_t *doc, *actual = NULL;
    int64_t late_dropped = 0;
    int ok = 0;

    base_name(path, name, sizeof(name));
    memset(&v, 0, sizeof(v));
    doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!doc) {
        if (jerr.line > 0)
            snprintf(why, sizeof(why),
                     "invalid JSON: %s (line %d, column "
                     "%d)",
                     jerr.text, jerr.line, jerr.column);
        else
            snprintf(why, sizeof(why), "cannot read: %s", jerr.text);
        goto report;
    }
    if (conf_load(doc, &v, why, sizeof(why)) != 0) {
        if (v.name)
            snprintf(name, sizeof(name), "%s", v.name);
        goto report;
    }
    snprintf(name, sizeof(name), "%s", v.name);
    actual = json_array();
    if (!actual) {
        snprintf(why, sizeof(why), "out of memory");
        goto report;
    }
    if (conf_drive(&v, actual, &late_dropped, why, sizeof(why)) != 0)
        goto report;
    if (conf_compare(&v, actual, why, sizeof(why)) != 0)
        goto report;
    if (v.has_late_dropped && late_dropped != v.late_dropped) {
        snprintf(why, sizeof(why),
                 "counter late_dropped: expected %lld but got %lld",
                 (long long)v.late_dropped, (long long)late_dropped);
        goto report;
    }
    ok = 1;
report:
    if (ok) {
        printf("PASS %s\n", name);
        t->passed++;
    } else {
        printf("FAIL %s: %s\n", name, why);
        t->failed++;
    }
    if (t->verbose && v.expected) {
        print_items("expected", v.expected);
        if (actual)
            print_items("actual", actual);
    }
    fflush(stdout);
    json_decref(actual);
    conf_vector_free(&v);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every *.json of folder @p dir, sorted by name.  Returns -1 if the
** folder cannot be listed. */
static int run_dir(const char *dir, struct tally *t)
{
    DIR *dp = opendir(dir);
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0, i;
    int rc = 0;

    if (!dp)
        return -1;
    while ((de = readdir(dp)) != NULL) {
        size_t len = strlen(de->d_name);

        if (len <= 5 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            char **nn = realloc(names, ncap * sizeof(*names));

            if (!nn) {
                rc = -1;
                goto done;
            }
            names = nn;
            cap = ncap;
        }
        names[n] = malloc(strlen(dir) + len + 2);
        if (!names[n]) {
            rc = -1;
            goto done;
        }
        sprintf(names[n], "%s/%s", dir, de->d_name);
        n++;
    }
    if (n == 0) {
        /* Running nothing must not look like success. */
        char name[256];

        base_name(dir, name, sizeof(name));
        printf("FAIL %s: no *.json vectors in folder %s\n", name, dir);
        t->failed++;
        goto done;
    }
    qsort(names, n, sizeof(*names), cmp_names);
    for (i = 0; i < n; i++)
        run_file(names[i], t);
done:
    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
    closedir(dp);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: tidemark-conformance [--verbose] PATH...\n"
               "  PATH  a vector file, or a folder whose *.json files are "
               "run in name order\n");
}

/* Parses the options, runs every PATH, prints the closing line.  Returns
** 0 (all passed), 1 (a vector failed or could not be read) or 2 (usage). */
int main(int argc, char **argv)
{
    struct tally t = {0, 0, 0};
    int i, n_paths = 0;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--verbose") == 0 || strcmp(argv[i], "-v") == 0) {
            t.verbose = 1;
        } else if (strcmp(argv[i], "--help") == 0 ||
                   strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
            fprintf(stderr, "tidemark-conformance: unknown option %s\n",
                    argv[i]);
            usage(stderr);
            return 2;
        } else {
            n_paths++;
        }
    }
    if (n_paths == 0) {
        usage(stderr);
        return 2;
    }
    for (i = 1; i < argc; i++) {
        struct stat st;
        char name[256];

        if (argv[i][0] == '-' && argv[i][1] != '\0')
            continue;
        if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (run_dir(argv[i], &t) == 0)
                continue;
            base_name(argv[i], name, sizeof(name));
            printf("FAIL %s: cannot list folder %s: %s\n", name, argv[i],
                   strerror(errno));
            t.failed++;
        } else {
            /* A file; if unreadable, run_file reports it. */
            run_file(argv[i], &t);
        }
    }
    printf("%d passed, %d failed\n", t.passed, t.failed);
    return t.failed > 0 ? 1 : 0;
}
