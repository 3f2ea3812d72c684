// pbrl_native: the heavy kernels of pbrl's `native` tfjs backend, as a plain N-API addon.
//
// Every kernel works in place on the tfjs wasm backend's heap: JavaScript passes the heap's
// ArrayBuffer (re-read on every call, since the heap can grow) and byte offsets of the inputs and
// of the output it has already allocated there, so no tensor is ever copied. Matrix products go
// to OpenBLAS sgemm (which threads itself); the other kernels are simple loops, split over a small
// thread pool for large tensors. Every offset and size is checked against the heap's length, so a
// bug on the JavaScript side throws instead of corrupting memory.
#ifndef NAPI_VERSION
#define NAPI_VERSION 8
#endif
#include <node_api.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <strings.h>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "blas.h"
#include "exp.h"
#include "few_rows.h"

using pbrl_blas::kNoTrans;
using pbrl_blas::kRowMajor;
using pbrl_blas::kTrans;

// Hot loops get AVX-512 and AVX2+FMA clones next to the baseline one, picked at load time, so the
// addon stays correct on any x86-64 machine it is copied to and fast on the one it was built on.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define PBRL_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define PBRL_CLONES
#endif

// ---------------------------------------------------------------------------------------------
// Thread pool: parallel_for(n, fn) runs fn(lo, hi) over [0, n) split into one contiguous chunk per
// thread, the calling thread taking the first. Workers sleep on a condition variable between jobs
// (no spinning, so they never steal cycles from OpenBLAS's own threads).
class Pool {
 public:
  explicit Pool(int threads) : threads_(std::max(1, threads)) {
    for (int i = 1; i < threads_; i++) workers_.emplace_back([this, i] { Loop(i); });
  }
  ~Pool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }
  int threads() const { return threads_; }

  // `grain`: the fewest items worth a thread of their own.
  void ParallelFor(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
    if (n <= 0) return;
    int parts = static_cast<int>(std::min<int64_t>(threads_, std::max<int64_t>(1, n / std::max<int64_t>(1, grain))));
    if (parts <= 1) {
      fn(0, n);
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      fn_ = &fn;
      n_ = n;
      parts_ = parts;
      pending_ = parts - 1;
      generation_++;
    }
    cv_.notify_all();
    fn(0, n / parts);
    std::unique_lock<std::mutex> lock(mu_);
    done_cv_.wait(lock, [this] { return pending_ == 0; });
    fn_ = nullptr;
  }

 private:
  void Loop(int index) {
    uint64_t seen = 0;
    for (;;) {
      const std::function<void(int64_t, int64_t)>* fn;
      int64_t n;
      int parts;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (index >= parts_) continue;  // this job has fewer parts than threads
        fn = fn_;
        n = n_;
        parts = parts_;
      }
      (*fn)(n * index / parts, n * (index + 1) / parts);
      {
        std::lock_guard<std::mutex> lock(mu_);
        pending_--;
      }
      done_cv_.notify_one();
    }
  }

  int threads_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int parts_ = 0;
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

// Per JavaScript thread: each worker thread that loads the addon gets its own pool and thread
// count (pbrl's parallel_training="mp" runs one agent per worker), so no two threads ever share a
// pool's job slot. OpenBLAS's count is process-wide; kernels re-assert theirs (SyncBlasThreads).
static thread_local Pool* g_pool = nullptr;
static thread_local int g_blas_threads = 1;

static void SyncBlasThreads() {
  if (openblas_get_num_threads() != g_blas_threads) openblas_set_num_threads(g_blas_threads);
}

// ---------------------------------------------------------------------------------------------
// N-API argument helpers. Each throws a JavaScript error and returns false on a bad argument.
struct Args {
  napi_env env;
  size_t argc = 24;
  napi_value argv[24];
  bool ok = true;

  Args(napi_env e, napi_callback_info info) : env(e) {
    if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok) Fail("bad call");
  }
  void Fail(const std::string& msg) {
    if (ok) napi_throw_error(env, "PBRL_NATIVE", ("pbrl_native: " + msg).c_str());
    ok = false;
  }
  napi_value Arg(size_t i) {
    if (i >= argc) {
      Fail("missing argument " + std::to_string(i));
      return nullptr;
    }
    return argv[i];
  }
  int64_t Int(size_t i) {
    napi_value v = Arg(i);
    if (!ok) return 0;
    double d;
    if (napi_get_value_double(env, v, &d) != napi_ok) {
      Fail("argument " + std::to_string(i) + " must be a number");
      return 0;
    }
    return static_cast<int64_t>(d);
  }
  double Num(size_t i) {
    napi_value v = Arg(i);
    if (!ok) return 0;
    double d;
    if (napi_get_value_double(env, v, &d) != napi_ok) {
      Fail("argument " + std::to_string(i) + " must be a number");
      return 0;
    }
    return d;
  }
  bool Bool(size_t i) {
    napi_value v = Arg(i);
    if (!ok) return false;
    bool b;
    if (napi_get_value_bool(env, v, &b) != napi_ok) {
      Fail("argument " + std::to_string(i) + " must be a boolean");
      return false;
    }
    return b;
  }
  // The heap: an ArrayBuffer (the wasm memory's buffer).
  uint8_t* Heap(size_t i, size_t* length) {
    napi_value v = Arg(i);
    if (!ok) return nullptr;
    void* data = nullptr;
    bool is_ab = false;
    napi_is_arraybuffer(env, v, &is_ab);
    if (!is_ab || napi_get_arraybuffer_info(env, v, &data, length) != napi_ok) {
      Fail("argument " + std::to_string(i) + " must be an ArrayBuffer");
      return nullptr;
    }
    return static_cast<uint8_t*>(data);
  }
  // A typed array of the given type (length in elements).
  void* Typed(size_t i, napi_typedarray_type want, size_t* length, const char* what) {
    *length = 0;
    napi_value v = Arg(i);
    if (!ok) return nullptr;
    napi_typedarray_type type;
    void* data = nullptr;
    bool is_ta = false;
    napi_is_typedarray(env, v, &is_ta);
    if (!is_ta || napi_get_typedarray_info(env, v, &type, length, &data, nullptr, nullptr) != napi_ok || type != want) {
      Fail("argument " + std::to_string(i) + " must be " + what);
      return nullptr;
    }
    return data;
  }
  // An Int32Array argument, or null/undefined (returns nullptr, *length = 0).
  const int32_t* Int32s(size_t i, size_t* length) {
    *length = 0;
    napi_value v = Arg(i);
    if (!ok) return nullptr;
    napi_valuetype t;
    napi_typeof(env, v, &t);
    if (t == napi_null || t == napi_undefined) return nullptr;
    napi_typedarray_type type;
    void* data = nullptr;
    bool is_ta = false;
    napi_is_typedarray(env, v, &is_ta);
    if (!is_ta || napi_get_typedarray_info(env, v, &type, length, &data, nullptr, nullptr) != napi_ok ||
        type != napi_int32_array) {
      Fail("argument " + std::to_string(i) + " must be an Int32Array or null");
      return nullptr;
    }
    return static_cast<const int32_t*>(data);
  }
};

// A typed pointer into the heap after checking that [offset, offset + count * sizeof(T)) lies
// inside it and is aligned.
template <typename T>
static T* At(Args& a, uint8_t* heap, size_t heap_len, int64_t offset, int64_t count, const char* what) {
  if (!a.ok) return nullptr;
  if (offset < 0 || count < 0 || static_cast<uint64_t>(offset) + static_cast<uint64_t>(count) * sizeof(T) > heap_len ||
      offset % alignof(T) != 0) {
    a.Fail(std::string(what) + ": offset " + std::to_string(offset) + " + " + std::to_string(count) +
           " elements outside the heap of " + std::to_string(heap_len) + " bytes");
    return nullptr;
  }
  return reinterpret_cast<T*>(heap + offset);
}

// Whether every idx[i] lies in [0, limit); otherwise throws "<what>: index i outside [0, limit)".
static bool IndicesInRange(Args& a, const int32_t* idx, int64_t count, int64_t limit, const char* what) {
  if (!a.ok) return false;
  for (int64_t i = 0; i < count; i++)
    if (idx[i] < 0 || idx[i] >= limit) {
      a.Fail(std::string(what) + ": index " + std::to_string(idx[i]) + " outside [0, " + std::to_string(limit) + ")");
      return false;
    }
  return true;
}

static napi_value Undefined(napi_env env) {
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

// ---------------------------------------------------------------------------------------------
// Elementwise math, written so that the compiler vectorises it.

using pbrl_exp::ExpF;

static inline float SigmoidF(float x) {
  // 1 / (1 + exp(-x)), saturating cleanly at both ends.
  return 1.f / (1.f + ExpF(-x));
}

PBRL_CLONES static void ExpLoop(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i++) y[i] = ExpF(x[i]);
}

enum UnaryOp { kExp = 0, kSigmoid = 1, kNeg = 2, kSquare = 3, kSqrt = 4, kRsqrt = 5, kRelu = 6, kReciprocal = 7 };

PBRL_CLONES static void UnaryLoop(int op, const float* x, float* y, int64_t n) {
  switch (op) {
    case kExp:
      ExpLoop(x, y, n);
      break;
    case kSigmoid:
      // exp(-x) vectorised, then 1 / (1 + e), which vectorises on its own.
      for (int64_t i = 0; i < n; i++) y[i] = -x[i];
      ExpLoop(y, y, n);
      for (int64_t i = 0; i < n; i++) y[i] = 1.f / (1.f + y[i]);
      break;
    case kNeg:
      for (int64_t i = 0; i < n; i++) y[i] = -x[i];
      break;
    case kSquare:
      for (int64_t i = 0; i < n; i++) y[i] = x[i] * x[i];
      break;
    case kSqrt:
      for (int64_t i = 0; i < n; i++) y[i] = std::sqrt(x[i]);
      break;
    case kRsqrt:
      for (int64_t i = 0; i < n; i++) y[i] = 1.f / std::sqrt(x[i]);
      break;
    case kRelu:
      for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.f ? x[i] : (x[i] != x[i] ? x[i] : 0.f);
      break;
    case kReciprocal:
      for (int64_t i = 0; i < n; i++) y[i] = 1.f / x[i];
      break;
  }
}

static const int64_t kElementwiseGrain = 1 << 15;

// unary(heap, op, xOff, yOff, n)
static napi_value Unary(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t len = 0;
  uint8_t* heap = a.Heap(0, &len);
  int op = static_cast<int>(a.Int(1));
  int64_t n = a.Int(4);
  const float* x = At<float>(a, heap, len, a.Int(2), n, "unary input");
  float* y = At<float>(a, heap, len, a.Int(3), n, "unary output");
  if (!a.ok) return nullptr;
  if (op < kExp || op > kReciprocal) {
    a.Fail("unknown unary op " + std::to_string(op));
    return nullptr;
  }
  g_pool->ParallelFor(n, kElementwiseGrain, [&](int64_t lo, int64_t hi) { UnaryLoop(op, x + lo, y + lo, hi - lo); });
  return Undefined(env);
}

// ---------------------------------------------------------------------------------------------
// Matrix products.

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
  Args a(env, info);
  size_t len = 0;
  uint8_t* heap = a.Heap(0, &len);
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
  const float* A = At<float>(a, heap, len, a.Int(1), batchA * M * K, "matmul a");
  const float* B = At<float>(a, heap, len, a.Int(2), batchB * K * N, "matmul b");
  float* C = At<float>(a, heap, len, a.Int(3), batch * M * N, "matmul out");
  const float* bias = biasOff >= 0 ? At<float>(a, heap, len, biasOff, biasLen, "matmul bias") : nullptr;
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

// ---------------------------------------------------------------------------------------------
// Transpose of 4-byte elements, any rank and permutation.

// Copies a rows × cols tile: dst[i * dst_stride + j] = src[i + j * src_stride] (src contiguous along
// i, dst along j), in 16 × 16 blocks so that both sides stay in cache.
PBRL_CLONES static void Tile2D(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride, int64_t rows,
                               int64_t cols) {
  const int64_t T = 16;
  for (int64_t i0 = 0; i0 < rows; i0 += T) {
    const int64_t i1 = std::min(rows, i0 + T);
    for (int64_t j0 = 0; j0 < cols; j0 += T) {
      const int64_t j1 = std::min(cols, j0 + T);
      for (int64_t i = i0; i < i1; i++) {
        uint32_t* d = dst + i * dst_stride;
        const uint32_t* s = src + i;
        for (int64_t j = j0; j < j1; j++) d[j] = s[j * src_stride];
      }
    }
  }
}

// transpose(heap, xOff, yOff, shape: Int32Array, perm: Int32Array)
static napi_value Transpose(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t len = 0;
  uint8_t* heap = a.Heap(0, &len);
  size_t rank = 0, prank = 0;
  const int32_t* shape = a.Int32s(3, &rank);
  const int32_t* perm = a.Int32s(4, &prank);
  if (!a.ok) return nullptr;
  if (shape == nullptr || perm == nullptr || rank != prank || rank > 16) return a.Fail("transpose: bad shape/perm"), nullptr;
  int64_t size = 1;
  bool seen[16] = {false};
  for (size_t i = 0; i < rank; i++) {
    if (shape[i] < 0 || perm[i] < 0 || perm[i] >= static_cast<int32_t>(rank) || seen[perm[i]])
      return a.Fail("transpose: bad shape/perm"), nullptr;
    seen[perm[i]] = true;
    size *= shape[i];
  }
  const uint32_t* x = At<uint32_t>(a, heap, len, a.Int(1), size, "transpose input");
  uint32_t* y = At<uint32_t>(a, heap, len, a.Int(2), size, "transpose output");
  if (!a.ok) return nullptr;
  if (size == 0) return Undefined(env);

  // Input strides; then the output axes with size 1 dropped and runs of output axes that are
  // consecutive in the input merged, leaving the smallest equivalent problem.
  int64_t in_stride[16];
  {
    int64_t s = 1;
    for (int64_t i = static_cast<int64_t>(rank) - 1; i >= 0; i--) {
      in_stride[i] = s;
      s *= shape[i];
    }
  }
  std::vector<int64_t> osize, ostride_in;  // per output axis: size, stride in the input
  for (size_t j = 0; j < rank; j++) {
    const int64_t n = shape[perm[j]], s = in_stride[perm[j]];
    if (n == 1) continue;
    if (!osize.empty() && ostride_in.back() == s * n) {
      osize.back() *= n;
      ostride_in.back() = s;
    } else {
      osize.push_back(n);
      ostride_in.push_back(s);
    }
  }
  const int64_t r = static_cast<int64_t>(osize.size());
  if (r <= 1) {  // the identity permutation, once size-1 axes are dropped
    std::memcpy(y, x, sizeof(uint32_t) * size);
    return Undefined(env);
  }
  std::vector<int64_t> ostride_out(r);  // output strides
  {
    int64_t s = 1;
    for (int64_t j = r - 1; j >= 0; j--) {
      ostride_out[j] = s;
      s *= osize[j];
    }
  }
  if (ostride_in[r - 1] == 1) {
    // The innermost output axis is contiguous in the input: copy rows.
    const int64_t row = osize[r - 1], rows = size / row;
    g_pool->ParallelFor(rows, std::max<int64_t>(1, kElementwiseGrain / row), [&](int64_t lo, int64_t hi) {
      for (int64_t q = lo; q < hi; q++) {
        int64_t rem = q, src = 0;
        for (int64_t j = r - 2; j >= 0; j--) {
          src += (rem % osize[j]) * ostride_in[j];
          rem /= osize[j];
        }
        std::memcpy(y + q * row, x + src, sizeof(uint32_t) * row);
      }
    });
    return Undefined(env);
  }
  // Otherwise: p is the output axis that is contiguous in the input (stride 1); every (outer index,
  // block of axis p) is one tile transposed between axis p and the innermost output axis.
  int64_t p = -1;
  for (int64_t j = 0; j < r; j++)
    if (ostride_in[j] == 1) p = j;
  if (p < 0) return a.Fail("transpose: internal error (no contiguous axis)"), nullptr;
  const int64_t rows = osize[p], cols = osize[r - 1];
  const int64_t outer = size / (rows * cols);
  const int64_t block = 64, blocks = (rows + block - 1) / block;
  g_pool->ParallelFor(outer * blocks, std::max<int64_t>(1, kElementwiseGrain / (block * cols)), [&](int64_t lo, int64_t hi) {
    for (int64_t w = lo; w < hi; w++) {
      const int64_t o = w / blocks, b = w % blocks;
      int64_t rem = o, src = 0, dst = 0;
      for (int64_t j = r - 2; j >= 0; j--) {
        if (j == p) continue;
        const int64_t k = rem % osize[j];
        rem /= osize[j];
        src += k * ostride_in[j];
        dst += k * ostride_out[j];
      }
      const int64_t i0 = b * block, n = std::min(block, rows - i0);
      Tile2D(x + src + i0, ostride_in[r - 1], y + dst + i0 * ostride_out[p], ostride_out[p], n, cols);
    }
  });
  return Undefined(env);
}

// ---------------------------------------------------------------------------------------------
// Strided row copies (Slice, SplitV, Concat) and float32 reductions (Sum).

// copy2d(heap, srcOff, srcStride, dstOff, dstStride, rows, rowBytes), strides in bytes: row r
// of rowBytes bytes goes from srcOff + r·srcStride to dstOff + r·dstStride.
static napi_value Copy2D(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t len = 0;
  uint8_t* heap = a.Heap(0, &len);
  const int64_t srcOff = a.Int(1), srcStride = a.Int(2), dstOff = a.Int(3), dstStride = a.Int(4), rows = a.Int(5),
                rowBytes = a.Int(6);
  if (!a.ok) return nullptr;
  if (rows < 0 || rowBytes < 0 || srcStride < 0 || dstStride < 0) return a.Fail("copy2d: bad sizes"), nullptr;
  if (rows == 0 || rowBytes == 0) return Undefined(env);
  const uint8_t* src = At<uint8_t>(a, heap, len, srcOff, (rows - 1) * srcStride + rowBytes, "copy2d source");
  uint8_t* dst = At<uint8_t>(a, heap, len, dstOff, (rows - 1) * dstStride + rowBytes, "copy2d destination");
  if (!a.ok) return nullptr;
  g_pool->ParallelFor(rows, std::max<int64_t>(1, (kElementwiseGrain * 4) / rowBytes), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; r++) std::memcpy(dst + r * dstStride, src + r * srcStride, rowBytes);
  });
  return Undefined(env);
}

// gather(heap, xOff, idxOff (int32), outOff, outer, axisLen, count, innerBytes): x viewed as
// [outer, axisLen, inner], out[o, i] = x[o, idx[i]] for i in [0, count) (tfjs GatherV2 with
// batchDims 0). wasm's kernel computes every element's source index on its own, single-threaded:
// ~8 ms to pick 1,016 rows of 256 floats, a plain row copy here.
static napi_value Gather(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t len = 0;
  uint8_t* heap = a.Heap(0, &len);
  const int64_t outer = a.Int(4), axisLen = a.Int(5), count = a.Int(6), innerBytes = a.Int(7);
  if (!a.ok) return nullptr;
  if (outer < 0 || axisLen < 0 || count < 0 || innerBytes < 0) return a.Fail("gather: bad sizes"), nullptr;
  const uint8_t* x = At<uint8_t>(a, heap, len, a.Int(1), outer * axisLen * innerBytes, "gather input");
  const int32_t* idx = At<int32_t>(a, heap, len, a.Int(2), count, "gather indices");
  uint8_t* out = At<uint8_t>(a, heap, len, a.Int(3), outer * count * innerBytes, "gather output");
  if (!IndicesInRange(a, idx, count, axisLen, "gather")) return nullptr;
  if (innerBytes == 0) return Undefined(env);
  g_pool->ParallelFor(outer * count, std::max<int64_t>(1, (kElementwiseGrain * 4) / innerBytes), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; r++) {
      const int64_t o = r / count, i = r % count;
      std::memcpy(out + r * innerBytes, x + (o * axisLen + idx[i]) * innerBytes, innerBytes);
    }
  });
  return Undefined(env);
}

// scatter_add_rows(heap, dyOff, idxOff (int32), outOff, count, rows, cols): out [rows, cols] =
// Σ_i onehot(idx[i]) ⊗ dy[i] (float32): the gradient of a row gather, which wasm cannot take (no
// UnsortedSegmentSum). Threads own disjoint column ranges, so every row's sum runs in index order.
static napi_value ScatterAddRows(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t len = 0;
  uint8_t* heap = a.Heap(0, &len);
  const int64_t count = a.Int(4), rows = a.Int(5), cols = a.Int(6);
  if (!a.ok) return nullptr;
  if (count < 0 || rows < 0 || cols < 0) return a.Fail("scatter_add_rows: bad sizes"), nullptr;
  const float* dy = At<float>(a, heap, len, a.Int(1), count * cols, "scatter_add_rows dy");
  const int32_t* idx = At<int32_t>(a, heap, len, a.Int(2), count, "scatter_add_rows indices");
  float* out = At<float>(a, heap, len, a.Int(3), rows * cols, "scatter_add_rows output");
  if (!IndicesInRange(a, idx, count, rows, "scatter_add_rows")) return nullptr;
  g_pool->ParallelFor(cols, std::max<int64_t>(8, kElementwiseGrain / std::max<int64_t>(1, rows + count)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = 0; r < rows; r++) std::fill(out + r * cols + lo, out + r * cols + hi, 0.f);
    for (int64_t i = 0; i < count; i++) {
      const float* src = dy + i * cols;
      float* dst = out + static_cast<int64_t>(idx[i]) * cols;
      for (int64_t c = lo; c < hi; c++) dst[c] += src[c];
    }
  });
  return Undefined(env);
}

// Column sums of a rows × cols matrix: y[c] = Σ_r x[r, c], in float32, with the rows
// split over the pool into partial sums added at the end (rows are summed in order within a part).
PBRL_CLONES static void ColSumRange(const float* x, float* acc, int64_t r0, int64_t r1, int64_t cols) {
  std::fill(acc, acc + cols, 0.f);
  for (int64_t r = r0; r < r1; r++) {
    const float* row = x + r * cols;
    for (int64_t c = 0; c < cols; c++) acc[c] += row[c];
  }
}

PBRL_CLONES static void RowSumRange(const float* x, float* y, int64_t r0, int64_t r1, int64_t cols) {
  for (int64_t r = r0; r < r1; r++) {
    const float* row = x + r * cols;
    // 8 independent accumulators: vectorisable without reassociation flags, and more accurate
    // than one running sum.
    float lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t c = 0;
    for (; c + 8 <= cols; c += 8)
      for (int k = 0; k < 8; k++) lanes[k] += row[c + k];
    float sum = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (; c < cols; c++) sum += row[c];
    y[r] = sum;
  }
}

// out[c] = Σ_p partial[p, c]: the per-thread partial column sums of a threaded reduction, added.
static void AddParts(const std::vector<float>& partial, int parts, int64_t cols, float* out) {
  for (int64_t c = 0; c < cols; c++) {
    float s = 0.f;
    for (int p = 0; p < parts; p++) s += partial[p * cols + c];
    out[c] = s;
  }
}

// sum(heap, xOff, yOff, rows, cols, overRows): overRows ? y[c] = Σ_r x[r, c] : y[r] = Σ_c x[r, c].
static napi_value Sum(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t len = 0;
  uint8_t* heap = a.Heap(0, &len);
  const int64_t rows = a.Int(3), cols = a.Int(4);
  const bool overRows = a.Bool(5);
  if (!a.ok) return nullptr;
  if (rows < 0 || cols < 0) return a.Fail("sum: bad sizes"), nullptr;
  const float* x = At<float>(a, heap, len, a.Int(1), rows * cols, "sum input");
  float* y = At<float>(a, heap, len, a.Int(2), overRows ? cols : rows, "sum output");
  if (!a.ok) return nullptr;
  if (!overRows) {
    g_pool->ParallelFor(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, cols)),
                        [&](int64_t lo, int64_t hi) { RowSumRange(x, y, lo, hi, cols); });
    return Undefined(env);
  }
  const int parts = static_cast<int>(
      std::min<int64_t>(g_pool->threads(), std::max<int64_t>(1, rows * cols / kElementwiseGrain)));
  std::vector<float> partial(static_cast<size_t>(parts) * cols);
  g_pool->ParallelFor(parts, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; p++) ColSumRange(x, partial.data() + p * cols, rows * p / parts, rows * (p + 1) / parts, cols);
  });
  AddParts(partial, parts, cols, y);
  return Undefined(env);
}

// ---------------------------------------------------------------------------------------------
// The gradient of log softmax(x)[i, t_i] with respect to x, in one pass over the logits:
// out[i, j] = dy[i] · ([j = t_i] − exp(x[i, j] − lse[i])). With tfjs ops it takes five [N, V]
// temporaries (x − lse, exp, a one-hot in int32 and in float32, the difference) before the
// product, ~160 MB at the peak of a training step on an 8000-token vocabulary.

// logsoftmax_grad(heap, xOff, lseOff, targetsOff (int32), dyOff, outOff, rows, cols)
static napi_value LogSoftmaxGrad(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t len = 0;
  uint8_t* heap = a.Heap(0, &len);
  const int64_t rows = a.Int(6), cols = a.Int(7);
  if (!a.ok) return nullptr;
  if (rows < 0 || cols < 0) return a.Fail("logsoftmax_grad: bad sizes"), nullptr;
  const float* x = At<float>(a, heap, len, a.Int(1), rows * cols, "logsoftmax_grad x");
  const float* lse = At<float>(a, heap, len, a.Int(2), rows, "logsoftmax_grad lse");
  const int32_t* t = At<int32_t>(a, heap, len, a.Int(3), rows, "logsoftmax_grad targets");
  const float* dy = At<float>(a, heap, len, a.Int(4), rows, "logsoftmax_grad dy");
  float* out = At<float>(a, heap, len, a.Int(5), rows * cols, "logsoftmax_grad out");
  if (!IndicesInRange(a, t, rows, cols, "logsoftmax_grad target")) return nullptr;
  g_pool->ParallelFor(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, cols)), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; i++) {
      const float* xr = x + i * cols;
      float* o = out + i * cols;
      const float l = lse[i], d = dy[i];
      for (int64_t j = 0; j < cols; j++) o[j] = xr[j] - l;
      ExpLoop(o, o, cols);
      const float st = o[t[i]];
      for (int64_t j = 0; j < cols; j++) o[j] = (0.f - o[j]) * d;
      o[t[i]] = (1.f - st) * d;
    }
  });
  return Undefined(env);
}

// logsoftmax_select(heap, xOff, targetsOff (int32), valueOff, lseOff, rows, cols): per row of a
// rows × cols x, lse[i] = max + log Σ_j exp(x[i, j] − max) and value[i] = x[i, t_i] − lse[i]: the
// forward pass of the selected log-probabilities in one threaded pass instead of five wasm
// kernels (max, subtract, exp, sum, log) over the whole [tokens, vocab] logits.
static napi_value LogSoftmaxSelect(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t len = 0;
  uint8_t* heap = a.Heap(0, &len);
  const int64_t rows = a.Int(5), cols = a.Int(6);
  if (!a.ok) return nullptr;
  if (rows < 0 || cols <= 0) return a.Fail("logsoftmax_select: bad sizes"), nullptr;
  const float* x = At<float>(a, heap, len, a.Int(1), rows * cols, "logsoftmax_select x");
  const int32_t* t = At<int32_t>(a, heap, len, a.Int(2), rows, "logsoftmax_select targets");
  float* value = At<float>(a, heap, len, a.Int(3), rows, "logsoftmax_select value");
  float* lse = At<float>(a, heap, len, a.Int(4), rows, "logsoftmax_select lse");
  if (!IndicesInRange(a, t, rows, cols, "logsoftmax_select target")) return nullptr;
  g_pool->ParallelFor(rows, std::max<int64_t>(1, kElementwiseGrain / cols), [&](int64_t lo, int64_t hi) {
    std::vector<float> e(static_cast<size_t>(cols));
    for (int64_t i = lo; i < hi; i++) {
      const float* xr = x + i * cols;
      float m = xr[0];
      for (int64_t j = 1; j < cols; j++) m = xr[j] > m ? xr[j] : m;
      for (int64_t j = 0; j < cols; j++) e[j] = xr[j] - m;
      ExpLoop(e.data(), e.data(), cols);
      float s = 0.f;
      RowSumRange(e.data(), &s, 0, 1, cols);
      lse[i] = m + std::log(s);
      value[i] = xr[t[i]] - lse[i];
    }
  });
  return Undefined(env);
}

// ---------------------------------------------------------------------------------------------
// Llama's RMSNorm, y = w ⊙ x · r with r = 1/√(mean(x²) + eps) per row, and its gradient. As tfjs
// ops the forward pass keeps four [N, H] temporaries alive for the backward pass and the backward
// pass makes about ten more; fused, the backward pass needs only x, w and r (one float per row).

// One row: y = w ⊙ x · r, returns r.
static float RmsNormRow(const float* x, const float* w, float* y, int64_t cols, float eps) {
  float ss = 0.f;
  for (int64_t j = 0; j < cols; j++) ss += x[j] * x[j];
  const float r = 1.f / std::sqrt(ss / static_cast<float>(cols) + eps);
  for (int64_t j = 0; j < cols; j++) y[j] = w[j] * (x[j] * r);
  return r;
}

// rmsnorm(heap, xOff, wOff, yOff, rstdOff, rows, cols, eps)
static napi_value RmsNorm(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t len = 0;
  uint8_t* heap = a.Heap(0, &len);
  const int64_t rows = a.Int(5), cols = a.Int(6);
  const float eps = static_cast<float>(a.Num(7));
  if (!a.ok) return nullptr;
  if (rows < 0 || cols < 1) return a.Fail("rmsnorm: bad sizes"), nullptr;
  const float* x = At<float>(a, heap, len, a.Int(1), rows * cols, "rmsnorm x");
  const float* w = At<float>(a, heap, len, a.Int(2), cols, "rmsnorm weight");
  float* y = At<float>(a, heap, len, a.Int(3), rows * cols, "rmsnorm y");
  float* rstd = At<float>(a, heap, len, a.Int(4), rows, "rmsnorm rstd");
  if (!a.ok) return nullptr;
  g_pool->ParallelFor(rows, std::max<int64_t>(1, kElementwiseGrain / cols), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; i++) rstd[i] = RmsNormRow(x + i * cols, w, y + i * cols, cols, eps);
  });
  return Undefined(env);
}

// rmsnorm_grad(heap, xOff, wOff, rstdOff, dyOff, dxOff, dwOff, rows, cols), with g = dy ⊙ w:
// dx = r·g − x·r³·mean(g ⊙ x) per row, dw = Σ_rows dy ⊙ x·r (per-thread partial sums, then added).
static napi_value RmsNormGrad(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t len = 0;
  uint8_t* heap = a.Heap(0, &len);
  const int64_t rows = a.Int(7), cols = a.Int(8);
  if (!a.ok) return nullptr;
  if (rows < 0 || cols < 1) return a.Fail("rmsnorm_grad: bad sizes"), nullptr;
  const float* x = At<float>(a, heap, len, a.Int(1), rows * cols, "rmsnorm_grad x");
  const float* w = At<float>(a, heap, len, a.Int(2), cols, "rmsnorm_grad weight");
  const float* rstd = At<float>(a, heap, len, a.Int(3), rows, "rmsnorm_grad rstd");
  const float* dy = At<float>(a, heap, len, a.Int(4), rows * cols, "rmsnorm_grad dy");
  float* dx = At<float>(a, heap, len, a.Int(5), rows * cols, "rmsnorm_grad dx");
  float* dw = At<float>(a, heap, len, a.Int(6), cols, "rmsnorm_grad dw");
  if (!a.ok) return nullptr;
  const int parts = static_cast<int>(
      std::min<int64_t>(g_pool->threads(), std::max<int64_t>(1, rows * cols / kElementwiseGrain)));
  std::vector<float> partial(static_cast<size_t>(parts) * cols, 0.f);
  g_pool->ParallelFor(parts, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; p++) {
      float* acc = partial.data() + p * cols;
      for (int64_t i = rows * p / parts; i < rows * (p + 1) / parts; i++) {
        const float* xr = x + i * cols;
        const float* dyr = dy + i * cols;
        float* dxr = dx + i * cols;
        const float r = rstd[i];
        float dot = 0.f;
        for (int64_t j = 0; j < cols; j++) dot += dyr[j] * w[j] * xr[j];
        const float c = r * r * r * dot / static_cast<float>(cols);
        for (int64_t j = 0; j < cols; j++) {
          dxr[j] = r * dyr[j] * w[j] - xr[j] * c;
          acc[j] += dyr[j] * xr[j] * r;
        }
      }
    }
  });
  AddParts(partial, parts, cols, dw);
  return Undefined(env);
}

// ---------------------------------------------------------------------------------------------
// SwiGLU, y = silu(g) ⊙ u = g·σ(g) ⊙ u, and its gradient: du = dy ⊙ g·σ(g),
// dg = dy ⊙ u ⊙ σ(g)·(1 + g·(1 − σ(g))). One pass each instead of three [N, F] temporaries
// forward and about eight backward.

// σ(x) for a contiguous run, through the vectorised exp: s = 1 / (1 + exp(−x)).
static void SigmoidLoop(const float* x, float* s, int64_t n) {
  for (int64_t i = 0; i < n; i++) s[i] = -x[i];
  ExpLoop(s, s, n);
  for (int64_t i = 0; i < n; i++) s[i] = 1.f / (1.f + s[i]);
}

// y = g·σ(g) ⊙ u over a contiguous run (y must not alias g or u).
static void SwigluLoop(const float* g, const float* u, float* y, int64_t n) {
  SigmoidLoop(g, y, n);
  for (int64_t i = 0; i < n; i++) y[i] = g[i] * y[i] * u[i];
}

// swiglu(heap, gOff, uOff, yOff, n)
static napi_value Swiglu(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t len = 0;
  uint8_t* heap = a.Heap(0, &len);
  const int64_t n = a.Int(4);
  const float* g = At<float>(a, heap, len, a.Int(1), n, "swiglu gate");
  const float* u = At<float>(a, heap, len, a.Int(2), n, "swiglu up");
  float* y = At<float>(a, heap, len, a.Int(3), n, "swiglu y");
  if (!a.ok) return nullptr;
  g_pool->ParallelFor(n, kElementwiseGrain, [&](int64_t lo, int64_t hi) { SwigluLoop(g + lo, u + lo, y + lo, hi - lo); });
  return Undefined(env);
}

// swiglu_grad(heap, gOff, uOff, dyOff, dgOff, duOff, n)
static napi_value SwigluGrad(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t len = 0;
  uint8_t* heap = a.Heap(0, &len);
  const int64_t n = a.Int(6);
  const float* g = At<float>(a, heap, len, a.Int(1), n, "swiglu_grad gate");
  const float* u = At<float>(a, heap, len, a.Int(2), n, "swiglu_grad up");
  const float* dy = At<float>(a, heap, len, a.Int(3), n, "swiglu_grad dy");
  float* dg = At<float>(a, heap, len, a.Int(4), n, "swiglu_grad dgate");
  float* du = At<float>(a, heap, len, a.Int(5), n, "swiglu_grad dup");
  if (!a.ok) return nullptr;
  g_pool->ParallelFor(n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    SigmoidLoop(g + lo, dg + lo, hi - lo);
    for (int64_t i = lo; i < hi; i++) {
      const float s = dg[i];
      du[i] = dy[i] * g[i] * s;
      dg[i] = dy[i] * u[i] * s * (1.f + g[i] * (1.f - s));
    }
  });
  return Undefined(env);
}

// ---------------------------------------------------------------------------------------------
// AdamW, the optimizer step of every parameter (AdamW.step in src/adamw.ts).

// adamw(heap, pOff, gOff, mOff, vOff, pOutOff, mOutOff, vOutOff, n, decay, b1, c1, b2, c2, bc2Sqrt, eps, stepSize):
// one AdamW step over n parameters in one pass, the float32 operations of the tfjs op sequence
// in src/fused-ops.ts in the same order (decay = 1 − lr·λ, c1 = 1 − β1, c2 = 1 − β2,
// stepSize = lr / (1 − β1^t)). New buffers out: tfjs variables may share their data.
static napi_value AdamWStep(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t len = 0;
  uint8_t* heap = a.Heap(0, &len);
  const int64_t n = a.Int(8);
  const float* p = At<float>(a, heap, len, a.Int(1), n, "adamw p");
  const float* g = At<float>(a, heap, len, a.Int(2), n, "adamw g");
  const float* m = At<float>(a, heap, len, a.Int(3), n, "adamw m");
  const float* v = At<float>(a, heap, len, a.Int(4), n, "adamw v");
  float* pOut = At<float>(a, heap, len, a.Int(5), n, "adamw p out");
  float* mOut = At<float>(a, heap, len, a.Int(6), n, "adamw m out");
  float* vOut = At<float>(a, heap, len, a.Int(7), n, "adamw v out");
  const float decay = static_cast<float>(a.Num(9)), b1 = static_cast<float>(a.Num(10)), c1 = static_cast<float>(a.Num(11));
  const float b2 = static_cast<float>(a.Num(12)), c2 = static_cast<float>(a.Num(13)), bc2Sqrt = static_cast<float>(a.Num(14));
  const float eps = static_cast<float>(a.Num(15)), stepSize = static_cast<float>(a.Num(16));
  if (!a.ok) return nullptr;
  g_pool->ParallelFor(n, kElementwiseGrain, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; i++) {
      const float gi = g[i];
      const float mi = m[i] * b1 + gi * c1;
      const float vi = v[i] * b2 + (gi * gi) * c2;
      const float denom = std::sqrt(vi) / bc2Sqrt + eps;
      pOut[i] = p[i] * decay - (mi / denom) * stepSize;
      mOut[i] = mi;
      vOut[i] = vi;
    }
  });
  return Undefined(env);
}

// ---------------------------------------------------------------------------------------------
// Rotary position embedding of x [B, H, T, D] with tables cos, sin [B, 1, T, D] (shared by the
// heads), half = D/2: forward y[k] = x[k]·cos[k] + rot(x)[k]·sin[k] with rot(x) = (−x₂, x₁); its
// gradient, the transpose, dx[k] = dy[k]·cos[k] + (k < half ? dy[k+half]·sin[k+half]
// : −dy[k−half]·sin[k−half]). As tfjs ops: two slices, a negation, a concat, two products and a
// sum per call, each a full copy of x.

// One head vector of d values: y = x·cos + rot(x)·sin (y may be x).
static void RopeRow(const float* x, const float* c, const float* s, float* y, int64_t d) {
  const int64_t half = d / 2;
  for (int64_t k = 0; k < half; k++) {
    const float a = x[k], b = x[k + half];
    y[k] = a * c[k] - b * s[k];
    y[k + half] = b * c[k + half] + a * s[k + half];
  }
}

// rope(heap, xOff, cosOff, sinOff, yOff, batch, heads, len, dim, backward)
static napi_value Rope(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t len_ = 0;
  uint8_t* heap = a.Heap(0, &len_);
  const int64_t B = a.Int(5), H = a.Int(6), T = a.Int(7), D = a.Int(8);
  const bool backward = a.Bool(9);
  if (!a.ok) return nullptr;
  if (B < 0 || H < 0 || T < 0 || D < 2 || D % 2 != 0) return a.Fail("rope: bad sizes"), nullptr;
  const int64_t rows = B * H * T, half = D / 2;
  const float* x = At<float>(a, heap, len_, a.Int(1), rows * D, "rope x");
  const float* cs = At<float>(a, heap, len_, a.Int(2), B * T * D, "rope cos");
  const float* sn = At<float>(a, heap, len_, a.Int(3), B * T * D, "rope sin");
  float* y = At<float>(a, heap, len_, a.Int(4), rows * D, "rope y");
  if (!a.ok) return nullptr;
  g_pool->ParallelFor(rows, std::max<int64_t>(1, kElementwiseGrain / D), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; r++) {
      const int64_t table = ((r / (H * T)) * T + r % T) * D;
      const float* xr = x + r * D;
      const float* c = cs + table;
      const float* s = sn + table;
      float* yr = y + r * D;
      if (!backward) {
        RopeRow(xr, c, s, yr, D);
      } else {
        for (int64_t k = 0; k < half; k++) yr[k] = xr[k] * c[k] + xr[k + half] * s[k + half];
        for (int64_t k = half; k < D; k++) yr[k] = xr[k] * c[k] - xr[k - half] * s[k - half];
      }
    }
  });
  return Undefined(env);
}

// ---------------------------------------------------------------------------------------------
// Attention, forward and backward, for q [B, H, T, D], k and v [B, KV, S, D] (S = past + T keys,
// H = KV · rep query heads sharing each key/value head), and a key mask [B, S] (1: a real token).
// Query i (position past + i) sees key j when j ≤ past + i and mask[j] = 1; a hidden key's score
// gets kMasked added, as models' attention bias does, so exp() underflows to exactly 0 and a query
// that sees no key at all (padding) gets a uniform row over all S keys, as there. Causal blocks:
// the queries of a block of kAttnBlock rows need only the first past + (last row + 1) keys, so the
// products skip the upper triangle (~40% of the work at T = S = 128), unless a row in the block
// sees no key. As tfjs ops the same work is five kernels forward and about twelve backward, each
// a pass over [B, H, T, S] scores, plus transposes.
static const float kMasked = -1e9f;
static const int64_t kAttnBlock = 32;

struct AttnShape {
  int64_t B, H, KV, T, S, D, past, rep;
};

// First key each batch row may see at all (S when none): a block whose first query comes before it
// has a query that sees nothing.
static std::vector<int64_t> FirstVisible(const int32_t* mask, const AttnShape& s) {
  std::vector<int64_t> first(static_cast<size_t>(s.B), s.S);
  for (int64_t b = 0; b < s.B; b++)
    for (int64_t j = 0; j < s.S; j++)
      if (mask[b * s.S + j] == 1) {
        first[b] = j;
        break;
      }
  return first;
}

// Keys [0, end) that the queries [i0, i1) of batch row b need.
static int64_t KeyEnd(const AttnShape& s, int64_t first_visible, int64_t i0, int64_t i1) {
  return first_visible > s.past + i0 ? s.S : s.past + i1;
}

// One head's probabilities for query rows [i0, i1) over keys [0, end): p = softmax(scale·q·kᵀ +
// mask bias), zero beyond end.
static void AttnProbs(const float* q, const float* k, const int32_t* mask, float* p, const AttnShape& s, float scale,
                      int64_t i0, int64_t i1, int64_t end) {
  const int rows = static_cast<int>(i1 - i0);
  cblas_sgemm(kRowMajor, kNoTrans, kTrans, rows, static_cast<int>(end), static_cast<int>(s.D), scale, q + i0 * s.D,
              static_cast<int>(s.D), k, static_cast<int>(s.D), 0.f, p + i0 * s.S, static_cast<int>(s.S));
  for (int64_t i = i0; i < i1; i++) {
    float* row = p + i * s.S;
    const int64_t last = s.past + i;  // the last key this query may see
    for (int64_t j = 0; j < end; j++)
      if (j > last || mask[j] != 1) row[j] += kMasked;
    float m = row[0];
    for (int64_t j = 1; j < end; j++) m = row[j] > m ? row[j] : m;
    for (int64_t j = 0; j < end; j++) row[j] -= m;
    ExpLoop(row, row, end);
    float sum = 0.f;
    RowSumRange(row, &sum, 0, 1, end);
    const float inv = 1.f / sum;
    for (int64_t j = 0; j < end; j++) row[j] *= inv;
    std::fill(row + end, row + s.S, 0.f);
  }
}

// The arguments both kernels start with: (heap, qOff, kOff, vOff, maskOff (int32), two offsets of
// their own, B, H, KV, T, S, D, scale), read and checked.
struct AttnArgs {
  uint8_t* heap = nullptr;
  size_t len = 0;
  AttnShape s{};
  float scale = 0.f;
  const float *q = nullptr, *k = nullptr, *v = nullptr;
  const int32_t* mask = nullptr;
};

static bool ReadAttnArgs(Args& a, const std::string& what, AttnArgs* r) {
  r->heap = a.Heap(0, &r->len);
  AttnShape& s = r->s;
  s.B = a.Int(7);
  s.H = a.Int(8);
  s.KV = a.Int(9);
  s.T = a.Int(10);
  s.S = a.Int(11);
  s.D = a.Int(12);
  r->scale = static_cast<float>(a.Num(13));
  if (!a.ok) return false;
  if (s.B < 0 || s.KV <= 0 || s.H <= 0 || s.H % s.KV != 0 || s.T < 0 || s.S < s.T || s.D <= 0) {
    a.Fail(what + ": bad sizes");
    return false;
  }
  s.past = s.S - s.T;
  s.rep = s.H / s.KV;
  r->q = At<float>(a, r->heap, r->len, a.Int(1), s.B * s.H * s.T * s.D, (what + " q").c_str());
  r->k = At<float>(a, r->heap, r->len, a.Int(2), s.B * s.KV * s.S * s.D, (what + " k").c_str());
  r->v = At<float>(a, r->heap, r->len, a.Int(3), s.B * s.KV * s.S * s.D, (what + " v").c_str());
  r->mask = At<int32_t>(a, r->heap, r->len, a.Int(4), s.B * s.S, (what + " mask").c_str());
  return a.ok;
}

// Runs fn over [0, n) in the pool with OpenBLAS single-threaded: every product here is small.
static void SmallGemmsParallel(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  SyncBlasThreads();
  if (g_blas_threads > 1) openblas_set_num_threads(1);
  g_pool->ParallelFor(n, 1, fn);
  if (g_blas_threads > 1) openblas_set_num_threads(g_blas_threads);
}

// attention(heap, qOff, kOff, vOff, maskOff (int32), outOff, probsOff, B, H, KV, T, S, D, scale):
// out [B, T, H, D] (the heads side by side, as the output projection takes them) and probs
// [B, H, T, S], which the backward pass reuses.
static napi_value Attention(napi_env env, napi_callback_info info) {
  Args a(env, info);
  AttnArgs in;
  if (!ReadAttnArgs(a, "attention", &in)) return nullptr;
  const AttnShape& s = in.s;
  const float *q = in.q, *k = in.k, *v = in.v;
  const int32_t* mask = in.mask;
  const float scale = in.scale;
  float* out = At<float>(a, in.heap, in.len, a.Int(5), s.B * s.T * s.H * s.D, "attention out");
  float* probs = At<float>(a, in.heap, in.len, a.Int(6), s.B * s.H * s.T * s.S, "attention probs");
  if (!a.ok) return nullptr;
  const std::vector<int64_t> first = FirstVisible(mask, s);
  const int ldo = static_cast<int>(s.H * s.D);
  SmallGemmsParallel(s.B * s.H, [&](int64_t lo, int64_t hi) {
    for (int64_t bh = lo; bh < hi; bh++) {
      const int64_t b = bh / s.H, h = bh % s.H, g = h / s.rep;
      const float* qh = q + bh * s.T * s.D;
      const float* kg = k + (b * s.KV + g) * s.S * s.D;
      const float* vg = v + (b * s.KV + g) * s.S * s.D;
      float* p = probs + bh * s.T * s.S;
      for (int64_t i0 = 0; i0 < s.T; i0 += kAttnBlock) {
        const int64_t i1 = std::min(s.T, i0 + kAttnBlock), end = KeyEnd(s, first[b], i0, i1);
        AttnProbs(qh, kg, mask + b * s.S, p, s, scale, i0, i1, end);
        cblas_sgemm(kRowMajor, kNoTrans, kNoTrans, static_cast<int>(i1 - i0), static_cast<int>(s.D), static_cast<int>(end),
                    1.f, p + i0 * s.S, static_cast<int>(s.S), vg, static_cast<int>(s.D), 0.f,
                    out + ((b * s.T + i0) * s.H + h) * s.D, ldo);
      }
    }
  });
  return Undefined(env);
}

// attention_grad(heap, qOff, kOff, vOff, maskOff, probsOff, dyOff, B, H, KV, T, S, D, scale, dqOff,
// dkOff, dvOff), dy [B, T, H, D] like out: with dp = dy·vᵀ and ds = p ⊙ (dp − Σ_j dp ⊙ p)·scale,
// dq = ds·k, dk = Σ_heads dsᵀ·q, dv = Σ_heads pᵀ·dy, the heads of a key/value group summed in order.
static napi_value AttentionGrad(napi_env env, napi_callback_info info) {
  Args a(env, info);
  AttnArgs in;
  if (!ReadAttnArgs(a, "attention_grad", &in)) return nullptr;
  const AttnShape& s = in.s;
  const float *q = in.q, *k = in.k, *v = in.v;
  const float scale = in.scale;
  const float* probs = At<float>(a, in.heap, in.len, a.Int(5), s.B * s.H * s.T * s.S, "attention_grad probs");
  const float* dy = At<float>(a, in.heap, in.len, a.Int(6), s.B * s.T * s.H * s.D, "attention_grad dy");
  float* dq = At<float>(a, in.heap, in.len, a.Int(14), s.B * s.H * s.T * s.D, "attention_grad dq");
  float* dk = At<float>(a, in.heap, in.len, a.Int(15), s.B * s.KV * s.S * s.D, "attention_grad dk");
  float* dv = At<float>(a, in.heap, in.len, a.Int(16), s.B * s.KV * s.S * s.D, "attention_grad dv");
  if (!a.ok) return nullptr;
  const std::vector<int64_t> first = FirstVisible(in.mask, s);
  const int D = static_cast<int>(s.D), S = static_cast<int>(s.S), ldy = static_cast<int>(s.H * s.D);
  // One task per key/value group, so that no two threads add into the same dk, dv.
  SmallGemmsParallel(s.B * s.KV, [&](int64_t lo, int64_t hi) {
    std::vector<float> dp(static_cast<size_t>(kAttnBlock * s.S));
    for (int64_t bg = lo; bg < hi; bg++) {
      const int64_t b = bg / s.KV, g = bg % s.KV;
      const float* kg = k + bg * s.S * s.D;
      const float* vg = v + bg * s.S * s.D;
      float* dkg = dk + bg * s.S * s.D;
      float* dvg = dv + bg * s.S * s.D;
      std::fill(dkg, dkg + s.S * s.D, 0.f);
      std::fill(dvg, dvg + s.S * s.D, 0.f);
      for (int64_t h = g * s.rep; h < (g + 1) * s.rep; h++) {
        const int64_t bh = b * s.H + h;
        const float* qh = q + bh * s.T * s.D;
        const float* p = probs + bh * s.T * s.S;
        float* dqh = dq + bh * s.T * s.D;
        for (int64_t i0 = 0; i0 < s.T; i0 += kAttnBlock) {
          const int64_t i1 = std::min(s.T, i0 + kAttnBlock), end = KeyEnd(s, first[b], i0, i1);
          const int rows = static_cast<int>(i1 - i0), e = static_cast<int>(end);
          const float* pb = p + i0 * s.S;
          const float* dyb = dy + ((b * s.T + i0) * s.H + h) * s.D;
          cblas_sgemm(kRowMajor, kTrans, kNoTrans, e, D, rows, 1.f, pb, S, dyb, ldy, 1.f, dvg, D);
          cblas_sgemm(kRowMajor, kNoTrans, kTrans, rows, e, D, 1.f, dyb, ldy, vg, D, 0.f, dp.data(), e);
          for (int64_t i = 0; i < rows; i++) {
            const float* pr = pb + i * s.S;
            float* dr = dp.data() + i * end;
            float dot = 0.f;
            for (int64_t j = 0; j < end; j++) dot += dr[j] * pr[j];
            for (int64_t j = 0; j < end; j++) dr[j] = pr[j] * (dr[j] - dot) * scale;
          }
          cblas_sgemm(kRowMajor, kNoTrans, kNoTrans, rows, D, e, 1.f, dp.data(), e, kg, D, 0.f, dqh + i0 * s.D, D);
          cblas_sgemm(kRowMajor, kTrans, kNoTrans, e, D, rows, 1.f, dp.data(), e, qh + i0 * s.D, D, 1.f, dkg, D);
        }
      }
    }
  });
  return Undefined(env);
}

// ---------------------------------------------------------------------------------------------
// One decoding step of a Llama-family model (Llama, Qwen2) for a batch of rows, without tfjs:
// token-by-token generation is otherwise ~200 tfjs kernel calls per token, whose per-call
// overhead, not arithmetic, bounds its speed. The weights stay where tfjs keeps them (the wasm
// heap, HF layout [out, in]); the KV cache is JS-owned memory [layers, rows, kvHeads, cap, dim];
// the rotary tables of the step come from JS (the same tables the tfjs path uses).
//
// decode(heap, weights (Float64Array of heap offsets, −1 = absent), dims (Float64Array), ids
// (Int32Array [b]), cos, sin (Float32Array [b, d]), keyMask (Uint8Array [b, cur + 1]), cacheK,
// cacheV (Float32Array), logits (Float32Array [b, V]))
//   dims: b, hidden, heads, kvHeads, headDim, inter, vocab, layers, cap, cur, eps
//   weights: embed, finalNorm, lmHead, then per layer: inNorm, q, k, v, o, qb, kb, vb, ob,
//   postNorm, gate, up, down, gateB, upB, downB

enum { kEmbed = 0, kFinalNorm = 1, kLmHead = 2, kLayer0 = 3, kPerLayer = 16 };
enum { kInNorm = 0, kQ, kK, kV, kO, kQB, kKB, kVB, kOB, kPostNorm, kGate, kUp, kDown, kGateB, kUpB, kDownB };

// y [b, out] = x [b, in] · Wᵀ (+ bias), W [out, in]. Up to MaxRows() rows by FewRowsLinear (few_rows.h); more by
// single-threaded sgemms on slices of the output columns, one per pool thread (OpenBLAS's own
// threads cost more than they give on products this small). Waking the pool costs tens of µs,
// so only products of ≥ 2^17 multiply-adds per thread are split.
static void Linear(const float* x, const float* w, const float* bias, float* y, int64_t b, int64_t out, int64_t in) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 17) / (b * in));
  if (b <= pbrl_few_rows::MaxRows()) {
    g_pool->ParallelFor(out, grain, [&](int64_t lo, int64_t hi) { pbrl_few_rows::FewRowsLinear(x, in, w, y, out, b, lo, hi, in); });
  } else {
    if (g_blas_threads > 1) openblas_set_num_threads(1);
    g_pool->ParallelFor(out, grain, [&](int64_t lo, int64_t hi) {
      cblas_sgemm(kRowMajor, kNoTrans, kTrans, static_cast<int>(b), static_cast<int>(hi - lo), static_cast<int>(in), 1.f, x,
                  static_cast<int>(in), w + lo * in, static_cast<int>(in), 0.f, y + lo, static_cast<int>(out));
    });
    if (g_blas_threads > 1) openblas_set_num_threads(g_blas_threads);
  }
  if (bias != nullptr)
    for (int64_t i = 0; i < b; i++)
      for (int64_t j = 0; j < out; j++) y[i * out + j] += bias[j];
}

static void RmsNormRows(const float* x, const float* w, float* y, int64_t rows, int64_t cols, float eps) {
  for (int64_t i = 0; i < rows; i++) RmsNormRow(x + i * cols, w, y + i * cols, cols, eps);
}

static napi_value Decode(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t heapLen = 0, nw = 0, nd = 0, nids = 0, ncos = 0, nsin = 0, nmask = 0, nk = 0, nv = 0, nlog = 0;
  uint8_t* heap = a.Heap(0, &heapLen);
  const double* wOff = static_cast<const double*>(a.Typed(1, napi_float64_array, &nw, "a Float64Array of weight offsets"));
  const double* dims = static_cast<const double*>(a.Typed(2, napi_float64_array, &nd, "a Float64Array of sizes"));
  const int32_t* ids = static_cast<const int32_t*>(a.Typed(3, napi_int32_array, &nids, "an Int32Array of token ids"));
  const float* cosT = static_cast<const float*>(a.Typed(4, napi_float32_array, &ncos, "a Float32Array of cos"));
  const float* sinT = static_cast<const float*>(a.Typed(5, napi_float32_array, &nsin, "a Float32Array of sin"));
  const uint8_t* mask = static_cast<const uint8_t*>(a.Typed(6, napi_uint8_array, &nmask, "a Uint8Array key mask"));
  float* cacheK = static_cast<float*>(a.Typed(7, napi_float32_array, &nk, "a Float32Array K cache"));
  float* cacheV = static_cast<float*>(a.Typed(8, napi_float32_array, &nv, "a Float32Array V cache"));
  float* logits = static_cast<float*>(a.Typed(9, napi_float32_array, &nlog, "a Float32Array for the logits"));
  if (!a.ok) return nullptr;
  if (nd != 11) return a.Fail("decode: dims needs 11 values"), nullptr;
  const int64_t b = static_cast<int64_t>(dims[0]), H = static_cast<int64_t>(dims[1]), nH = static_cast<int64_t>(dims[2]),
                kvH = static_cast<int64_t>(dims[3]), d = static_cast<int64_t>(dims[4]), F = static_cast<int64_t>(dims[5]),
                V = static_cast<int64_t>(dims[6]), L = static_cast<int64_t>(dims[7]), cap = static_cast<int64_t>(dims[8]),
                cur = static_cast<int64_t>(dims[9]);
  const float eps = static_cast<float>(dims[10]);
  if (b < 1 || H < 1 || nH < 1 || kvH < 1 || nH % kvH != 0 || d < 2 || d % 2 != 0 || F < 1 || V < 1 || L < 1 || cur < 0 || cur >= cap)
    return a.Fail("decode: bad sizes"), nullptr;
  if (nw != static_cast<size_t>(kLayer0 + kPerLayer * L)) return a.Fail("decode: wrong number of weight offsets"), nullptr;
  if (nids != static_cast<size_t>(b) || ncos != static_cast<size_t>(b * d) || nsin != ncos ||
      nmask != static_cast<size_t>(b * (cur + 1)) || nk != static_cast<size_t>(L * b * kvH * cap * d) || nv != nk ||
      nlog != static_cast<size_t>(b * V))
    return a.Fail("decode: an array has the wrong length"), nullptr;
  // Weight pointers, bounds-checked; −1 means absent (biases).
  auto W = [&](int64_t idx, int64_t count, const char* what) -> const float* {
    const double off = wOff[idx];
    if (off < 0) return nullptr;
    return At<float>(a, heap, heapLen, static_cast<int64_t>(off), count, what);
  };
  const int64_t qDim = nH * d, kvDim = kvH * d, rep = nH / kvH;
  const float* embed = W(kEmbed, V * H, "decode embed");
  const float* finalNorm = W(kFinalNorm, H, "decode final norm");
  const float* lmHead = W(kLmHead, V * H, "decode lm head");
  if (!a.ok) return nullptr;
  if (embed == nullptr || finalNorm == nullptr || lmHead == nullptr) return a.Fail("decode: missing weights"), nullptr;
  for (int64_t i = 0; i < b; i++)
    if (ids[i] < 0 || ids[i] >= V) return a.Fail("decode: token id outside the vocabulary"), nullptr;

  std::vector<float> h(b * H), xn(b * H), q(b * qDim), k(b * kvDim), v(b * kvDim), att(b * qDim), tmp(b * H), gate(b * F), up(b * F), act(b * F);
  for (int64_t i = 0; i < b; i++) std::memcpy(&h[i * H], embed + static_cast<int64_t>(ids[i]) * H, H * sizeof(float));
  const float scale = 1.f / std::sqrt(static_cast<float>(d));
  const int64_t T = cur + 1;
  for (int64_t l = 0; l < L; l++) {
    const int64_t base = kLayer0 + kPerLayer * l;
    const float* inNorm = W(base + kInNorm, H, "decode input norm");
    const float* wq = W(base + kQ, qDim * H, "decode q");
    const float* wk = W(base + kK, kvDim * H, "decode k");
    const float* wv = W(base + kV, kvDim * H, "decode v");
    const float* wo = W(base + kO, H * qDim, "decode o");
    const float* qb = W(base + kQB, qDim, "decode q bias");
    const float* kb = W(base + kKB, kvDim, "decode k bias");
    const float* vb = W(base + kVB, kvDim, "decode v bias");
    const float* ob = W(base + kOB, H, "decode o bias");
    const float* postNorm = W(base + kPostNorm, H, "decode post norm");
    const float* wg = W(base + kGate, F * H, "decode gate");
    const float* wu = W(base + kUp, F * H, "decode up");
    const float* wd = W(base + kDown, H * F, "decode down");
    const float* gb = W(base + kGateB, F, "decode gate bias");
    const float* ub = W(base + kUpB, F, "decode up bias");
    const float* db = W(base + kDownB, H, "decode down bias");
    if (!a.ok) return nullptr;
    if (!inNorm || !wq || !wk || !wv || !wo || !postNorm || !wg || !wu || !wd) return a.Fail("decode: missing weights"), nullptr;
    RmsNormRows(h.data(), inNorm, xn.data(), b, H, eps);
    Linear(xn.data(), wq, qb, q.data(), b, qDim, H);
    Linear(xn.data(), wk, kb, k.data(), b, kvDim, H);
    Linear(xn.data(), wv, vb, v.data(), b, kvDim, H);
    float* Kl = cacheK + l * b * kvH * cap * d;
    float* Vl = cacheV + l * b * kvH * cap * d;
    for (int64_t i = 0; i < b; i++) {
      const float* c = cosT + i * d;
      const float* s = sinT + i * d;
      for (int64_t hq = 0; hq < nH; hq++) RopeRow(&q[i * qDim + hq * d], c, s, &q[i * qDim + hq * d], d);
      for (int64_t g = 0; g < kvH; g++) {
        RopeRow(&k[i * kvDim + g * d], c, s, &k[i * kvDim + g * d], d);
        std::memcpy(Kl + ((i * kvH + g) * cap + cur) * d, &k[i * kvDim + g * d], d * sizeof(float));
        std::memcpy(Vl + ((i * kvH + g) * cap + cur) * d, &v[i * kvDim + g * d], d * sizeof(float));
      }
    }
    // Attention of each row's query heads over its unmasked cached positions.
    g_pool->ParallelFor(b * nH, std::max<int64_t>(1, (int64_t{1} << 17) / (2 * T * d)), [&](int64_t lo, int64_t hi) {
      std::vector<float> p(T);
      for (int64_t job = lo; job < hi; job++) {
        const int64_t i = job / nH, hq = job % nH, g = hq / rep;
        const float* qv = &q[i * qDim + hq * d];
        const float* Kg = Kl + (i * kvH + g) * cap * d;
        const float* Vg = Vl + (i * kvH + g) * cap * d;
        const uint8_t* m = mask + i * T;
        float mx = -INFINITY;
        for (int64_t t = 0; t < T; t++) {
          if (!m[t]) continue;
          float dot = 0.f;
          for (int64_t e = 0; e < d; e++) dot += qv[e] * Kg[t * d + e];
          p[t] = dot * scale;
          mx = std::max(mx, p[t]);
        }
        float sum = 0.f;
        for (int64_t t = 0; t < T; t++) {
          p[t] = m[t] ? std::exp(p[t] - mx) : 0.f;
          sum += p[t];
        }
        float* o = &att[i * qDim + hq * d];
        for (int64_t e = 0; e < d; e++) o[e] = 0.f;
        for (int64_t t = 0; t < T; t++) {
          if (p[t] == 0.f) continue;
          const float w = p[t] / sum;
          for (int64_t e = 0; e < d; e++) o[e] += w * Vg[t * d + e];
        }
      }
    });
    Linear(att.data(), wo, ob, tmp.data(), b, H, qDim);
    for (int64_t j = 0; j < b * H; j++) h[j] += tmp[j];
    RmsNormRows(h.data(), postNorm, xn.data(), b, H, eps);
    Linear(xn.data(), wg, gb, gate.data(), b, F, H);
    Linear(xn.data(), wu, ub, up.data(), b, F, H);
    SwigluLoop(gate.data(), up.data(), act.data(), b * F);
    Linear(act.data(), wd, db, tmp.data(), b, H, F);
    for (int64_t j = 0; j < b * H; j++) h[j] += tmp[j];
  }
  RmsNormRows(h.data(), finalNorm, xn.data(), b, H, eps);
  Linear(xn.data(), lmHead, nullptr, logits, b, V, H);
  return Undefined(env);
}

// ---------------------------------------------------------------------------------------------
// Sampling from softmax(logits / temperature) for many rows at once, in float64 as @pbrl/models'
// chooseToken does it in JS (the same operations in the same order, so the same tokens but for
// last-bit differences between exp implementations), with the row's uniform draw from JS.
//
// sample(logits (Float32Array [rows, vocab]), uniforms (Float64Array [rows], < 0: skip the row),
// temperature, out (Int32Array [rows]))
static napi_value Sample(napi_env env, napi_callback_info info) {
  Args a(env, info);
  size_t nl = 0, nu = 0, no = 0;
  const float* logits = static_cast<const float*>(a.Typed(0, napi_float32_array, &nl, "a Float32Array of logits"));
  const double* uniforms = static_cast<const double*>(a.Typed(1, napi_float64_array, &nu, "a Float64Array of uniform draws"));
  const double temperature = a.Num(2);
  int32_t* out = static_cast<int32_t*>(a.Typed(3, napi_int32_array, &no, "an Int32Array for the tokens"));
  if (!a.ok) return nullptr;
  if (nu == 0 || no != nu || nl % nu != 0 || !(temperature > 0)) return a.Fail("sample: bad sizes or temperature"), nullptr;
  const int64_t rows = static_cast<int64_t>(nu), vocab = static_cast<int64_t>(nl / nu);
  g_pool->ParallelFor(rows, std::max<int64_t>(1, (int64_t{1} << 17) / std::max<int64_t>(1, vocab)), [&](int64_t lo, int64_t hi) {
    std::vector<double> p(vocab);
    for (int64_t r = lo; r < hi; r++) {
      if (uniforms[r] < 0) continue;
      const float* row = logits + r * vocab;
      double mx = -INFINITY;
      for (int64_t i = 0; i < vocab; i++) {
        p[i] = static_cast<double>(row[i]) / temperature;
        if (p[i] > mx) mx = p[i];
      }
      double total = 0;
      for (int64_t i = 0; i < vocab; i++) {
        p[i] = std::exp(p[i] - mx);
        total += p[i];
      }
      double u = uniforms[r];
      int32_t last = 0, chosen = -1;
      for (int64_t i = 0; i < vocab; i++) {
        const double q = p[i] / total;
        if (q == 0) continue;
        last = static_cast<int32_t>(i);
        u -= q;
        if (u < 0) {
          chosen = static_cast<int32_t>(i);
          break;
        }
      }
      out[r] = chosen >= 0 ? chosen : last;
    }
  });
  return Undefined(env);
}

// ---------------------------------------------------------------------------------------------
// CPU features and OpenBLAS's kernel family (blas.h; src/blas-kernels.ts decides).

// cpuFeatures(): {avx, fma, avx2, avx512f, …, avx512bf16, amx}.
static napi_value CpuFeatures(napi_env env, napi_callback_info) {
  napi_value obj, v;
  napi_create_object(env, &obj);
  for (const auto& [name, on] : pbrl_blas::CpuFeatures()) {
    napi_get_boolean(env, on, &v);
    napi_set_named_property(env, obj, name, v);
  }
  return obj;
}

// blasCores(): the kernel families pbrl may switch this OpenBLAS to (empty when it cannot switch).
static napi_value BlasCores(napi_env env, napi_callback_info) {
  napi_value arr, v;
  napi_create_array(env, &arr);
  uint32_t n = 0;
  for (const char* core : pbrl_blas::SwitchableCores()) {
    napi_create_string_utf8(env, core, NAPI_AUTO_LENGTH, &v);
    napi_set_element(env, arr, n++, v);
  }
  return arr;
}

// setBlasCore(name): switches OpenBLAS's kernel family and returns the one now in use.
static napi_value SetBlasCore(napi_env env, napi_callback_info info) {
  Args a(env, info);
  napi_value arg = a.Arg(0);
  if (!a.ok) return nullptr;
  char name[32] = {0};
  size_t len = 0;
  if (napi_get_value_string_utf8(env, arg, name, sizeof(name), &len) != napi_ok) {
    a.Fail("setBlasCore: the core name must be a string");
    return nullptr;
  }
  std::string now;
  if (!pbrl_blas::SwitchCore(name, &now)) {
    a.Fail("setBlasCore: this OpenBLAS cannot switch kernels (not a DYNAMIC_ARCH build)");
    return nullptr;
  }
  napi_value v;
  napi_create_string_utf8(env, now.c_str(), now.size(), &v);
  return v;
}

// ---------------------------------------------------------------------------------------------

static napi_value Info(napi_env env, napi_callback_info) {
  napi_value obj, v;
  napi_create_object(env, &obj);
  napi_create_int32(env, g_pool ? g_pool->threads() : 0, &v);
  napi_set_named_property(env, obj, "threads", v);
  napi_create_int32(env, openblas_get_num_threads(), &v);
  napi_set_named_property(env, obj, "blasThreads", v);
  const char* core = openblas_get_corename();
  napi_create_string_utf8(env, core ? core : "", NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, obj, "blasCore", v);
  const char* config = openblas_get_config();
  napi_create_string_utf8(env, config ? config : "", NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, obj, "blasConfig", v);
  return obj;
}

// init(threads): sets OpenBLAS's thread count and (re)creates the pool; returns info().
static napi_value Init(napi_env env, napi_callback_info info) {
  Args a(env, info);
  int64_t threads = a.Int(0);
  if (!a.ok) return nullptr;
  threads = std::max<int64_t>(1, std::min<int64_t>(threads, 256));
  g_blas_threads = static_cast<int>(threads);
  openblas_set_num_threads(g_blas_threads);
  if (g_pool == nullptr || g_pool->threads() != threads) {
    delete g_pool;
    g_pool = new Pool(static_cast<int>(threads));
  }
  return Info(env, info);
}

// Runs on the thread whose environment is torn down (a worker thread that exits).
static void FreePool(void*) {
  delete g_pool;
  g_pool = nullptr;
}

static napi_value RegisterModule(napi_env env, napi_value exports) {
  if (g_pool == nullptr) {
    g_pool = new Pool(1);
    napi_add_env_cleanup_hook(env, FreePool, nullptr);
  }
  const napi_property_descriptor props[] = {
      {"init", nullptr, Init, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"info", nullptr, Info, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"cpuFeatures", nullptr, CpuFeatures, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"blasCores", nullptr, BlasCores, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"setBlasCore", nullptr, SetBlasCore, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"matmul", nullptr, MatMul, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"transpose", nullptr, Transpose, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"unary", nullptr, Unary, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"copy2d", nullptr, Copy2D, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"gather", nullptr, Gather, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"scatterAddRows", nullptr, ScatterAddRows, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"sum", nullptr, Sum, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"logsoftmaxGrad", nullptr, LogSoftmaxGrad, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"logsoftmaxSelect", nullptr, LogSoftmaxSelect, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"rmsnorm", nullptr, RmsNorm, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"rmsnormGrad", nullptr, RmsNormGrad, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"swiglu", nullptr, Swiglu, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"swigluGrad", nullptr, SwigluGrad, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"rope", nullptr, Rope, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"attention", nullptr, Attention, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"attentionGrad", nullptr, AttentionGrad, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"decode", nullptr, Decode, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"sample", nullptr, Sample, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"adamw", nullptr, AdamWStep, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, RegisterModule)
