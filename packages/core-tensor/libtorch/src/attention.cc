// Grouped-query causal attention (fusedAttention in core-tensor/src/fused-ops.ts): the same
// contract as the native backend's kernel. q [b, h, t, d] over k, v [b, kv, s, d] (s = past + t);
// query i sees key j when j ≤ past + i and keyMask[b, j] = 1; out is [b, t, h, d] and the
// probabilities [b, h, t, s] are kept for the backward pass. A query that sees no key (left
// padding) gets a uniform row over all keys, as an additive finfo.min bias gives it.
//
// The products run in ATen (oneDNN's bfloat16 ones under bf16, the scores and dp then bfloat16 as
// under torch.autocast). On the CPU the masked softmax and its gradient are one pass over each row
// of scores (CpuRows), which also writes the bfloat16 copy the next product takes; as ATen ops
// they were a where, a softmax, four elementwise ops and three casts, each a pass over [b, h, t, s]
// (a SmolLM2-135M bf16 step at 4 × 128: attention 80–96 ms of its ~1 s).
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "common.h"
#include "exp.h"

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

// One row of probabilities: p = softmax(x · scale) over the keys j ≤ last with mask[j] ≠ 0, 0 at
// the others; uniform over all s keys when there is none.
PBRL_CLONES void MaskedSoftmaxRow(const float* __restrict x, const int32_t* __restrict mask, int64_t last, int64_t s, float scale, float* __restrict p) {
  for (int64_t j = 0; j < s; j++) p[j] = j <= last && mask[j] != 0 ? x[j] * scale : -INFINITY;
  const float mx = RowMax(p, s);
  if (mx == -INFINITY) {
    std::fill(p, p + s, 1.f / static_cast<float>(s));
    return;
  }
  float acc[16] = {0};
  int64_t j = 0;
  for (; j + 16 <= s; j += 16)
    for (int k = 0; k < 16; k++) acc[k] += p[j + k] = pbrl_exp::ExpF(p[j + k] - mx);  // exp(−inf) = 0
  float sum = 0;
  for (; j < s; j++) sum += p[j] = pbrl_exp::ExpF(p[j] - mx);
  for (float v : acc) sum += v;
  const float inv = 1.f / sum;
  for (j = 0; j < s; j++) p[j] *= inv;
}

// One row of the softmax's input gradient: ds = p ⊙ (dp − Σ_j dp ⊙ p) · scale.
PBRL_CLONES void SoftmaxGradRow(const float* __restrict p, const float* __restrict dp, int64_t s, float scale, float* __restrict ds) {
  const float c = Dot(dp, p, s);
  for (int64_t j = 0; j < s; j++) ds[j] = p[j] * (dp[j] - c) * scale;
}

bool OnCpu(std::initializer_list<at::Tensor> ts) {
  return std::all_of(ts.begin(), ts.end(), [](const at::Tensor& t) { return t.device().is_cpu(); });
}

// Runs row(r, in, out) over the rows of [rows, s] matrices in parallel, with per-thread float32
// buffers for a bfloat16 input row (see RunOf) and a bfloat16 output row (see StoreRun).
template <typename Row>
void CpuRows(int64_t rows, int64_t s, const Row& row) {
  at::parallel_for(0, rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(s, 1)), [&](int64_t lo, int64_t hi) {
    std::vector<float> in(s), out(s);
    for (int64_t r = lo; r < hi; r++) row(r, in.data(), out.data());
  });
}

// attention(q, k, v, keyMask, scale) → [out [b, t, h, d], probs [b, h, t, s]]
napi_value Attention(const Args& a) {
  const std::vector<at::Tensor> in = a.Ts({0, 1, 2, 3});
  const at::Tensor &q = in[0], &k = in[1], &v = in[2], &keyMask = in[3];
  const double scale = a.Num(4);
  const int64_t b = q.size(0), h = q.size(1), t = q.size(2), d = q.size(3), kv = k.size(1), s = k.size(2);
  const bool half = Bf16Compute();
  // bf16 projections in, a bf16 output for the output projection (see Matmul).
  const auto output = [&](const at::Tensor& probs) { return Matmul(probs, v.unsqueeze(2), half).reshape({b, h, t, d}).permute({0, 2, 1, 3}).contiguous(); };
  if (!OnCpu({q, k, v, keyMask})) {
    const at::Tensor scores = Matmul(Grouped(q, kv), k.unsqueeze(2).transpose(-1, -2)).mul_(scale);
    const at::Tensor masked = at::where(Allowed(keyMask, t, s), scores, at::scalar_tensor(std::numeric_limits<float>::lowest(), scores.options()));
    const at::Tensor probs = at::softmax(masked, -1);
    return Refs(a.env(), {output(probs), probs.reshape({b, h, t, s})});
  }
  const at::Tensor scores = Matmul(Grouped(q, kv), k.unsqueeze(2).transpose(-1, -2), half).contiguous();
  const at::Tensor mask = at::ne(keyMask, 0).to(at::kInt);
  const at::Tensor probs = at::empty({b, h, t, s}, q.options().dtype(at::kFloat));
  const at::Tensor probsHalf = half ? at::empty({b, h, t, s}, q.options().dtype(at::kBFloat16)) : at::Tensor();
  const int32_t* m = mask.data_ptr<int32_t>();
  float* p = probs.data_ptr<float>();
  CpuRows(b * h * t, s, [&](int64_t r, float* x, float*) {
    const int64_t i = r % t, batch = r / (h * t);
    MaskedSoftmaxRow(RunOf(scores, r * s, s, x), m + batch * s, s - t + i, s, static_cast<float>(scale), p + r * s);
    if (half) Narrow(p + r * s, probsHalf.data_ptr<c10::BFloat16>() + r * s, s);
  });
  return Refs(a.env(), {output(Grouped(half ? probsHalf : probs, kv)), probs}, {at::Tensor(), probsHalf});
}

// attentionGrad(q, k, v, keyMask, probs, dy [b, t, h, d], scale) → [dq, dk, dv]
napi_value AttentionGrad(const Args& a) {
  const std::vector<at::Tensor> in = a.Ts({0, 1, 2, 4, 5});
  const at::Tensor &q = in[0], &k = in[1], &v = in[2];
  const double scale = a.Num(6);
  const int64_t kv = k.size(1);
  const bool half = Bf16Compute();
  const bool cpu = OnCpu({q, k, v, in[3], in[4]});
  // Under bf16 the probabilities' bfloat16 copy (written by the forward pass) feeds the dv product.
  const at::Tensor p = Grouped(in[3], kv);  // [b, kv, g, t, s]
  const at::Tensor pOperand = half && cpu ? Grouped(Table().Bf16Copy(a.Int(4)), kv) : p;
  const at::Tensor dO = Grouped(in[4].permute({0, 2, 1, 3}), kv);  // [b, kv, g, t, d]
  const at::Tensor dv = Matmul(pOperand.transpose(-1, -2), dO).sum(2);
  at::Tensor ds;
  if (cpu) {
    const at::Tensor dp = Matmul(dO, v.unsqueeze(2).transpose(-1, -2), half).contiguous();
    const at::Tensor pc = p.contiguous();
    ds = at::empty(p.sizes(), dp.options());  // bfloat16 under bf16: what the two products take
    const int64_t s = p.size(-1), rows = s == 0 ? 0 : p.numel() / s;
    CpuRows(rows, s, [&](int64_t r, float* dpRow, float* out) {
      float* row = half ? out : ds.data_ptr<float>() + r * s;
      SoftmaxGradRow(pc.data_ptr<float>() + r * s, RunOf(dp, r * s, s, dpRow), s, static_cast<float>(scale), row);
      StoreRun(row, ds, r * s, s);
    });
  } else {
    const at::Tensor dp = Matmul(dO, v.unsqueeze(2).transpose(-1, -2));
    ds = at::mul(p, at::sub(dp, at::sum(at::mul(dp, p), -1, true))).mul_(scale);
  }
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
