// Token-by-token decoding of a Llama-family model in one addon call per step: generation at small
// batch is otherwise bound by the per-kernel cost of tfjs (about 20 kernel calls per layer per
// token), not by arithmetic. A decoder holds the model's weights (or bfloat16 copies, which halve
// the bytes every token reads) and a key/value cache preallocated for the whole generation, where
// the weights are (CPU or CUDA); each step returns the next-token logits as a tensor, so that
// sampling (sampling.cc) brings back only the chosen ids. The same operations, in the same order,
// as the model's tfjs forward pass on this backend (fused.cc, attention.cc).
#include <limits>
#include <unordered_map>

#include "common.h"

namespace pbrl {
namespace {

struct Layer {
  at::Tensor inputNorm, q, k, v, o, qBias, kBias, vBias, oBias, postNorm, gate, up, down, gateBias, upBias, downBias;
  at::Tensor cacheK, cacheV;  // [batch, kvHeads, capacity, headDim]
};

struct Decoder {
  int64_t batch, hidden, heads, kvHeads, headDim, vocab, capacity, length = 0;
  double eps;
  at::Tensor embed, finalNorm, lmHead;
  std::vector<Layer> layers;
};

std::unordered_map<int64_t, Decoder>& Decoders() {
  static thread_local std::unordered_map<int64_t, Decoder> decoders;
  return decoders;
}

Decoder& Get(int64_t handle) {
  auto it = Decoders().find(handle);
  if (it == Decoders().end()) throw ArgError("decoder " + std::to_string(handle) + " does not exist (freed, or from another thread)");
  return it->second;
}

at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& w, double eps) {
  return at::mul(w, at::mul(x, at::rsqrt(at::mean(at::square(x), -1, true).add_(eps))));
}

// x [b, n, d] rotated by the rows' tables cos, sin [b, 1, d].
at::Tensor Rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  const at::Tensor rot = at::cat({at::neg(x.narrow(-1, half, half)), x.narrow(-1, 0, half)}, -1);
  return at::add(at::mul(x, cos), at::mul(rot, sin));
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
// layers, capacity], rmsNormEps, bf16Weights) → handle. Ids in the order of src/libtorch/decode.ts.
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
  if (ids.size() != static_cast<size_t>(3 + 16 * layers)) throw ArgError("decoderCreate: expected " + std::to_string(3 + 16 * layers) + " weight ids");
  auto w = [&](size_t i) { return ids[i] < 0 ? at::Tensor() : Table().Get(ids[i]); };
  // Projections (read in full every token) as bfloat16 copies when asked; norms and biases stay float32.
  auto proj = [&](size_t i) { return bf16 ? w(i).to(at::kBFloat16) : w(i); };
  dec.embed = w(0);
  dec.finalNorm = w(1);
  dec.lmHead = proj(2);
  const auto opts = dec.embed.options().dtype(at::kFloat);
  for (int64_t l = 0; l < layers; l++) {
    const size_t b = 3 + 16 * l;
    Layer L{w(b), proj(b + 1), proj(b + 2), proj(b + 3), proj(b + 4), w(b + 5), w(b + 6), w(b + 7), w(b + 8), w(b + 9), proj(b + 10), proj(b + 11), proj(b + 12), w(b + 13), w(b + 14), w(b + 15), {}, {}};
    L.cacheK = at::zeros({dec.batch, dec.kvHeads, dec.capacity, dec.headDim}, opts);
    L.cacheV = at::zeros({dec.batch, dec.kvHeads, dec.capacity, dec.headDim}, opts);
    dec.layers.push_back(std::move(L));
  }
  static thread_local int64_t next = 0;
  const int64_t handle = next++;
  Decoders().emplace(handle, std::move(dec));
  napi_value v;
  napi_create_double(a.env(), static_cast<double>(handle), &v);
  return v;
}

// decoderLoad(handle, layer, k, v, length): positions [0, length) from a layer's cached keys and
// values [batch, kvHeads, length, headDim] (the prompt's, from the tfjs forward pass).
napi_value Load(const Args& a) {
  Decoder& dec = Get(a.Int(0));
  const int64_t layer = a.Int(1), length = a.Int(4);
  if (layer < 0 || layer >= static_cast<int64_t>(dec.layers.size())) throw ArgError("decoderLoad: no layer " + std::to_string(layer));
  if (length > dec.capacity) throw ArgError("decoderLoad: " + std::to_string(length) + " positions exceed the capacity " + std::to_string(dec.capacity));
  Layer& L = dec.layers[layer];
  L.cacheK.narrow(2, 0, length).copy_(a.T(2));
  L.cacheV.narrow(2, 0, length).copy_(a.T(3));
  dec.length = length;
  return Undefined(a.env());
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
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));

  at::Tensor h = dec.embed.index_select(0, ids);  // [b, hidden]
  for (Layer& L : dec.layers) {
    const at::Tensor x = RmsNorm(h, L.inputNorm, dec.eps);
    const at::Tensor q = Rotary(Linear(x, L.q, L.qBias).view({b, dec.heads, d}), cos, sin);
    const at::Tensor k = Rotary(Linear(x, L.k, L.kBias).view({b, dec.kvHeads, d}), cos, sin);
    const at::Tensor v = Linear(x, L.v, L.vBias).view({b, dec.kvHeads, d});
    L.cacheK.select(2, dec.length).copy_(k);
    L.cacheV.select(2, dec.length).copy_(v);
    const at::Tensor keys = L.cacheK.narrow(2, 0, s), values = L.cacheV.narrow(2, 0, s);  // [b, kv, s, d]
    const at::Tensor scores = at::matmul(q.view({b, dec.kvHeads, g, d}), keys.transpose(-1, -2)).mul_(scale);  // [b, kv, g, s]
    const at::Tensor probs = at::softmax(at::where(keyMask, scores, lowest), -1);
    const at::Tensor attended = at::matmul(probs, values).reshape({b, dec.heads * d});
    h = at::add(h, Linear(attended, L.o, L.oBias));
    const at::Tensor y = RmsNorm(h, L.postNorm, dec.eps);
    h = at::add(h, Linear(at::mul(at::silu(Linear(y, L.gate, L.gateBias)), Linear(y, L.up, L.upBias)), L.down, L.downBias));
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
    L.cacheK = L.cacheK.index_select(0, index);
    L.cacheV = L.cacheV.index_select(0, index);
  }
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
