/* main.c -- calls three kernels that `atl emit` printed from kernels.atl (the
 * Makefile or CMakeLists.txt of this directory runs it) and checks them against
 * naive loops.
 *
 *   demo_matvec(n, m, A, x, out): out[i] = sum_j A[i][j] * x[j]
 *   demo_rowsum(n, m, A, out):    out[i] = sum_j A[i][j]
 *   demo_norms(n, m, A, out):     out[i] = sqrt(sum_j A[i][j]^2)   (calls sqrtf: -lm)
 *
 * Each kernel takes every size, then the inputs its definition reads, in the order
 * kernels.atl declares them, then the output; it returns 0, or the number of the
 * precondition its header lists that the sizes break (then it touched nothing).
 * Exits 0 when every result and status matches, 1 otherwise. */
#include <math.h>
#include <stdio.h>

#include "demo_matvec.h"
#include "demo_norms.h"
#include "demo_rowsum.h"

enum { N = 3, M = 4 };

/* Every value is a small integer, so each sum is exact in float whatever the order
 * of the additions: the results must be equal, not just close. */
static int check(const char *what, const float *got, const float *want, int n)
{
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    if (got[i] != want[i]) {
      printf("%s[%d] = %g, expected %g\n", what, i, got[i], want[i]);
      ++bad;
    }
  }
  return bad;
}

/* A kernel's status against the expected one. */
static int status(const char *what, int got, int want)
{
  if (got != want) {
    printf("%s returned %d, expected %d\n", what, got, want);
    return 1;
  }
  return 0;
}

int main(void)
{
  const float A[N * M] = {
      1, 2, 3, 4,  /* row sum 10; times x: 1 + 0 - 3 + 8  = 6  */
      5, 6, 7, 8,  /* row sum 26; times x: 5 + 0 - 7 + 16 = 14 */
      -1, 0, 1, 2, /* row sum 2;  times x: -1 + 0 - 1 + 4 = 2  */
  };
  const float x[M] = {1, 0, -1, 2};
  /* Worked out by hand (the comments above) ... */
  const float matvec_hand[N] = {6, 14, 2};
  const float rowsum_hand[N] = {10, 26, 2};
  /* ... and by naive loops. */
  float matvec_want[N], rowsum_want[N], norms_want[N];
  for (int i = 0; i < N; ++i) {
    float mv = 0, rs = 0, sq = 0;
    for (int j = 0; j < M; ++j) {
      mv += A[i * M + j] * x[j];
      rs += A[i * M + j];
      sq += A[i * M + j] * A[i * M + j];
    }
    matvec_want[i] = mv;
    rowsum_want[i] = rs;
    /* The sums of squares (30, 174, 6) are exact, and sqrtf rounds correctly. */
    norms_want[i] = sqrtf(sq);
  }
  int bad = check("naive matvec", matvec_want, matvec_hand, N) +
            check("naive rowsum", rowsum_want, rowsum_hand, N);
  /* Squared, the norms are the sums of squares by hand: 30, 174, 6 (to rounding). */
  const float norms_squared_hand[N] = {30, 174, 6};
  for (int i = 0; i < N; ++i) {
    if (fabsf(norms_want[i] * norms_want[i] - norms_squared_hand[i]) > 1e-4f * norms_squared_hand[i]) {
      printf("naive norms[%d]^2 = %g, expected %g\n", i, norms_want[i] * norms_want[i],
             norms_squared_hand[i]);
      ++bad;
    }
  }

  /* The kernels at 2 threads, then at 1 (each call fills `out` completely and
   * returns 0). */
  const int threads[2] = {2, 1};
  for (int t = 0; t < 2; ++t) {
    float out[N] = {-99, -99, -99};
    demo_matvec_set_threads(threads[t]);
    demo_rowsum_set_threads(threads[t]);
    demo_norms_set_threads(threads[t]);
    bad += status("demo_matvec", demo_matvec(N, M, A, x, out), 0);
    bad += check("demo_matvec", out, matvec_want, N);
    bad += status("demo_rowsum", demo_rowsum(N, M, A, out), 0);
    bad += check("demo_rowsum", out, rowsum_want, N);
    bad += status("demo_norms", demo_norms(N, M, A, out), 0);
    bad += check("demo_norms", out, norms_want, N);
  }
  /* Back to OpenMP's default (OMP_NUM_THREADS). */
  demo_matvec_set_threads(0);
  demo_rowsum_set_threads(0);
  demo_norms_set_threads(0);

  /* Sizes a kernel refuses: it returns the number of the broken precondition in
   * its header's list (1: n >= 1, 2: m >= 1) and leaves the output as it was. */
  float untouched[N] = {-99, -99, -99};
  const float still[N] = {-99, -99, -99};
  bad += status("demo_matvec with m = 0", demo_matvec(N, 0, A, x, untouched), 2);
  bad += check("demo_matvec with m = 0", untouched, still, N);
  bad += status("demo_rowsum with n = 0", demo_rowsum(0, M, A, untouched), 1);
  bad += status("demo_norms with n = -1", demo_norms(-1, M, A, untouched), 1);
  bad += check("refused calls", untouched, still, N);

  if (bad != 0) {
    printf("%d mismatches\n", bad);
    return 1;
  }
  printf("ok: demo_matvec = [%g, %g, %g], demo_rowsum = [%g, %g, %g], "
         "demo_norms^2 = [%.6g, %.6g, %.6g]\n",
         matvec_want[0], matvec_want[1], matvec_want[2], rowsum_want[0], rowsum_want[1],
         rowsum_want[2], norms_want[0] * norms_want[0], norms_want[1] * norms_want[1],
         norms_want[2] * norms_want[2]);
  return 0;
}
