export { tf } from "./tf.js";
export {
  useBackend,
  useBackendSetting,
  useDefaultBackend,
  ensureBackend,
  currentBackend,
  decideBackend,
  chooseBackend,
  parseBackendName,
  BACKEND_NAMES,
  BackendUnavailableError,
} from "./backend.js";
export type {
  BackendName,
  BackendInfo,
  BackendSetting,
  BackendAvailability,
  BackendChoice,
  BackendNeeds,
  BackendOption,
  BackendRequest,
  BackendTraits,
} from "./backend.js";
export { BACKENDS, backendOptions } from "./backends.js";
export type { BackendEntry, BackendLoad, RegisteredBackend } from "./backends.js";
export { applyBlasCoreChoice, loadNativeAddon, nativeAddonPath, nativeThreads, DEFAULT_NATIVE_ADDON_PATH, NATIVE_KERNELS } from "./native-backend.js";
export { FUSED_KERNEL_NAMES } from "./fused-kernel-names.js";
export type { FusedKernelName } from "./fused-kernel-names.js";
export { fusedKernelsActive, transposesAreFree } from "./backend-traits.js";
export { installLeanGradients, uninstallLeanGradients } from "./lean-gradients.js";
export { backendDevice, checkDevice, cudaDeviceCount, deviceOf, DeviceUnavailableError, onDevice, resolveDevices, toDevice } from "./devices.js";
export type { DeviceSpec } from "./devices.js";
export { computePrecision, PrecisionUnavailableError, setComputePrecision, storeInBf16 } from "./precision.js";
export { releaseCachedMemory } from "./release-memory.js";
export type { ComputePrecision } from "./precision.js";
export { adamwStep, fusedAttention, logSoftmaxSelect, logSoftmaxSelectGrad, rmsNorm, rotary, scatterAddRows, swiglu } from "./fused-ops.js";
export type { AdamWScalars } from "./fused-ops.js";
export type { NativeAddon, NativeAddonInfo, NativeLoad } from "./native-backend.js";
export { loadLibtorchAddon, libtorchAddonPath, DEFAULT_LIBTORCH_ADDON_PATH } from "./libtorch/addon.js";
export type { LibtorchAddon, LibtorchInfo, LibtorchLoad } from "./libtorch/addon.js";
export { LIBTORCH_KERNEL_NAMES } from "./libtorch/kernels.js";
export { libtorchSampleRows } from "./libtorch/sampling.js";
export { LibtorchDecoder } from "./libtorch/decode.js";
export type { RowSampling } from "./libtorch/sampling.js";
export { blasCoreType, chooseBlasCore, describeCpuFeatures } from "./blas-kernels.js";
export type { BlasCoreChoice, CpuFeatures } from "./blas-kernels.js";
export { dropoutHash, RngStream, RngStreams } from "./rng.js";
export { dropoutMask } from "./dropout-mask.js";
export { loraLinear, loraLinearFused } from "./lora-linear.js";
export type { RngState, RngStreamsState } from "./rng.js";
export { AdamW } from "./adamw.js";
export type { AdamWDeferredState, AdamWOptions, AdamWState, NamedVariables } from "./adamw.js";
export { clipGradNorm, globalGradNorm } from "./grad-clip.js";
export { addGrads } from "./grad-accumulation.js";
export { liveTensorCount, scoped, assertNoTensorLeak, disposeAll, variableFrom, TensorLeakError } from "./memory.js";
export {
  formatBytes,
  guardHeap,
  isHeapExhaustion,
  memoryCapacity,
  MemoryBudgetError,
  registerMemoryLimit,
  translateHeapExhaustion,
  WASM_HEAP_MAX_BYTES,
  type BackendMemoryLimit,
  type MemoryCapacity,
} from "./memory-capacity.js";
export { writeFileAtomic, writeFileAtomicStream, replaceDirAtomic, FileWriteError, fileWriteError } from "./atomic-write.js";
export { errorText, asError, valueText, MAX_THROWN_TEXT } from "./error-text.js";
export { timerDelayMs, MAX_TIMER_MS } from "./timer-delay.js";
export { isSecretName, isSecretQueryName, redactRecord, redactSecretText, redactSecrets, REDACTED, REDACTED_IN_URL } from "./redact-secrets.js";
export {
  parseSafetensors,
  readSafetensors,
  serializeSafetensors,
  writeSafetensors,
  readSafetensorsCheckpoint,
  openSafetensorsCheckpoint,
  writeSafetensorsCheckpoint,
  SafetensorsError,
  SAFETENSORS_SINGLE,
  SAFETENSORS_INDEX,
} from "./safetensors.js";
export type {
  SafetensorsDtype,
  SafetensorsWriteDtype,
  HostTensor,
  LoadedTensor,
  SafetensorsFile,
  TensorToWrite,
  DeferredHostTensor,
  SafetensorsCheckpoint,
  WriteCheckpointOptions,
} from "./safetensors.js";
export { LazyHostTensors } from "./lazy-host-tensors.js";
export { bf16BitsToFloat32, float32ToBf16Bits, f16BitsToFloat32, float32ToF16Bits } from "./half.js";
export { keepDecodeRows, nativeHeapOffsets, NativeDecodeCache, nativeDecodeStep, nativeSampleRows } from "./native-decode.js";
export type { DecodeDims } from "./native-decode.js";
export { isWithin, resolvedPath } from "./paths.js";
export { mean, meanOrNull } from "./mean.js";
export { NonFiniteError } from "./non-finite-error.js";
export { isProcessAlive, lockIdentity, lockOwnerState, processCommand, processIdentity } from "./process-identity.js";
export type { ProcessIdentity } from "./process-identity.js";
export { distributedBackends, initProcessGroup, processGroupFromEnv, ProcessGroup, ProcessGroupError } from "./distributed/process-group.js";
export { distributedAvailable, DistributedUnavailableError } from "./distributed/availability.js";
export { allReduceInBuckets, bucketRuns, DEFAULT_BUCKET_BYTES } from "./distributed/gradient-buckets.js";
export type { DistributedAvailability } from "./distributed/availability.js";
export { checkProcessGroupOptions, parseTorchrunEnv, DistributedConfigError, DEFAULT_DDP_TIMEOUT_SECONDS } from "./distributed/torchrun-env.js";
export type { ProcessGroupOptions, TorchrunEnv } from "./distributed/torchrun-env.js";
export type { ProcessGroupBackend, ReduceOp } from "./distributed/addon-functions.js";
