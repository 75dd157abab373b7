/* SPDX-License-Identifier: MIT */
/* gen_jsonl.c - writes the JSON-lines input of the runtime benchmark
 * (bench/run_runtime.sh): clicks shaped like the built-in generator's
 * (users u0..u<keys-1> uniform, page p<user % 50>, event time advancing
 * at `rate` lines per second from 2026-01-01, each line up to 500 ms
 * behind its position), dealt round-robin over several files, one
 * partition each.  Not part of the library; compiled by the script.
 *
 *   gen_jsonl DIR LINES FILES [KEYS [RATE]]
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* A 64-bit finaliser (splitmix64's), so line i is a function of i. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: gen_jsonl DIR LINES FILES [KEYS [RATE]]\n");
        return 2;
    }
    const char *dir = argv[1];
    int64_t lines = strtoll(argv[2], NULL, 10);
    int files = atoi(argv[3]);
    int64_t keys = argc > 4 ? strtoll(argv[4], NULL, 10) : 10000;
    int64_t rate = argc > 5 ? strtoll(argv[5], NULL, 10) : 100000;
    if (lines < 0 || files < 1 || files > 64 || keys < 1 || rate < 1) {
        fprintf(stderr, "gen_jsonl: bad arguments\n");
        return 2;
    }
    FILE *out[64];
    static char bufs[64][1 << 16];
    for (int f = 0; f < files; f++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/clicks-%d.jsonl", dir, f);
        out[f] = fopen(path, "w");
        if (!out[f]) {
            perror(path);
            return 1;
        }
        setvbuf(out[f], bufs[f], _IOFBF, sizeof bufs[f]);
    }
    const int64_t epoch = INT64_C(1767225600000);
    for (int64_t i = 0; i < lines; i++) {
        uint64_t r = mix64((uint64_t)i);
        int64_t user = (int64_t)((r >> 32) % (uint64_t)keys);
        int64_t ts = epoch + i * 1000 / rate - (int64_t)((r & 0xffff) % 501);
        fprintf(out[i % files],
                "{\"user\":\"u%" PRId64 "\",\"page\":\"p%" PRId64
                "\",\"ts\":%" PRId64 "}\n",
                user, user % 50, ts);
    }
    int rc = 0;
    for (int f = 0; f < files; f++)
        if (fclose(out[f]) != 0) {
            perror("gen_jsonl: write");
            rc = 1;
        }
    return rc;
}
