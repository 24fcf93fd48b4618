/* main.c -- calls two kernels that `atl emit` printed from kernels.atl (the Makefile
 * or CMakeLists.txt of this directory runs it) and checks them against naive loops.
 *
 *   demo_matvec(n, m, A, x, out): out[i] = sum_j A[i][j] * x[j]
 *   demo_rowsum(n, m, A, x, out): out[i] = sum_j A[i][j]
 *
 * Both kernels take every size and every input of the program, in the order
 * kernels.atl declares them (rowsum ignores x). Exits 0 when every result matches,
 * 1 otherwise. */
#include <stdio.h>

#include "demo_matvec.h"
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
  float matvec_want[N], rowsum_want[N];
  for (int i = 0; i < N; ++i) {
    float mv = 0, rs = 0;
    for (int j = 0; j < M; ++j) {
      mv += A[i * M + j] * x[j];
      rs += A[i * M + j];
    }
    matvec_want[i] = mv;
    rowsum_want[i] = rs;
  }
  int bad = check("naive matvec", matvec_want, matvec_hand, N) +
            check("naive rowsum", rowsum_want, rowsum_hand, N);

  /* The kernels at 2 threads, then at 1 (each call fills `out` completely). */
  const int threads[2] = {2, 1};
  for (int t = 0; t < 2; ++t) {
    float out[N] = {-99, -99, -99};
    demo_matvec_set_threads(threads[t]);
    demo_rowsum_set_threads(threads[t]);
    demo_matvec(N, M, A, x, out);
    bad += check("demo_matvec", out, matvec_want, N);
    demo_rowsum(N, M, A, x, out);
    bad += check("demo_rowsum", out, rowsum_want, N);
  }
  /* Back to OpenMP's default (OMP_NUM_THREADS). */
  demo_matvec_set_threads(0);
  demo_rowsum_set_threads(0);

  /* Sizes the kernel refuses (m = 0) leave the output as it was. */
  float untouched[N] = {-99, -99, -99};
  const float still[N] = {-99, -99, -99};
  demo_matvec(N, 0, A, x, untouched);
  bad += check("demo_matvec with m = 0", untouched, still, N);

  if (bad != 0) {
    printf("%d mismatches\n", bad);
    return 1;
  }
  printf("ok: demo_matvec = [%g, %g, %g], demo_rowsum = [%g, %g, %g]\n", matvec_want[0],
         matvec_want[1], matvec_want[2], rowsum_want[0], rowsum_want[1], rowsum_want[2]);
  return 0;
}
