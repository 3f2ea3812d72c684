/**
 * Devices: where a model's tensors live. On the libtorch backend a device is a libtorch device —
 * "cpu", "cuda" or "cuda:N" — and every model lives where it was loaded ({@link onDevice}); ops
 * run on their inputs' device (CPU inputs such as token ids join a model on CUDA). Every other
 * backend has one device, the one its line names ("cpu"; "gpu" for tfjs-node-gpu), and any other
 * name is an error, never accepted and ignored.
 */
import { currentBackend } from "./backend.js";
import type { LibtorchBackend } from "./libtorch/backend.js";
import { LIBTORCH_BACKEND_NAME } from "./libtorch/register.js";
import { tf } from "./tf.js";

export class DeviceUnavailableError extends Error {
  override name = "DeviceUnavailableError";
}

function libtorch(): LibtorchBackend | undefined {
  return tf.getBackend() === LIBTORCH_BACKEND_NAME ? (tf.backend() as unknown as LibtorchBackend) : undefined;
}

/** How many CUDA devices this process's libtorch sees: 0 on a CPU libtorch and on every other backend. */
export function cudaDeviceCount(): number {
  return libtorch()?.addon.info().cudaDevices ?? 0;
}

/** A device setting as configs hold it: null/"auto", one name for all agents, or a list. */
export type DeviceSpec = string | readonly string[] | null | undefined;

/** The device pbrl computes on by default: the backend's (libtorch's default device is the CPU). */
export function backendDevice(): string {
  return currentBackend()?.device ?? "cpu";
}

/**
 * One device name per agent: null/"auto" → `fallback` (default the backend's device: pbrl never
 * assumes CUDA); a name → that name for every agent; a list of one → replicated; a list of
 * `count` → as given.
 */
export function resolveDevices(spec: DeviceSpec, count: number, field: string, fallback: string = backendDevice()): string[] {
  if (spec === null || spec === undefined || spec === "auto") return Array.from({ length: count }, () => fallback);
  if (typeof spec === "string") return Array.from({ length: count }, () => spec);
  if (spec.length === 1) return Array.from({ length: count }, () => (spec[0] === "auto" ? fallback : spec[0]!));
  if (spec.length === count) return spec.map((d) => (d === "auto" ? fallback : d));
  throw new RangeError(`${field}: has ${spec.length} entries; give one device or ${count} (one per agent)`);
}

/** Throws a {@link DeviceUnavailableError} unless the active backend can place tensors on `device` ("auto" always can). */
export function checkDevice(device: string): void {
  if (device === "auto") return;
  const lt = libtorch();
  if (lt !== undefined) {
    try {
      lt.addon.checkDevice(device);
    } catch (e) {
      throw new DeviceUnavailableError((e instanceof Error ? e.message : String(e)).replace(/^pbrl_libtorch: checkDevice: /, ""));
    }
    return;
  }
  const own = backendDevice();
  if (device !== own) {
    const name = tf.getBackend();
    throw new DeviceUnavailableError(
      `device ${device}: the ${name} backend computes on ${own === "cpu" ? "the CPU" : own} only; devices such as cuda:N need backend=libtorch with a CUDA libtorch`,
    );
  }
}

/**
 * Runs `fn` with the tensors it makes from host values (weights being loaded, inputs written) on
 * `device` (checked first; "auto" leaves the placement as it is). Synchronous, so no other work
 * interleaves with it.
 */
export function onDevice<T>(device: string, fn: () => T): T {
  checkDevice(device);
  const lt = libtorch();
  if (lt === undefined || device === "auto") return fn();
  const before = lt.addon.defaultDevice();
  lt.addon.setDevice(device);
  try {
    return fn();
  } finally {
    lt.addon.setDevice(before);
  }
}

/** A copy of `t` on `device` (libtorch; the same tensor when it is there already), else a clone. */
export function toDevice(t: tf.Tensor, device: string): tf.Tensor {
  checkDevice(device);
  const lt = libtorch();
  if (lt === undefined || device === "auto") return tf.clone(t);
  return tf.engine().makeTensorFromTensorInfo(lt.out(lt.addon.to(lt.id(t), device)));
}

/** The device a tensor lives on: a libtorch device name, else the backend's one device. */
export function deviceOf(t: tf.Tensor): string {
  const lt = libtorch();
  return lt !== undefined ? lt.addon.deviceOf(lt.id(t)) : backendDevice();
}
