/* no_openmp.c -- times one kit kernel that `atl emit` printed, for bench/no_openmp.sh:
 * the same harness is linked with the kernels built with OpenMP, without it, and
 * with -fopenmp-simd, so only the kernels' compile flags differ.
 *
 *   ./no_openmp WORKLOAD RUNS   (WORKLOAD: blur3x3 | matmul | tensor_add4d | conv1d)
 *
 * Prints the best (minimum) wall time of RUNS calls in milliseconds, after one warm-up
 * call, and a checksum of the output (equal across builds up to rounding). The sizes
 * are the bench kit's (../shared/bench/run.sh): blur 2000x2000, matmul 1024^3,
 * tensor_add4d 64^4, conv1d B=8 C=64 K=64 W=1024 R=3. */
#define _POSIX_C_SOURCE 199309L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int kit_blur3x3(int64_t H, int64_t W, const float *restrict img, float *restrict out);
int kit_matmul(int64_t M, int64_t N, int64_t K, const float *restrict A,
               const float *restrict B, float *restrict out);
int kit_tensor_add4d(int64_t A, int64_t B, int64_t C, int64_t D, const float *restrict t1,
                     const float *restrict t2, float *restrict out);
int kit_conv1d(int64_t B, int64_t C, int64_t K, int64_t W, int64_t R,
               const float *restrict x, const float *restrict w, float *restrict out);

static float *filled(size_t n, unsigned seed)
{
  float *p = malloc(n * sizeof(float));
  if (p == NULL)
    exit(70);
  uint64_t s = seed * 0x9e3779b97f4a7c15u + 1;
  for (size_t i = 0; i < n; ++i) {
    s = s * 6364136223846793005u + 1442695040888963407u;
    p[i] = (float)((s >> 40) % 2001) / 1000.0f - 1.0f;
  }
  return p;
}

static double now_ms(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
  if (argc != 3)
    return 64;
  const char *wl = argv[1];
  int runs = atoi(argv[2]);
  float *a, *b = NULL, *out;
  size_t out_len;
  int which;
  if (strcmp(wl, "blur3x3") == 0) {
    which = 0;
    a = filled(2000 * 2000, 1);
    out_len = 2000 * 2000;
  } else if (strcmp(wl, "matmul") == 0) {
    which = 1;
    a = filled(1024 * 1024, 1);
    b = filled(1024 * 1024, 2);
    out_len = 1024 * 1024;
  } else if (strcmp(wl, "tensor_add4d") == 0) {
    which = 2;
    a = filled(64 * 64 * 64 * 64, 1);
    b = filled(64 * 64 * 64 * 64, 2);
    out_len = 64 * 64 * 64 * 64;
  } else if (strcmp(wl, "conv1d") == 0) {
    which = 3;
    a = filled(8 * 64 * 1024, 1);
    b = filled(64 * 64 * 3, 2);
    out_len = 8 * 64 * 1024;
  } else {
    return 64;
  }
  out = malloc(out_len * sizeof(float));
  if (out == NULL)
    return 70;
  double best = 1e300;
  for (int r = -1; r < runs; ++r) {
    double t0 = now_ms();
    switch (which) {
    case 0: kit_blur3x3(2000, 2000, a, out); break;
    case 1: kit_matmul(1024, 1024, 1024, a, b, out); break;
    case 2: kit_tensor_add4d(64, 64, 64, 64, a, b, out); break;
    default: kit_conv1d(8, 64, 64, 1024, 3, a, b, out); break;
    }
    double t = now_ms() - t0;
    if (r >= 0 && t < best)
      best = t;
  }
  double sum = 0;
  for (size_t i = 0; i < out_len; ++i)
    sum += out[i];
  printf("%.3f %.6g\n", best, sum);
  return 0;
}
