// Token-by-token decoding of a Llama-family model in one addon call per step: generation at small
// batch is otherwise bound by the per-kernel cost of tfjs (about 20 kernel calls per layer per
// token), not by arithmetic. A decoder holds the model's weights (or bfloat16 copies, which halve
// the bytes every token reads), each prompt's keys and values once for all the rows that answer
// it, and each row's own cache preallocated for the rest of the generation, where the weights are
// (CPU or CUDA); each step returns the next-token logits as a tensor, so that sampling
// (sampling.cc) brings back only the chosen ids. The same operations as the model's tfjs forward
// pass on this backend (fused.cc, attention.cc), the attention's sums split at the prompt's end.
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "common.h"
#include "exp.h"

namespace pbrl {
namespace {

struct Layer {
  at::Tensor inputNorm, q, k, v, o, qBias, kBias, vBias, oBias, postNorm, gate, up, down, gateBias, upBias, downBias;
  // The prompts' keys and values, one copy per prompt whatever its rows, and each row's own
  // generated ones. Keys are kept transposed, [prompts, kvHeads, headDim, promptLength] and [batch,
  // kvHeads, headDim, capacity − promptLength], so that a query's scores are sums of contiguous
  // rows (loops that vectorise over the keys), each row padded with zeros to a multiple of 16
  // floats (no scalar tail); values [prompts, kvHeads, promptLength, headDim] and [batch, kvHeads,
  // capacity − promptLength, headDim].
  at::Tensor promptKt, promptV, cacheKt, cacheV;
};

struct Decoder {
  int64_t batch, hidden, heads, kvHeads, headDim, vocab, capacity, length = 0, promptLength = 0;
  double eps;
  at::Tensor embed, finalNorm, lmHead;
  std::vector<Layer> layers;
  // The prompt each row answers: non-decreasing, so that a prompt's rows are one run of rows.
  std::vector<int64_t> rowPrompt;
};

int64_t Padded(int64_t n) { return (n + 15) / 16 * 16; }

std::unordered_map<int64_t, Decoder>& Decoders() {
  static thread_local std::unordered_map<int64_t, Decoder> decoders;
  return decoders;
}

Decoder& Get(int64_t handle) {
  auto it = Decoders().find(handle);
  if (it == Decoders().end()) throw ArgError("decoder " + std::to_string(handle) + " does not exist (freed, or from another thread)");
  return it->second;
}

// At the batch sizes of decoding each ATen op costs more in dispatch than in arithmetic (a step
// is ~40 of them per layer): on the CPU the norms, rotary tables, SwiGLU and attention run as
// pbrl's own loops over float32 (the ones of fused.cc), the same formulas; elsewhere ATen ops.
bool CpuFloat(std::initializer_list<at::Tensor> ts) {
  return std::all_of(ts.begin(), ts.end(), [](const at::Tensor& t) { return t.device().is_cpu() && t.scalar_type() == at::kFloat && t.is_contiguous(); });
}

at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& w, double eps) {
  if (!CpuFloat({x, w})) return at::mul(w, at::mul(x, at::rsqrt(at::mean(at::square(x), -1, true).add_(eps))));
  at::Tensor y = at::empty_like(x);
  const int64_t cols = x.size(-1);
  for (int64_t r = 0; r < x.numel() / cols; r++) RmsNormRow(x.data_ptr<float>() + r * cols, w.data_ptr<float>(), y.data_ptr<float>() + r * cols, cols, static_cast<float>(eps));
  return y;
}

// x [b, n, d] rotated by the rows' tables cos, sin [b, 1, d].
at::Tensor Rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t b = x.size(0), n = x.size(1), d = x.size(2), half = d / 2;
  if (!CpuFloat({x, cos, sin})) {
    const at::Tensor rot = at::cat({at::neg(x.narrow(-1, half, half)), x.narrow(-1, 0, half)}, -1);
    return at::add(at::mul(x, cos), at::mul(rot, sin));
  }
  at::Tensor y = at::empty_like(x);
  for (int64_t i = 0; i < b; i++)
    for (int64_t h = 0; h < n; h++)
      RopeVector(x.data_ptr<float>() + (i * n + h) * d, cos.data_ptr<float>() + i * d, sin.data_ptr<float>() + i * d, y.data_ptr<float>() + (i * n + h) * d, half, false);
  return y;
}

at::Tensor Swiglu(const at::Tensor& gate, const at::Tensor& up) {
  if (!CpuFloat({gate, up})) return at::mul(at::silu(gate), up);
  at::Tensor y = at::empty_like(gate);
  SwigluLoop(gate.data_ptr<float>(), up.data_ptr<float>(), y.data_ptr<float>(), gate.numel());
  return y;
}

// x·Wᵀ + b with the weight's dtype: a bfloat16 weight computes in bfloat16 (Bf16Product), float32 out.
at::Tensor Linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  if (w.scalar_type() == at::kBFloat16) {
    at::Tensor y = Bf16Product(x, w.t(), false);
    return b.defined() ? y.add_(b) : y;
  }
  at::Tensor y = CpuFloatMatmul(x, w.t());  // OpenBLAS where chosen (blas.cc)
  return b.defined() ? y.add_(b) : y;
}

// decoderCreate(weightIds (−1 for an absent bias), [batch, hidden, heads, kvHeads, headDim, vocab,
// layers, capacity], rmsNormEps, bf16Weights, rowPrompt (Int32Array [batch], non-decreasing from 0
// without gaps)) → handle. Ids in the order of src/libtorch/decode.ts.
napi_value Create(const Args& a) {
  const std::vector<int64_t> ids = a.Ints(0);
  const std::vector<int64_t> dimsInt = a.Ints(1);
  if (dimsInt.size() != 8) throw ArgError("decoderCreate: 8 dims expected");
  Decoder dec;
  dec.batch = dimsInt[0];
  dec.hidden = dimsInt[1];
  dec.heads = dimsInt[2];
  dec.kvHeads = dimsInt[3];
  dec.headDim = dimsInt[4];
  dec.vocab = dimsInt[5];
  const int64_t layers = dimsInt[6];
  dec.capacity = dimsInt[7];
  dec.eps = a.Num(2);
  const bool bf16 = a.Bool(3);
  napi_typedarray_type type;
  size_t n;
  const int32_t* rowPrompt = static_cast<const int32_t*>(a.Typed(4, &type, &n));
  if (type != napi_int32_array || static_cast<int64_t>(n) != dec.batch) throw ArgError("decoderCreate: rowPrompt must be an Int32Array of one prompt index per row");
  for (size_t i = 0; i < n; i++) {
    const bool next = i == 0 ? rowPrompt[0] == 0 : rowPrompt[i] == rowPrompt[i - 1] || rowPrompt[i] == rowPrompt[i - 1] + 1;
    if (!next) throw ArgError("decoderCreate: rowPrompt must start at 0 and grow by at most 1 from row to row");
    dec.rowPrompt.push_back(rowPrompt[i]);
  }
  if (ids.size() != static_cast<size_t>(3 + 16 * layers)) throw ArgError("decoderCreate: expected " + std::to_string(3 + 16 * layers) + " weight ids");
  auto w = [&](size_t i) { return ids[i] < 0 ? at::Tensor() : Table().Get(ids[i]); };
  // Projections (read in full every token) as bfloat16 copies when asked; norms and biases stay float32.
  auto proj = [&](size_t i) { return bf16 ? w(i).to(at::kBFloat16) : w(i); };
  dec.embed = w(0);
  dec.finalNorm = w(1);
  dec.lmHead = proj(2);
  for (int64_t l = 0; l < layers; l++) {
    const size_t b = 3 + 16 * l;
    dec.layers.push_back(Layer{w(b), proj(b + 1), proj(b + 2), proj(b + 3), proj(b + 4), w(b + 5), w(b + 6), w(b + 7), w(b + 8), w(b + 9), proj(b + 10),
                               proj(b + 11), proj(b + 12), w(b + 13), w(b + 14), w(b + 15), {}, {}, {}, {}});
  }
  static thread_local int64_t next = 0;
  const int64_t handle = next++;
  Decoders().emplace(handle, std::move(dec));
  napi_value v;
  napi_create_double(a.env(), static_cast<double>(handle), &v);
  return v;
}

// decoderLoad(handle, layer, k, v, length): a layer's prompt keys and values [prompts, kvHeads,
// length, headDim] (the prompts' own, from the tfjs forward pass), kept once per prompt: every row
// of a prompt attends to the same copy. Each row's cache for the positions after them starts empty.
napi_value Load(const Args& a) {
  Decoder& dec = Get(a.Int(0));
  const int64_t layer = a.Int(1), length = a.Int(4);
  if (layer < 0 || layer >= static_cast<int64_t>(dec.layers.size())) throw ArgError("decoderLoad: no layer " + std::to_string(layer));
  if (length < 1 || length >= dec.capacity) throw ArgError("decoderLoad: " + std::to_string(length) + " prompt positions do not leave room below the capacity " + std::to_string(dec.capacity));
  const at::Tensor k = a.T(2), v = a.T(3);
  const int64_t prompts = dec.rowPrompt.empty() ? 0 : dec.rowPrompt.back() + 1;
  if (k.dim() != 4 || k.size(0) != prompts || k.size(1) != dec.kvHeads || k.size(2) != length || k.size(3) != dec.headDim || !k.sizes().equals(v.sizes()))
    throw ArgError("decoderLoad: keys and values must be [" + std::to_string(prompts) + " prompts, kvHeads, length, headDim]");
  Layer& L = dec.layers[layer];
  const auto opts = dec.embed.options().dtype(at::kFloat);
  L.promptKt = at::zeros({prompts, dec.kvHeads, dec.headDim, Padded(length)}, opts);
  L.promptKt.narrow(3, 0, length).copy_(k.transpose(-1, -2));
  L.promptV = at::empty(v.sizes(), opts).copy_(v);
  L.cacheKt = at::zeros({dec.batch, dec.kvHeads, dec.headDim, Padded(dec.capacity - length)}, opts);
  L.cacheV = at::zeros({dec.batch, dec.kvHeads, dec.capacity - length, dec.headDim}, opts);
  dec.length = dec.promptLength = length;
  return Undefined(a.env());
}

// The runs of rows [first, first + count) that share a prompt, in row order.
struct PromptRows {
  int64_t prompt, first, count;
};
std::vector<PromptRows> RowsByPrompt(const Decoder& dec) {
  std::vector<PromptRows> runs;
  for (int64_t r = 0; r < dec.batch; r++) {
    if (runs.empty() || runs.back().prompt != dec.rowPrompt[r]) runs.push_back({dec.rowPrompt[r], r, 0});
    runs.back().count++;
  }
  return runs;
}

// Register tiles for the attention of a decoding step (GCC vector extensions: each clone of the
// callers below compiles them to its own vector width). The scores and the weighted values are
// sums held in registers across the head dimension or the keys, not axpy passes over a buffer in
// memory (a load, an add and a store per multiply): 16 rows of SmolLM2-135M on an Intel Xeon
// (AVX-512), 6.1 → 4.3 ms of attention a step.
typedef float V16 __attribute__((vector_size(64), aligned(4)));
#define PBRL_TILE_INLINE static inline __attribute__((always_inline))

PBRL_TILE_INLINE V16 Load16(const float* p) {
  V16 v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
PBRL_TILE_INLINE void Store16(float* p, V16 v) { __builtin_memcpy(p, &v, sizeof v); }

// w[h·ldw + j] = q_h · k_j for H heads q [H, d] and n keys (a multiple of 16) stored transposed,
// rows of ld floats: C blocks of 16 keys at a time, H × C sums in registers.
template <int H, int C>
PBRL_TILE_INLINE void ScoreTile(const float* q, int64_t d, const float* kt, int64_t ld, int64_t j, float* w, int64_t ldw) {
  V16 acc[H][C] = {};
  for (int64_t e = 0; e < d; e++) {
    V16 k[C];
    for (int c = 0; c < C; c++) k[c] = Load16(kt + e * ld + j + 16 * c);
    for (int h = 0; h < H; h++) {
      const float qe = q[h * d + e];
      for (int c = 0; c < C; c++) acc[h][c] += qe * k[c];
    }
  }
  for (int h = 0; h < H; h++)
    for (int c = 0; c < C; c++) Store16(w + h * ldw + j + 16 * c, acc[h][c]);
}

template <int H>
PBRL_TILE_INLINE void ScoreHeads(const float* q, int64_t d, const float* kt, int64_t ld, int64_t n, float* w, int64_t ldw) {
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) ScoreTile<H, 4>(q, d, kt, ld, j, w, ldw);
  for (; j < n; j += 16) ScoreTile<H, 1>(q, d, kt, ld, j, w, ldw);
}

// y[h·d + e0 + ·] += Σ over the kept keys j < n of p[h·ldp + j] · v_j[e0 + ·], for C blocks of 16
// of the head dimension: H × C sums in registers, each value read once for the H heads.
template <int H, int C>
PBRL_TILE_INLINE void ValueTile(const float* p, int64_t ldp, const float* v, int64_t d, int64_t n, const uint8_t* keep, int64_t e0, float* y) {
  V16 acc[H][C] = {};
  for (int64_t j = 0; j < n; j++) {
    if (!keep[j]) continue;
    V16 x[C];
    for (int c = 0; c < C; c++) x[c] = Load16(v + j * d + e0 + 16 * c);
    for (int h = 0; h < H; h++) {
      const float pj = p[h * ldp + j];
      for (int c = 0; c < C; c++) acc[h][c] += pj * x[c];
    }
  }
  for (int h = 0; h < H; h++)
    for (int c = 0; c < C; c++) Store16(y + h * d + e0 + 16 * c, Load16(y + h * d + e0 + 16 * c) + acc[h][c]);
}

template <int H>
PBRL_TILE_INLINE void ValueHeads(const float* p, int64_t ldp, const float* v, int64_t d, int64_t n, const uint8_t* keep, float* y) {
  int64_t e = 0;
  for (; e + 64 <= d; e += 64) ValueTile<H, 4>(p, ldp, v, d, n, keep, e, y);
  for (; e + 16 <= d; e += 16) ValueTile<H, 1>(p, ldp, v, d, n, keep, e, y);
  for (; e < d; e++)  // a head dimension that is not a multiple of 16
    for (int64_t j = 0; j < n; j++)
      if (keep[j])
        for (int h = 0; h < H; h++) y[h * d + e] += p[h * ldp + j] * v[j * d + e];
}

// Up to four heads at a time (their tiles' sums fill the registers), for any group size g.
#define PBRL_BY_HEADS(KERNEL, g, h0, ...)                         \
  switch (std::min<int64_t>(4, (g) - (h0))) {                     \
    case 1: KERNEL<1>(__VA_ARGS__); break;                        \
    case 2: KERNEL<2>(__VA_ARGS__); break;                        \
    case 3: KERNEL<3>(__VA_ARGS__); break;                        \
    default: KERNEL<4>(__VA_ARGS__);                              \
  }

// The attention of the g query heads q [g, d] that share one key/value head, on the CPU in float32
// (each key and value is read once for the g of them): scores over the prompt's keys kt1
// (transposed, rows of n1 floats, zero-padded) and the row's own kt2 (rows of stride2), of which
// the first p and t count, as keyMask m [p + t] says; one softmax per head; y [g, d] = Σ_j p_j·v_j
// over the values (rows of d floats). w: room for g × (n1 + n2) scores and g × d scaled queries,
// n1 and n2 multiples of 16; keep: room for n1 + n2 flags.
PBRL_CLONES void AttendGroup(const float* __restrict q, int64_t g, int64_t d, float scale, const float* kt1, int64_t n1, const float* v1, int64_t p,
                             const float* kt2, int64_t stride2, const float* v2, int64_t n2, int64_t t, const uint8_t* __restrict m, float* __restrict w,
                             uint8_t* __restrict keep, float* __restrict y) {
  const int64_t s = n1 + n2;
  float* __restrict qs = w + g * s;
  for (int64_t i = 0; i < g * d; i++) qs[i] = q[i] * scale;
  for (int64_t h0 = 0; h0 < g; h0 += 4) {
    PBRL_BY_HEADS(ScoreHeads, g, h0, qs + h0 * d, d, kt1, n1, n1, w + h0 * s, s)
    PBRL_BY_HEADS(ScoreHeads, g, h0, qs + h0 * d, d, kt2, stride2, n2, w + h0 * s + n1, s)
  }
  for (int64_t j = 0; j < s; j++) keep[j] = j < n1 ? j < p && m[j] : j - n1 < t && m[p + j - n1];
  for (int64_t h = 0; h < g; h++) {
    float* __restrict wh = w + h * s;
    for (int64_t j = 0; j < s; j++) wh[j] = keep[j] ? wh[j] : -INFINITY;
    const float mx = RowMax(wh, s);
    if (mx == -INFINITY) {  // not reached (a row's newest position is never masked): y stays 0
      std::fill(wh, wh + s, 0.f);
      continue;
    }
    float sum = 0;
    for (int64_t j = 0; j < s; j++) sum += wh[j] = pbrl_exp::ExpF(wh[j] - mx);
    const float inv = 1.f / sum;
    for (int64_t j = 0; j < s; j++) wh[j] *= inv;
  }
  std::fill(y, y + g * d, 0.f);
  for (int64_t h0 = 0; h0 < g; h0 += 4) {
    PBRL_BY_HEADS(ValueHeads, g, h0, w + h0 * s, s, v1, d, p, keep, y + h0 * d)
    PBRL_BY_HEADS(ValueHeads, g, h0, w + h0 * s + n1, s, v2, d, t, keep + n1, y + h0 * d)
  }
}

// Attention of every row's query heads q [b, heads, d] over its prompt's keys and its own since
// (keyMask [b, promptLength + t]); the result [b, heads × d].
at::Tensor CpuAttend(const Decoder& dec, const Layer& L, const at::Tensor& q, const uint8_t* keyMask) {
  const int64_t b = q.size(0), kv = dec.kvHeads, g = dec.heads / kv, d = dec.headDim;
  const int64_t p = dec.promptLength, t = dec.length - p + 1, n1 = L.promptKt.size(3), n2 = Padded(t), stride2 = L.cacheKt.size(3), own = L.cacheV.size(2);
  const float scale = 1.f / std::sqrt(static_cast<float>(d));
  at::Tensor out = at::empty({b, dec.heads * d}, q.options());
  const float *qs = q.data_ptr<float>(), *pk = L.promptKt.data_ptr<float>(), *pv = L.promptV.data_ptr<float>();
  const float *ck = L.cacheKt.data_ptr<float>(), *cv = L.cacheV.data_ptr<float>();
  float* o = out.data_ptr<float>();
  // Each job reads p + t keys and values of d floats for g heads: split only ≥ 2^17 multiply-adds per thread.
  at::parallel_for(0, b * kv, std::max<int64_t>(1, (int64_t{1} << 17) / (2 * g * (p + t) * d)), [&](int64_t lo, int64_t hi) {
    std::vector<float> w(g * (n1 + n2 + d));
    std::vector<uint8_t> keep(n1 + n2);
    for (int64_t job = lo; job < hi; job++) {
      const int64_t i = job / kv, prompt = dec.rowPrompt[i] * kv + job % kv;
      AttendGroup(qs + job * g * d, g, d, scale, pk + prompt * d * n1, n1, pv + prompt * p * d, p, ck + job * d * stride2, stride2, cv + job * own * d, n2, t,
                  keyMask + i * (p + t), w.data(), keep.data(), o + job * g * d);
    }
  });
  return out;
}

// Attention of each row's queries q [b, kvHeads, g, d] over its prompt's keys (one product per
// prompt for all its rows: the prompt's keys are read once, not once per row) and its own keys
// since, with one softmax over both; the result [b, heads × d].
at::Tensor Attend(const Decoder& dec, const Layer& L, const std::vector<PromptRows>& runs, const at::Tensor& q, const at::Tensor& keyMask, const at::Tensor& lowest) {
  const int64_t b = q.size(0), kv = q.size(1), g = q.size(2), d = q.size(3), p = dec.promptLength, t = dec.length - p + 1;
  // A prompt's rows as one [kv, rows × g, ·] batch, and back.
  const auto gather = [&](const at::Tensor& x, const PromptRows& r) { return x.narrow(0, r.first, r.count).permute({1, 0, 2, 3}).reshape({kv, r.count * g, x.size(3)}); };
  const auto scatter = [&](const at::Tensor& x, const PromptRows& r) { return x.view({kv, r.count, g, x.size(2)}).permute({1, 0, 2, 3}); };
  std::vector<at::Tensor> promptScores;
  for (const PromptRows& r : runs) promptScores.push_back(scatter(at::matmul(gather(q, r), L.promptKt.select(0, r.prompt).narrow(-1, 0, p)), r));
  const at::Tensor keysT = L.cacheKt.narrow(3, 0, t), values = L.cacheV.narrow(2, 0, t);  // [b, kv, d, t], [b, kv, t, d]
  const at::Tensor ownScores = at::matmul(q, keysT);
  const at::Tensor scores = at::cat({at::cat(promptScores, 0), ownScores}, -1).mul_(1.0 / std::sqrt(static_cast<double>(d)));
  const at::Tensor probs = at::softmax(at::where(keyMask, scores, lowest), -1);  // [b, kv, g, p + t]
  const at::Tensor promptProbs = probs.narrow(-1, 0, p);
  at::Tensor attended = at::matmul(probs.narrow(-1, p, t), values);  // [b, kv, g, d]
  for (const PromptRows& r : runs) attended.narrow(0, r.first, r.count).add_(scatter(at::matmul(gather(promptProbs, r), L.promptV.select(0, r.prompt)), r));
  return attended.reshape({b, dec.heads * d});
}

const float* FloatArg(const Args& a, size_t i, size_t want, const char* what) {
  napi_typedarray_type type;
  size_t n;
  const void* p = a.Typed(i, &type, &n);
  if (type != napi_float32_array || n != want) throw ArgError(std::string("decoderStep: ") + what + " must be a Float32Array of " + std::to_string(want));
  return static_cast<const float*>(p);
}

// decoderStep(handle, ids [batch] (Int32Array), cos, sin [batch, headDim] (Float32Array), keyMask
// [batch, length + 1] (Uint8Array)) → logits [batch, vocab]: appends each row's token at position
// `length` and runs it through the model.
napi_value Step(const Args& a) {
  Decoder& dec = Get(a.Int(0));
  if (dec.promptLength == 0) throw ArgError("decoderStep: no prompt loaded (decoderLoad every layer first)");
  if (dec.length >= dec.capacity) throw ArgError("decoderStep: the cache is full (" + std::to_string(dec.capacity) + " positions)");
  const int64_t b = dec.batch, d = dec.headDim, s = dec.length + 1, g = dec.heads / dec.kvHeads;
  napi_typedarray_type type;
  size_t n;
  const void* idsData = a.Typed(1, &type, &n);
  if (type != napi_int32_array || static_cast<int64_t>(n) != b) throw ArgError("decoderStep: ids must be an Int32Array of one id per row");
  const at::Device device = dec.embed.device();
  const auto onDevice = [&](const at::Tensor& host) { return device.is_cpu() ? host : host.to(device); };
  const at::Tensor ids = onDevice(at::from_blob(const_cast<void*>(idsData), {b}, at::kInt).to(at::kLong));
  if (ids.numel() > 0 && (ids.min().item<int64_t>() < 0 || ids.max().item<int64_t>() >= dec.vocab)) throw ArgError("decoderStep: a token id lies outside the vocabulary");
  const at::Tensor cos = onDevice(at::from_blob(const_cast<float*>(FloatArg(a, 2, b * d, "cos")), {b, 1, d}, at::kFloat).clone());
  const at::Tensor sin = onDevice(at::from_blob(const_cast<float*>(FloatArg(a, 3, b * d, "sin")), {b, 1, d}, at::kFloat).clone());
  const void* maskData = a.Typed(4, &type, &n);
  if (type != napi_uint8_array || static_cast<int64_t>(n) != b * s) throw ArgError("decoderStep: keyMask must be a Uint8Array of batch × (length + 1)");
  const at::Tensor keyMask = onDevice(at::from_blob(const_cast<void*>(maskData), {b, 1, 1, s}, at::kByte).to(at::kBool));
  const at::Tensor lowest = at::scalar_tensor(std::numeric_limits<float>::lowest(), dec.embed.options().dtype(at::kFloat));
  const std::vector<PromptRows> runs = RowsByPrompt(dec);

  at::Tensor h = dec.embed.index_select(0, ids);  // [b, hidden]
  for (Layer& L : dec.layers) {
    const at::Tensor x = RmsNorm(h, L.inputNorm, dec.eps);
    const at::Tensor q = Rotary(Linear(x, L.q, L.qBias).view({b, dec.heads, d}), cos, sin);
    const at::Tensor k = Rotary(Linear(x, L.k, L.kBias).view({b, dec.kvHeads, d}), cos, sin);
    const at::Tensor v = Linear(x, L.v, L.vBias).view({b, dec.kvHeads, d});
    L.cacheKt.select(3, dec.length - dec.promptLength).copy_(k);
    L.cacheV.select(2, dec.length - dec.promptLength).copy_(v);
    const at::Tensor attended = CpuFloat({q, L.promptKt, L.promptV, L.cacheKt, L.cacheV}) ? CpuAttend(dec, L, q, static_cast<const uint8_t*>(maskData))
                                                                                          : Attend(dec, L, runs, q.view({b, dec.kvHeads, g, d}), keyMask, lowest);
    h.add_(Linear(attended, L.o, L.oBias));
    const at::Tensor y = RmsNorm(h, L.postNorm, dec.eps);
    h.add_(Linear(Swiglu(Linear(y, L.gate, L.gateBias), Linear(y, L.up, L.upBias)), L.down, L.downBias));
  }
  dec.length += 1;
  return Ref(a.env(), Linear(RmsNorm(h, dec.finalNorm, dec.eps), dec.lmHead, at::Tensor()));
}

// decoderKeep(handle, rows (Int32Array, increasing)): only these rows stay, in this order, so
// that rows which have finished cost nothing in later steps.
napi_value Keep(const Args& a) {
  Decoder& dec = Get(a.Int(0));
  napi_typedarray_type type;
  size_t n;
  const void* data = a.Typed(1, &type, &n);
  if (type != napi_int32_array || n == 0) throw ArgError("decoderKeep: rows must be a non-empty Int32Array");
  const int32_t* rows = static_cast<const int32_t*>(data);
  for (size_t i = 0; i < n; i++)
    if (rows[i] < 0 || rows[i] >= dec.batch || (i > 0 && rows[i] <= rows[i - 1]))
      throw ArgError("decoderKeep: rows must be increasing indices below the batch " + std::to_string(dec.batch));
  const at::Tensor index = at::from_blob(const_cast<void*>(data), {static_cast<int64_t>(n)}, at::kInt).to(dec.embed.device()).to(at::kLong);
  for (Layer& L : dec.layers) {
    L.cacheKt = L.cacheKt.index_select(0, index);
    L.cacheV = L.cacheV.index_select(0, index);
  }
  std::vector<int64_t> rowPrompt;
  for (size_t i = 0; i < n; i++) rowPrompt.push_back(dec.rowPrompt[rows[i]]);
  dec.rowPrompt = std::move(rowPrompt);
  dec.batch = static_cast<int64_t>(n);
  return Undefined(a.env());
}

napi_value Free(const Args& a) {
  Decoders().erase(a.Int(0));
  return Undefined(a.env());
}

}  // namespace

void RegisterDecode(napi_env env, napi_value exports) {
  Export(env, exports, "decoderCreate", Create);
  Export(env, exports, "decoderLoad", Load);
  Export(env, exports, "decoderStep", Step);
  Export(env, exports, "decoderKeep", Keep);
  Export(env, exports, "decoderFree", Free);
}

}  // namespace pbrl
