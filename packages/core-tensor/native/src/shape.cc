// Kernels that move elements without arithmetic: transposes, strided row copies (Slice, SplitV,
// Concat), row gathers, and the row scatter-add that is a gather's gradient.
#include <algorithm>
#include <cstring>
#include <vector>

#include "common.h"

namespace pbrl_native {

// Transpose of 4-byte elements, any rank and permutation.

// Copies a rows × cols tile: dst[i * dst_stride + j] = src[i + j * src_stride] (src contiguous along
// i, dst along j), in 16 × 16 blocks so that both sides stay in cache.
PBRL_CLONES static void Tile2D(const uint32_t* src, int64_t src_stride, uint32_t* dst, int64_t dst_stride, int64_t rows,
                               int64_t cols) {
  const int64_t T = 16;
  for (int64_t i0 = 0; i0 < rows; i0 += T) {
    const int64_t i1 = std::min(rows, i0 + T);
    for (int64_t j0 = 0; j0 < cols; j0 += T) {
      const int64_t j1 = std::min(cols, j0 + T);
      for (int64_t i = i0; i < i1; i++) {
        uint32_t* d = dst + i * dst_stride;
        const uint32_t* s = src + i;
        for (int64_t j = j0; j < j1; j++) d[j] = s[j * src_stride];
      }
    }
  }
}

// transpose(heap, xOff, yOff, shape: Int32Array, perm: Int32Array)
static napi_value Transpose(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  size_t rank = 0, prank = 0;
  const int32_t* shape = a.Int32s(3, &rank);
  const int32_t* perm = a.Int32s(4, &prank);
  if (!a.ok) return nullptr;
  if (shape == nullptr || perm == nullptr || rank != prank || rank > 16) return a.Fail("transpose: bad shape/perm"), nullptr;
  int64_t size = 1;
  bool seen[16] = {false};
  for (size_t i = 0; i < rank; i++) {
    if (shape[i] < 0 || perm[i] < 0 || perm[i] >= static_cast<int32_t>(rank) || seen[perm[i]])
      return a.Fail("transpose: bad shape/perm"), nullptr;
    seen[perm[i]] = true;
    size *= shape[i];
  }
  const uint32_t* x = a.Ptr<uint32_t>(1, size, "transpose input");
  uint32_t* y = a.Ptr<uint32_t>(2, size, "transpose output");
  if (!a.ok) return nullptr;
  if (size == 0) return Undefined(env);

  // Input strides; then the output axes with size 1 dropped and runs of output axes that are
  // consecutive in the input merged, leaving the smallest equivalent problem.
  int64_t in_stride[16];
  {
    int64_t s = 1;
    for (int64_t i = static_cast<int64_t>(rank) - 1; i >= 0; i--) {
      in_stride[i] = s;
      s *= shape[i];
    }
  }
  std::vector<int64_t> osize, ostride_in;  // per output axis: size, stride in the input
  for (size_t j = 0; j < rank; j++) {
    const int64_t n = shape[perm[j]], s = in_stride[perm[j]];
    if (n == 1) continue;
    if (!osize.empty() && ostride_in.back() == s * n) {
      osize.back() *= n;
      ostride_in.back() = s;
    } else {
      osize.push_back(n);
      ostride_in.push_back(s);
    }
  }
  const int64_t r = static_cast<int64_t>(osize.size());
  if (r <= 1) {  // the identity permutation, once size-1 axes are dropped
    std::memcpy(y, x, sizeof(uint32_t) * size);
    return Undefined(env);
  }
  std::vector<int64_t> ostride_out(r);  // output strides
  {
    int64_t s = 1;
    for (int64_t j = r - 1; j >= 0; j--) {
      ostride_out[j] = s;
      s *= osize[j];
    }
  }
  if (ostride_in[r - 1] == 1) {
    // The innermost output axis is contiguous in the input: copy rows.
    const int64_t row = osize[r - 1], rows = size / row;
    g_pool->ParallelFor(rows, std::max<int64_t>(1, kElementwiseGrain / row), [&](int64_t lo, int64_t hi) {
      for (int64_t q = lo; q < hi; q++) {
        int64_t rem = q, src = 0;
        for (int64_t j = r - 2; j >= 0; j--) {
          src += (rem % osize[j]) * ostride_in[j];
          rem /= osize[j];
        }
        std::memcpy(y + q * row, x + src, sizeof(uint32_t) * row);
      }
    });
    return Undefined(env);
  }
  // Otherwise: p is the output axis that is contiguous in the input (stride 1); every (outer index,
  // block of axis p) is one tile transposed between axis p and the innermost output axis.
  int64_t p = -1;
  for (int64_t j = 0; j < r; j++)
    if (ostride_in[j] == 1) p = j;
  if (p < 0) return a.Fail("transpose: internal error (no contiguous axis)"), nullptr;
  const int64_t rows = osize[p], cols = osize[r - 1];
  const int64_t outer = size / (rows * cols);
  const int64_t block = 64, blocks = (rows + block - 1) / block;
  g_pool->ParallelFor(outer * blocks, std::max<int64_t>(1, kElementwiseGrain / (block * cols)), [&](int64_t lo, int64_t hi) {
    for (int64_t w = lo; w < hi; w++) {
      const int64_t o = w / blocks, b = w % blocks;
      int64_t rem = o, src = 0, dst = 0;
      for (int64_t j = r - 2; j >= 0; j--) {
        if (j == p) continue;
        const int64_t k = rem % osize[j];
        rem /= osize[j];
        src += k * ostride_in[j];
        dst += k * ostride_out[j];
      }
      const int64_t i0 = b * block, n = std::min(block, rows - i0);
      Tile2D(x + src + i0, ostride_in[r - 1], y + dst + i0 * ostride_out[p], ostride_out[p], n, cols);
    }
  });
  return Undefined(env);
}

// copy2d(heap, srcOff, srcStride, dstOff, dstStride, rows, rowBytes), strides in bytes: row r
// of rowBytes bytes goes from srcOff + r·srcStride to dstOff + r·dstStride.
static napi_value Copy2D(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  const int64_t srcOff = a.Int(1), srcStride = a.Int(2), dstOff = a.Int(3), dstStride = a.Int(4), rows = a.Int(5),
                rowBytes = a.Int(6);
  if (!a.ok) return nullptr;
  if (rows < 0 || rowBytes < 0 || srcStride < 0 || dstStride < 0) return a.Fail("copy2d: bad sizes"), nullptr;
  if (rows == 0 || rowBytes == 0) return Undefined(env);
  const uint8_t* src = a.At<uint8_t>(srcOff, (rows - 1) * srcStride + rowBytes, "copy2d source");
  uint8_t* dst = a.At<uint8_t>(dstOff, (rows - 1) * dstStride + rowBytes, "copy2d destination");
  if (!a.ok) return nullptr;
  g_pool->ParallelFor(rows, std::max<int64_t>(1, (kElementwiseGrain * 4) / rowBytes), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; r++) std::memcpy(dst + r * dstStride, src + r * srcStride, rowBytes);
  });
  return Undefined(env);
}

// gather(heap, xOff, idxOff (int32), outOff, outer, axisLen, count, innerBytes): x viewed as
// [outer, axisLen, inner], out[o, i] = x[o, idx[i]] for i in [0, count) (tfjs GatherV2 with
// batchDims 0). wasm's kernel computes every element's source index on its own, single-threaded:
// ~8 ms to pick 1,016 rows of 256 floats, a plain row copy here.
static napi_value Gather(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  const int64_t outer = a.Int(4), axisLen = a.Int(5), count = a.Int(6), innerBytes = a.Int(7);
  if (!a.ok) return nullptr;
  if (outer < 0 || axisLen < 0 || count < 0 || innerBytes < 0) return a.Fail("gather: bad sizes"), nullptr;
  const uint8_t* x = a.Ptr<uint8_t>(1, outer * axisLen * innerBytes, "gather input");
  const int32_t* idx = a.Ptr<int32_t>(2, count, "gather indices");
  uint8_t* out = a.Ptr<uint8_t>(3, outer * count * innerBytes, "gather output");
  if (!IndicesInRange(a, idx, count, axisLen, "gather")) return nullptr;
  if (innerBytes == 0) return Undefined(env);
  g_pool->ParallelFor(outer * count, std::max<int64_t>(1, (kElementwiseGrain * 4) / innerBytes), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; r++) {
      const int64_t o = r / count, i = r % count;
      std::memcpy(out + r * innerBytes, x + (o * axisLen + idx[i]) * innerBytes, innerBytes);
    }
  });
  return Undefined(env);
}

// scatter_add_rows(heap, dyOff, idxOff (int32), outOff, count, rows, cols): out [rows, cols] =
// Σ_i onehot(idx[i]) ⊗ dy[i] (float32): the gradient of a row gather, which wasm cannot take (no
// UnsortedSegmentSum). Threads own disjoint column ranges, so every row's sum runs in index order.
static napi_value ScatterAddRows(napi_env env, napi_callback_info info) {
  HeapArgs a(env, info);
  const int64_t count = a.Int(4), rows = a.Int(5), cols = a.Int(6);
  if (!a.ok) return nullptr;
  if (count < 0 || rows < 0 || cols < 0) return a.Fail("scatter_add_rows: bad sizes"), nullptr;
  const float* dy = a.Ptr<float>(1, count * cols, "scatter_add_rows dy");
  const int32_t* idx = a.Ptr<int32_t>(2, count, "scatter_add_rows indices");
  float* out = a.Ptr<float>(3, rows * cols, "scatter_add_rows output");
  if (!IndicesInRange(a, idx, count, rows, "scatter_add_rows")) return nullptr;
  g_pool->ParallelFor(cols, std::max<int64_t>(8, kElementwiseGrain / std::max<int64_t>(1, rows + count)), [&](int64_t lo, int64_t hi) {
    for (int64_t r = 0; r < rows; r++) std::fill(out + r * cols + lo, out + r * cols + hi, 0.f);
    for (int64_t i = 0; i < count; i++) {
      const float* src = dy + i * cols;
      float* dst = out + static_cast<int64_t>(idx[i]) * cols;
      for (int64_t c = lo; c < hi; c++) dst[c] += src[c];
    }
  });
  return Undefined(env);
}

void RegisterShape(napi_env env, napi_value exports) {
  Export(env, exports, "transpose", Transpose);
  Export(env, exports, "copy2d", Copy2D);
  Export(env, exports, "gather", Gather);
  Export(env, exports, "scatterAddRows", ScatterAddRows);
}

}  // namespace pbrl_native
