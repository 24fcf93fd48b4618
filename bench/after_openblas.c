/* after_openblas.c -- how much does an OpenBLAS call slow down the kernel that
 * runs right after it?  (Diagnostic for the shared kit, ../shared/bench, whose
 * matmul harness always calls our candidate right after its `openblas` peer.)
 *
 *   after_openblas OURS.so PEER_OPENBLAS.so N [T [ROUNDS]]     (T 2, ROUNDS 15)
 *
 * OURS.so exports the kit ABI `matmul(A,B,C,M,N,K)`; PEER_OPENBLAS.so is the
 * kit's peer (needs env BENCH_OPENBLAS_LIB).  Only calls them; computes nothing.
 * Per round, in a rotating order, three timed phases (CLOCK_MONOTONIC):
 *   alone  : 250 ms sleep, then our matmul.  The sleep outlasts OpenBLAS's idle
 *            workers, which spin (sched_yield) for ~2^28 cycles after a call.
 *   after  : 250 ms sleep, an untimed cblas_sgemm, then at once our matmul --
 *            what the kit's harness does.
 *   sgemm  : 250 ms sleep, then the timed OpenBLAS call.
 * Then, once, each of the two called ROUNDS times back to back (no sleep in
 * between; the steady state of a loop that calls only that implementation).
 * For alone/after, each OpenMP thread reads CLOCK_THREAD_CPUTIME_ID in an
 * `omp parallel` region just before and just after our call (outside the timed
 * interval; libgomp reuses the same pool threads in our kernel's region), so
 * one sees whether the T threads really ran in parallel (CPU ~= wall each) or
 * shared one vCPU (CPU ~= wall/T each, "other" ~= wall).  With the kit's
 * OMP_WAIT_POLICY=passive an idle pool thread sleeps and costs no CPU, so CPU <
 * wall with "other" ~= 0 means our threads were not running although nothing
 * else in the process was: waiting at a barrier, or their vCPU not running (an
 * empty `omp parallel` region after a 250 ms sleep starts its worker in ~30 us
 * here, so it is not libgomp's wake-up itself).  Under other
 * policies the CPU figures include libgomp's spinning.  "other" = process CPU time minus our
 * threads' CPU time over the call: CPU burnt by other threads (OpenBLAS's); the
 * process clock sees other running threads' time only up to their last tick, so
 * it is good to a few ms.  Also printed: how busy other processes kept the
 * machine (/proc/stat) -- the VM is shared, a busy neighbour slows "alone" too.
 * Inputs are k/8, k in [-16,16] as in the kit, so every result is exact and
 * ours must equal OpenBLAS's element for element (checked after every call of
 * ours; exit 1 if not). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef void (*mm_fn)(const float *, const float *, float *, long, long, long);
typedef void (*st_fn)(int);
#define MAXT 64
enum { ALONE, AFTER, SGEMM, NPH };
static const char *phname[NPH] = {"alone", "after_sgemm", "sgemm"};

static double now(clockid_t c) {
    struct timespec ts;
    clock_gettime(c, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}
static void nap(void) { struct timespec d = {0, 250000000L}; nanosleep(&d, NULL); }

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) { /* sorts v */
    qsort(v, n, sizeof(double), cmpd);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* the kit's inputs (src/util.c: bench_fill): splitmix64 hash -> k/8 */
static void fill(float *p, long n, uint64_t seed) {
    for (long i = 0; i < n; i++) {
        uint64_t z = seed * 0x100000001B3ULL + (uint64_t)i + 0x9E3779B97F4A7C15ULL;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
        z ^= z >> 31;
        p[i] = (float)((long)(z % 33) - 16) / 8.0f;
    }
}
static float *alloc(long n) {
    float *p = aligned_alloc(64, ((size_t)n * sizeof(float) + 63) & ~(size_t)63);
    if (!p) { perror("aligned_alloc"); exit(2); }
    for (long i = 0; i < n; i++) p[i] = __builtin_nanf(""); /* poison, like the kit */
    return p;
}

static void *sym(void *h, const char *lib, const char *name, int required) {
    void *s = h ? dlsym(h, name) : NULL;
    if (!s && required) { fprintf(stderr, "after_openblas: %s: no %s (%s)\n", lib, name, dlerror()); exit(2); }
    return s;
}

/* per-thread CPU time of our OpenMP pool (threads numbered 0..T-1) */
static void thread_cpu(double *out) {
#pragma omp parallel
    out[omp_get_thread_num()] = now(CLOCK_THREAD_CPUTIME_ID);
}

/* CPU seconds the whole machine spent busy (/proc/stat: user nice system irq softirq
 * steal), to tell how much other processes competed with this run; 0 if unreadable */
static double machine_busy(void) {
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    if (!f) return 0;
    int k = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", v, v + 1, v + 2, v + 3,
                   v + 4, v + 5, v + 6, v + 7);
    fclose(f);
    return k == 8 ? (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / sysconf(_SC_CLK_TCK) : 0;
}

static long n_bad_calls, n_checked;
static void check(const float *got, const float *ref, long nn) {
    long bad = 0;
    n_checked++;
    for (long i = 0; i < nn; i++) bad += !(got[i] == ref[i]); /* NaN counts as bad */
    if (bad) { n_bad_calls++; fprintf(stderr, "after_openblas: MISMATCH in %ld elements\n", bad); }
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s OURS.so PEER_OPENBLAS.so N [T [ROUNDS]]\n", argv[0]);
        return 2;
    }
    long n = atol(argv[3]), nn = n * n;
    int T = argc > 4 ? atoi(argv[4]) : 2, R = argc > 5 ? atoi(argv[5]) : 15;
    if (n <= 0 || T < 1 || T > MAXT || R < 1) { fprintf(stderr, "after_openblas: bad N/T/ROUNDS\n"); return 2; }
    /* RTLD_LOCAL: both export `matmul`; each symbol is looked up in its own handle */
    void *ho = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL), *hb = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    if (!ho || !hb) { fprintf(stderr, "after_openblas: dlopen: %s\n", dlerror()); return 2; }
    mm_fn ours = (mm_fn)sym(ho, argv[1], "matmul", 1), blas = (mm_fn)sym(hb, argv[2], "matmul", 1);
    st_fn ours_st = (st_fn)sym(ho, argv[1], "bench_set_threads", 0);
    st_fn blas_st = (st_fn)sym(hb, argv[2], "bench_set_threads", 1);
    omp_set_num_threads(T);
    blas_st(T);
    if (ours_st) ours_st(T);

    float *A = alloc(nn), *B = alloc(nn), *Co = alloc(nn), *Cb = alloc(nn), *ref = alloc(nn);
    fill(A, nn, 1);
    fill(B, nn, 2);
    /* warm-up (page faults, pools, code) -- and OpenBLAS's output becomes the reference */
    for (int w = 0; w < 2; w++) { blas(A, B, Cb, n, n, n); ours(A, B, Co, n, n, n); }
    memcpy(ref, Cb, (size_t)nn * sizeof(float));
    check(Co, ref, nn);

    double *t[NPH], *cpu[2][MAXT], *other[2];
    for (int p = 0; p < NPH; p++) t[p] = calloc(R, sizeof(double));
    for (int p = 0; p < 2; p++) {
        other[p] = calloc(R, sizeof(double));
        for (int i = 0; i < T; i++) cpu[p][i] = calloc(R, sizeof(double));
    }
    double m0 = machine_busy(), q0 = now(CLOCK_PROCESS_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
    for (int r = 0; r < R; r++)
        for (int k = 0; k < NPH; k++) {
            int p = (k + r) % NPH;
            nap();
            if (p == SGEMM) {
                double t0 = now(CLOCK_MONOTONIC);
                blas(A, B, Cb, n, n, n);
                t[p][r] = now(CLOCK_MONOTONIC) - t0;
                check(Cb, ref, nn);
                continue;
            }
            if (p == AFTER) blas(A, B, Cb, n, n, n); /* leaves OpenBLAS's worker(s) spinning */
            double c0[MAXT], c1[MAXT];
            thread_cpu(c0);
            double p0 = now(CLOCK_PROCESS_CPUTIME_ID), t0 = now(CLOCK_MONOTONIC);
            ours(A, B, Co, n, n, n);
            double t1 = now(CLOCK_MONOTONIC), p1 = now(CLOCK_PROCESS_CPUTIME_ID);
            thread_cpu(c1);
            t[p][r] = t1 - t0;
            double sum = 0;
            for (int i = 0; i < T; i++) { cpu[p][i][r] = c1[i] - c0[i]; sum += c1[i] - c0[i]; }
            other[p][r] = (p1 - p0) - sum; /* our threads' CPU counted a bit wider: may dip < 0 */
            check(Co, ref, nn);
        }

    double others = (machine_busy() - m0) - (now(CLOCK_PROCESS_CPUTIME_ID) - q0);
    others /= now(CLOCK_MONOTONIC) - w0;

    /* Back to back: R calls of one implementation in a row (after 2 untimed ones),
     * as in a loop that calls only it -- no idle vCPU between calls, and no other
     * runtime's threads spinning, except OpenBLAS's own between its calls (its
     * designed steady state). After a 250 ms idle this VM needs a few calls to run
     * at full speed again, which is what the untimed calls absorb. */
    double *bb[2] = {calloc(R, sizeof(double)), calloc(R, sizeof(double))};
    for (int which = 0; which < 2; which++) {
        mm_fn f = which == 0 ? ours : blas;
        float *C = which == 0 ? Co : Cb;
        nap();
        for (int r = -2; r < R; r++) {
            double t0 = now(CLOCK_MONOTONIC);
            f(A, B, C, n, n, n);
            if (r >= 0) bb[which][r] = now(CLOCK_MONOTONIC) - t0;
        }
        check(C, ref, nn);
    }

    const char *wp = getenv("OMP_WAIT_POLICY");
    printf("n=%ld T=%d rounds=%d OMP_WAIT_POLICY=%s (medians over rounds, ms)\n", n, T, R, wp ? wp : "<unset>");
    double med[NPH];
    for (int p = 0; p < NPH; p++) {
        double mn = 1e30;
        for (int r = 0; r < R; r++) mn = t[p][r] < mn ? t[p][r] : mn;
        med[p] = median(t[p], R);
        printf("  %-12s wall %8.2f (min %7.2f)", phname[p], 1e3 * med[p], 1e3 * mn);
        if (p < 2) {
            printf("   CPU per OMP thread:");
            for (int i = 0; i < T; i++) printf(" %7.2f", 1e3 * median(cpu[p][i], R));
            printf("   other threads: %7.2f", 1e3 * median(other[p], R));
        }
        printf("\n");
    }
    printf("  t_sgemm/t_alone = %.3f   t_sgemm/t_after = %.3f   (t_after/t_alone = %.3f)\n",
           med[SGEMM] / med[ALONE], med[SGEMM] / med[AFTER], med[AFTER] / med[ALONE]);
    double bb_ours = median(bb[0], R), bb_blas = median(bb[1], R);
    printf("  back to back (%d calls each): ours %.2f ms, sgemm %.2f ms, t_sgemm/t_ours = %.3f\n",
           R, 1e3 * bb_ours, 1e3 * bb_blas, bb_blas / bb_ours);
    printf("  other processes kept %.2f vCPUs busy on average during the rounds (of %ld)\n",
           others, sysconf(_SC_NPROCESSORS_ONLN));
    printf("  check: %ld outputs (ours and OpenBLAS) vs OpenBLAS's warm-up output: %ld mismatching\n",
           n_checked, n_bad_calls);
    return n_bad_calls ? 1 : 0;
}
