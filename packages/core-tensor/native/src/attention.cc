// Attention, forward and backward, for q [B, H, T, D], k and v [B, KV, S, D] (S = past + T keys,
// H = KV · rep query heads sharing each key/value head), and a key mask [B, S] (1: a real token).
// Query i (position past + i) sees key j when j ≤ past + i and mask[j] = 1; a hidden key's score
// gets kMasked added, as models' attention bias does, so exp() underflows to exactly 0 and a query
// that sees no key at all (padding) gets a uniform row over all S keys, as there. Causal blocks:
// the queries of a block of kAttnBlock rows need only the first past + (last row + 1) keys, so the
// products skip the upper triangle (~40% of the work at T = S = 128), unless a row in the block
// sees no key. As tfjs ops the same work is five kernels forward and about twelve backward, each
// a pass over [B, H, T, S] scores, plus transposes.
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "blas.h"
#include "common.h"
#include "loops.h"

namespace pbrl_native {

using pbrl_blas::kNoTrans;
using pbrl_blas::kRowMajor;
using pbrl_blas::kTrans;

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
  AttnShape s{};
  float scale = 0.f;
  const float *q = nullptr, *k = nullptr, *v = nullptr;
  const int32_t* mask = nullptr;
};

static bool ReadAttnArgs(HeapArgs& a, const std::string& what, AttnArgs* r) {
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
  r->q = a.Ptr<float>(1, s.B * s.H * s.T * s.D, (what + " q").c_str());
  r->k = a.Ptr<float>(2, s.B * s.KV * s.S * s.D, (what + " k").c_str());
  r->v = a.Ptr<float>(3, s.B * s.KV * s.S * s.D, (what + " v").c_str());
  r->mask = a.Ptr<int32_t>(4, s.B * s.S, (what + " mask").c_str());
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
  HeapArgs a(env, info);
  AttnArgs in;
  if (!ReadAttnArgs(a, "attention", &in)) return nullptr;
  const AttnShape& s = in.s;
  const float *q = in.q, *k = in.k, *v = in.v;
  const int32_t* mask = in.mask;
  const float scale = in.scale;
  float* out = a.Ptr<float>(5, s.B * s.T * s.H * s.D, "attention out");
  float* probs = a.Ptr<float>(6, s.B * s.H * s.T * s.S, "attention probs");
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
  HeapArgs a(env, info);
  AttnArgs in;
  if (!ReadAttnArgs(a, "attention_grad", &in)) return nullptr;
  const AttnShape& s = in.s;
  const float *q = in.q, *k = in.k, *v = in.v;
  const float scale = in.scale;
  const float* probs = a.Ptr<float>(5, s.B * s.H * s.T * s.S, "attention_grad probs");
  const float* dy = a.Ptr<float>(6, s.B * s.T * s.H * s.D, "attention_grad dy");
  float* dq = a.Ptr<float>(14, s.B * s.H * s.T * s.D, "attention_grad dq");
  float* dk = a.Ptr<float>(15, s.B * s.KV * s.S * s.D, "attention_grad dk");
  float* dv = a.Ptr<float>(16, s.B * s.KV * s.S * s.D, "attention_grad dv");
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

void RegisterAttention(napi_env env, napi_value exports) {
  Export(env, exports, "attention", Attention);
  Export(env, exports, "attentionGrad", AttentionGrad);
}

}  // namespace pbrl_native
