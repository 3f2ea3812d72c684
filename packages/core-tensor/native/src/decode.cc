// One decoding step of a Llama-family model (Llama, Qwen2) for a batch of rows, without tfjs:
// token-by-token generation is otherwise ~200 tfjs kernel calls per token, whose per-call
// overhead, not arithmetic, bounds its speed. The weights stay where tfjs keeps them (the wasm
// heap, HF layout [out, in]); the KV cache is JS-owned memory [layers, rows, kvHeads, cap, dim];
// the rotary tables of the step come from JS (the same tables the tfjs path uses).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "blas.h"
#include "common.h"
#include "few_rows.h"
#include "loops.h"

namespace pbrl_native {

using pbrl_blas::kNoTrans;
using pbrl_blas::kRowMajor;
using pbrl_blas::kTrans;

// decode(heap, weights (Float64Array of heap offsets, −1 = absent), dims (Float64Array), ids
// (Int32Array [b]), cos, sin (Float32Array [b, d]), keyMask (Uint8Array [b, cur + 1]), cacheK,
// cacheV (Float32Array), logits (Float32Array [b, V]))
//   dims: b, hidden, heads, kvHeads, headDim, inter, vocab, layers, cap, cur, eps
//   weights: embed, finalNorm, lmHead, then per layer: inNorm, q, k, v, o, qb, kb, vb, ob,
//   postNorm, gate, up, down, gateB, upB, downB
enum { kEmbed = 0, kFinalNorm = 1, kLmHead = 2, kLayer0 = 3, kPerLayer = 16 };
enum { kInNorm = 0, kQ, kK, kV, kO, kQB, kKB, kVB, kOB, kPostNorm, kGate, kUp, kDown, kGateB, kUpB, kDownB };

// y [b, out] = x [b, in] · Wᵀ (+ bias), W [out, in]. Up to MaxRows() rows by FewRowsLinear (few_rows.h); more by
// single-threaded sgemms on slices of the output columns, one per pool thread (OpenBLAS's own
// threads cost more than they give on products this small). Waking the pool costs tens of µs,
// so only products of ≥ 2^17 multiply-adds per thread are split.
static void Linear(const float* x, const float* w, const float* bias, float* y, int64_t b, int64_t out, int64_t in) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 17) / (b * in));
  if (b <= pbrl_few_rows::MaxRows()) {
    g_pool->ParallelFor(out, grain, [&](int64_t lo, int64_t hi) { pbrl_few_rows::FewRowsLinear(x, in, w, y, out, b, lo, hi, in); });
  } else {
    if (g_blas_threads > 1) openblas_set_num_threads(1);
    g_pool->ParallelFor(out, grain, [&](int64_t lo, int64_t hi) {
      cblas_sgemm(kRowMajor, kNoTrans, kTrans, static_cast<int>(b), static_cast<int>(hi - lo), static_cast<int>(in), 1.f, x,
                  static_cast<int>(in), w + lo * in, static_cast<int>(in), 0.f, y + lo, static_cast<int>(out));
    });
    if (g_blas_threads > 1) openblas_set_num_threads(g_blas_threads);
  }
  if (bias != nullptr)
    for (int64_t i = 0; i < b; i++)
      for (int64_t j = 0; j < out; j++) y[i * out + j] += bias[j];
}

static void RmsNormRows(const float* x, const float* w, float* y, int64_t rows, int64_t cols, float eps) {
  for (int64_t i = 0; i < rows; i++) RmsNormRow(x + i * cols, w, y + i * cols, cols, eps);
}

static napi_value Decode(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  size_t nw = 0, nd = 0, nids = 0, ncos = 0, nsin = 0, nmask = 0, nk = 0, nv = 0, nlog = 0;
  const double* wOff = static_cast<const double*>(a.Typed(1, napi_float64_array, &nw, "a Float64Array of weight offsets"));
  const double* dims = static_cast<const double*>(a.Typed(2, napi_float64_array, &nd, "a Float64Array of sizes"));
  const int32_t* ids = static_cast<const int32_t*>(a.Typed(3, napi_int32_array, &nids, "an Int32Array of token ids"));
  const float* cosT = static_cast<const float*>(a.Typed(4, napi_float32_array, &ncos, "a Float32Array of cos"));
  const float* sinT = static_cast<const float*>(a.Typed(5, napi_float32_array, &nsin, "a Float32Array of sin"));
  const uint8_t* mask = static_cast<const uint8_t*>(a.Typed(6, napi_uint8_array, &nmask, "a Uint8Array key mask"));
  float* cacheK = static_cast<float*>(a.Typed(7, napi_float32_array, &nk, "a Float32Array K cache"));
  float* cacheV = static_cast<float*>(a.Typed(8, napi_float32_array, &nv, "a Float32Array V cache"));
  float* logits = static_cast<float*>(a.Typed(9, napi_float32_array, &nlog, "a Float32Array for the logits"));
  if (!a.ok) return nullptr;
  if (nd != 11) return a.Fail("decode: dims needs 11 values"), nullptr;
  const int64_t b = static_cast<int64_t>(dims[0]), H = static_cast<int64_t>(dims[1]), nH = static_cast<int64_t>(dims[2]),
                kvH = static_cast<int64_t>(dims[3]), d = static_cast<int64_t>(dims[4]), F = static_cast<int64_t>(dims[5]),
                V = static_cast<int64_t>(dims[6]), L = static_cast<int64_t>(dims[7]), cap = static_cast<int64_t>(dims[8]),
                cur = static_cast<int64_t>(dims[9]);
  const float eps = static_cast<float>(dims[10]);
  if (b < 1 || H < 1 || nH < 1 || kvH < 1 || nH % kvH != 0 || d < 2 || d % 2 != 0 || F < 1 || V < 1 || L < 1 || cur < 0 || cur >= cap)
    return a.Fail("decode: bad sizes"), nullptr;
  if (nw != static_cast<size_t>(kLayer0 + kPerLayer * L)) return a.Fail("decode: wrong number of weight offsets"), nullptr;
  if (nids != static_cast<size_t>(b) || ncos != static_cast<size_t>(b * d) || nsin != ncos ||
      nmask != static_cast<size_t>(b * (cur + 1)) || nk != static_cast<size_t>(L * b * kvH * cap * d) || nv != nk ||
      nlog != static_cast<size_t>(b * V))
    return a.Fail("decode: an array has the wrong length"), nullptr;
  // Weight pointers, bounds-checked; −1 means absent (biases).
  auto W = [&](int64_t idx, int64_t count, const char* what) -> const float* {
    const double off = wOff[idx];
    if (off < 0) return nullptr;
    return a.At<float>(static_cast<int64_t>(off), count, what);
  };
  const int64_t qDim = nH * d, kvDim = kvH * d, rep = nH / kvH;
  const float* embed = W(kEmbed, V * H, "decode embed");
  const float* finalNorm = W(kFinalNorm, H, "decode final norm");
  const float* lmHead = W(kLmHead, V * H, "decode lm head");
  if (!a.ok) return nullptr;
  if (embed == nullptr || finalNorm == nullptr || lmHead == nullptr) return a.Fail("decode: missing weights"), nullptr;
  for (int64_t i = 0; i < b; i++)
    if (ids[i] < 0 || ids[i] >= V) return a.Fail("decode: token id outside the vocabulary"), nullptr;

  std::vector<float> h(b * H), xn(b * H), q(b * qDim), k(b * kvDim), v(b * kvDim), att(b * qDim), tmp(b * H), gate(b * F), up(b * F), act(b * F);
  for (int64_t i = 0; i < b; i++) std::memcpy(&h[i * H], embed + static_cast<int64_t>(ids[i]) * H, H * sizeof(float));
  const float scale = 1.f / std::sqrt(static_cast<float>(d));
  const int64_t T = cur + 1;
  for (int64_t l = 0; l < L; l++) {
    const int64_t base = kLayer0 + kPerLayer * l;
    const float* inNorm = W(base + kInNorm, H, "decode input norm");
    const float* wq = W(base + kQ, qDim * H, "decode q");
    const float* wk = W(base + kK, kvDim * H, "decode k");
    const float* wv = W(base + kV, kvDim * H, "decode v");
    const float* wo = W(base + kO, H * qDim, "decode o");
    const float* qb = W(base + kQB, qDim, "decode q bias");
    const float* kb = W(base + kKB, kvDim, "decode k bias");
    const float* vb = W(base + kVB, kvDim, "decode v bias");
    const float* ob = W(base + kOB, H, "decode o bias");
    const float* postNorm = W(base + kPostNorm, H, "decode post norm");
    const float* wg = W(base + kGate, F * H, "decode gate");
    const float* wu = W(base + kUp, F * H, "decode up");
    const float* wd = W(base + kDown, H * F, "decode down");
    const float* gb = W(base + kGateB, F, "decode gate bias");
    const float* ub = W(base + kUpB, F, "decode up bias");
    const float* db = W(base + kDownB, H, "decode down bias");
    if (!a.ok) return nullptr;
    if (!inNorm || !wq || !wk || !wv || !wo || !postNorm || !wg || !wu || !wd) return a.Fail("decode: missing weights"), nullptr;
    RmsNormRows(h.data(), inNorm, xn.data(), b, H, eps);
    Linear(xn.data(), wq, qb, q.data(), b, qDim, H);
    Linear(xn.data(), wk, kb, k.data(), b, kvDim, H);
    Linear(xn.data(), wv, vb, v.data(), b, kvDim, H);
    float* Kl = cacheK + l * b * kvH * cap * d;
    float* Vl = cacheV + l * b * kvH * cap * d;
    for (int64_t i = 0; i < b; i++) {
      const float* c = cosT + i * d;
      const float* s = sinT + i * d;
      for (int64_t hq = 0; hq < nH; hq++) RopeRow(&q[i * qDim + hq * d], c, s, &q[i * qDim + hq * d], d);
      for (int64_t g = 0; g < kvH; g++) {
        RopeRow(&k[i * kvDim + g * d], c, s, &k[i * kvDim + g * d], d);
        std::memcpy(Kl + ((i * kvH + g) * cap + cur) * d, &k[i * kvDim + g * d], d * sizeof(float));
        std::memcpy(Vl + ((i * kvH + g) * cap + cur) * d, &v[i * kvDim + g * d], d * sizeof(float));
      }
    }
    // Attention of each row's query heads over its unmasked cached positions.
    g_pool->ParallelFor(b * nH, std::max<int64_t>(1, (int64_t{1} << 17) / (2 * T * d)), [&](int64_t lo, int64_t hi) {
      std::vector<float> p(T);
      for (int64_t job = lo; job < hi; job++) {
        const int64_t i = job / nH, hq = job % nH, g = hq / rep;
        const float* qv = &q[i * qDim + hq * d];
        const float* Kg = Kl + (i * kvH + g) * cap * d;
        const float* Vg = Vl + (i * kvH + g) * cap * d;
        const uint8_t* m = mask + i * T;
        float mx = -INFINITY;
        for (int64_t t = 0; t < T; t++) {
          if (!m[t]) continue;
          float dot = 0.f;
          for (int64_t e = 0; e < d; e++) dot += qv[e] * Kg[t * d + e];
          p[t] = dot * scale;
          mx = std::max(mx, p[t]);
        }
        float sum = 0.f;
        for (int64_t t = 0; t < T; t++) {
          p[t] = m[t] ? std::exp(p[t] - mx) : 0.f;
          sum += p[t];
        }
        float* o = &att[i * qDim + hq * d];
        for (int64_t e = 0; e < d; e++) o[e] = 0.f;
        for (int64_t t = 0; t < T; t++) {
          if (p[t] == 0.f) continue;
          const float w = p[t] / sum;
          for (int64_t e = 0; e < d; e++) o[e] += w * Vg[t * d + e];
        }
      }
    });
    Linear(att.data(), wo, ob, tmp.data(), b, H, qDim);
    for (int64_t j = 0; j < b * H; j++) h[j] += tmp[j];
    RmsNormRows(h.data(), postNorm, xn.data(), b, H, eps);
    Linear(xn.data(), wg, gb, gate.data(), b, F, H);
    Linear(xn.data(), wu, ub, up.data(), b, F, H);
    SwigluLoop(gate.data(), up.data(), act.data(), b * F);
    Linear(act.data(), wd, db, tmp.data(), b, H, F);
    for (int64_t j = 0; j < b * H; j++) h[j] += tmp[j];
  }
  RmsNormRows(h.data(), finalNorm, xn.data(), b, H, eps);
  Linear(xn.data(), lmHead, nullptr, logits, b, V, H);
  return Undefined(env);
}

void RegisterDecode(napi_env env, napi_value exports) {
  Export(env, exports, "decode", Decode);
}

}  // namespace pbrl_native
