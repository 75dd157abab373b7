/* SPDX-License-Identifier: MIT */
/* gen_lag.c - writes JSON-lines streams with a known out-of-orderness,
 * for the tests and the benchmark of `tidemark analyze`.
 *
 * A clock T starts at -t and advances by -s ms per tick; tick i belongs to
 * partition i % P.  A partition's record is either a "clock" record with
 * timestamp T (it raises the partition's maximum) or, with probability -f,
 * a "lagged" record with timestamp (partition max) - L, L = floor(X) with
 * X exponential of mean -l ms.  So every lagged record is exactly L behind
 * the highest timestamp already seen in its partition, and
 *   P(lag > x) = f * exp(-(x + 1) / mean)   for integers x >= 0,
 * which gives the quantiles the tests derive.  A partition's first record
 * is a clock record.  Lines: {"ts":..,"p":..,"k":"k<n>"[,"arr":T]}.
 *
 *   gen_lag [-n records] [-p partitions] [-s step_ms] [-l mean_ms]
 *           [-f lagged_fraction] [-k keys] [-t start_ms] [-u ms|s]
 *           [-i part:from_ms:for_ms] [-a] [-F every] [-x factor]
 *           [-S seed] [-o file | -D dir]
 *
 *   -i  partition `part` writes nothing while T - start is in
 *       [from, from + for) (its ticks pass unused)
 *   -a  add "arr": the clock T when the record is written (arrival time)
 *   -F  every `every`-th record is a clock record 2 days in the future
 *   -x  records in [40%, 45%) of the stream have their lag multiplied
 *   -u  s writes timestamps (and arr) in whole seconds
 *   -D  one file per partition, dir/part-<p>.jsonl (no -o)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

/* splitmix64: a small, good, seedable generator. */
static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Uniform in (0, 1]. */
static double unit(void)
{
    return ((double)(rng() >> 11) + 1.0) / 9007199254740992.0;
}

static void usage(void)
{
    fprintf(stderr, "usage: gen_lag [-n N] [-p P] [-s STEP] [-l MEAN] "
                    "[-f FRAC] [-k KEYS] [-t START] [-u ms|s] "
                    "[-i P:FROM:FOR] [-a] [-F EVERY] [-x FACTOR] [-S SEED] "
                    "[-o FILE | -D DIR]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    long long n = 100000, start = 1767225600000LL, step = 10;
    long long idle_p = -1, idle_from = 0, idle_for = 0, future = 0;
    double mean = 100, frac = 0.5, spike = 1;
    int parts = 1, keys = 10, arrival = 0, seconds = 0;
    const char *out = NULL, *dir = NULL;
    rng_state = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-a") == 0) {
            arrival = 1;
            continue;
        }
        if (!v || a[0] != '-' || strlen(a) != 2)
            usage();
        i++;
        switch (a[1]) {
        case 'n':
            n = atoll(v);
            break;
        case 'p':
            parts = atoi(v);
            break;
        case 's':
            step = atoll(v);
            break;
        case 'l':
            mean = atof(v);
            break;
        case 'f':
            frac = atof(v);
            break;
        case 'k':
            keys = atoi(v);
            break;
        case 't':
            start = atoll(v);
            break;
        case 'u':
            seconds = strcmp(v, "s") == 0;
            break;
        case 'F':
            future = atoll(v);
            break;
        case 'x':
            spike = atof(v);
            break;
        case 'S':
            rng_state = (uint64_t)atoll(v);
            break;
        case 'o':
            out = v;
            break;
        case 'D':
            dir = v;
            break;
        case 'i':
            if (sscanf(v, "%lld:%lld:%lld", &idle_p, &idle_from, &idle_for) !=
                3)
                usage();
            break;
        default:
            usage();
        }
    }
    if (parts < 1 || keys < 1 || step < 0 || n < 0)
        usage();
    FILE **fs = calloc((size_t)parts, sizeof *fs);
    long long *maxts = calloc((size_t)parts, sizeof *maxts);
    char *seen = calloc((size_t)parts, 1);
    if (!fs || !maxts || !seen)
        return 1;
    for (int p = 0; p < parts; p++) {
        if (dir) {
            char path[4096];
            snprintf(path, sizeof path, "%s/part-%d.jsonl", dir, p);
            fs[p] = fopen(path, "w");
        } else {
            fs[p] = p == 0 ? (out ? fopen(out, "w") : stdout) : fs[0];
        }
        if (!fs[p]) {
            perror("gen_lag");
            return 1;
        }
    }
    long long written = 0, tick = 0;
    while (written < n) {
        long long t = start + tick * step;
        int p = (int)(tick % parts);
        tick++;
        if (p == idle_p && t - start >= idle_from &&
            t - start < idle_from + idle_for)
            continue;
        long long ts;
        if (future > 0 && (written + 1) % future == 0) {
            ts = t + 2LL * 86400000;
        } else if (!seen[p] || unit() > frac) {
            ts = t;
            if (ts > maxts[p] || !seen[p])
                maxts[p] = ts;
            seen[p] = 1;
        } else {
            double l = floor(-mean * log(unit()));
            if (written >= n * 40 / 100 && written < n * 45 / 100)
                l = floor(l * spike);
            ts = maxts[p] - (long long)l;
        }
        long long shown = seconds ? ts / 1000 : ts;
        fprintf(fs[p], "{\"ts\":%lld,\"p\":%d,\"k\":\"k%d\"", shown, p,
                (int)(rng() % (uint64_t)keys));
        if (arrival)
            fprintf(fs[p], ",\"arr\":%lld", seconds ? t / 1000 : t);
        fputs("}\n", fs[p]);
        written++;
    }
    for (int p = 0; p < parts; p++)
        if (fs[p] && (dir || p == 0) && fs[p] != stdout && fclose(fs[p]))
            return 1;
    if (!dir && !out && fflush(stdout))
        return 1;
    free(fs);
    free(maxts);
    free(seen);
    return 0;
}
