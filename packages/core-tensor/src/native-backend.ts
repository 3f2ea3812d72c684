/**
 * The `native` tensor backend: the wasm backend with its heavy kernels replaced by C++ ones.
 *
 * `native` is a second instance of tfjs's wasm backend (`BackendWasm`, created by the wasm
 * backend's own registered factory, so it has a heap of its own and `wasm` stays untouched for
 * fallback and comparison). Every kernel registered for `wasm` is registered for `native` too;
 * the kernels listed in {@link NATIVE_KERNELS} are replaced by implementations in pbrl's N-API
 * addon (packages/core-tensor/native): OpenBLAS sgemm for matrix products, simple threaded loops
 * for the rest. They read their inputs and write their outputs directly in the wasm heap (byte
 * offsets into `backend.wasm.HEAPU8.buffer`), so nothing is copied; inputs a native kernel does
 * not handle (other dtypes, rare attribute values) go to the wasm kernel unchanged.
 *
 * The two instances can live side by side because tfjs re-runs every kernel's setup function on
 * each `setBackend`, and the wasm kernels' setup functions rebind their module-level pointers to
 * the active instance's exports; kernels only ever run on the active backend.
 *
 * The addon is loaded on demand by {@link loadNativeAddon}; `PBRL_NATIVE_ADDON` overrides its path
 * and `PBRL_NATIVE=off` pretends it is absent (to exercise the fallback to wasm).
 * docs/native-backend.md describes the whole path.
 */
export { applyBlasCoreChoice, DEFAULT_NATIVE_ADDON_PATH, loadNativeAddon, nativeAddonPath, nativeThreads } from "./native/loader.js";
export type { NativeAddon, NativeAddonInfo, NativeLoad } from "./native/loader.js";
export { NATIVE_BACKEND_NAME, nativeHeapAccess } from "./native/heap.js";
export { NATIVE_KERNELS } from "./native/kernels-tfjs.js";
export { registerNativeBackend } from "./native/register.js";
