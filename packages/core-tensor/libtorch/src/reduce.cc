// Reductions and scans: sums, means, extrema, arg-extrema, softmax, cumulative sums, top-k.
#include "common.h"

namespace pbrl {
namespace {

// reduce(name, id, axes, keepDims): Sum, Mean, Max, Min, Prod, All, Any over the given axes.
napi_value Reduce(const Args& a) {
  const std::string name = a.Str(0);
  const at::Tensor x = a.Wide(1);
  const std::vector<int64_t> axes = a.Ints(2);
  const bool keep = a.Bool(3);
  if (axes.empty()) return Ref(a.env(), x);
  at::Tensor out;
  if (name == "Sum") {
    out = at::sum(x, axes, keep);
  } else if (name == "Mean") {
    out = at::mean(at::isFloatingType(x.scalar_type()) ? x : x.to(at::kFloat), axes, keep);
  } else if (name == "Max" || name == "Min") {
    out = name == "Max" ? at::amax(x, axes, keep) : at::amin(x, axes, keep);
  } else if (name == "Prod" || name == "All" || name == "Any") {
    out = name == "All" ? x.to(at::kBool) : name == "Any" ? x.to(at::kBool) : x;
    std::vector<int64_t> sorted = axes;
    std::sort(sorted.rbegin(), sorted.rend());  // reduce the last axes first so the others keep their numbers
    for (int64_t ax : sorted) out = name == "Prod" ? at::prod(out, ax, keep) : name == "All" ? at::all(out, ax, keep) : at::any(out, ax, keep);
  } else {
    throw ArgError("no reduction " + name);
  }
  return Ref(a.env(), out);
}

// argExtreme(isMax, id, axis): int32 indices of the first maximum (minimum), as tfjs.
napi_value ArgExtreme(const Args& a) {
  const at::Tensor x = a.Wide(1);
  const int64_t axis = a.Int(2);
  return Ref(a.env(), a.Bool(0) ? at::argmax(x, axis) : at::argmin(x, axis));
}

napi_value Softmax(const Args& a) { return Ref(a.env(), at::softmax(a.Wide(0), a.Int(1))); }

// cumulative(isProduct, id, axis, exclusive, reverse)
napi_value Cumulative(const Args& a) {
  const bool product = a.Bool(0);
  at::Tensor x = a.Wide(1);
  const int64_t axis = a.Int(2);
  const bool exclusive = a.Bool(3), reverse = a.Bool(4);
  if (reverse) x = at::flip(x, {axis});
  at::Tensor out = product ? at::cumprod(x, axis) : at::cumsum(x, axis);
  if (out.scalar_type() != x.scalar_type() && x.scalar_type() != at::kBool) out = out.to(x.scalar_type());
  if (exclusive) {
    // Shift by one along the axis, the identity element first.
    const at::Tensor first = at::full_like(x.narrow(axis, 0, 1), product ? 1 : 0).to(out.scalar_type());
    out = at::cat({first, out.narrow(axis, 0, x.size(axis) - 1)}, axis);
  }
  if (reverse) out = at::flip(out, {axis});
  return Ref(a.env(), out);
}

// topk(id, k, sorted): values and int32 indices of the k largest along the last axis.
napi_value TopK(const Args& a) {
  auto [values, indices] = at::topk(a.Wide(0), a.Int(1), -1, true, a.Bool(2));
  return Refs(a.env(), {values, indices});
}

}  // namespace

void RegisterReduce(napi_env env, napi_value exports) {
  Export(env, exports, "reduce", Reduce);
  Export(env, exports, "argExtreme", ArgExtreme);
  Export(env, exports, "softmax", Softmax);
  Export(env, exports, "cumulative", Cumulative);
  Export(env, exports, "topk", TopK);
}

}  // namespace pbrl
