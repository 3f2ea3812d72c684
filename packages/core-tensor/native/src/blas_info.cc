// CPU features and OpenBLAS's kernel family (blas.h; src/blas-kernels.ts decides).
#include <string>

#include "blas.h"
#include "common.h"

namespace pbrl_native {

// cpuFeatures(): {avx, fma, avx2, avx512f, …, avx512bf16, amx}.
static napi_value CpuFeatures(napi_env env, napi_callback_info) {
  napi_value obj, v;
  napi_create_object(env, &obj);
  for (const auto& [name, on] : pbrl_blas::CpuFeatures()) {
    napi_get_boolean(env, on, &v);
    napi_set_named_property(env, obj, name, v);
  }
  return obj;
}

// blasCores(): the kernel families pbrl may switch this OpenBLAS to (empty when it cannot switch).
static napi_value BlasCores(napi_env env, napi_callback_info) {
  napi_value arr, v;
  napi_create_array(env, &arr);
  uint32_t n = 0;
  for (const char* core : pbrl_blas::SwitchableCores()) {
    napi_create_string_utf8(env, core, NAPI_AUTO_LENGTH, &v);
    napi_set_element(env, arr, n++, v);
  }
  return arr;
}

// setBlasCore(name): switches OpenBLAS's kernel family and returns the one now in use.
static napi_value SetBlasCore(napi_env env, napi_callback_info info) {
  Args a(env, info);
  napi_value arg = a.Arg(0);
  if (!a.ok) return nullptr;
  char name[32] = {0};
  size_t len = 0;
  if (napi_get_value_string_utf8(env, arg, name, sizeof(name), &len) != napi_ok) {
    a.Fail("setBlasCore: the core name must be a string");
    return nullptr;
  }
  std::string now;
  if (!pbrl_blas::SwitchCore(name, &now)) {
    a.Fail("setBlasCore: this OpenBLAS cannot switch kernels (not a DYNAMIC_ARCH build)");
    return nullptr;
  }
  napi_value v;
  napi_create_string_utf8(env, now.c_str(), now.size(), &v);
  return v;
}

void RegisterBlasInfo(napi_env env, napi_value exports) {
  Export(env, exports, "cpuFeatures", CpuFeatures);
  Export(env, exports, "blasCores", BlasCores);
  Export(env, exports, "setBlasCore", SetBlasCore);
}

}  // namespace pbrl_native
