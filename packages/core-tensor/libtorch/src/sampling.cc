// Next-token choice for every row of a [rows, vocab] logits tensor where it lies (CPU or CUDA):
// only the chosen ids come back to JavaScript. The same rule as @pbrl/models' chooseToken —
// temperature, then top-k, then top-p as transformers' warpers, then the row's uniform draw
// walked through the probabilities in vocabulary order — computed in float64.
#include "common.h"

namespace pbrl {
namespace {

// Probabilities [rows, vocab] (float64) after temperature, top-k and top-p; removed tokens are 0.
at::Tensor Distribution(const at::Tensor& logits, double temperature, int64_t topK, double topP) {
  at::Tensor z = logits.to(at::kDouble).div(temperature);
  const int64_t vocab = z.size(1);
  if (topK > 0 && topK < vocab) {
    const at::Tensor kth = std::get<0>(at::topk(z, topK, 1)).narrow(1, topK - 1, 1);
    z = z.masked_fill(at::lt(z, kth), -INFINITY);
  }
  at::Tensor p = at::softmax(z, 1);
  if (topP < 1) {
    // Ascending by probability, ties by id (a stable sort of the ids in order); every token but the
    // most likely whose cumulative mass stays ≤ 1 − top_p is dropped.
    auto [sorted, order] = at::sort(p, /*stable=*/true, /*dim=*/1, /*descending=*/false);
    at::Tensor drop = at::le(at::cumsum(sorted, 1), 1 - topP);
    drop.narrow(1, vocab - 1, 1).fill_(false);
    p = p.scatter(1, order, sorted.masked_fill(drop, 0));
    p = p.div(p.sum(1, true));
  }
  return p;
}

// sampleRows(logits, uniforms (Float64Array, one per row; < 0 skips the row), greedy, temperature,
// topK, topP) → Int32Array of tokens (0 for skipped rows).
napi_value SampleRows(const Args& a) {
  const at::Tensor logits = a.Wide(0);
  napi_typedarray_type type;
  size_t n;
  const double* u = static_cast<const double*>(a.Typed(1, &type, &n));
  if (type != napi_float64_array || logits.dim() != 2 || static_cast<int64_t>(n) != logits.size(0)) {
    throw ArgError("sampleRows: one Float64Array uniform per row of [rows, vocab] logits");
  }
  const int64_t rows = logits.size(0), vocab = logits.size(1);
  at::Tensor chosen;
  if (a.Bool(2)) {
    chosen = at::argmax(logits, 1);
  } else {
    const at::Tensor p = Distribution(logits, a.Num(3), a.Int(4), a.Num(5));
    const at::Tensor draws = at::from_blob(const_cast<double*>(u), {rows, 1}, at::kDouble).to(p.device());
    // The first token whose cumulative probability exceeds the draw; a draw the rounding leaves
    // beyond the total takes the last token with probability > 0.
    const at::Tensor cdf = at::cumsum(p, 1);
    const at::Tensor beyond = at::sum(at::le(cdf, draws), 1);
    const at::Tensor ids = at::arange(vocab, p.options().dtype(at::kLong)).expand({rows, vocab});
    const at::Tensor lastPositive = std::get<0>(at::max(at::where(at::gt(p, 0), ids, at::zeros_like(ids)), 1));
    chosen = at::minimum(beyond, lastPositive);
  }
  const at::Tensor host = chosen.to(at::kCPU).to(at::kInt).contiguous();
  void* data = nullptr;
  napi_value buffer, out;
  napi_create_arraybuffer(a.env(), rows * 4, &data, &buffer);
  const int32_t* src = host.data_ptr<int32_t>();
  int32_t* dst = static_cast<int32_t*>(data);
  for (int64_t r = 0; r < rows; r++) dst[r] = u[r] < 0 && !a.Bool(2) ? 0 : src[r];
  napi_create_typedarray(a.env(), napi_int32_array, rows, buffer, 0, &out);
  return out;
}

}  // namespace

void RegisterSampling(napi_env env, napi_value exports) {
  Export(env, exports, "sampleRows", SampleRows);
}

}  // namespace pbrl
