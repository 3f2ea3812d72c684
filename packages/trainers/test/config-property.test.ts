// Property test of the config parser: whatever a user (or a YAML file) passes, building a config
// either succeeds or throws a ConfigError that names a field — never a TypeError or a crash.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ConfigError, MADPO_ITER_FIELDS, MADPOConfig, MADPOIterConfig, MARLHF_ITER_FIELDS, MARLHFConfig, MARLHFIterConfig } from "../src/index.js";

const FIELDS = [...new Set([...Object.keys(MADPO_ITER_FIELDS), ...Object.keys(MARLHF_ITER_FIELDS)])];
const BUILDERS = { MADPOConfig, MADPOIterConfig, MARLHFConfig, MARLHFIterConfig } as const;

// Values a config file can hold, with the awkward ones made likely.
const value = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.constantFrom(
    null,
    undefined,
    true,
    false,
    0,
    -1,
    1.5,
    Number.NaN,
    Infinity,
    -Infinity,
    1e308,
    2 ** 53 + 2,
    "",
    " ",
    "current",
    "api",
    "lambda_decay",
    "cuda:1",
    "null",
    "__proto__",
  ),
  fc.string({ maxLength: 12 }),
  fc.double(),
  fc.integer(),
  fc.array(fc.oneof(fc.string({ maxLength: 6 }), fc.integer()), { maxLength: 4 }),
  fc.object({ maxDepth: 1 }),
);
const input = fc.oneof(
  { weight: 4, arbitrary: fc.dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 8 }) },
  { weight: 1, arbitrary: fc.dictionary(fc.oneof(fc.constantFrom(...FIELDS), fc.string({ maxLength: 10 })), value, { maxKeys: 6 }) },
  { weight: 1, arbitrary: fc.anything() },
);

describe("config parser, property-based", () => {
  it.each(Object.keys(BUILDERS))("%s: 1,000 generated inputs build a config or throw a ConfigError naming a field", (name) => {
    const build = BUILDERS[name as keyof typeof BUILDERS] as (i: unknown) => unknown;
    let built = 0;
    let refused = 0;
    fc.assert(
      fc.property(input, (raw) => {
        try {
          const c = build(raw) as Record<string, unknown>;
          expect(Object.isFrozen(c)).toBe(true);
          expect(typeof c["output_dir"]).toBe("string");
          built++;
        } catch (err) {
          if (!(err instanceof ConfigError)) throw new Error(`${name}(${fc.stringify(raw)}) threw ${(err as Error)?.name}: ${(err as Error)?.message}`);
          expect(err.problems.length).toBeGreaterThan(0);
          refused++;
          for (const p of err.problems) expect(p).toMatch(/^([A-Za-z_][A-Za-z0-9_]*|".*"): |^expected an object of fields, got /);
        }
      }),
      { numRuns: 1000 },
    );
    // both outcomes occur, so the property checks real configs and real errors
    expect(built).toBeGreaterThan(10);
    expect(refused).toBeGreaterThan(10);
  });
});
