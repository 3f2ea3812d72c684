import { describe, expect, it } from "vitest";
import { barChart, histogramChart, lineChart } from "../src/index.js";
import { assertBalanced, count } from "./fixtures.js";

describe("lineChart", () => {
  const spec = {
    title: "eval <reward>",
    xLabel: "update",
    yLabel: "reward",
    series: [
      {
        name: "a & b",
        points: [
          [0, 0.5],
          [1, 0.6],
          [2, Number.NaN],
          [3, 0.7],
          [4, 0.65],
        ] as [number, number][],
      },
      {
        name: "second",
        points: [
          [0, 0.1],
          [4, 0.2],
        ] as [number, number][],
      },
    ],
  };

  it("draws one circle per finite point and one path per series, with a gap at NaN", () => {
    const svg = lineChart(spec);
    expect(count(svg, "<circle data-point")).toBe(6);
    expect(count(svg, "<path ")).toBe(2);
    // the first series' path starts again after the NaN: two subpaths
    const firstPath = /<g class="series" data-series="a &amp; b"><path d="([^"]*)"/.exec(svg)![1]!;
    expect(count(firstPath, "M")).toBe(2);
    expect(count(firstPath, "L")).toBe(2);
    assertBalanced(svg);
  });

  it("escapes every text and is deterministic", () => {
    const svg = lineChart(spec);
    expect(svg).toContain("eval &lt;reward&gt;");
    expect(svg).toContain('data-series="a &amp; b"');
    expect(svg).not.toContain("<reward>");
    expect(lineChart(spec)).toBe(svg);
  });

  it("carries the SVG namespace only when asked (the report has no URL at all)", () => {
    expect(lineChart(spec)).not.toContain("http");
    expect(lineChart({ ...spec, xmlns: true })).toContain('xmlns="http://www.w3.org/2000/svg"');
  });

  it("says so when there is nothing to draw", () => {
    const svg = lineChart({ ...spec, series: [{ name: "x", points: [[0, Number.NaN]] }] });
    expect(count(svg, "<circle")).toBe(0);
    expect(svg).toContain("no data");
    assertBalanced(svg);
  });

  it("draws markers inside the x range only", () => {
    const svg = lineChart({
      ...spec,
      markers: [
        { x: 2.5, label: "r2" },
        { x: 99, label: "r9" },
      ],
    });
    expect(count(svg, `class="marker"`)).toBe(1);
    expect(svg).toContain(">r2<");
  });
});

describe("histogramChart", () => {
  const edges = [0, 0.25, 0.5, 0.75, 1];
  it("draws one bar per non-empty bin and series", () => {
    const svg = histogramChart({
      title: "round 1",
      bins: {
        edges,
        series: [
          { name: "target", counts: [1, 0, 3, 2] },
          { name: "comparator", counts: [0, 0, 4, 0] },
        ],
      },
    });
    expect(count(svg, "<rect data-bar")).toBe(4);
    expect(svg).toContain(">reward<");
    expect(svg).toContain(">count<");
    assertBalanced(svg);
  });
  it("overlays bars when asked, same count", () => {
    const svg = histogramChart({ title: "h", layout: "overlay", bins: { edges, series: [{ name: "t", counts: [1, 1, 1, 1] }] } });
    expect(count(svg, "<rect data-bar")).toBe(4);
    expect(svg).toContain('fill-opacity="0.55"');
  });
  it("refuses counts that do not fit the bins", () => {
    expect(() => histogramChart({ title: "h", bins: { edges, series: [{ name: "t", counts: [1, 2] }] } })).toThrow(/2 counts for 4 bins/);
  });
  it("an empty histogram has no bars and says so", () => {
    const svg = histogramChart({ title: "h", bins: { edges, series: [{ name: "t", counts: [0, 0, 0, 0] }] } });
    expect(count(svg, "<rect data-bar")).toBe(0);
    expect(svg).toContain("no samples");
  });
});

describe("barChart", () => {
  it("draws one bar per finite non-zero value", () => {
    const svg = barChart({
      title: "pairs",
      xLabel: "round",
      yLabel: "pairs",
      categories: ["1", "2", "3"],
      series: [
        { name: "new", values: [5, 0, 7] },
        { name: "trained", values: [5, null, Number.NaN] },
      ],
    });
    expect(count(svg, "<rect data-bar")).toBe(3);
    expect(svg).toContain(">1<");
    expect(svg).toContain(">3<");
    assertBalanced(svg);
  });
  it("an all-zero chart keeps a [0, 1] axis", () => {
    const svg = barChart({ title: "invalid", xLabel: "round", yLabel: "n", categories: ["1"], series: [{ name: "t", values: [0] }] });
    expect(svg).toContain("all zero");
    expect(svg).not.toContain(">-1<");
  });
  it("refuses values that do not fit the categories", () => {
    expect(() => barChart({ title: "x", xLabel: "", yLabel: "", categories: ["1"], series: [{ name: "t", values: [1, 2] }] })).toThrow(
      /2 values for 1 categories/,
    );
  });
});
