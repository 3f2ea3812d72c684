#include "common.h"

#include <cstring>
#include <exception>

namespace pbrl {

uint32_t TensorTable::Put(at::Tensor t, at::Tensor bf16) {
  if (!free_.empty()) {
    const uint32_t id = free_.back();
    free_.pop_back();
    slots_[id] = std::move(t);
    bf16_[id] = std::move(bf16);
    return id;
  }
  slots_.push_back(std::move(t));
  bf16_.push_back(std::move(bf16));
  return static_cast<uint32_t>(slots_.size() - 1);
}

const at::Tensor& TensorTable::Bf16Copy(int64_t id) {
  const at::Tensor& t = Get(id);
  if (!bf16_[id].defined()) {
    bf16_[id] = t.to(at::kBFloat16);
    casts_++;
  }
  return bf16_[id];
}

at::Tensor TensorTable::TakeBf16(int64_t id) {
  Get(id);  // checks it
  at::Tensor& copy = bf16_[id];
  if (!copy.defined() || copy.use_count() != 1 || copy.storage().use_count() != 1) return at::Tensor();
  return std::move(copy);
}

int64_t TensorTable::StoreBf16(int64_t id) {
  const at::Tensor& t = Get(id);
  if (t.scalar_type() != at::kFloat || t.dim() < 2) return 0;
  const bool sole = t.use_count() == 1 && t.storage().use_count() == 1;
  const int64_t bytes = sole ? static_cast<int64_t>(t.numel()) * 4 : 0;
  at::Tensor half = Bf16Copy(id);
  slots_[id] = std::move(half);
  bf16_[id] = at::Tensor();
  return bytes;
}

const at::Tensor& TensorTable::Bf16If(int64_t id) const {
  Get(id);  // checks it
  return bf16_[id];
}

const at::Tensor& TensorTable::Get(int64_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= slots_.size() || !slots_[id].defined()) {
    throw ArgError("tensor id " + std::to_string(id) + " is not live (freed, or from another thread)");
  }
  return slots_[id];
}

void TensorTable::Free(int64_t id) {
  Get(id);  // checks it
  slots_[id] = at::Tensor();
  bf16_[id] = at::Tensor();
  free_.push_back(static_cast<uint32_t>(id));
}

TensorTable& Table() {
  static thread_local TensorTable table;
  return table;
}

at::Device& DefaultDevice() {
  static thread_local at::Device device(at::kCPU);
  return device;
}

bool& Bf16Compute() {
  static thread_local bool on = false;
  return on;
}

bool CpuHasBf16Gemm() {
  static const bool has = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bf16") || __builtin_cpu_supports("amx-bf16");
  }();
  return has;
}

Bf16GemmMode& Bf16GemmChoice() {
  static Bf16GemmMode mode = Bf16GemmMode::kAuto;
  return mode;
}

bool Bf16Gemm(const at::Tensor& t) {
  if (!t.device().is_cpu()) return true;
  const Bf16GemmMode mode = Bf16GemmChoice();
  return mode == Bf16GemmMode::kAuto ? CpuHasBf16Gemm() : mode == Bf16GemmMode::kBf16;
}

at::ScalarType ScalarTypeOf(int64_t code) {
  switch (code) {
    case 0:
      return at::kFloat;
    case 1:
      return at::kInt;
    case 2:
      return at::kBool;
  }
  throw ArgError("unknown dtype code " + std::to_string(code));
}

int DtypeCode(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
    case at::kBFloat16:  // an activation of a bf16 computation (see Matmul): float32 to tfjs
      return 0;
    case at::kInt:
      return 1;
    case at::kBool:
      return 2;
    default:
      throw ArgError(std::string("a result has dtype ") + c10::toString(t) + ", which tfjs cannot hold");
  }
}

at::Tensor AsTfjsDtype(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat:
    case at::kBFloat16:
    case at::kInt:
    case at::kBool:
      return t;
    case at::kLong:
    case at::kShort:
    case at::kChar:
    case at::kByte:
      return t.to(at::kInt);
    default:
      return t.to(at::kFloat);
  }
}

Args::Args(napi_env env, napi_callback_info info) : env_(env) {
  if (napi_get_cb_info(env, info, &argc_, argv_, nullptr, nullptr) != napi_ok) throw ArgError("bad call");
}

napi_value Args::Raw(size_t i) const {
  if (i >= argc_) throw ArgError("missing argument " + std::to_string(i));
  return argv_[i];
}

double Args::Num(size_t i) const {
  double d;
  if (napi_get_value_double(env_, Raw(i), &d) != napi_ok) throw ArgError("argument " + std::to_string(i) + " must be a number");
  return d;
}

int64_t Args::Int(size_t i) const { return static_cast<int64_t>(Num(i)); }

bool Args::Bool(size_t i) const {
  bool b;
  if (napi_get_value_bool(env_, Raw(i), &b) != napi_ok) throw ArgError("argument " + std::to_string(i) + " must be a boolean");
  return b;
}

std::string Args::Str(size_t i) const {
  size_t len = 0;
  if (napi_get_value_string_utf8(env_, Raw(i), nullptr, 0, &len) != napi_ok) throw ArgError("argument " + std::to_string(i) + " must be a string");
  std::string s(len, '\0');
  napi_get_value_string_utf8(env_, Raw(i), s.data(), len + 1, &len);
  return s;
}

bool Args::IsNullish(size_t i) const {
  if (i >= argc_) return true;
  napi_valuetype t;
  napi_typeof(env_, argv_[i], &t);
  return t == napi_null || t == napi_undefined;
}

void* Args::Typed(size_t i, napi_typedarray_type* type, size_t* length) const {
  bool is_ta = false;
  napi_is_typedarray(env_, Raw(i), &is_ta);
  void* data = nullptr;
  if (!is_ta || napi_get_typedarray_info(env_, Raw(i), type, length, &data, nullptr, nullptr) != napi_ok) {
    throw ArgError("argument " + std::to_string(i) + " must be a typed array");
  }
  return data;
}

std::vector<int64_t> Args::Ints(size_t i) const {
  napi_value v = Raw(i);
  bool is_ta = false;
  napi_is_typedarray(env_, v, &is_ta);
  if (is_ta) {
    napi_typedarray_type type;
    size_t n;
    void* data = Typed(i, &type, &n);
    if (type != napi_int32_array) throw ArgError("argument " + std::to_string(i) + " must be an Int32Array");
    const int32_t* p = static_cast<const int32_t*>(data);
    return std::vector<int64_t>(p, p + n);
  }
  bool is_array = false;
  napi_is_array(env_, v, &is_array);
  if (!is_array) throw ArgError("argument " + std::to_string(i) + " must be an array of numbers");
  uint32_t n = 0;
  napi_get_array_length(env_, v, &n);
  std::vector<int64_t> out(n);
  for (uint32_t k = 0; k < n; k++) {
    napi_value e;
    double d;
    napi_get_element(env_, v, k, &e);
    if (napi_get_value_double(env_, e, &d) != napi_ok) throw ArgError("argument " + std::to_string(i) + " must hold numbers only");
    out[k] = static_cast<int64_t>(d);
  }
  return out;
}

std::vector<at::Tensor> Args::Tensors(size_t i) const {
  std::vector<at::Tensor> out;
  for (int64_t id : Ints(i)) out.push_back(Table().Get(id));
  return Colocate(std::move(out));
}

std::vector<at::Tensor> Args::Ts(std::initializer_list<size_t> indices) const {
  std::vector<at::Tensor> out;
  for (size_t i : indices) out.push_back(T(i));
  return Colocate(std::move(out));
}

std::vector<at::Tensor> Args::Wides(std::initializer_list<size_t> indices) const {
  std::vector<at::Tensor> out = Ts(indices);
  for (at::Tensor& t : out) t = Widened(t);
  return out;
}

std::vector<at::Tensor> Colocate(std::vector<at::Tensor> ts) {
  const at::Tensor* away = nullptr;
  for (const at::Tensor& t : ts)
    if (!t.device().is_cpu()) {
      away = &t;
      break;
    }
  if (away == nullptr) return ts;
  const at::Device device = away->device();
  for (at::Tensor& t : ts)
    if (t.device() != device) {
      if (!t.device().is_cpu()) throw ArgError("inputs on " + t.device().str() + " and " + device.str() + ": move one model, or choose one device for both");
      t = t.to(device);
    }
  return ts;
}

napi_value Ref(napi_env env, at::Tensor t, at::Tensor bf16) {
  t = AsTfjsDtype(t);
  const int code = DtypeCode(t.scalar_type());
  napi_value arr, v;
  napi_create_array_with_length(env, 2 + t.dim(), &arr);
  const int64_t dim = t.dim();
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  napi_create_uint32(env, Table().Put(std::move(t), std::move(bf16)), &v);
  napi_set_element(env, arr, 0, v);
  napi_create_int32(env, code, &v);
  napi_set_element(env, arr, 1, v);
  for (int64_t d = 0; d < dim; d++) {
    napi_create_double(env, static_cast<double>(sizes[d]), &v);
    napi_set_element(env, arr, static_cast<uint32_t>(2 + d), v);
  }
  return arr;
}

napi_value Refs(napi_env env, const std::vector<at::Tensor>& ts, const std::vector<at::Tensor>& bf16) {
  napi_value arr;
  napi_create_array_with_length(env, ts.size(), &arr);
  for (size_t i = 0; i < ts.size(); i++) napi_set_element(env, arr, static_cast<uint32_t>(i), Ref(env, ts[i], i < bf16.size() ? bf16[i] : at::Tensor()));
  return arr;
}

napi_value Undefined(napi_env env) {
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

namespace {
struct Entry {
  const char* name;
  Fn fn;
};

std::string FirstLine(const std::string& s) {
  // c10::Error messages carry a C++ backtrace after the first line.
  const size_t nl = s.find('\n');
  return nl == std::string::npos ? s : s.substr(0, nl);
}

napi_value Trampoline(napi_env env, napi_callback_info info) {
  void* data = nullptr;
  size_t argc = 0;
  napi_get_cb_info(env, info, &argc, nullptr, nullptr, &data);
  const Entry* e = static_cast<const Entry*>(data);
  return Call(env, info, e->name, e->fn);
}
}  // namespace

napi_value Call(napi_env env, napi_callback_info info, const char* name, Fn fn) {
  std::string msg;
  try {
    Args args(env, info);
    return fn(args);
  } catch (const c10::Error& e) {
    msg = FirstLine(e.what_without_backtrace());
  } catch (const std::exception& e) {
    msg = FirstLine(e.what());
  }
  bool pending = false;
  napi_is_exception_pending(env, &pending);
  if (!pending) napi_throw_error(env, "PBRL_LIBTORCH", (std::string("pbrl_libtorch: ") + name + ": " + msg).c_str());
  return nullptr;
}

void Export(napi_env env, napi_value exports, const char* name, Fn fn) {
  // One entry per export for the life of the process (addons are never unloaded).
  Entry* e = new Entry{name, fn};
  napi_value f;
  napi_create_function(env, name, NAPI_AUTO_LENGTH, Trampoline, e, &f);
  napi_set_named_property(env, exports, name, f);
}

}  // namespace pbrl
