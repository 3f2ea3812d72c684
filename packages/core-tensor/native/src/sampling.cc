// Sampling from softmax(logits / temperature) for many rows at once, in float64 as @pbrl/models'
// chooseToken does it in JS (the same operations in the same order, so the same tokens but for
// last-bit differences between exp implementations), with the row's uniform draw from JS.
#include <algorithm>
#include <cmath>
#include <vector>

#include "common.h"

namespace pbrl_native {

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

void RegisterSampling(napi_env env, napi_value exports) {
  Export(env, exports, "sample", Sample);
}

}  // namespace pbrl_native
