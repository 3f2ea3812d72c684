// Matrix products: OpenBLAS sgemm (sgemv for one row or one column), with tfjs's fused bias and
// activation applied after.
#include <algorithm>
#include <cstring>

#include "blas.h"
#include "common.h"
#include "exp.h"

namespace pbrl_native {

using pbrl_blas::kNoTrans;
using pbrl_blas::kRowMajor;
using pbrl_blas::kTrans;

using pbrl_exp::ExpF;

static inline float SigmoidF(float x) {
  // 1 / (1 + exp(-x)), saturating cleanly at both ends.
  return 1.f / (1.f + ExpF(-x));
}

enum Activation { kLinear = 0, kActRelu = 1, kRelu6 = 2, kLeakyRelu = 4, kActSigmoid = 5, kElu = 6 };

// out[r, c] = act(out[r, c] + bias[c or 0]) over rows [r0, r1) of an N-column matrix.
PBRL_CLONES static void Epilogue(float* out, int64_t r0, int64_t r1, int64_t N, const float* bias, int64_t bias_len,
                                 int act, float alpha) {
  for (int64_t r = r0; r < r1; r++) {
    float* row = out + r * N;
    if (bias != nullptr) {
      if (bias_len == 1) {
        const float b = bias[0];
        for (int64_t c = 0; c < N; c++) row[c] += b;
      } else {
        for (int64_t c = 0; c < N; c++) row[c] += bias[c];
      }
    }
    switch (act) {
      case kActRelu:
        for (int64_t c = 0; c < N; c++) row[c] = row[c] < 0.f ? 0.f : row[c];
        break;
      case kRelu6:
        for (int64_t c = 0; c < N; c++) row[c] = row[c] < 0.f ? 0.f : (row[c] > 6.f ? 6.f : row[c]);
        break;
      case kLeakyRelu:
        for (int64_t c = 0; c < N; c++) row[c] = row[c] < 0.f ? alpha * row[c] : row[c];
        break;
      case kActSigmoid:
        for (int64_t c = 0; c < N; c++) row[c] = SigmoidF(row[c]);
        break;
      case kElu:
        for (int64_t c = 0; c < N; c++) row[c] = row[c] < 0.f ? ExpF(row[c]) - 1.f : row[c];
        break;
      default:
        break;
    }
  }
}

// Below this many multiply-adds per product a batch runs one single-threaded sgemm per pool thread
// instead of threading each sgemm (OpenBLAS's threads cost more than they give on small products).
static const int64_t kSmallGemm = int64_t{1} << 22;

// matmul(heap, aOff, bOff, outOff, batch, M, N, K, transA, transB, batchA, batchB,
//        aIdx: Int32Array|null, bIdx: Int32Array|null, biasOff (-1: none), biasLen, activation, alpha)
// out[i] = op(A[ai]) · op(B[bi]) for i in [0, batch): ai = aIdx[i], or i when batchA == batch, or 0
// when batchA == 1 (likewise bi). A is [M, K] ([K, M] when transA), B [K, N] ([N, K] when transB).
static napi_value MatMul(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  const int64_t batch = a.Int(4), M = a.Int(5), N = a.Int(6), K = a.Int(7);
  const bool ta = a.Bool(8), tb = a.Bool(9);
  const int64_t batchA = a.Int(10), batchB = a.Int(11);
  size_t nai = 0, nbi = 0;
  const int32_t* aIdx = a.Int32s(12, &nai);
  const int32_t* bIdx = a.Int32s(13, &nbi);
  const int64_t biasOff = a.Int(14), biasLen = a.Int(15);
  const int act = static_cast<int>(a.Int(16));
  const float alpha = static_cast<float>(a.Num(17));
  if (!a.ok) return nullptr;
  if (batch < 0 || M < 0 || N < 0 || K < 0 || batchA < 1 || batchB < 1 || M > INT32_MAX || N > INT32_MAX ||
      K > INT32_MAX) {
    a.Fail("matmul: bad sizes");
    return nullptr;
  }
  if ((aIdx == nullptr && batchA != 1 && batchA != batch) || (bIdx == nullptr && batchB != 1 && batchB != batch) ||
      (aIdx != nullptr && static_cast<int64_t>(nai) != batch) || (bIdx != nullptr && static_cast<int64_t>(nbi) != batch)) {
    a.Fail("matmul: batch indices do not match the batch sizes");
    return nullptr;
  }
  if (!IndicesInRange(a, aIdx, static_cast<int64_t>(nai), batchA, "matmul a batch") ||
      !IndicesInRange(a, bIdx, static_cast<int64_t>(nbi), batchB, "matmul b batch"))
    return nullptr;
  const float* A = a.Ptr<float>(1, batchA * M * K, "matmul a");
  const float* B = a.Ptr<float>(2, batchB * K * N, "matmul b");
  float* C = a.Ptr<float>(3, batch * M * N, "matmul out");
  const float* bias = biasOff >= 0 ? a.At<float>(biasOff, biasLen, "matmul bias") : nullptr;
  if (!a.ok) return nullptr;
  if (bias != nullptr && biasLen != 1 && biasLen != N) return a.Fail("matmul: bias must have 1 or N elements"), nullptr;
  if (batch == 0 || M == 0 || N == 0) return Undefined(env);

  auto ai = [&](int64_t i) -> int64_t { return aIdx ? aIdx[i] : (batchA == 1 ? 0 : i); };
  auto bi = [&](int64_t i) -> int64_t { return bIdx ? bIdx[i] : (batchB == 1 ? 0 : i); };
  const int lda = static_cast<int>(std::max<int64_t>(1, ta ? M : K));
  const int ldb = static_cast<int>(std::max<int64_t>(1, tb ? K : N));
  auto gemm = [&](const float* Ap, const float* Bp, float* Cp, int64_t rows) {
    if (K == 0) {
      std::memset(Cp, 0, sizeof(float) * rows * N);
      return;
    }
    // Matrix-vector products go to sgemv: sgemm would first pack the whole matrix into its
    // blocked layout on every call, which for one generated token (a [1, K] row times each
    // weight) costs more than the product itself.
    if (rows == 1) {
      // c[N] = op(B)ᵀ a; a is contiguous whether transposed or not (one row or one column).
      if (tb) cblas_sgemv(kRowMajor, kNoTrans, static_cast<int>(N), static_cast<int>(K), 1.f, Bp, ldb, Ap, 1, 0.f, Cp, 1);
      else cblas_sgemv(kRowMajor, kTrans, static_cast<int>(K), static_cast<int>(N), 1.f, Bp, ldb, Ap, 1, 0.f, Cp, 1);
      return;
    }
    if (N == 1) {
      // c[rows] = op(A) b; b is contiguous either way, and so is c (one column of width 1).
      if (ta) cblas_sgemv(kRowMajor, kTrans, static_cast<int>(K), static_cast<int>(rows), 1.f, Ap, lda, Bp, 1, 0.f, Cp, 1);
      else cblas_sgemv(kRowMajor, kNoTrans, static_cast<int>(rows), static_cast<int>(K), 1.f, Ap, lda, Bp, 1, 0.f, Cp, 1);
      return;
    }
    cblas_sgemm(kRowMajor, ta ? kTrans : kNoTrans, tb ? kTrans : kNoTrans, static_cast<int>(rows), static_cast<int>(N),
                static_cast<int>(K), 1.f, Ap, lda, Bp, ldb, 0.f, Cp, static_cast<int>(N));
  };

  // A small product (a generated token's row times a weight: 10–150 µs) runs single-threaded:
  // waking OpenBLAS's threads costs more than they give there (measured 48 vs 10 µs for
  // [1, 256] · [256, 256] on 2 cores), and OpenBLAS's own threshold for threading is lower.
  const bool small = batch * M * N * K < kSmallGemm;
  SyncBlasThreads();
  if (small && g_blas_threads > 1) openblas_set_num_threads(1);
  if (batch == 1 || (batchB == 1 && bIdx == nullptr && !ta && aIdx == nullptr && batchA == batch &&
                     batch * M <= INT32_MAX)) {
    // One product: a single matrix, or every A matrix stacked against one shared B (the A
    // matrices are contiguous rows, so the batch is one [batch·M, K] · [K, N] product).
    gemm(A + ai(0) * M * K, B + bi(0) * K * N, C, batch * M);
    if (small && g_blas_threads > 1) openblas_set_num_threads(g_blas_threads);
  } else if (M * N * K >= kSmallGemm || g_pool->threads() == 1) {
    for (int64_t i = 0; i < batch; i++) gemm(A + ai(i) * M * K, B + bi(i) * K * N, C + i * M * N, M);
    if (small && g_blas_threads > 1) openblas_set_num_threads(g_blas_threads);
  } else {
    // Many small products: one single-threaded sgemm per pool thread.
    openblas_set_num_threads(1);
    g_pool->ParallelFor(batch, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; i++) gemm(A + ai(i) * M * K, B + bi(i) * K * N, C + i * M * N, M);
    });
    openblas_set_num_threads(g_blas_threads);
  }
  if (bias != nullptr || act != kLinear) {
    g_pool->ParallelFor(batch * M, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, N)),
                        [&](int64_t lo, int64_t hi) { Epilogue(C, lo, hi, N, bias, biasLen, act, alpha); });
  }
  return Undefined(env);
}

void RegisterMatMul(napi_env env, napi_value exports) {
  Export(env, exports, "matmul", MatMul);
}

}  // namespace pbrl_native
