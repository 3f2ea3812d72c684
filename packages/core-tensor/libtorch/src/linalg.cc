// Matrix products: tfjs's BatchMatMul and _FusedMatMul (bias and activation) through ATen's
// matmul (MKL / oneDNN on CPU, cuBLAS on CUDA); transposed operands are strided views, never copies.
#include "common.h"

namespace pbrl {

at::Tensor Matmul(const at::Tensor& a, const at::Tensor& b) {
  if (Bf16Compute() && a.scalar_type() == at::kFloat && b.scalar_type() == at::kFloat) {
    return at::matmul(a.to(at::kBFloat16), b.to(at::kBFloat16)).to(at::kFloat);
  }
  return at::matmul(a, b);
}

namespace {

at::Tensor Activate(const at::Tensor& y, const std::string& activation, double alpha, const at::Tensor* prelu) {
  if (activation == "linear" || activation.empty()) return y;
  if (activation == "relu") return at::relu(y);
  if (activation == "relu6") return at::clamp(y, 0, 6);
  if (activation == "elu") return at::elu(y);
  if (activation == "sigmoid") return at::sigmoid(y);
  if (activation == "leakyrelu") return at::where(at::ge(y, 0), y, at::mul(y, alpha));
  if (activation == "prelu" && prelu != nullptr) return at::where(at::gt(y, 0), y, at::mul(y, *prelu));
  throw ArgError("fused matmul: unsupported activation " + activation);
}

// matmul(a, b, transposeA, transposeB, bias | null, activation, alpha, prelu weights | null): batch axes broadcast.
napi_value MatMul(const Args& a) {
  std::vector<at::Tensor> t = {a.T(0), a.T(1)};
  const bool bias = !a.IsNullish(4), prelu = a.size() > 7 && !a.IsNullish(7);
  if (bias) t.push_back(a.T(4));
  if (prelu) t.push_back(a.T(7));
  t = Colocate(std::move(t));
  const at::Tensor x = a.Bool(2) ? t[0].transpose(-1, -2) : t[0];
  const at::Tensor w = a.Bool(3) ? t[1].transpose(-1, -2) : t[1];
  at::Tensor y = Matmul(x, w);
  if (bias) y = at::add(y, t[2]);
  if (a.size() <= 5) return Ref(a.env(), y);
  return Ref(a.env(), Activate(y, a.Str(5), a.Num(6), prelu ? &t.back() : nullptr));
}

}  // namespace

void RegisterLinalg(napi_env env, napi_value exports) { Export(env, exports, "matmul", MatMul); }

}  // namespace pbrl
