// AdamW, the optimizer step of every parameter (AdamW.step in src/adamw.ts).
#include <cmath>

#include "common.h"

namespace pbrl_native {

// adamw(heap, pOff, gOff, mOff, vOff, pOutOff, mOutOff, vOutOff, n, decay, b1, c1, b2, c2, bc2Sqrt, eps, stepSize):
// one AdamW step over n parameters in one pass, the float32 operations of the tfjs op sequence
// in src/fused-ops.ts in the same order (decay = 1 − lr·λ, c1 = 1 − β1, c2 = 1 − β2,
// stepSize = lr / (1 − β1^t)). New buffers out: tfjs variables may share their data.
static napi_value AdamWStep(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  const int64_t n = a.Int(8);
  const float* p = a.Ptr<float>(1, n, "adamw p");
  const float* g = a.Ptr<float>(2, n, "adamw g");
  const float* m = a.Ptr<float>(3, n, "adamw m");
  const float* v = a.Ptr<float>(4, n, "adamw v");
  float* pOut = a.Ptr<float>(5, n, "adamw p out");
  float* mOut = a.Ptr<float>(6, n, "adamw m out");
  float* vOut = a.Ptr<float>(7, n, "adamw v out");
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

void RegisterAdamW(napi_env env, napi_value exports) {
  Export(env, exports, "adamw", AdamWStep);
}

}  // namespace pbrl_native
