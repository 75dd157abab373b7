/* SPDX-License-Identifier: MIT */
/* crash_tool.c - helpers of the crash tests (tests/crash/kill_diff.sh,
 * disk_full.sh; their job is tests/crash/job.yaml).
 *
 *   crash_tool gen [-n records] [-S seed] DIR
 *   crash_tool kill-after [-s INT] MS COMMAND [ARG...]
 *   crash_tool verify CHECKPOINT_DIR
 *
 * gen writes the fixed, seeded input, in DIR (which must exist):
 *   clicks-<p>.jsonl, p = 0..3   {"user","page","value","ts"}: n records
 *       per partition (partition 3: half as many, so it ends early);
 *       20 ms of event time per record.  Each timestamp lies 0..1500 ms
 *       behind its record's position (out of order, within the job's
 *       2 s bound), except that 1 % of the records are late: 5 to 40 s
 *       behind (beyond the bound; some still inside their window's
 *       allowed lateness, some too late for every window).  Partition 1
 *       has an idle gap: no record for 60 s of event time in the middle
 *       of its file (its position jumps).
 *   orders-<p>.jsonl, payments-<p>.jsonl, p = 0..1
 *       {"order_id","amount","ts"} / {"order_id","method","ts"}: n / 2
 *       records per partition, 40 ms apart, 0..1500 ms behind and never
 *       beyond the bound (the join's inputs have no late records: see
 *       kill_diff.sh for why).  payments-1 has a 30 s idle gap.
 *   Every file: about 0.3 % malformed lines (broken JSON, a timestamp
 *   of the wrong type, a missing timestamp) for the dead-letter sink.
 * Timestamps are epoch milliseconds from 2026-01-01T00:00:00Z, in the
 * past, so the job's timestamp guard never fires.  Same seed, same bytes.
 *
 * kill-after runs COMMAND and sends it SIGKILL (with -s INT: SIGINT, a
 * graceful stop) once MS milliseconds have passed, unless it ended
 * before: a kill -9 at a random moment of a run (no result depends on
 * the delay; it only picks the moment).  Exits with COMMAND's status,
 * 128 + the signal's number when it was killed by one, as a shell
 * reports it.
 *
 * verify checks every checkpoint directory chk-<10 digits> in
 * CHECKPOINT_DIR: a MANIFEST with the magic, version 1, a matching
 * CRC-32C, one header with the directory's id, and every blob it lists
 * present with its size and CRC-32C.  It reads the format as
 * docs/checkpoints.md describes it, with its own code (not the store's),
 * prints what is wrong and exits 1, or prints "<complete> <temporary>"
 * (how many checkpoints and chk-<id>.tmp-<pid> directories there are).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define T0_MS 1767225600000LL

static uint64_t rng_state;

/* splitmix64: small, seedable, good enough for test data. */
static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Uniform integer in [lo, hi]. */
static long long uni(long long lo, long long hi)
{
    return lo + (long long)(rng() % (uint64_t)(hi - lo + 1));
}

static void usage(void)
{
    fprintf(stderr, "usage: crash_tool gen [-n records] [-S seed] DIR\n"
                    "       crash_tool kill-after [-s INT] MS COMMAND "
                    "[ARG...]\n"
                    "       crash_tool verify CHECKPOINT_DIR\n");
    exit(2);
}

/* ---- gen ---- */

static FILE *open_out(const char *dir, const char *name, int p)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s-%d.jsonl", dir, name, p);
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "crash_tool: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    return f;
}

static void close_out(FILE *f)
{
    if (fclose(f) != 0) {
        fprintf(stderr, "crash_tool: write failed: %s\n", strerror(errno));
        exit(1);
    }
}

/* With probability 3/1000 writes one malformed line (of three kinds) and
 * returns 1. */
static int maybe_malformed(FILE *f, long long ts)
{
    if (uni(0, 999) >= 3)
        return 0;
    switch (uni(0, 2)) {
    case 0:
        fprintf(f, "{\"user\":\"u%lld\",\"page\":\n", uni(0, 199));
        break;
    case 1:
        fprintf(f, "{\"order_id\":\"o1\",\"user\":\"u1\",\"ts\":\"t%lld\"}\n",
                ts);
        break;
    default:
        fprintf(f, "{\"user\":\"u%lld\",\"order_id\":\"o2\"}\n", uni(0, 199));
        break;
    }
    return 1;
}

/* Timestamp of a record at position @p pos_ms: 0..1500 ms behind it, or
 * (with @p late_permille per mille) 5 to 40 s behind. */
static long long stamp(long long pos_ms, int late_permille)
{
    if (late_permille && uni(0, 999) < late_permille)
        return pos_ms - uni(5000, 40000);
    return pos_ms - uni(0, 1500);
}

static void clicks(const char *dir, long n)
{
    for (int p = 0; p < 4; p++) {
        FILE *f = open_out(dir, "clicks", p);
        long count = p == 3 ? n / 2 : n;
        long long pos = T0_MS + p * 7;
        for (long i = 0; i < count; i++) {
            pos += 20;
            if (p == 1 && i == count / 2)
                pos += 60000; /* the idle gap */
            long long ts = stamp(pos, 10);
            if (maybe_malformed(f, ts))
                continue;
            fprintf(f,
                    "{\"user\":\"u%lld\",\"page\":\"p%lld\",\"value\":%lld,"
                    "\"ts\":%lld}\n",
                    uni(0, 199), uni(0, 19), uni(-50, 1000), ts);
        }
        close_out(f);
    }
}

static void join_side(const char *dir, const char *name, long n, int gap_p)
{
    static const char *methods[] = {"card", "cash", "transfer"};
    for (int p = 0; p < 2; p++) {
        FILE *f = open_out(dir, name, p);
        long long pos = T0_MS + p * 11;
        for (long i = 0; i < n; i++) {
            pos += 40;
            if (p == gap_p && i == n / 3)
                pos += 30000; /* the idle gap */
            long long ts = stamp(pos, 0);
            if (maybe_malformed(f, ts))
                continue;
            long long id = uni(0, 999);
            if (name[0] == 'o')
                fprintf(f,
                        "{\"order_id\":\"o%lld\",\"amount\":%lld.%02lld,"
                        "\"ts\":%lld}\n",
                        id, uni(1, 500), uni(0, 99), ts);
            else
                fprintf(f,
                        "{\"order_id\":\"o%lld\",\"method\":\"%s\","
                        "\"ts\":%lld}\n",
                        id, methods[uni(0, 2)], ts);
        }
        close_out(f);
    }
}

static int gen(int argc, char **argv)
{
    long n = 20000;
    uint64_t seed = 8;
    int i = 0;
    for (; i < argc && argv[i][0] == '-'; i += 2) {
        if (i + 1 >= argc)
            usage();
        if (strcmp(argv[i], "-n") == 0)
            n = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "-S") == 0)
            seed = strtoull(argv[i + 1], NULL, 10);
        else
            usage();
    }
    if (i + 1 != argc || n < 2)
        usage();
    rng_state = seed;
    clicks(argv[i], n);
    join_side(argv[i], "orders", n / 2, -1);
    join_side(argv[i], "payments", n / 2, 1);
    return 0;
}

/* ---- kill-after ---- */

static int kill_after(int argc, char **argv)
{
    int sig = SIGKILL;
    if (argc > 2 && strcmp(argv[0], "-s") == 0) {
        if (strcmp(argv[1], "INT") != 0)
            usage();
        sig = SIGINT;
        argc -= 2;
        argv += 2;
    }
    if (argc < 2)
        usage();
    long ms = strtol(argv[0], NULL, 10);
    if (ms < 0)
        usage();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "crash_tool: fork: %s\n", strerror(errno));
        return 1;
    }
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        fprintf(stderr, "crash_tool: %s: %s\n", argv[1], strerror(errno));
        _exit(127);
    }
    /* Poll for the child's end in 1 ms steps until the deadline. */
    struct timespec step = {0, 1000000}, t0, now;
    int status = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        if (r < 0 && errno != EINTR) {
            fprintf(stderr, "crash_tool: waitpid: %s\n", strerror(errno));
            return 1;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        long waited = (long)(now.tv_sec - t0.tv_sec) * 1000 +
                      (long)(now.tv_nsec - t0.tv_nsec) / 1000000;
        if (waited >= ms) {
            kill(pid, sig);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
            break;
        }
        nanosleep(&step, NULL);
    }
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/* ---- verify ----
 *
 * An independent reading of the checkpoint format of docs/checkpoints.md
 * ("Format, version 1"): not the store's code, so that a store that
 * writes and accepts the same wrong thing is still caught. */

/* CRC-32C (Castagnoli), bit by bit: reflected polynomial 0x82F63B78,
 * initial value and final xor 0xFFFFFFFF. */
static uint32_t crc32c(const unsigned char *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return c ^ 0xFFFFFFFFu;
}

/* Reads a whole file; NULL (and errno) on failure. */
static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t cap = 0, n = 0;
    if (!f)
        return NULL;
    for (;;) {
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    fclose(f);
    *len = n;
    return buf;
}

/* A bounds-checked reader over a buffer; ok turns 0 at the first
 * overrun. */
typedef struct rd {
    const unsigned char *p;
    size_t n, at;
    int ok;
} rd;

static uint64_t rd_uvar(rd *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->at >= r->n) {
            r->ok = 0;
            return 0;
        }
        unsigned char b = r->p[r->at++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    r->ok = 0;
    return 0;
}

static uint32_t rd_u32(rd *r)
{
    if (r->n - r->at < 4 || r->at > r->n) {
        r->ok = 0;
        return 0;
    }
    const unsigned char *q = r->p + r->at;
    r->at += 4;
    return (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 |
           (uint32_t)q[3] << 24;
}

/* Checks checkpoint directory  dir (named chk-<id>): prints what is
 * wrong and returns 1, or returns 0. */
static int verify_one(const char *dir, uint64_t id)
{
    char path[4200];
    size_t len = 0;
    int bad = 0, blobs = 0, header = 0;
    snprintf(path, sizeof path, "%s/MANIFEST", dir);
    unsigned char *m = slurp(path, &len);
    if (!m) {
        printf("%s: no readable MANIFEST (%s)\n", dir, strerror(errno));
        return 1;
    }
    if (len < 16 || memcmp(m, "TDMCKPT", 8) != 0) {
        printf("%s: MANIFEST too short or without the magic\n", dir);
        free(m);
        return 1;
    }
    rd r = {m, len, len - 4, 1};
    if (crc32c(m, len - 4) != rd_u32(&r)) {
        printf("%s: MANIFEST CRC mismatch\n", dir);
        free(m);
        return 1;
    }
    r = (rd){m, len - 4, 8, 1};
    if (rd_u32(&r) != 1) {
        printf("%s: MANIFEST version is not 1\n", dir);
        free(m);
        return 1;
    }
    while (r.ok && r.at < r.n && !bad) {
        uint64_t tag = rd_uvar(&r);
        uint32_t body = rd_u32(&r);
        if (!r.ok || body > r.n - r.at)
            break;
        rd b = {m, r.at + body, r.at, 1};
        r.at += body;
        if (tag == 1) {
            header++;
            if (rd_uvar(&b) != id || !b.ok) {
                printf("%s: the header's id is not %llu\n", dir,
                       (unsigned long long)id);
                bad = 1;
            }
        } else if (tag == 2) {
            uint64_t nlen = rd_uvar(&b);
            if (!b.ok || nlen > b.n - b.at || nlen == 0 || nlen > 128) {
                bad = 1;
                break;
            }
            char name[129];
            memcpy(name, m + b.at, (size_t)nlen);
            name[nlen] = 0;
            b.at += (size_t)nlen;
            uint64_t size = rd_uvar(&b);
            uint32_t crc = rd_u32(&b);
            if (!b.ok) {
                bad = 1;
                break;
            }
            size_t blen = 0;
            char bpath[4400];
            snprintf(bpath, sizeof bpath, "%s/%s", dir, name);
            unsigned char *blob = slurp(bpath, &blen);
            if (!blob) {
                printf("%s: blob %s unreadable\n", dir, name);
                bad = 1;
            } else if (blen != size || crc32c(blob, blen) != crc) {
                printf("%s: blob %s: %zu bytes, CRC %08x; the manifest "
                       "says %llu, %08x\n",
                       dir, name, blen, crc32c(blob, blen),
                       (unsigned long long)size, crc);
                bad = 1;
            }
            free(blob);
            blobs++;
        }
    }
    if (!bad && (!r.ok || r.at != r.n || header != 1 || blobs == 0)) {
        printf("%s: MANIFEST sections malformed\n", dir);
        bad = 1;
    }
    free(m);
    return bad;
}

/* verify CKDIR: every chk-<10 digits> in CKDIR is a complete checkpoint
 * (valid MANIFEST, every blob with its size and CRC).  Prints "<valid>
 * <temporary>" (counts) on success. */
static int verify(int argc, char **argv)
{
    if (argc != 1)
        usage();
    if (crc32c((const unsigned char *)"123456789", 9) != 0xE3069283u) {
        fprintf(stderr, "crash_tool: CRC-32C self-check failed\n");
        return 1;
    }
    DIR *d = opendir(argv[0]);
    if (!d) {
        if (errno == ENOENT) {
            printf("0 0\n");
            return 0;
        }
        fprintf(stderr, "crash_tool: %s: %s\n", argv[0], strerror(errno));
        return 1;
    }
    int bad = 0, valid = 0, tmp = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *nm = e->d_name;
        size_t k = 0;
        if (strncmp(nm, "chk-", 4) != 0)
            continue;
        while (k < 10 && nm[4 + k] >= '0' && nm[4 + k] <= '9')
            k++;
        if (k != 10)
            continue;
        if (nm[14] != 0) {
            tmp += strncmp(nm + 14, ".tmp-", 5) == 0;
            continue;
        }
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/%s", argv[0], nm);
        int b = verify_one(dir, strtoull(nm + 4, NULL, 10));
        bad |= b;
        valid += !b;
    }
    closedir(d);
    if (!bad)
        printf("%d %d\n", valid, tmp);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    if (strcmp(argv[1], "gen") == 0)
        return gen(argc - 2, argv + 2);
    if (strcmp(argv[1], "kill-after") == 0)
        return kill_after(argc - 2, argv + 2);
    if (strcmp(argv[1], "verify") == 0)
        return verify(argc - 2, argv + 2);
    usage();
    return 2;
}
