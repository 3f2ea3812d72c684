// config.json's whole-number floats survive a load and save: transformers' strict config classes
// reject `15` where the field is a float (Gemma3TextConfig.final_logit_softcapping).
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { integralFloatPaths, stringifyConfigJson } from "../src/config-json.js";
import { loadPretrained, savePretrained } from "../src/index.js";
import { FIXTURES } from "./reference.js";

describe("whole numbers written as floats", () => {
  it("are found by path, through nesting, arrays, exponents and strings that look like numbers", () => {
    const text = '{"a": 15.0, "b": 15, "c": {"d": [1.0, 2, -3.0e0, 0.5]}, "e": "7.0", "f\\"g": 1e3, "h": null, "i": [true, {"j": 2.50}]}';
    expect(integralFloatPaths(text)).toEqual(["a", "c/d/0", "c/d/2", 'f"g']);
  });

  it("are written back as floats, everything else as JSON.stringify(·, null, 2) writes it", () => {
    const value = { a: 15, b: 15, c: { d: [1, 2, -3, 0.5] }, e: "7.0", big: 1e21, empty: [], none: {}, skip: undefined };
    const floats = new Set(["a", "c/d/0", "c/d/2", "big"]);
    const out = stringifyConfigJson(value, floats);
    expect(out).toBe(JSON.stringify(value, null, 2).replace('"a": 15,', '"a": 15.0,').replace("1,\n", "1.0,\n").replace("-3,", "-3.0,"));
    expect(JSON.parse(out)).toEqual(JSON.parse(JSON.stringify(value)));
  });

  it("survive loadPretrained and savePretrained (tiny-gemma3's soft-caps and rope thetas)", async () => {
    const p = await loadPretrained(path.join(FIXTURES, "tiny-gemma3"));
    const out = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-cfg-")), "saved");
    await savePretrained(out, p);
    p.model.dispose();
    const text = readFileSync(path.join(out, "config.json"), "utf8");
    for (const field of [
      '"final_logit_softcapping": 15.0',
      '"attn_logit_softcapping": 10.0',
      '"rope_theta": 1000000.0',
      '"factor": 8.0',
      '"attention_dropout": 0.0',
    ])
      expect(text).toContain(field);
    expect(text).toContain('"query_pre_attn_scalar": 24,');
    expect(JSON.parse(text)).toEqual(JSON.parse(readFileSync(path.join(FIXTURES, "tiny-gemma3", "config.json"), "utf8")));
  });
});
