// float32 sums over the rows or within the rows of a matrix (tfjs Sum over leading or trailing axes).
#include <algorithm>
#include <vector>

#include "common.h"
#include "loops.h"

namespace pbrl_native {

// Column sums of a rows × cols matrix: y[c] = Σ_r x[r, c], in float32, with the rows
// split over the pool into partial sums added at the end (rows are summed in order within a part).
PBRL_CLONES static void ColSumRange(const float* x, float* acc, int64_t r0, int64_t r1, int64_t cols) {
  std::fill(acc, acc + cols, 0.f);
  for (int64_t r = r0; r < r1; r++) {
    const float* row = x + r * cols;
    for (int64_t c = 0; c < cols; c++) acc[c] += row[c];
  }
}

// sum(heap, xOff, yOff, rows, cols, overRows): overRows ? y[c] = Σ_r x[r, c] : y[r] = Σ_c x[r, c].
static napi_value Sum(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  const int64_t rows = a.Int(3), cols = a.Int(4);
  const bool overRows = a.Bool(5);
  if (!a.ok) return nullptr;
  if (rows < 0 || cols < 0) return a.Fail("sum: bad sizes"), nullptr;
  const float* x = a.Ptr<float>(1, rows * cols, "sum input");
  float* y = a.Ptr<float>(2, overRows ? cols : rows, "sum output");
  if (!a.ok) return nullptr;
  if (!overRows) {
    g_pool->ParallelFor(rows, std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, cols)),
                        [&](int64_t lo, int64_t hi) { RowSumRange(x, y, lo, hi, cols); });
    return Undefined(env);
  }
  const int parts = static_cast<int>(
      std::min<int64_t>(g_pool->threads(), std::max<int64_t>(1, rows * cols / kElementwiseGrain)));
  std::vector<float> partial(static_cast<size_t>(parts) * cols);
  g_pool->ParallelFor(parts, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; p++) ColSumRange(x, partial.data() + p * cols, rows * p / parts, rows * (p + 1) / parts, cols);
  });
  AddParts(partial, parts, cols, y);
  return Undefined(env);
}

void RegisterReduce(napi_env env, napi_value exports) {
  Export(env, exports, "sum", Sum);
}

}  // namespace pbrl_native
