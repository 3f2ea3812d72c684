// Next-token choice for every row of a [rows, vocab] logits tensor where it lies (CPU or CUDA):
// only the chosen ids come back to JavaScript. The same rule as @pbrl/models' chooseToken —
// temperature, then top-k, then top-p as transformers' warpers, then the row's uniform draw
// walked through the probabilities in vocabulary order — computed in float64.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <utility>
#include <vector>

#include <ATen/Parallel.h>

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

// One token per row of CPU float32 logits, each row by @pbrl/models' chooseToken step for step in
// float64 (samplingDistribution's temperature, top-k, softmax and top-p, then the draw subtracted
// along the vocabulary), touching only the tokens top-k keeps: the ATen path (Distribution) sorts and sums
// whole [rows, vocab] tensors, at the trainers' top_k 50 nearly all of it zeros (Intel Xeon, 2
// cores, 128 × 49152 logits: 155 → 22–44 ms a call; top_k 0 and top_p 1: 290–330 → 157–174 ms). False when a
// row's mass is not finite (inf or NaN logits): the ATen path decides those.
bool SampleRowsCpu(const at::Tensor& logits, const double* u, double temperature, int64_t topK, double topP, int32_t* out) {
  const int64_t vocab = logits.size(1);
  const float* base = logits.data_ptr<float>();
  std::atomic<bool> finite{true};
  at::parallel_for(0, logits.size(0), 1, [&](int64_t lo, int64_t hi) {
    std::vector<double> z(vocab), scratch;
    std::vector<int64_t> kept;
    std::vector<std::pair<double, int64_t>> ascending;
    std::vector<double> p;
    for (int64_t r = lo; r < hi; r++) {
      out[r] = 0;
      if (u[r] < 0) continue;
      const float* x = base + r * vocab;
      for (int64_t i = 0; i < vocab; i++) z[i] = static_cast<double>(x[i]) / temperature;
      kept.clear();
      if (topK > 0 && topK < vocab) {
        scratch.assign(z.begin(), z.end());
        std::nth_element(scratch.begin(), scratch.begin() + (vocab - topK), scratch.end());
        const double kth = scratch[vocab - topK];
        for (int64_t i = 0; i < vocab; i++) {
          if (!(z[i] < kth)) kept.push_back(i);
        }
      } else {
        for (int64_t i = 0; i < vocab; i++) kept.push_back(i);
      }
      double max = -INFINITY;
      for (const int64_t i : kept) max = std::max(max, z[i]);
      p.resize(kept.size());
      double total = 0;
      for (size_t j = 0; j < kept.size(); j++) {
        p[j] = std::exp(z[kept[j]] - max);
        total += p[j];
      }
      if (!std::isfinite(total) || !(total > 0)) {
        finite = false;
        continue;
      }
      for (double& v : p) v /= total;
      if (topP < 1) {
        // transformers' order: ascending by probability, ties by id; the most likely stays.
        ascending.clear();
        for (size_t j = 0; j < kept.size(); j++) ascending.emplace_back(p[j], static_cast<int64_t>(j));
        std::sort(ascending.begin(), ascending.end());
        double cum = 0;
        for (size_t j = 0; j + 1 < ascending.size(); j++) {
          cum += ascending[j].first;
          if (cum > 1 - topP) break;
          p[ascending[j].second] = 0;
        }
        double left = 0;
        for (const double v : p) left += v;
        for (double& v : p) v /= left;
      }
      double draw = u[r];
      int64_t last = 0;
      bool chosen = false;
      for (size_t j = 0; j < kept.size() && !chosen; j++) {
        if (p[j] == 0) continue;
        last = kept[j];
        draw -= p[j];
        chosen = draw < 0;
      }
      out[r] = static_cast<int32_t>(last);
    }
  });
  return finite;
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
  void* data = nullptr;
  napi_value buffer, out;
  napi_create_arraybuffer(a.env(), rows * 4, &data, &buffer);
  napi_create_typedarray(a.env(), napi_int32_array, rows, buffer, 0, &out);
  int32_t* dst = static_cast<int32_t*>(data);
  if (!a.Bool(2) && logits.device().is_cpu() && logits.scalar_type() == at::kFloat && logits.is_contiguous() && rows > 0 &&
      SampleRowsCpu(logits, u, a.Num(3), a.Int(4), a.Num(5), dst)) {
    return out;
  }
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
  const int32_t* src = host.data_ptr<int32_t>();
  for (int64_t r = 0; r < rows; r++) dst[r] = u[r] < 0 && !a.Bool(2) ? 0 : src[r];
  return out;
}

}  // namespace

void RegisterSampling(napi_env env, napi_value exports) {
  Export(env, exports, "sampleRows", SampleRows);
}

}  // namespace pbrl
