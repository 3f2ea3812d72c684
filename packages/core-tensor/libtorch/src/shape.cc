// Kernels that move data without arithmetic: reshapes, transposes, slices, concatenation,
// gathers and scatters. Results may be views of their input (tensors are never mutated).
#include "common.h"

namespace pbrl {
namespace {

napi_value Reshape(const Args& a) {
  const std::vector<int64_t> shape = a.Ints(1);
  const at::Tensor& bf16 = Table().Bf16If(a.Int(0));
  return Ref(a.env(), a.T(0).reshape(shape), bf16.defined() ? bf16.reshape(shape) : at::Tensor());
}

napi_value Transpose(const Args& a) { return Ref(a.env(), a.T(0).permute(a.Ints(1))); }

// slice(id, begin, size): size −1 means to the end, as tfjs allows.
napi_value Slice(const Args& a) {
  at::Tensor x = a.T(0);
  const std::vector<int64_t> begin = a.Ints(1), size = a.Ints(2);
  if (begin.size() != static_cast<size_t>(x.dim()) || size.size() != begin.size()) throw ArgError("slice: begin and size must have one entry per axis");
  for (int64_t d = 0; d < x.dim(); d++) {
    const int64_t len = size[d] < 0 ? x.size(d) - begin[d] : size[d];
    if (begin[d] != 0 || len != x.size(d)) x = x.narrow(d, begin[d], len);
  }
  return Ref(a.env(), x);
}

// stridedSlice(id, begin, end, strides): positive strides, indices already resolved by tfjs's slice_util.
napi_value StridedSlice(const Args& a) {
  at::Tensor x = a.T(0);
  const std::vector<int64_t> begin = a.Ints(1), end = a.Ints(2), strides = a.Ints(3);
  for (size_t d = 0; d < begin.size(); d++) {
    if (strides[d] <= 0) throw ArgError("stridedSlice: only positive strides are supported");
    x = x.slice(static_cast<int64_t>(d), begin[d], std::max(begin[d], end[d]), strides[d]);
  }
  return Ref(a.env(), x);
}

napi_value Concat(const Args& a) { return Ref(a.env(), at::cat(a.Tensors(0), a.Int(1))); }

napi_value Stack(const Args& a) { return Ref(a.env(), at::stack(a.Tensors(0), a.Int(1))); }

napi_value Unstack(const Args& a) { return Refs(a.env(), a.T(0).unbind(a.Int(1))); }

napi_value SplitV(const Args& a) { return Refs(a.env(), a.T(0).split_with_sizes(a.Ints(1), a.Int(2))); }

napi_value Tile(const Args& a) { return Ref(a.env(), a.T(0).repeat(a.Ints(1))); }

// pad(id, paddings [before0, after0, before1, …], value)
napi_value Pad(const Args& a) {
  const std::vector<int64_t> p = a.Ints(1);
  std::vector<int64_t> torchOrder;  // at::constant_pad_nd wants the last axis first
  for (size_t d = p.size() / 2; d-- > 0;) {
    torchOrder.push_back(p[2 * d]);
    torchOrder.push_back(p[2 * d + 1]);
  }
  return Ref(a.env(), at::constant_pad_nd(a.T(0), torchOrder, a.Num(2)));
}

napi_value Reverse(const Args& a) { return Ref(a.env(), at::flip(a.T(0), a.Ints(1))); }

napi_value BroadcastTo(const Args& a) { return Ref(a.env(), a.T(0).expand(a.Ints(1))); }

void CheckIndices(const at::Tensor& idx, int64_t limit, const char* what) {
  if (idx.numel() == 0) return;
  const int64_t lo = idx.min().item<int64_t>(), hi = idx.max().item<int64_t>();
  if (lo < 0 || hi >= limit) {
    throw ArgError(std::string(what) + ": index " + std::to_string(lo < 0 ? lo : hi) + " outside [0, " + std::to_string(limit) + ")");
  }
}

// gather(x, indices, axis, batchDims): tfjs's GatherV2. Rows of a table held in bfloat16 (a
// frozen LoRA base's embedding, TensorTable::StoreBf16) come out float32, as the table's did.
napi_value Gather(const Args& a) {
  const std::vector<at::Tensor> t = a.Ts({0, 1});
  const at::Tensor& x = t[0];
  const at::Tensor idx = t[1].to(at::kLong);
  const int64_t axis = a.Int(2), batchDims = a.Int(3);
  CheckIndices(idx, x.size(axis), "gather");
  if (batchDims == 0) {
    std::vector<int64_t> shape(x.sizes().begin(), x.sizes().begin() + axis);
    shape.insert(shape.end(), idx.sizes().begin(), idx.sizes().end());
    shape.insert(shape.end(), x.sizes().begin() + axis + 1, x.sizes().end());
    return Ref(a.env(), Widened(x.index_select(axis, idx.reshape({-1}))).reshape(shape));
  }
  // Batched: each of the leading batchDims slices gathers with its own indices.
  std::vector<at::Tensor> parts;
  int64_t batch = 1;
  for (int64_t d = 0; d < batchDims; d++) batch *= x.size(d);
  std::vector<int64_t> xs = {batch};
  xs.insert(xs.end(), x.sizes().begin() + batchDims, x.sizes().end());
  std::vector<int64_t> is = {batch};
  is.insert(is.end(), idx.sizes().begin() + batchDims, idx.sizes().end());
  const at::Tensor xr = x.reshape(xs), ir = idx.reshape(is);
  for (int64_t b = 0; b < batch; b++) {
    const at::Tensor xi = xr[b], ii = ir[b];
    const int64_t ax = axis - batchDims;
    std::vector<int64_t> shape(xi.sizes().begin(), xi.sizes().begin() + ax);
    shape.insert(shape.end(), ii.sizes().begin(), ii.sizes().end());
    shape.insert(shape.end(), xi.sizes().begin() + ax + 1, xi.sizes().end());
    parts.push_back(xi.index_select(ax, ii.reshape({-1})).reshape(shape));
  }
  std::vector<int64_t> out(x.sizes().begin(), x.sizes().begin() + batchDims);
  out.insert(out.end(), parts[0].sizes().begin(), parts[0].sizes().end());
  return Ref(a.env(), Widened(at::stack(parts)).reshape(out));
}

// gatherNd(x, indices): indices [..., k] pick x[i0, …, ik-1, ...].
napi_value GatherNd(const Args& a) {
  const std::vector<at::Tensor> t = a.Ts({0, 1});
  const at::Tensor& x = t[0];
  const at::Tensor idx = t[1].to(at::kLong);
  const int64_t k = idx.size(-1);
  at::Tensor flat = at::zeros(idx.sizes().slice(0, idx.dim() - 1), idx.options());
  for (int64_t d = 0; d < k; d++) {
    const at::Tensor col = idx.select(-1, d);
    CheckIndices(col, x.size(d), "gatherNd");
    flat = flat * x.size(d) + col;
  }
  std::vector<int64_t> rows = {-1};
  rows.insert(rows.end(), x.sizes().begin() + k, x.sizes().end());
  std::vector<int64_t> out(idx.sizes().begin(), idx.sizes().end() - 1);
  out.insert(out.end(), x.sizes().begin() + k, x.sizes().end());
  return Ref(a.env(), x.reshape(rows).index_select(0, flat.reshape({-1})).reshape(out));
}

// scatterNd(indices, updates, shape): zeros of shape with updates summed in at indices [..., k].
napi_value ScatterNd(const Args& a) {
  const std::vector<at::Tensor> t = a.Ts({0, 1});
  const at::Tensor idx = t[0].to(at::kLong);
  const at::Tensor& updates = t[1];
  const std::vector<int64_t> shape = a.Ints(2);
  const int64_t k = idx.size(-1);
  at::Tensor flat = at::zeros(idx.sizes().slice(0, idx.dim() - 1), idx.options());
  for (int64_t d = 0; d < k; d++) {
    const at::Tensor col = idx.select(-1, d);
    CheckIndices(col, shape[d], "scatterNd");
    flat = flat * shape[d] + col;
  }
  int64_t rows = 1;
  for (int64_t d = 0; d < k; d++) rows *= shape[d];
  std::vector<int64_t> inner(shape.begin() + k, shape.end());
  std::vector<int64_t> outRows = {rows};
  outRows.insert(outRows.end(), inner.begin(), inner.end());
  std::vector<int64_t> upd = {-1};
  upd.insert(upd.end(), inner.begin(), inner.end());
  at::Tensor out = at::zeros(outRows, updates.options());
  out.index_add_(0, flat.reshape({-1}), updates.reshape(upd));
  return Ref(a.env(), out.reshape(shape));
}

// unsortedSegmentSum(data, segmentIds, numSegments): ids < 0 or ≥ numSegments are dropped, as in tfjs.
napi_value UnsortedSegmentSum(const Args& a) {
  const std::vector<at::Tensor> t = a.Ts({0, 1});
  const at::Tensor& data = t[0];
  const at::Tensor ids = t[1].to(at::kLong).reshape({-1});
  const int64_t n = a.Int(2);
  std::vector<int64_t> inner(data.sizes().begin() + t[1].dim(), data.sizes().end());
  std::vector<int64_t> rows = {-1};
  rows.insert(rows.end(), inner.begin(), inner.end());
  const at::Tensor keep = at::logical_and(at::ge(ids, 0), at::lt(ids, n));
  const at::Tensor d = data.reshape(rows).index({keep});
  std::vector<int64_t> outShape = {n};
  outShape.insert(outShape.end(), inner.begin(), inner.end());
  at::Tensor out = at::zeros(outShape, data.options());
  out.index_add_(0, ids.index({keep}), d);
  return Ref(a.env(), out);
}

}  // namespace

void RegisterShape(napi_env env, napi_value exports) {
  Export(env, exports, "reshape", Reshape);
  Export(env, exports, "transpose", Transpose);
  Export(env, exports, "slice", Slice);
  Export(env, exports, "stridedSlice", StridedSlice);
  Export(env, exports, "concat", Concat);
  Export(env, exports, "stack", Stack);
  Export(env, exports, "unstack", Unstack);
  Export(env, exports, "splitV", SplitV);
  Export(env, exports, "tile", Tile);
  Export(env, exports, "pad", Pad);
  Export(env, exports, "reverse", Reverse);
  Export(env, exports, "broadcastTo", BroadcastTo);
  Export(env, exports, "gather", Gather);
  Export(env, exports, "gatherNd", GatherNd);
  Export(env, exports, "scatterNd", ScatterNd);
  Export(env, exports, "unsortedSegmentSum", UnsortedSegmentSum);
}

}  // namespace pbrl
