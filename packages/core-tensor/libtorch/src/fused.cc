// pbrl's fused kernels (core-tensor/src/fused-ops.ts) on ATen: each is one addon call, a few
// ATen ops, instead of the tfjs op sequences and their temporaries. Same formulas as the native
// backend's kernels (native/src/pbrl_native.cc) and torch's own (RMSNorm, SiLU, AdamW).
#include "common.h"

namespace pbrl {
namespace {

// rmsnorm(x [rows, cols], w [cols], eps) → [y, rstd [rows]]: y = w ⊙ x · rstd, rstd = 1/√(mean(x²) + eps).
napi_value RmsNorm(const Args& a) {
  const at::Tensor& x = a.T(0);
  const at::Tensor rstd = at::rsqrt(at::mean(at::square(x), -1, true).add_(a.Num(2)));
  return Refs(a.env(), {at::mul(a.T(1), at::mul(x, rstd)), rstd.squeeze(-1)});
}

// rmsnormGrad(x, w, rstd, dy) → [dx, dw]
napi_value RmsNormGrad(const Args& a) {
  const at::Tensor &x = a.T(0), &w = a.T(1);
  const at::Tensor rstd = a.T(2).unsqueeze(-1);
  const at::Tensor& dy = a.T(3);
  const at::Tensor xhat = at::mul(x, rstd);
  const at::Tensor dw = at::sum(at::mul(dy, xhat), 0);
  const at::Tensor g = at::mul(dy, w);
  const at::Tensor dx = at::mul(rstd, at::sub(g, at::mul(xhat, at::mean(at::mul(g, xhat), -1, true))));
  return Refs(a.env(), {dx, dw});
}

// swiglu(gate, up) = gate·σ(gate) ⊙ up
napi_value Swiglu(const Args& a) { return Ref(a.env(), at::mul(at::silu(a.T(0)), a.T(1))); }

// swigluGrad(gate, up, dy) → [dgate, dup]
napi_value SwigluGrad(const Args& a) {
  const at::Tensor &g = a.T(0), &u = a.T(1), &dy = a.T(2);
  const at::Tensor s = at::sigmoid(g);
  const at::Tensor du = at::mul(dy, at::mul(g, s));
  const at::Tensor dg = at::mul(at::mul(dy, u), at::mul(s, at::add(at::mul(g, at::rsub(s, 1)), 1)));
  return Refs(a.env(), {dg, du});
}

// rope(x [b, h, t, d], cos, sin [b, 1, t, d], backward): x·cos + rot(x)·sin with rot(x1, x2) =
// (−x2, x1); backward applies the transpose, dy·cos + rotᵀ(dy·sin) with rotᵀ(z1, z2) = (z2, −z1).
napi_value Rope(const Args& a) {
  const at::Tensor &x = a.T(0), &cos = a.T(1), &sin = a.T(2);
  const int64_t half = x.size(-1) / 2;
  if (!a.Bool(3)) {
    const at::Tensor rot = at::cat({at::neg(x.narrow(-1, half, half)), x.narrow(-1, 0, half)}, -1);
    return Ref(a.env(), at::add(at::mul(x, cos), at::mul(rot, sin)));
  }
  const at::Tensor z = at::mul(x, sin);
  const at::Tensor rotT = at::cat({z.narrow(-1, half, half), at::neg(z.narrow(-1, 0, half))}, -1);
  return Ref(a.env(), at::add(at::mul(x, cos), rotT));
}

// logsoftmaxSelect(x [rows, cols], targets [rows]) → [value [rows], lse [rows, 1]]:
// value = x[i, targets[i]] − logsumexp(x[i, :]).
napi_value LogSoftmaxSelect(const Args& a) {
  const at::Tensor& x = a.T(0);
  const at::Tensor t = a.T(1).to(at::kLong).unsqueeze(1);
  const at::Tensor lse = at::logsumexp(x, 1, true);
  return Refs(a.env(), {at::sub(x.gather(1, t), lse).squeeze(1), lse});
}

// logsoftmaxGrad(x, lse [rows, 1], targets, dy [rows]): dy[i] · (onehot(targets)[i, j] − softmax(x)[i, j]).
napi_value LogSoftmaxGrad(const Args& a) {
  const at::Tensor &x = a.T(0), &lse = a.T(1);
  const at::Tensor t = a.T(2).to(at::kLong).unsqueeze(1);
  const at::Tensor dy = a.T(3).reshape({-1, 1});
  at::Tensor out = at::exp(at::sub(x, lse)).mul_(dy).neg_();
  out.scatter_add_(1, t, dy);
  return Ref(a.env(), out);
}

// scatterAddRows(dy [count, cols], indices [count], rows): zeros [rows, cols] with dy's rows added in.
napi_value ScatterAddRows(const Args& a) {
  const at::Tensor& dy = a.T(0);
  const at::Tensor idx = a.T(1).to(at::kLong);
  at::Tensor out = at::zeros({a.Int(2), dy.size(1)}, dy.options());
  out.index_add_(0, idx, dy);
  return Ref(a.env(), out);
}

// adamw(p, g, m, v, decay, b1, c1, b2, c2, bc2Sqrt, eps, stepSize) → [p', m', v'], as
// torch.optim.AdamW's single-tensor step: p·decay − stepSize · m' / (√v' / bc2Sqrt + eps).
napi_value AdamW(const Args& a) {
  const at::Tensor &p = a.T(0), &g = a.T(1), &m = a.T(2), &v = a.T(3);
  const double decay = a.Num(4), c1 = a.Num(6), b2 = a.Num(7), c2 = a.Num(8), bc2Sqrt = a.Num(9), eps = a.Num(10), stepSize = a.Num(11);
  const at::Tensor m2 = at::lerp(m, g, c1);
  const at::Tensor v2 = at::addcmul(at::mul(v, b2), g, g, c2);
  const at::Tensor denom = at::div(at::sqrt(v2), bc2Sqrt).add_(eps);
  const at::Tensor p2 = at::addcdiv(decay == 1 ? p : at::mul(p, decay), m2, denom, -stepSize);
  return Refs(a.env(), {p2, m2, v2});
}

}  // namespace

void RegisterFused(napi_env env, napi_value exports) {
  Export(env, exports, "rmsnorm", RmsNorm);
  Export(env, exports, "rmsnormGrad", RmsNormGrad);
  Export(env, exports, "swiglu", Swiglu);
  Export(env, exports, "swigluGrad", SwigluGrad);
  Export(env, exports, "rope", Rope);
  Export(env, exports, "logsoftmaxSelect", LogSoftmaxSelect);
  Export(env, exports, "logsoftmaxGrad", LogSoftmaxGrad);
  Export(env, exports, "scatterAddRows", ScatterAddRows);
  Export(env, exports, "adamw", AdamW);
}

}  // namespace pbrl
