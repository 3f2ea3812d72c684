// The addon's entry: init and info (the pool's and OpenBLAS's thread counts), and the
// registration of every kernel family's entry points.
#include <algorithm>

#include "blas.h"
#include "common.h"

namespace pbrl_native {

static napi_value Info(napi_env env, napi_callback_info) {
  napi_value obj, v;
  napi_create_object(env, &obj);
  napi_create_int32(env, g_pool ? g_pool->threads() : 0, &v);
  napi_set_named_property(env, obj, "threads", v);
  napi_create_int32(env, openblas_get_num_threads(), &v);
  napi_set_named_property(env, obj, "blasThreads", v);
  const char* core = openblas_get_corename();
  napi_create_string_utf8(env, core ? core : "", NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, obj, "blasCore", v);
  const char* config = openblas_get_config();
  napi_create_string_utf8(env, config ? config : "", NAPI_AUTO_LENGTH, &v);
  napi_set_named_property(env, obj, "blasConfig", v);
  return obj;
}

// init(threads): sets OpenBLAS's thread count and (re)creates the pool; returns info().
static napi_value Init(napi_env env, napi_callback_info info) {
  Args a(env, info);
  int64_t threads = a.Int(0);
  if (!a.ok) return nullptr;
  threads = std::max<int64_t>(1, std::min<int64_t>(threads, 256));
  g_blas_threads = static_cast<int>(threads);
  openblas_set_num_threads(g_blas_threads);
  if (g_pool == nullptr || g_pool->threads() != threads) {
    delete g_pool;
    g_pool = new Pool(static_cast<int>(threads));
  }
  return Info(env, info);
}

// Runs on the thread whose environment is torn down (a worker thread that exits).
static void FreePool(void*) {
  delete g_pool;
  g_pool = nullptr;
}

}  // namespace pbrl_native

static napi_value RegisterModule(napi_env env, napi_value exports) {
  using namespace pbrl_native;
  if (g_pool == nullptr) {
    g_pool = new Pool(1);
    napi_add_env_cleanup_hook(env, FreePool, nullptr);
  }
  Export(env, exports, "init", Init);
  Export(env, exports, "info", Info);
  RegisterBlasInfo(env, exports);
  RegisterMatMul(env, exports);
  RegisterShape(env, exports);
  RegisterElementwise(env, exports);
  RegisterReduce(env, exports);
  RegisterLogSoftmax(env, exports);
  RegisterLayers(env, exports);
  RegisterAttention(env, exports);
  RegisterDecode(env, exports);
  RegisterSampling(env, exports);
  RegisterAdamW(env, exports);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, RegisterModule)
