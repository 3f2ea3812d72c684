// Elementwise math, written so that the compiler vectorises it.
#include <cmath>
#include <string>

#include "common.h"
#include "loops.h"

namespace pbrl_native {

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

// unary(heap, op, xOff, yOff, n)
static napi_value Unary(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  int op = static_cast<int>(a.Int(1));
  int64_t n = a.Int(4);
  const float* x = a.Ptr<float>(2, n, "unary input");
  float* y = a.Ptr<float>(3, n, "unary output");
  if (!a.ok) return nullptr;
  if (op < kExp || op > kReciprocal) {
    a.Fail("unknown unary op " + std::to_string(op));
    return nullptr;
  }
  g_pool->ParallelFor(n, kElementwiseGrain, [&](int64_t lo, int64_t hi) { UnaryLoop(op, x + lo, y + lo, hi - lo); });
  return Undefined(env);
}

void RegisterElementwise(napi_env env, napi_value exports) {
  Export(env, exports, "unary", Unary);
}

}  // namespace pbrl_native
