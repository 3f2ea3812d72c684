// The fused pieces of a Llama layer: RMSNorm, SwiGLU and the rotary position embedding, each with
// its gradient. Their row loops (loops.h) are shared with the decoder (decode.cc).
#include <algorithm>
#include <vector>

#include "common.h"
#include "loops.h"
#include "rmsnorm_grad.h"

namespace pbrl_native {

// ---------------------------------------------------------------------------------------------
// Llama's RMSNorm, y = w ⊙ x · r with r = 1/√(mean(x²) + eps) per row, and its gradient. As tfjs
// ops the forward pass keeps four [N, H] temporaries alive for the backward pass and the backward
// pass makes about ten more; fused, the backward pass needs only x, w and r (one float per row).

// rmsnorm(heap, xOff, wOff, yOff, rstdOff, rows, cols, eps)
static napi_value RmsNorm(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  const int64_t rows = a.Int(5), cols = a.Int(6);
  const float eps = static_cast<float>(a.Num(7));
  if (!a.ok) return nullptr;
  if (rows < 0 || cols < 1) return a.Fail("rmsnorm: bad sizes"), nullptr;
  const float* x = a.Ptr<float>(1, rows * cols, "rmsnorm x");
  const float* w = a.Ptr<float>(2, cols, "rmsnorm weight");
  float* y = a.Ptr<float>(3, rows * cols, "rmsnorm y");
  float* rstd = a.Ptr<float>(4, rows, "rmsnorm rstd");
  if (!a.ok) return nullptr;
  g_pool->ParallelFor(rows, std::max<int64_t>(1, kElementwiseGrain / cols), [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; i++) rstd[i] = RmsNormRow(x + i * cols, w, y + i * cols, cols, eps);
  });
  return Undefined(env);
}

// rmsnorm_grad(heap, xOff, wOff, rstdOff, dyOff, dxOff, dwOff, rows, cols), with g = dy ⊙ w:
// dx = r·g − x·r³·mean(g ⊙ x) per row, dw = Σ_rows dy ⊙ x·r (per-thread partial sums, then added).
static napi_value RmsNormGrad(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  const int64_t rows = a.Int(7), cols = a.Int(8);
  if (!a.ok) return nullptr;
  if (rows < 0 || cols < 1) return a.Fail("rmsnorm_grad: bad sizes"), nullptr;
  const float* x = a.Ptr<float>(1, rows * cols, "rmsnorm_grad x");
  const float* w = a.Ptr<float>(2, cols, "rmsnorm_grad weight");
  const float* rstd = a.Ptr<float>(3, rows, "rmsnorm_grad rstd");
  const float* dy = a.Ptr<float>(4, rows * cols, "rmsnorm_grad dy");
  float* dx = a.Ptr<float>(5, rows * cols, "rmsnorm_grad dx");
  float* dw = a.Ptr<float>(6, cols, "rmsnorm_grad dw");
  if (!a.ok) return nullptr;
  const int parts = static_cast<int>(
      std::min<int64_t>(g_pool->threads(), std::max<int64_t>(1, rows * cols / kElementwiseGrain)));
  std::vector<float> partial(static_cast<size_t>(parts) * cols, 0.f);
  g_pool->ParallelFor(parts, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; p++) {
      pbrl_rmsnorm_grad::Rows(x, w, rstd, dy, dx, partial.data() + p * cols, rows * p / parts, rows * (p + 1) / parts, cols);
    }
  });
  AddParts(partial, parts, cols, dw);
  return Undefined(env);
}

// ---------------------------------------------------------------------------------------------
// SwiGLU, y = silu(g) ⊙ u = g·σ(g) ⊙ u, and its gradient: du = dy ⊙ g·σ(g),
// dg = dy ⊙ u ⊙ σ(g)·(1 + g·(1 − σ(g))). One pass each instead of three [N, F] temporaries
// forward and about eight backward.

// swiglu(heap, gOff, uOff, yOff, n)
static napi_value Swiglu(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  const int64_t n = a.Int(4);
  const float* g = a.Ptr<float>(1, n, "swiglu gate");
  const float* u = a.Ptr<float>(2, n, "swiglu up");
  float* y = a.Ptr<float>(3, n, "swiglu y");
  if (!a.ok) return nullptr;
  g_pool->ParallelFor(n, kElementwiseGrain, [&](int64_t lo, int64_t hi) { SwigluLoop(g + lo, u + lo, y + lo, hi - lo); });
  return Undefined(env);
}

// swiglu_grad(heap, gOff, uOff, dyOff, dgOff, duOff, n)
static napi_value SwigluGrad(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  const int64_t n = a.Int(6);
  const float* g = a.Ptr<float>(1, n, "swiglu_grad gate");
  const float* u = a.Ptr<float>(2, n, "swiglu_grad up");
  const float* dy = a.Ptr<float>(3, n, "swiglu_grad dy");
  float* dg = a.Ptr<float>(4, n, "swiglu_grad dgate");
  float* du = a.Ptr<float>(5, n, "swiglu_grad dup");
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
// Rotary position embedding of x [B, H, T, D] with tables cos, sin [B, 1, T, D] (shared by the
// heads), half = D/2: forward y[k] = x[k]·cos[k] + rot(x)[k]·sin[k] with rot(x) = (−x₂, x₁); its
// gradient, the transpose, dx[k] = dy[k]·cos[k] + (k < half ? dy[k+half]·sin[k+half]
// : −dy[k−half]·sin[k−half]). As tfjs ops: two slices, a negation, a concat, two products and a
// sum per call, each a full copy of x.

// rope(heap, xOff, cosOff, sinOff, yOff, batch, heads, len, dim, backward)
static napi_value Rope(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  const int64_t B = a.Int(5), H = a.Int(6), T = a.Int(7), D = a.Int(8);
  const bool backward = a.Bool(9);
  if (!a.ok) return nullptr;
  if (B < 0 || H < 0 || T < 0 || D < 2 || D % 2 != 0) return a.Fail("rope: bad sizes"), nullptr;
  const int64_t rows = B * H * T, half = D / 2;
  const float* x = a.Ptr<float>(1, rows * D, "rope x");
  const float* cs = a.Ptr<float>(2, B * T * D, "rope cos");
  const float* sn = a.Ptr<float>(3, B * T * D, "rope sin");
  float* y = a.Ptr<float>(4, rows * D, "rope y");
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

void RegisterLayers(napi_env env, napi_value exports) {
  Export(env, exports, "rmsnorm", RmsNorm);
  Export(env, exports, "rmsnormGrad", RmsNormGrad);
  Export(env, exports, "swiglu", Swiglu);
  Export(env, exports, "swigluGrad", SwigluGrad);
  Export(env, exports, "rope", Rope);
}

}  // namespace pbrl_native
