// Float32 products on the CPU through OpenBLAS, when the addon is linked against it and JavaScript
// chooses it (core-tensor/src/libtorch/addon.ts measures both at load time): on an AMD EPYC (Zen 5)
// OpenBLAS's AVX-512 sgemm ran 400–450 GFLOPS where ATen's (MKL's, whose fast paths are Intel's)
// ran 190–210 on the same two cores. Also the CPU-feature choice of OpenBLAS's kernel family,
// shared with the native addon (native/src/blas.h); and a few rows times a weight by pbrl's own kernel
// (native/src/few_rows.h), which beats both there.
#include <chrono>

#include <ATen/Parallel.h>

#include "common.h"
#include "few_rows.h"

#if PBRL_WITH_OPENBLAS
#include "blas.h"
#endif

namespace pbrl {
namespace {

bool& OpenBlasChosen() {
  static bool chosen = false;
  return chosen;
}

// Products of at most this many rows (a decoding step's batch) choose apart: the libraries' order
// there need not be their order on a training step's shapes. On an AMD EPYC (Zen 1), 16 rows times
// SmolLM2-135M's weights: OpenBLAS 40 GFLOPS, ATen (MKL) 25, where a 512-row product ran alike.
constexpr int64_t kFewRowsMax = 64;

bool& OpenBlasChosenForFewRows() {
  static bool chosen = false;
  return chosen;
}

// OpenBLAS's thread count is process-wide: each JavaScript thread (agent worker) re-asserts its own.
int& BlasThreads() {
  static thread_local int threads = 1;
  return threads;
}

#if PBRL_WITH_OPENBLAS
// How cblas reads a 2-D float32 matrix in place: row-major, or a transposed view of one.
bool Layout(const at::Tensor& t, int* trans, int64_t* ld) {
  if (t.stride(1) == 1 && t.stride(0) >= std::max<int64_t>(1, t.size(1))) {
    *trans = pbrl_blas::kNoTrans;
    *ld = t.stride(0);
    return true;
  }
  if (t.stride(0) == 1 && t.stride(1) >= std::max<int64_t>(1, t.size(0))) {
    *trans = pbrl_blas::kTrans;
    *ld = t.stride(1);
    return true;
  }
  return false;
}

at::Tensor OpenBlasMatmul(at::Tensor a, at::Tensor b) {
  int ta, tb;
  int64_t lda, ldb;
  if (!Layout(a, &ta, &lda)) {
    a = a.contiguous();
    Layout(a, &ta, &lda);
  }
  if (!Layout(b, &tb, &ldb)) {
    b = b.contiguous();
    Layout(b, &tb, &ldb);
  }
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  at::Tensor out = at::empty({m, n}, a.options());
  if (m == 0 || n == 0) return out;
  if (k == 0) return out.zero_();
  if (openblas_get_num_threads() != BlasThreads()) openblas_set_num_threads(BlasThreads());
  if (m == 1 && a.stride(1) == 1) {
    // One row (a decoding step at batch 1): a matrix-vector product reads each weight once, where
    // sgemm would first pack the whole matrix. y = bᵀ·x: b as stored is [k, n] (NoTrans) or [n, k].
    const int rows = tb == pbrl_blas::kNoTrans ? static_cast<int>(k) : static_cast<int>(n);
    const int cols = tb == pbrl_blas::kNoTrans ? static_cast<int>(n) : static_cast<int>(k);
    cblas_sgemv(pbrl_blas::kRowMajor, tb == pbrl_blas::kNoTrans ? pbrl_blas::kTrans : pbrl_blas::kNoTrans, rows, cols, 1.f, b.data_ptr<float>(),
                static_cast<int>(ldb), a.data_ptr<float>(), 1, 0.f, out.data_ptr<float>(), 1);
    return out;
  }
  cblas_sgemm(pbrl_blas::kRowMajor, ta, tb, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), 1.f, a.data_ptr<float>(),
              static_cast<int>(lda), b.data_ptr<float>(), static_cast<int>(ldb), 0.f, out.data_ptr<float>(), static_cast<int>(n));
  return out;
}
#endif

constexpr int64_t kIntMax = 2147483647;

// A few float32 rows on the CPU times a linear layer's weight as stored ([n, k], seen through its
// transpose): pbrl's kernel (native/src/few_rows.h) reads the weight once, where sgemm packs it.
bool FewRows(const at::Tensor& a, const at::Tensor& b) {
  return a.dim() == 2 && b.dim() == 2 && a.size(0) <= pbrl_few_rows::MaxRows() && a.size(1) > 0 && a.stride(1) == 1 &&
         b.stride(0) == 1 && b.stride(1) == b.size(0) && a.device().is_cpu() && b.device().is_cpu() &&
         a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat;
}

at::Tensor FewRowsMatmul(const at::Tensor& a, const at::Tensor& b) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  at::Tensor out = at::empty({m, n}, a.options());
  const float* x = a.data_ptr<float>();
  const float* w = b.data_ptr<float>();
  float* y = out.data_ptr<float>();
  // Waking the intra-op threads costs tens of µs: split only ≥ 2^17 multiply-adds per thread.
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 17) / (m * k));
  at::parallel_for(0, n, grain, [&](int64_t lo, int64_t hi) { pbrl_few_rows::FewRowsLinear(x, a.stride(0), w, y, n, m, lo, hi, k); });
  return out;
}

}  // namespace

at::Tensor CpuFloatMatmul(const at::Tensor& a, const at::Tensor& b) {
  if (FewRows(a, b)) return FewRowsMatmul(a, b);
#if PBRL_WITH_OPENBLAS
  const bool fits = a.dim() == 2 && b.dim() == 2 && a.size(0) < kIntMax && a.size(1) < kIntMax && b.size(1) < kIntMax;
  const bool chosen = fits && (a.size(0) <= kFewRowsMax ? OpenBlasChosenForFewRows() : OpenBlasChosen());
  if (chosen && a.device().is_cpu() && b.device().is_cpu() && a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat) {
    return OpenBlasMatmul(a, b);
  }
#endif
  return at::matmul(a, b);
}

namespace {

napi_value Bool(napi_env env, bool b) {
  napi_value v;
  napi_get_boolean(env, b, &v);
  return v;
}

napi_value String(napi_env env, const std::string& s) {
  napi_value v;
  napi_create_string_utf8(env, s.c_str(), s.size(), &v);
  return v;
}

// blasInfo(): {linked, core, config, threads}: whether this addon has OpenBLAS, and which.
napi_value BlasInfo(const Args& a) {
  napi_env env = a.env();
  napi_value obj, v;
  napi_create_object(env, &obj);
#if PBRL_WITH_OPENBLAS
  napi_set_named_property(env, obj, "linked", Bool(env, true));
  napi_set_named_property(env, obj, "blasCore", String(env, pbrl_blas::CurrentCore()));
  const char* config = openblas_get_config();
  napi_set_named_property(env, obj, "blasConfig", String(env, config ? config : ""));
  napi_create_int32(env, openblas_get_num_threads(), &v);
  napi_set_named_property(env, obj, "blasThreads", v);
#else
  napi_set_named_property(env, obj, "linked", Bool(env, false));
  napi_set_named_property(env, obj, "blasCore", String(env, ""));
  napi_set_named_property(env, obj, "blasConfig", String(env, ""));
  napi_create_int32(env, 0, &v);
  napi_set_named_property(env, obj, "blasThreads", v);
#endif
  napi_set_named_property(env, obj, "chosen", Bool(env, OpenBlasChosen()));
  napi_set_named_property(env, obj, "chosenFewRows", Bool(env, OpenBlasChosenForFewRows()));
  return obj;
}

napi_value CpuFeaturesFn(const Args& a) {
  napi_value obj;
  napi_create_object(a.env(), &obj);
#if PBRL_WITH_OPENBLAS
  for (const auto& [name, on] : pbrl_blas::CpuFeatures()) napi_set_named_property(a.env(), obj, name, Bool(a.env(), on));
#endif
  return obj;
}

napi_value BlasCores(const Args& a) {
  napi_value arr;
  napi_create_array(a.env(), &arr);
#if PBRL_WITH_OPENBLAS
  uint32_t n = 0;
  for (const char* core : pbrl_blas::SwitchableCores()) napi_set_element(a.env(), arr, n++, String(a.env(), core));
#endif
  return arr;
}

napi_value SetBlasCore(const Args& a) {
#if PBRL_WITH_OPENBLAS
  std::string now;
  if (!pbrl_blas::SwitchCore(a.Str(0).c_str(), &now)) throw ArgError("this OpenBLAS cannot switch kernels (not a DYNAMIC_ARCH build)");
  return String(a.env(), now);
#else
  throw ArgError("this addon is built without OpenBLAS");
#endif
}

// useOpenBlas(on, threads, onFewRows = on): float32 CPU products through OpenBLAS (or ATen), with
// `threads`; products of at most kFewRowsMax rows as onFewRows says.
napi_value UseOpenBlas(const Args& a) {
  const bool on = a.Bool(0);
  const bool onFewRows = a.size() > 2 && !a.IsNullish(2) ? a.Bool(2) : on;
#if !PBRL_WITH_OPENBLAS
  if (on || onFewRows) throw ArgError("this addon is built without OpenBLAS");
#endif
  OpenBlasChosen() = on;
  OpenBlasChosenForFewRows() = onFewRows;
  BlasThreads() = static_cast<int>(std::max<int64_t>(1, a.Int(1)));
  return Undefined(a.env());
}

// gemmBench(): GFLOPS of ATen's and OpenBLAS's float32 product at a training step's shape
// ([512, 768] · [768, 2048], best of 5) and at a decoding step's ([16, 576] · [576, 1536], best of
// 20), to choose between them; OpenBLAS's are 0 when not linked.
napi_value GemmBench(const Args& a) {
  const auto best = [](int runs, double flops, auto&& product) {
    double fastest = 1e30;
    for (int i = 0; i <= runs; i++) {
      const auto t0 = std::chrono::steady_clock::now();
      product();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (i > 0) fastest = std::min(fastest, s);  // the first run warms caches and threads
    }
    return flops / fastest / 1e9;
  };
  const at::Tensor x = at::randn({512, 768}), w = at::randn({2048, 768});
  const at::Tensor rows = at::randn({16, 576}), layer = at::randn({1536, 576});
  const double flops = 2.0 * 512 * 768 * 2048, rowFlops = 2.0 * 16 * 576 * 1536;
  const double aten = best(5, flops, [&] { (void)at::matmul(x, w.t()); });
  const double atenFewRows = best(20, rowFlops, [&] { (void)at::matmul(rows, layer.t()); });
  double openblas = 0, openblasFewRows = 0;
#if PBRL_WITH_OPENBLAS
  openblas = best(5, flops, [&] { (void)OpenBlasMatmul(x, w.t()); });
  openblasFewRows = best(20, rowFlops, [&] { (void)OpenBlasMatmul(rows, layer.t()); });
#endif
  napi_value obj, v;
  napi_create_object(a.env(), &obj);
  const std::pair<const char*, double> fields[] = {{"aten", aten}, {"openblas", openblas}, {"atenFewRows", atenFewRows}, {"openblasFewRows", openblasFewRows}};
  for (const auto& [name, value] : fields) {
    napi_create_double(a.env(), value, &v);
    napi_set_named_property(a.env(), obj, name, v);
  }
  return obj;
}

}  // namespace

void RegisterBlas(napi_env env, napi_value exports) {
  Export(env, exports, "blasInfo", BlasInfo);
  Export(env, exports, "cpuFeatures", CpuFeaturesFn);
  Export(env, exports, "blasCores", BlasCores);
  Export(env, exports, "setBlasCore", SetBlasCore);
  Export(env, exports, "useOpenBlas", UseOpenBlas);
  Export(env, exports, "gemmBench", GemmBench);
}

}  // namespace pbrl
