#include "common.h"

namespace pbrl_native {

Args::Args(napi_env e, napi_callback_info info) : env(e) {
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok) Fail("bad call");
}

void Args::Fail(const std::string& msg) {
  if (ok) napi_throw_error(env, "PBRL_NATIVE", ("pbrl_native: " + msg).c_str());
  ok = false;
}

napi_value Args::Arg(size_t i) {
  if (i >= argc) {
    Fail("missing argument " + std::to_string(i));
    return nullptr;
  }
  return argv[i];
}

int64_t Args::Int(size_t i) { return static_cast<int64_t>(Num(i)); }

double Args::Num(size_t i) {
  napi_value v = Arg(i);
  if (!ok) return 0;
  double d;
  if (napi_get_value_double(env, v, &d) != napi_ok) {
    Fail("argument " + std::to_string(i) + " must be a number");
    return 0;
  }
  return d;
}

bool Args::Bool(size_t i) {
  napi_value v = Arg(i);
  if (!ok) return false;
  bool b;
  if (napi_get_value_bool(env, v, &b) != napi_ok) {
    Fail("argument " + std::to_string(i) + " must be a boolean");
    return false;
  }
  return b;
}

uint8_t* Args::Heap(size_t i, size_t* length) {
  napi_value v = Arg(i);
  if (!ok) return nullptr;
  void* data = nullptr;
  bool is_ab = false;
  napi_is_arraybuffer(env, v, &is_ab);
  if (!is_ab || napi_get_arraybuffer_info(env, v, &data, length) != napi_ok) {
    Fail("argument " + std::to_string(i) + " must be an ArrayBuffer");
    return nullptr;
  }
  return static_cast<uint8_t*>(data);
}

void* Args::Typed(size_t i, napi_typedarray_type want, size_t* length, const char* what) {
  *length = 0;
  napi_value v = Arg(i);
  if (!ok) return nullptr;
  napi_typedarray_type type;
  void* data = nullptr;
  bool is_ta = false;
  napi_is_typedarray(env, v, &is_ta);
  if (!is_ta || napi_get_typedarray_info(env, v, &type, length, &data, nullptr, nullptr) != napi_ok || type != want) {
    Fail("argument " + std::to_string(i) + " must be " + what);
    return nullptr;
  }
  return data;
}

const int32_t* Args::Int32s(size_t i, size_t* length) {
  *length = 0;
  napi_value v = Arg(i);
  if (!ok) return nullptr;
  napi_valuetype t;
  napi_typeof(env, v, &t);
  if (t == napi_null || t == napi_undefined) return nullptr;
  napi_typedarray_type type;
  void* data = nullptr;
  bool is_ta = false;
  napi_is_typedarray(env, v, &is_ta);
  if (!is_ta || napi_get_typedarray_info(env, v, &type, length, &data, nullptr, nullptr) != napi_ok ||
      type != napi_int32_array) {
    Fail("argument " + std::to_string(i) + " must be an Int32Array or null");
    return nullptr;
  }
  return static_cast<const int32_t*>(data);
}

HeapArgs::HeapArgs(napi_env e, napi_callback_info info) : Args(e, info) { heap = Heap(0, &len); }

bool IndicesInRange(Args& a, const int32_t* idx, int64_t count, int64_t limit, const char* what) {
  if (!a.ok) return false;
  for (int64_t i = 0; i < count; i++)
    if (idx[i] < 0 || idx[i] >= limit) {
      a.Fail(std::string(what) + ": index " + std::to_string(idx[i]) + " outside [0, " + std::to_string(limit) + ")");
      return false;
    }
  return true;
}

napi_value Undefined(napi_env env) {
  napi_value u;
  napi_get_undefined(env, &u);
  return u;
}

void Export(napi_env env, napi_value exports, const char* name, napi_callback fn) {
  const napi_property_descriptor prop = {name, nullptr, fn, nullptr, nullptr, nullptr, napi_default, nullptr};
  napi_define_properties(env, exports, 1, &prop);
}

}  // namespace pbrl_native
