// Log-softmax of the selected targets: its forward pass (log-sum-exp and the selected value) and its
// gradient, each one threaded pass over the [tokens, vocab] logits.
#include <cmath>
#include <vector>

#include "common.h"
#include "loops.h"

namespace pbrl_native {

// The gradient of log softmax(x)[i, t_i] with respect to x, in one pass over the logits:
// out[i, j] = dy[i] · ([j = t_i] − exp(x[i, j] − lse[i])). With tfjs ops it takes five [N, V]
// temporaries (x − lse, exp, a one-hot in int32 and in float32, the difference) before the
// product, ~160 MB at the peak of a training step on an 8000-token vocabulary.

// logsoftmax_grad(heap, xOff, lseOff, targetsOff (int32), dyOff, outOff, rows, cols)
static napi_value LogSoftmaxGrad(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  const int64_t rows = a.Int(6), cols = a.Int(7);
  if (!a.ok) return nullptr;
  if (rows < 0 || cols < 0) return a.Fail("logsoftmax_grad: bad sizes"), nullptr;
  const float* x = a.Ptr<float>(1, rows * cols, "logsoftmax_grad x");
  const float* lse = a.Ptr<float>(2, rows, "logsoftmax_grad lse");
  const int32_t* t = a.Ptr<int32_t>(3, rows, "logsoftmax_grad targets");
  const float* dy = a.Ptr<float>(4, rows, "logsoftmax_grad dy");
  float* out = a.Ptr<float>(5, rows * cols, "logsoftmax_grad out");
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
  HeapArgs a(env, info);
  const int64_t rows = a.Int(5), cols = a.Int(6);
  if (!a.ok) return nullptr;
  if (rows < 0 || cols <= 0) return a.Fail("logsoftmax_select: bad sizes"), nullptr;
  const float* x = a.Ptr<float>(1, rows * cols, "logsoftmax_select x");
  const int32_t* t = a.Ptr<int32_t>(2, rows, "logsoftmax_select targets");
  float* value = a.Ptr<float>(3, rows, "logsoftmax_select value");
  float* lse = a.Ptr<float>(4, rows, "logsoftmax_select lse");
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

void RegisterLogSoftmax(napi_env env, napi_value exports) {
  Export(env, exports, "logsoftmaxGrad", LogSoftmaxGrad);
  Export(env, exports, "logsoftmaxSelect", LogSoftmaxSelect);
}

}  // namespace pbrl_native
