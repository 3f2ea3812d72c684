// The backend rule as a pure function: a table of backends (traits and whether each is available)
// in, the choice and its reason out. No backend is loaded; the table's availability answers are
// the test's, and the calls to them are counted (the rule asks only what its answer depends on).
import { describe, expect, it } from "vitest";
import { BACKENDS, BackendUnavailableError, chooseBackend, type BackendName, type BackendOption, type BackendRequest } from "../src/index.js";

/** pbrl's table with each backend available or not as given (a string: why not), recording which were asked. */
function table(available: Partial<Record<BackendName, true | string>>): { options: BackendOption[]; asked: BackendName[] } {
  const asked: BackendName[] = [];
  const options = BACKENDS.map((b) => ({
    name: b.name,
    traits: b.traits,
    available: () => {
      asked.push(b.name);
      const a = available[b.name] ?? true;
      return a === true ? ({ ok: true } as const) : ({ ok: false, why: a } as const);
    },
  }));
  return { options, asked };
}

const choose = (request: BackendRequest, available: Partial<Record<BackendName, true | string>> = {}) => {
  const t = table(available);
  return { ...chooseBackend(request, t.options), asked: t.asked };
};

describe("the backend rule", () => {
  it("uses a named backend as given, asking nothing, whatever PBRL_BACKEND and the needs say", () => {
    expect(choose({ setting: "cpu", env: "libtorch", needs: { bf16: true } }, { cpu: "not here" })).toEqual({
      name: "cpu",
      by: "setting",
      reason: "backend=cpu",
      passedOver: [],
      asked: [],
    });
  });

  it("lets PBRL_BACKEND decide for auto, and refuses an unknown name in it", () => {
    expect(choose({ setting: "auto", env: "wasm", needs: { bf16: true } })).toMatchObject({ name: "wasm", by: "env", reason: "PBRL_BACKEND=wasm", asked: [] });
    expect(() => choose({ setting: "auto", env: "cuda" })).toThrow(BackendUnavailableError);
    expect(() => choose({ setting: "auto", env: "cuda" })).toThrow(/backend: unknown value "cuda"; expected one of wasm, cpu, tensorflow, native, libtorch/);
    expect(choose({ setting: "auto", env: "" }).name).toBe("native");
  });

  it("picks native when it is available, without asking about libtorch", () => {
    expect(choose({ setting: "auto" })).toMatchObject({ name: "native", by: "auto", reason: "native: auto's first choice", passedOver: [], asked: ["native"] });
  });

  it("falls back to wasm when native is unavailable, saying why", () => {
    const c = choose({ setting: "auto", needs: { devices: ["cpu", "auto"] } }, { native: "native backend unavailable: not built" });
    expect(c).toMatchObject({ name: "wasm", reason: "native backend unavailable: not built", passedOver: ["native backend unavailable: not built"] });
    expect(c.asked).toEqual(["native", "wasm"]);
  });

  it("picks libtorch for what only it gives: bf16, a device other than the CPU", () => {
    expect(choose({ setting: "auto", needs: { bf16: true } })).toMatchObject({ name: "libtorch", reason: "bf16", asked: ["libtorch"] });
    expect(choose({ setting: "auto", needs: { devices: ["cpu", "cuda:1"] } })).toMatchObject({ name: "libtorch", reason: "device cuda:1" });
  });

  it("without libtorch, gives a run that needs it the default backend (whose checks then refuse the need)", () => {
    const c = choose({ setting: "auto", needs: { bf16: true } }, { libtorch: "libtorch backend unavailable: not built" });
    expect(c.name).toBe("native");
    expect(c.reason).toBe("no backend here gives bf16 (libtorch backend unavailable: not built); native runs");
    expect(c.asked).toEqual(["libtorch", "native"]);
    const w = choose({ setting: "auto", needs: { bf16: true } }, { libtorch: "no libtorch", native: "no native" });
    expect(w).toMatchObject({ name: "wasm", passedOver: ["no native"] });
  });

  it("moves a run that outgrew the native or wasm heap to libtorch, with the size in the reason", () => {
    const bytes = 5.06 * 2 ** 30;
    expect(choose({ setting: "auto", needs: { outgrew: { backend: "native", bytes } } })).toMatchObject({
      name: "libtorch",
      reason: "the run does not fit the native backend's tensor memory (it needs about 5.06 GB)",
      asked: ["libtorch"],
    });
    expect(choose({ setting: "auto", needs: { outgrew: { backend: "wasm" } } })).toMatchObject({
      name: "libtorch",
      reason: "the run does not fit the wasm backend's tensor memory",
    });
  });

  it("keeps a run that outgrew its backend there when no backend holds more (its memory error stands)", () => {
    expect(choose({ setting: "auto", needs: { outgrew: { backend: "native" } } }, { libtorch: "no libtorch" }).name).toBe("native");
    expect(choose({ setting: "auto", needs: { bf16: true, outgrew: { backend: "libtorch" } } }).name).toBe("libtorch");
    expect(choose({ setting: "native", needs: { outgrew: { backend: "native" } } })).toMatchObject({ name: "native", asked: [] });
    expect(choose({ setting: "auto", env: "wasm", needs: { outgrew: { backend: "wasm" } } }).name).toBe("wasm");
  });

  it("never picks a backend that auto does not rank (cpu, tensorflow), and says so when nothing runs", () => {
    expect(() => choose({ setting: "auto" }, { native: "no native", wasm: "no wasm", libtorch: "no libtorch" })).toThrow(
      "backend=auto: no backend is available here (no native; no wasm; no libtorch)",
    );
  });

  it("reads its order and needs from the table's traits, not from backend names", () => {
    const t = table({});
    const options = t.options.map((o) => (o.name === "libtorch" ? { ...o, traits: { ...o.traits, autoRank: -1 } } : o));
    expect(chooseBackend({ setting: "auto" }, options).name).toBe("libtorch");
    const noBf16 = t.options.map((o) => ({ ...o, traits: { ...o.traits, bf16: o.name === "wasm" } }));
    expect(chooseBackend({ setting: "auto", needs: { bf16: true } }, noBf16).name).toBe("wasm");
  });
});
