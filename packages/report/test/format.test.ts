import { describe, expect, it } from "vitest";
import { escapeHtml, formatDuration, formatNumber, formatPercent } from "../src/index.js";
import { extent, niceTicks, tickLabel } from "../src/charts/scale.js";

describe("escapeHtml", () => {
  it("escapes the five characters that matter in content and quoted attributes", () => {
    expect(escapeHtml(`<script>alert("x") & 'y'</script>`)).toBe("&lt;script&gt;alert(&quot;x&quot;) &amp; &#39;y&#39;&lt;/script&gt;");
    expect(escapeHtml("plain text")).toBe("plain text");
  });
});

describe("formatNumber", () => {
  it("keeps four significant digits and trims zeros", () => {
    expect(formatNumber(0.48926299136917156)).toBe("0.4893");
    expect(formatNumber(12.5)).toBe("12.5");
    expect(formatNumber(377)).toBe("377");
    expect(formatNumber(1234.56)).toBe("1235");
    expect(formatNumber(-0.25)).toBe("-0.25");
    expect(formatNumber(0)).toBe("0");
  });
  it("switches to exponential notation outside [1e-3, 1e6)", () => {
    expect(formatNumber(3.469446951953614e-18)).toBe("3.469e-18");
    expect(formatNumber(2500000)).toBe("2.5e6");
  });
  it("writes missing values as a dash", () => {
    expect(formatNumber(Number.NaN)).toBe("—");
    expect(formatNumber(null)).toBe("—");
    expect(formatNumber(undefined)).toBe("—");
  });
  it("formats shares and durations", () => {
    expect(formatPercent(0.4854)).toBe("48.5%");
    expect(formatPercent(Number.NaN)).toBe("—");
    expect(formatDuration(12.34)).toBe("12.3 s");
    expect(formatDuration(185)).toBe("3 min 05 s");
    expect(formatDuration(3725)).toBe("1 h 02 min");
  });
});

describe("niceTicks", () => {
  it("picks 1-2-5 steps and widens to whole steps", () => {
    expect(niceTicks(0, 1, 5)).toEqual({ domain: [0, 1], ticks: [0, 0.2, 0.4, 0.6, 0.8, 1], decimals: 1 });
    expect(niceTicks(0.13, 0.87, 4)).toEqual({ domain: [0, 1], ticks: [0, 0.2, 0.4, 0.6, 0.8, 1], decimals: 1 });
    expect(niceTicks(1, 64, 5).ticks).toEqual([0, 20, 40, 60, 80]);
  });
  it("keeps integer steps for counts", () => {
    expect(niceTicks(0, 3, 6, true).ticks).toEqual([0, 1, 2, 3]);
  });
  it("terminates on ranges of rounding noise and on huge ranges", () => {
    const noise = niceTicks(0.9999999999999999, 1, 5);
    expect(noise.ticks.length).toBeLessThan(20);
    expect(noise.domain[0]).toBeLessThan(1);
    const huge = niceTicks(-1e308, 1e308, 5);
    expect(huge.ticks.length).toBeLessThan(20);
  });
  it("labels ticks at the step's precision, zero as 0", () => {
    expect(tickLabel(0.30000000000000004, 1)).toBe("0.3");
    expect(tickLabel(0, 17)).toBe("0");
    expect(tickLabel(4e-17, 17)).toBe("4e-17");
  });
  it("gives a single value an axis around it", () => {
    expect(extent([0.5, 0.5])).toEqual([0.45, 0.55]);
    expect(extent([])).toEqual([0, 1]);
    expect(extent([0])).toEqual([-1, 1]);
  });
});
