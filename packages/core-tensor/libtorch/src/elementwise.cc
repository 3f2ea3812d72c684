// Elementwise kernels, by tfjs kernel name: unary and binary ops, casts, selects, fills.
#include <cmath>
#include <functional>
#include <unordered_map>

#include "common.h"

namespace pbrl {
namespace {

using Unary = std::function<at::Tensor(const at::Tensor&)>;
using Binary = std::function<at::Tensor(const at::Tensor&, const at::Tensor&)>;

// Integer inputs of float-valued functions compute in float32, as tfjs's kernels do.
at::Tensor F(const at::Tensor& x) { return at::isFloatingType(x.scalar_type()) ? x : x.to(at::kFloat); }

const std::unordered_map<std::string, Unary>& UnaryOps() {
  static const std::unordered_map<std::string, Unary> ops = {
      {"Abs", [](const at::Tensor& x) { return at::abs(x); }},
      {"Acos", [](const at::Tensor& x) { return at::acos(F(x)); }},
      {"Acosh", [](const at::Tensor& x) { return at::acosh(F(x)); }},
      {"Asin", [](const at::Tensor& x) { return at::asin(F(x)); }},
      {"Asinh", [](const at::Tensor& x) { return at::asinh(F(x)); }},
      {"Atan", [](const at::Tensor& x) { return at::atan(F(x)); }},
      {"Atanh", [](const at::Tensor& x) { return at::atanh(F(x)); }},
      {"Ceil", [](const at::Tensor& x) { return at::ceil(x); }},
      {"Cos", [](const at::Tensor& x) { return at::cos(F(x)); }},
      {"Cosh", [](const at::Tensor& x) { return at::cosh(F(x)); }},
      {"Elu", [](const at::Tensor& x) { return at::elu(F(x)); }},
      {"Erf", [](const at::Tensor& x) { return at::erf(F(x)); }},
      {"Exp", [](const at::Tensor& x) { return at::exp(F(x)); }},
      {"Expm1", [](const at::Tensor& x) { return at::expm1(F(x)); }},
      {"Floor", [](const at::Tensor& x) { return at::floor(x); }},
      {"IsFinite", [](const at::Tensor& x) { return at::isfinite(x); }},
      {"IsInf", [](const at::Tensor& x) { return at::isinf(x); }},
      {"IsNan", [](const at::Tensor& x) { return at::isnan(x); }},
      {"Log", [](const at::Tensor& x) { return at::log(F(x)); }},
      {"Log1p", [](const at::Tensor& x) { return at::log1p(F(x)); }},
      {"LogicalNot", [](const at::Tensor& x) { return at::logical_not(x); }},
      {"Neg", [](const at::Tensor& x) { return at::neg(x); }},
      {"Reciprocal", [](const at::Tensor& x) { return at::reciprocal(F(x)); }},
      {"Relu", [](const at::Tensor& x) { return at::relu(x); }},
      {"Relu6", [](const at::Tensor& x) { return at::clamp(x, 0, 6); }},
      // tfjs rounds half to even, as ATen does.
      {"Round", [](const at::Tensor& x) { return at::round(x); }},
      {"Rsqrt", [](const at::Tensor& x) { return at::rsqrt(F(x)); }},
      {"Selu", [](const at::Tensor& x) { return at::selu(F(x)); }},
      {"Sigmoid", [](const at::Tensor& x) { return at::sigmoid(F(x)); }},
      {"Sign", [](const at::Tensor& x) { return at::sign(x); }},
      {"Sin", [](const at::Tensor& x) { return at::sin(F(x)); }},
      {"Sinh", [](const at::Tensor& x) { return at::sinh(F(x)); }},
      {"Softplus", [](const at::Tensor& x) { return at::softplus(F(x)); }},
      {"Sqrt", [](const at::Tensor& x) { return at::sqrt(F(x)); }},
      {"Square", [](const at::Tensor& x) { return at::square(x); }},
      {"Tan", [](const at::Tensor& x) { return at::tan(F(x)); }},
      {"Tanh", [](const at::Tensor& x) { return at::tanh(F(x)); }},
  };
  return ops;
}

// tfjs's integer division floors; its RealDiv of int32 inputs is float division cast back.
const std::unordered_map<std::string, Binary>& BinaryOps() {
  static const std::unordered_map<std::string, Binary> ops = {
      {"Add", [](const at::Tensor& a, const at::Tensor& b) { return at::add(a, b); }},
      {"Sub", [](const at::Tensor& a, const at::Tensor& b) { return at::sub(a, b); }},
      {"Multiply", [](const at::Tensor& a, const at::Tensor& b) { return at::mul(a, b); }},
      {"RealDiv", [](const at::Tensor& a, const at::Tensor& b) { return at::div(a, b); }},
      {"FloorDiv", [](const at::Tensor& a, const at::Tensor& b) { return at::div(a, b, "floor"); }},
      // tfjs's Mod takes the sign of the divisor, as Python's % and at::remainder do.
      {"Mod", [](const at::Tensor& a, const at::Tensor& b) { return at::remainder(a, b); }},
      {"Maximum", [](const at::Tensor& a, const at::Tensor& b) { return at::maximum(a, b); }},
      {"Minimum", [](const at::Tensor& a, const at::Tensor& b) { return at::minimum(a, b); }},
      {"Pow", [](const at::Tensor& a, const at::Tensor& b) { return at::pow(a, b); }},
      {"SquaredDifference", [](const at::Tensor& a, const at::Tensor& b) { return at::square(at::sub(a, b)); }},
      {"Atan2", [](const at::Tensor& a, const at::Tensor& b) { return at::atan2(F(a), F(b)); }},
      {"Equal", [](const at::Tensor& a, const at::Tensor& b) { return at::eq(a, b); }},
      {"NotEqual", [](const at::Tensor& a, const at::Tensor& b) { return at::ne(a, b); }},
      {"Less", [](const at::Tensor& a, const at::Tensor& b) { return at::lt(a, b); }},
      {"LessEqual", [](const at::Tensor& a, const at::Tensor& b) { return at::le(a, b); }},
      {"Greater", [](const at::Tensor& a, const at::Tensor& b) { return at::gt(a, b); }},
      {"GreaterEqual", [](const at::Tensor& a, const at::Tensor& b) { return at::ge(a, b); }},
      {"LogicalAnd", [](const at::Tensor& a, const at::Tensor& b) { return at::logical_and(a, b); }},
      {"LogicalOr", [](const at::Tensor& a, const at::Tensor& b) { return at::logical_or(a, b); }},
      {"LogicalXor", [](const at::Tensor& a, const at::Tensor& b) { return at::logical_xor(a, b); }},
      {"Prelu", [](const at::Tensor& x, const at::Tensor& alpha) { return at::where(at::gt(x, 0), x, at::mul(x, alpha)); }},
  };
  return ops;
}

// unary(name, id)
napi_value UnaryOp(const Args& a) {
  const std::string name = a.Str(0);
  const auto it = UnaryOps().find(name);
  if (it == UnaryOps().end()) throw ArgError("no unary kernel " + name);
  return Ref(a.env(), it->second(a.Wide(1)));
}

// binary(name, a, b, outDtype): broadcasting as numpy; the result cast to the dtype tfjs expects.
napi_value BinaryOp(const Args& a) {
  const std::string name = a.Str(0);
  const auto it = BinaryOps().find(name);
  if (it == BinaryOps().end()) throw ArgError("no binary kernel " + name);
  const std::vector<at::Tensor> t = a.Wides({1, 2});
  at::Tensor out = it->second(t[0], t[1]);
  const at::ScalarType want = ScalarTypeOf(a.Int(3));
  return Ref(a.env(), out.scalar_type() == want ? out : out.to(want));
}

// addN(ids): their sum (tfjs's AddN; same shapes and dtype).
napi_value AddN(const Args& a) {
  std::vector<at::Tensor> xs = a.Tensors(0);
  for (at::Tensor& x : xs) x = Widened(x);
  if (xs.empty()) throw ArgError("addN of no tensors");
  at::Tensor out = xs[0].clone();
  for (size_t i = 1; i < xs.size(); i++) out.add_(xs[i]);
  return Ref(a.env(), out);
}

// cast(id, dtype): float → int truncates toward zero, as tfjs does; to bool is x != 0.
napi_value Cast(const Args& a) {
  const at::Tensor x = a.Wide(0);
  const at::ScalarType want = ScalarTypeOf(a.Int(1));
  return Ref(a.env(), x.scalar_type() == want ? x : x.to(want));
}

// clip(id, min, max)
napi_value Clip(const Args& a) { return Ref(a.env(), at::clamp(a.Wide(0), a.Num(1), a.Num(2))); }

// leakyRelu(id, alpha)
napi_value LeakyRelu(const Args& a) {
  const at::Tensor x = a.Wide(0);
  return Ref(a.env(), at::where(at::ge(x, 0), x, at::mul(x, a.Num(1))));
}

// step(id, alpha): 1 where x > 0, alpha elsewhere (NaN stays NaN).
napi_value Step(const Args& a) {
  const at::Tensor x = F(a.Wide(0));
  at::Tensor out = at::where(at::gt(x, 0), at::ones_like(x), at::full_like(x, a.Num(1)));
  return Ref(a.env(), at::where(at::isnan(x), x, out));
}

// select(condition, a, b): where(condition, a, b) with broadcasting.
napi_value Select(const Args& a) {
  const std::vector<at::Tensor> t = a.Wides({0, 1, 2});
  const at::Tensor& c = t[0];
  return Ref(a.env(), at::where(c.scalar_type() == at::kBool ? c : at::ne(c, 0), t[1], t[2]));
}

// fill(shape, value, dtype): on the default device.
napi_value Fill(const Args& a) {
  const at::ScalarType t = ScalarTypeOf(a.Int(2));
  return Ref(a.env(), at::full(a.Ints(0), a.Num(1), at::TensorOptions().dtype(t).device(DefaultDevice())));
}

// fillLike(id, value, dtype): a full tensor of x's shape on x's device (ZerosLike, OnesLike).
napi_value FillLike(const Args& a) {
  const at::Tensor x = a.Wide(0);
  return Ref(a.env(), at::full(x.sizes(), a.Num(1), at::TensorOptions().dtype(ScalarTypeOf(a.Int(2))).device(x.device())));
}

// range(start, step, count, dtype): start + i·step for i < count, computed in float64 like tfjs.
napi_value Range(const Args& a) {
  const double start = a.Num(0), step = a.Num(1);
  const int64_t count = a.Int(2);
  at::Tensor r = at::arange(count, at::TensorOptions().dtype(at::kDouble)).mul_(step).add_(start);
  return Ref(a.env(), r.to(ScalarTypeOf(a.Int(3))).to(DefaultDevice()));
}

// oneHot(indices, depth, onValue, offValue, dtype): out-of-range indices give an all-off row.
napi_value OneHot(const Args& a) {
  const at::Tensor idx = a.Wide(0).to(at::kLong);
  const int64_t depth = a.Int(1);
  const at::ScalarType t = ScalarTypeOf(a.Int(4));
  at::Tensor hit = at::eq(idx.unsqueeze(-1), at::arange(depth, idx.options()));
  return Ref(a.env(), at::where(hit, at::scalar_tensor(a.Num(2), idx.options().dtype(t)), at::scalar_tensor(a.Num(3), idx.options().dtype(t))));
}

}  // namespace

void RegisterElementwise(napi_env env, napi_value exports) {
  Export(env, exports, "unary", UnaryOp);
  Export(env, exports, "binary", BinaryOp);
  Export(env, exports, "addN", AddN);
  Export(env, exports, "cast", Cast);
  Export(env, exports, "clip", Clip);
  Export(env, exports, "leakyRelu", LeakyRelu);
  Export(env, exports, "step", Step);
  Export(env, exports, "select", Select);
  Export(env, exports, "fill", Fill);
  Export(env, exports, "fillLike", FillLike);
  Export(env, exports, "range", Range);
  Export(env, exports, "oneHot", OneHot);
}

}  // namespace pbrl
