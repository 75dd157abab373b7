/* SPDX-License-Identifier: MIT */
/* replay.c - runs the fuzz entry point (fuzz_ops.c) over files without
 * libFuzzer, so that the seed corpus and any crash reproducer run as an
 * ordinary program and CTest case.  Usage: fuzz_replay FILE|DIR...
 * A broken invariant traps (the process dies); otherwise exit status 0,
 * or 1 when an argument cannot be read.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Reads a whole file and runs it; returns 0, or -1 if it cannot be read. */
static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, got;

    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    do {
        if (len == cap) {
            uint8_t *nb;
            cap = cap ? 2 * cap : 4096;
            nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = nb;
        }
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    fclose(f);
    /* Print first, so that a trap names the input that caused it. */
    printf("replay %s (%zu bytes)\n", path, len);
    fflush(stdout);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of a directory, in name order. */
static int run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;

    if (!d) {
        fprintf(stderr, "replay: cannot open %s\n", dir);
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **nn;
            cap = cap ? 2 * cap : 64;
            nn = realloc(names, cap * sizeof *names);
            if (!nn)
                break;
            names = nn;
        }
        size_t len = strlen(dir) + strlen(e->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n])
            break;
        snprintf(names[n], len, "%s/%s", dir, e->d_name);
        n++;
    }
    closedir(d);
    qsort(names, n, sizeof *names, name_cmp);
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode) &&
            run_file(names[i]) != 0)
            rc = -1;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    int rc = 0, files = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no such file %s\n", argv[i]);
            rc = 1;
        } else if (S_ISDIR(st.st_mode)) {
            rc |= run_dir(argv[i]) != 0;
            files++;
        } else {
            rc |= run_file(argv[i]) != 0;
            files++;
        }
    }
    if (files == 0) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 1;
    }
    return rc;
}
