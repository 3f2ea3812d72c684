/**
 * What test files running on several tfjs backends, or placing models on libtorch devices, set up alike. The addons are
 * core-tensor's, which this package must not depend on (core-tensor's tests use it): callers pass what
 * `loadNativeAddon()` / `loadLibtorchAddon()` answered, and `useBackend`.
 */
import { afterEach, describe, it } from "vitest";

/** What core-tensor's `loadNativeAddon()` / `loadLibtorchAddon()` answer, as far as the tests read it. */
export type AddonLoad = { ok: true } | { ok: false; reason: string };

/** The backends parity tests run on. */
export type TestBackend = "native" | "libtorch" | "wasm" | "cpu";

/**
 * Why the tests of an addon's backend are skipped, or undefined where they run: the addon loaded, or
 * PBRL_REQUIRE_NATIVE=1 / PBRL_REQUIRE_LIBTORCH=1 (CI where it builds) makes a missing addon fail instead.
 */
export function addonSkipReason(backend: "native" | "libtorch", load: AddonLoad): string | undefined {
  return load.ok || process.env[`PBRL_REQUIRE_${backend.toUpperCase()}`] === "1" ? undefined : load.reason;
}

/**
 * `describe.each` over native, libtorch, wasm and cpu ("$backend" in `name` names the backend): `body` declares one
 * backend's tests. A backend whose addon did not load (see addonSkipReason) gets one skipped test saying why instead.
 */
export function describeEachBackend(name: string, loads: { native: AddonLoad; libtorch: AddonLoad }, body: (backend: TestBackend) => void): void {
  const skips: Partial<Record<TestBackend, string>> = {
    native: addonSkipReason("native", loads.native),
    libtorch: addonSkipReason("libtorch", loads.libtorch),
  };
  const cases = (["native", "libtorch", "wasm", "cpu"] as const).map((backend) => ({ backend, skip: skips[backend] }));
  describe.each(cases)(name, ({ backend, skip }) => {
    if (skip !== undefined) {
      it.skip(`skipped: ${skip}`, () => undefined);
      return;
    }
    body(backend);
  });
}

export interface DeviceTests {
  /** Why the file's libtorch tests are skipped (see addonSkipReason), or undefined where they run. */
  missing: string | undefined;
  /** The devices PBRL_TEST_DEVICES names (comma-separated, default "cpu"; scripts/gpu/check.sh passes CUDA devices): never empty. */
  devices: string[];
  /** Two devices for two agents: the first two of `devices`, the one name twice where there is one. */
  agentDevices: [string, string];
}

/**
 * The set-up of a test file placing models on libtorch devices: after each of its tests, `restore` is given the backend
 * the run started on (PBRL_BACKEND, default "wasm"); answers whether its libtorch tests run and on which devices.
 */
export function setUpDeviceTests(libtorch: AddonLoad, restore: (backend: string) => Promise<unknown>): DeviceTests {
  afterEach(async () => {
    await restore(process.env["PBRL_BACKEND"] ?? "wasm");
  });
  const listed = (process.env["PBRL_TEST_DEVICES"] ?? "cpu")
    .split(",")
    .map((d) => d.trim())
    .filter((d) => d !== "");
  const [first = "cpu", second = first] = listed;
  return { missing: addonSkipReason("libtorch", libtorch), devices: listed.length > 0 ? listed : ["cpu"], agentDevices: [first, second] };
}
