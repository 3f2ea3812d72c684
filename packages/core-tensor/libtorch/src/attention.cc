// Grouped-query causal attention (fusedAttention in core-tensor/src/fused-ops.ts): the same
// contract as the native backend's kernel. q [b, h, t, d] over k, v [b, kv, s, d] (s = past + t);
// query i sees key j when j ≤ past + i and keyMask[b, j] = 1; out is [b, t, h, d] and the
// probabilities [b, h, t, s] are kept for the backward pass. A query that sees no key (left
// padding) gets a uniform row over all keys, as an additive finfo.min bias gives it.
#include <limits>

#include "common.h"

namespace pbrl {
namespace {

// Queries grouped by the key/value head they share: [b, h, t, d] → [b, kv, h/kv, t, d].
at::Tensor Grouped(const at::Tensor& q, int64_t kv) { return q.reshape({q.size(0), kv, q.size(1) / kv, q.size(2), q.size(3)}); }

// [b, 1, 1, t, s]: whether query i may see key j.
at::Tensor Allowed(const at::Tensor& keyMask, int64_t t, int64_t s) {
  const auto opts = at::TensorOptions().dtype(at::kLong).device(keyMask.device());
  const at::Tensor causal = at::le(at::arange(s, opts).unsqueeze(0), at::arange(t, opts).add_(s - t).unsqueeze(1));  // [t, s]
  return at::logical_and(causal.view({1, 1, 1, t, s}), at::ne(keyMask, 0).view({keyMask.size(0), 1, 1, 1, s}));
}

// attention(q, k, v, keyMask, scale) → [out [b, t, h, d], probs [b, h, t, s]]
napi_value Attention(const Args& a) {
  const std::vector<at::Tensor> in = a.Ts({0, 1, 2, 3});
  const at::Tensor &q = in[0], &k = in[1], &v = in[2], &keyMask = in[3];
  const double scale = a.Num(4);
  const int64_t b = q.size(0), h = q.size(1), t = q.size(2), d = q.size(3), kv = k.size(1), s = k.size(2);
  const at::Tensor scores = Matmul(Grouped(q, kv), k.unsqueeze(2).transpose(-1, -2)).mul_(scale);
  const at::Tensor masked = at::where(Allowed(keyMask, t, s), scores, at::scalar_tensor(std::numeric_limits<float>::lowest(), scores.options()));
  const at::Tensor probs = at::softmax(masked, -1);
  // bf16 projections in, a bf16 output for the output projection (see Matmul).
  const at::Tensor out = Matmul(probs, v.unsqueeze(2), q.scalar_type() == at::kBFloat16).reshape({b, h, t, d}).permute({0, 2, 1, 3}).contiguous();
  return Refs(a.env(), {out, probs.reshape({b, h, t, s})});
}

// attentionGrad(q, k, v, keyMask, probs, dy [b, t, h, d], scale) → [dq, dk, dv]
napi_value AttentionGrad(const Args& a) {
  const std::vector<at::Tensor> in = a.Ts({0, 1, 2, 4, 5});
  const at::Tensor &q = in[0], &k = in[1], &v = in[2];
  const double scale = a.Num(6);
  const int64_t kv = k.size(1);
  const at::Tensor p = Grouped(in[3], kv);                        // [b, kv, g, t, s]
  const at::Tensor dO = Grouped(in[4].permute({0, 2, 1, 3}), kv);  // [b, kv, g, t, d]
  const at::Tensor dv = Matmul(p.transpose(-1, -2), dO).sum(2);
  const at::Tensor dp = Matmul(dO, v.unsqueeze(2).transpose(-1, -2));
  const at::Tensor ds = at::mul(p, at::sub(dp, at::sum(at::mul(dp, p), -1, true))).mul_(scale);
  const at::Tensor dq = Matmul(ds, k.unsqueeze(2)).reshape(q.sizes());
  const at::Tensor dk = Matmul(ds.transpose(-1, -2), Grouped(q, kv)).sum(2);
  return Refs(a.env(), {dq, dk, dv});
}

}  // namespace

void RegisterAttention(napi_env env, napi_value exports) {
  Export(env, exports, "attention", Attention);
  Export(env, exports, "attentionGrad", AttentionGrad);
}

}  // namespace pbrl
