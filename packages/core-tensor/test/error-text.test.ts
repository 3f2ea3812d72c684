// Anything thrown becomes text for a message: never "[object Object]", never a crash of the
// error path itself (a cycle, a BigInt, a throwing getter, a revoked Proxy), never a huge message.
import { describe, expect, it } from "vitest";
import { asError, errorText, MAX_THROWN_TEXT } from "../src/index.js";

const thrown = (value: unknown): unknown => {
  try {
    throw value;
  } catch (e) {
    return e;
  }
};

describe("errorText", () => {
  it("an Error's message; its name when the message is empty; a string as it is", () => {
    expect(errorText(new RangeError("bad seed"))).toBe("bad seed");
    expect(errorText(new TypeError())).toBe("TypeError");
    expect(errorText("plain words")).toBe("plain words");
  });

  it("an object as JSON", () => {
    expect(errorText(thrown({ code: 1 }))).toBe('a non-Error value was thrown: {"code":1}');
    expect(errorText(thrown([1, "two", null]))).toBe('a non-Error value was thrown: [1,"two",null]');
  });

  it("values JSON has no form for", () => {
    expect(errorText(undefined)).toBe("a non-Error value was thrown: undefined");
    expect(errorText(null)).toBe("a non-Error value was thrown: null");
    expect(errorText(Number.NaN)).toBe("a non-Error value was thrown: NaN");
    expect(errorText(12n)).toBe("a non-Error value was thrown: 12n");
    expect(errorText(Symbol("s"))).toBe("a non-Error value was thrown: Symbol(s)");
    expect(errorText(function named() {})).toBe("a non-Error value was thrown: a function (named)");
    expect(errorText({ big: 5n })).toBe('a non-Error value was thrown: {"big":"5n"}');
  });

  it("a cycle is marked, a shared (not cyclic) value is shown twice", () => {
    const a: Record<string, unknown> = { code: 1 };
    a["self"] = a;
    expect(errorText(a)).toBe('a non-Error value was thrown: {"code":1,"self":"[Circular]"}');
    const shared = { x: 1 };
    expect(errorText({ a: shared, b: [shared] })).toBe('a non-Error value was thrown: {"a":{"x":1},"b":[{"x":1}]}');
  });

  it("a huge value is cut", () => {
    const text = errorText({ rows: Array.from({ length: 100_000 }, (_, i) => i) });
    expect(text.length).toBe("a non-Error value was thrown: ".length + MAX_THROWN_TEXT);
    expect(text.endsWith("…")).toBe(true);
    expect(text.startsWith('a non-Error value was thrown: {"rows":[0,1,2,')).toBe(true);
  });

  it("a value that throws when read still gives a message", () => {
    const getter = {
      get boom(): never {
        throw new Error("read me not");
      },
    };
    expect(errorText(getter)).toBe("a non-Error value was thrown: [object Object]");
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    expect(errorText(proxy)).toBe("a non-Error value was thrown: an object that cannot be read");
  });
});

describe("asError", () => {
  it("keeps an Error, wraps anything else with its value as the cause", () => {
    const e = new Error("x");
    expect(asError(e)).toBe(e);
    const value = { code: 1 };
    const wrapped = asError(value);
    expect(wrapped.message).toBe('a non-Error value was thrown: {"code":1}');
    expect(wrapped.cause).toBe(value);
  });
});
