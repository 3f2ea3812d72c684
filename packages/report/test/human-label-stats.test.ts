import { describe, expect, it } from "vitest";
import {
  agreementSummary,
  annotatorTallies,
  comparisonTallies,
  distinctLabels,
  rationaleSamples,
  roundTally,
  verdictCounts,
} from "../src/render/human-label-stats.js";
import { labelRecord } from "./fixtures.js";

// Three comparisons, three annotators, worked out by hand:
//   round 1 item 0: ana target, ben target, cy comparator -> majority target, agreement 2/3
//   round 1 item 1: ana tie, ben both_bad                  -> top verdicts tie: no majority, agreement 1/2
//   round 2 item 0: ana comparator                         -> one label: not in the agreement
// plus a second line by ana on round 1 item 0, which must not count.
const records = [
  labelRecord(1, 0, "ana", "target", 0),
  labelRecord(1, 0, "ben", "target", 1),
  labelRecord(1, 1, "ana", "tie", 2),
  labelRecord(1, 0, "cy", "comparator", 3),
  labelRecord(1, 1, "ben", "both_bad", 4),
  labelRecord(1, 0, "ana", "comparator", 5),
  labelRecord(2, 0, "ana", "comparator", 6),
];
const { labels, repeats } = distinctLabels(records);

describe("human label tallies", () => {
  it("keeps each annotator's first label per comparison, as the trainer does", () => {
    expect(repeats).toBe(1);
    expect(labels).toHaveLength(6);
    expect(labels.filter((r) => r.annotator === "ana" && r.round === 1 && r.item_index === 0).map((r) => r.verdict)).toEqual(["target"]);
    // the same comparison id in another round is another comparison
    const again = labelRecord(2, 0, "ana", "tie", 7);
    expect(distinctLabels([again, { ...again, round: 3 }]).repeats).toBe(0);
  });

  it("counts the picks of a round", () => {
    expect(
      roundTally(
        1,
        labels.filter((r) => r.round === 1),
      ),
    ).toEqual({ round: 1, comparisons: 2, labels: 5, counts: { target: 2, comparator: 1, tie: 1, both_bad: 1 } });
    expect(
      roundTally(
        2,
        labels.filter((r) => r.round === 2),
      ),
    ).toEqual({ round: 2, comparisons: 1, labels: 1, counts: { target: 0, comparator: 1, tie: 0, both_bad: 0 } });
    expect(roundTally(3, [])).toEqual({ round: 3, comparisons: 0, labels: 0, counts: verdictCounts([]) });
  });

  it("finds each comparison's majority and agreement", () => {
    const c = comparisonTallies(labels);
    expect(c.map((x) => [x.round, x.labels, x.majority])).toEqual([
      [1, 3, "target"],
      [1, 2, null],
      [2, 1, "comparator"],
    ]);
    expect(c[0]!.agreement).toBeCloseTo(2 / 3, 12);
    expect(c[1]!.agreement).toBe(0.5);
    expect(c[2]!.agreement).toBe(1);
  });

  it("tallies each annotator, with agreement only where a comparison had two or more labels and a majority", () => {
    expect(annotatorTallies(labels)).toEqual([
      { annotator: "ana", labels: 3, counts: { target: 1, comparator: 1, tie: 1, both_bad: 0 }, withMajority: 1, agreedWithMajority: 1 },
      { annotator: "ben", labels: 2, counts: { target: 1, comparator: 0, tie: 0, both_bad: 1 }, withMajority: 1, agreedWithMajority: 1 },
      { annotator: "cy", labels: 1, counts: { target: 0, comparator: 1, tie: 0, both_bad: 0 }, withMajority: 1, agreedWithMajority: 0 },
    ]);
    // equal counts: by name
    expect(annotatorTallies([labelRecord(1, 0, "zoe", "tie", 0), labelRecord(1, 1, "al", "tie", 0)]).map((a) => a.annotator)).toEqual(["al", "zoe"]);
  });

  it("averages agreement over the comparisons labelled twice or more, none when there are none", () => {
    const a = agreementSummary(labels);
    expect(a.comparisons).toBe(2);
    expect(a.meanAgreement).toBeCloseTo((2 / 3 + 1 / 2) / 2, 12); // 7/12
    expect(agreementSummary(labels.filter((r) => r.round === 2))).toEqual({ comparisons: 0, meanAgreement: null });
    expect(agreementSummary([])).toEqual({ comparisons: 0, meanAgreement: null });
  });

  it("with two annotators, agreement is 1 where they agree and 1/2 where they do not", () => {
    const two = [
      labelRecord(1, 0, "ana", "target", 0),
      labelRecord(1, 0, "ben", "target", 1),
      labelRecord(1, 1, "ana", "target", 2),
      labelRecord(1, 1, "ben", "comparator", 3),
      labelRecord(1, 2, "ana", "both_bad", 4),
      labelRecord(1, 2, "ben", "both_bad", 5),
    ];
    expect(agreementSummary(two).meanAgreement).toBeCloseTo((1 + 0.5 + 1) / 3, 12);
    expect(annotatorTallies(two).map((a) => [a.annotator, a.withMajority, a.agreedWithMajority])).toEqual([
      ["ana", 2, 2],
      ["ben", 2, 2],
    ]);
  });
});

describe("rationale samples", () => {
  it("takes the latest non-empty rationales, newest first", () => {
    const many = Array.from({ length: 12 }, (_, i) => labelRecord(1, i, "ana", "target", i, i % 4 === 3 ? null : i % 4 === 2 ? "  \n" : `reason ${i}`));
    // rationales at minutes 0, 1, 4, 5, 8, 9: the blank and null ones are skipped
    expect(rationaleSamples(many, 4).map((r) => r.rationale)).toEqual(["reason 9", "reason 8", "reason 5", "reason 4"]);
    expect(rationaleSamples(many).map((r) => r.rationale)).toHaveLength(6);
    expect(rationaleSamples(many, 0)).toEqual([]);
  });

  it("breaks equal times by the later round, then the later line", () => {
    const same = [labelRecord(1, 0, "ana", "tie", 0, "a"), labelRecord(2, 0, "ana", "tie", 0, "b"), labelRecord(1, 1, "ben", "tie", 0, "c")];
    expect(rationaleSamples(same).map((r) => r.rationale)).toEqual(["b", "c", "a"]);
  });

  it("orders by the instant, whatever the offset the time was written with", () => {
    const utc = labelRecord(1, 0, "ana", "tie", 0, "02:30 UTC");
    const offset = { ...labelRecord(1, 1, "ben", "tie", 0, "03:00+01:00 is 02:00 UTC"), labelled_at: "2026-12-07T03:00:00.000+01:00" };
    utc.labelled_at = "2026-12-07T02:30:00.000Z";
    expect(rationaleSamples([offset, utc]).map((r) => r.rationale)).toEqual(["02:30 UTC", "03:00+01:00 is 02:00 UTC"]);
  });
});
