/* adapter.c -- the bench kit's C ABI (../shared/bench/src/bench_abi.h) on top of the
 * kernels `atl emit` printed. Calls only: argument order and types change, nothing
 * is computed here. The emitted kernels take the sizes first (int64_t, in the
 * order the .atl file declares them), then the inputs, then the output
 * (DESIGN §7). bench/kit.sh emits each kernel with the symbol named below;
 * `-DATL_KIT_NO_<workload>` leaves a workload out (a candidate without that kernel). */
#include <stdint.h>

int kit_blur3x3(int64_t H, int64_t W, const float *restrict img, float *restrict out);
int kit_matmul(int64_t M, int64_t N, int64_t K, const float *restrict A,
               const float *restrict B, float *restrict out);
int kit_tensor_add4d(int64_t A, int64_t B, int64_t C, int64_t D, const float *restrict t1,
                     const float *restrict t2, float *restrict out);
int kit_conv1d(int64_t B, int64_t C, int64_t K, int64_t W, int64_t R,
               const float *restrict x, const float *restrict w, float *restrict out);

int kit_bmm(int64_t NB, int64_t M, int64_t N, int64_t K, const float *restrict A,
            const float *restrict B, float *restrict out);
int kit_dwconv(int64_t C, int64_t H, int64_t W, const float *restrict inp,
               const float *restrict w, float *restrict out);

void blur3x3(const float *in, float *out, long H, long W);
void matmul(const float *A, const float *B, float *C, long M, long N, long K);
void tensor_add4d(const float *a, const float *b, float *out, long n0, long n1, long n2,
                  long n3);
void conv1d(const float *x, const float *w, float *out, long B, long C, long K, long W,
            long R);
void bmm(const float *A, const float *B, float *C, long NB, long M, long N, long K);
void dwconv(const float *in, const float *w, float *out, long C, long H, long W);

#ifndef ATL_KIT_NO_blur3x3
void blur3x3(const float *in, float *out, long H, long W)
{
  kit_blur3x3(H, W, in, out);
}
#endif

#ifndef ATL_KIT_NO_matmul
void matmul(const float *A, const float *B, float *C, long M, long N, long K)
{
  kit_matmul(M, N, K, A, B, C);
}
#endif

#ifndef ATL_KIT_NO_tensor_add4d
void tensor_add4d(const float *a, const float *b, float *out, long n0, long n1, long n2,
                  long n3)
{
  kit_tensor_add4d(n0, n1, n2, n3, a, b, out);
}
#endif

#ifndef ATL_KIT_NO_conv1d
void conv1d(const float *x, const float *w, float *out, long B, long C, long K, long W,
            long R)
{
  kit_conv1d(B, C, K, W, R, x, w, out);
}
#endif

#ifndef ATL_KIT_NO_bmm
void bmm(const float *A, const float *B, float *C, long NB, long M, long N, long K)
{
  kit_bmm(NB, M, N, K, A, B, C);
}
#endif

#ifndef ATL_KIT_NO_dwconv
void dwconv(const float *in, const float *w, float *out, long C, long H, long W)
{
  kit_dwconv(C, H, W, in, w, out);
}
#endif
