// TensorBoard's own Python loader (EventAccumulator) reads a run folder written by
// TensorBoardWriter, across a crash-and-resume restart, and must see every scalar, text and
// histogram as written; each record must also re-serialize byte-for-byte with Python protobuf.
// Needs a Python with the `tensorboard` package: $PBRL_FIXTURE_PYTHON (CI sets it), else
// $PBRL_PYTHON, else <repo>/.venv-ref/bin/python, the first that can import it. Without one the test is skipped and says why (CI's PBRL_PYTHON
// venv has torch only, so it skips there unless tensorboard is installed into it), unless
// PBRL_REQUIRE_FIXTURE_PYTHON=1, which makes a missing Python a failure.
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { MADPOIterTrainer } from "../src/index.js";
import { histogramOf, tensorBoardDir, TensorBoardWriter, type HistogramBins } from "../src/tensorboard/index.js";
import { ITERATIVE_RUN } from "./child/iterative-run-config.js";
import { untimedMetrics } from "./untimed-metrics.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "..", "..", "..");
const script = path.join(here, "fixtures", "tensorboard_read.py");

function findTensorBoardPython(): { python: string } | { skipped: string } {
  const candidates = [process.env["PBRL_FIXTURE_PYTHON"], process.env["PBRL_PYTHON"], path.join(repoRoot, ".venv-ref", "bin", "python")].filter(
    (p): p is string => p !== undefined && p !== "",
  );
  const problems: string[] = [];
  for (const python of candidates) {
    if (path.isAbsolute(python) && !existsSync(python)) {
      problems.push(`${python}: not found`);
      continue;
    }
    const r = spawnSync(python, ["-c", "import tensorboard"], { encoding: "utf8", timeout: 60_000 });
    if (r.status === 0) return { python };
    problems.push(`${python}: ${r.error?.message ?? (r.stderr.trim().split("\n").pop() || `exit code ${r.status}`)}`);
  }
  return {
    skipped: `no Python with the tensorboard package (${problems.join("; ") || "PBRL_PYTHON unset and no .venv-ref"}); pip install tensorboard into $PBRL_PYTHON's venv to run it`,
  };
}

const found = findTensorBoardPython();
const required = process.env["PBRL_REQUIRE_FIXTURE_PYTHON"] === "1";
if ("skipped" in found) console.warn(`tensorboard-python.test.ts skipped: ${found.skipped}`);

type Num = number | string;
interface PyHistogram {
  min: Num;
  max: Num;
  num: Num;
  sum: Num;
  sum_squares: Num;
  bucket_limit: Num[];
  bucket: Num[];
}
interface PyOutput {
  scalars: Record<string, [number, Num][]>;
  text: Record<string, [number, string][]>;
  histograms: Record<string, [number, PyHistogram][]>;
  records: number;
  reserialize_mismatches: unknown[];
}

/** The script writes NaN and ±Infinity as the strings "NaN", "Infinity", "-Infinity". */
const num = (x: Num): number => (typeof x === "string" ? Number(x) : x);

describe("TensorBoard's Python loader reads pbrl's event files", () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it.skipIf("skipped" in found && !required)(
    `sees every scalar, text and histogram across a resume${"skipped" in found ? ` (skipped: ${found.skipped})` : ""}`,
    () => {
      if (!("python" in found)) throw new Error(`PBRL_REQUIRE_FIXTURE_PYTHON=1 but ${found.skipped}`);
      const root = mkdtempSync(path.join(tmpdir(), "pbrl-tb-py-"));
      dirs.push(root);
      const dir = path.join(root, "tensorboard");

      // What TensorBoard should end up with: per tag, [step, value] in write order.
      const scalars: Record<string, [number, number][]> = {};
      const texts: Record<string, [number, string][]> = {};
      const histos: Record<string, [number, ReturnType<typeof histogramOf>][]> = {};
      let records = 0;
      const put = <T>(m: Record<string, [number, T][]>, tag: string, step: number, v: T): void => {
        (m[tag] ??= []).push([step, v]);
      };
      const start = (now: number, resumeStep?: number): TensorBoardWriter => {
        records += resumeStep === undefined ? 1 : 2;
        return new TensorBoardWriter(dir, { now: () => now, hostname: "test-host", ...(resumeStep !== undefined ? { resumeStep } : {}) });
      };
      const logScalars = (w: TensorBoardWriter, step: number, rec: Record<string, number | string>): void => {
        records += 1;
        w.scalars(step, rec);
        for (const [tag, v] of Object.entries(rec)) if (typeof v === "number") put(scalars, tag, step, Math.fround(v));
      };
      const logText = (w: TensorBoardWriter, step: number, tag: string, s: string): void => {
        records += 1;
        w.text(step, tag, s);
        put(texts, tag, step, s);
      };
      const logHisto = (w: TensorBoardWriter, step: number, tag: string, values: number[], bins: HistogramBins): void => {
        records += 1;
        w.histogram(step, tag, values, bins);
        put(histos, tag, step, histogramOf(values, bins));
      };

      // First start: steps 1..5, then a "crash".
      const a = start(1_700_000_000);
      for (let step = 1; step <= 5; step++) {
        const rec: Record<string, number | string> = { kind: "train", loss: 1 / step, "iter/comparator_win_rate": step / 7 };
        if (step % 2 === 1) rec["eval/turn_1/reward_mean"] = -0.1 * step;
        if (step === 2) rec["grad_norm"] = Number.NaN;
        if (step === 3) rec["grad_norm"] = Number.POSITIVE_INFINITY;
        logScalars(a, step, rec);
      }
      logText(a, 2, "samples/turn_1", "**prompt** é → 🙂\n\n| agent | completion |\n|---|---|\n| 0 | hello |");
      logHisto(a, 3, "reward/target", [0.1, 0.2, 0.2, 0.9, 1.7, -3], { min: 0, max: 1, bins: 4 });
      a.close();

      // The resumed run restarts from a checkpoint at step 3, so it writes steps >= 4 again: the
      // START event makes TensorBoard drop the first start's points at steps >= 4.
      for (const m of [scalars, texts, histos] as Record<string, [number, unknown][]>[]) {
        for (const tag of Object.keys(m)) m[tag] = m[tag]!.filter(([s]) => s < 4);
      }
      const b = start(1_700_000_100, 4);
      for (let step = 4; step <= 6; step++) logScalars(b, step, { loss: 10 + step, "iter/comparator_win_rate": 0.25 });
      logText(b, 4, "samples/turn_1", "after resume");
      logHisto(b, 4, "reward/target", [0.5, 0.5, 0.75], 3);
      b.close();

      const r = spawnSync(found.python, [script, dir], { encoding: "utf8", timeout: 120_000 });
      expect(r.error, r.stderr).toBeUndefined();
      expect(r.status, r.stderr).toBe(0);
      const out = JSON.parse(r.stdout) as PyOutput;

      expect(out.records).toBe(records);
      expect(out.reserialize_mismatches).toEqual([]);
      const seenScalars = Object.fromEntries(Object.entries(out.scalars).map(([tag, pts]) => [tag, pts.map(([s, v]) => [s, num(v)])]));
      expect(seenScalars).toEqual(scalars);
      expect(out.text).toEqual(texts);
      const seenHistos = Object.fromEntries(
        Object.entries(out.histograms).map(([tag, pts]) => [
          tag,
          pts.map(([s, h]) => [
            s,
            {
              min: num(h.min),
              max: num(h.max),
              num: num(h.num),
              sum: num(h.sum),
              sumSquares: num(h.sum_squares),
              bucketLimit: h.bucket_limit.map(num),
              bucket: h.bucket.map(num),
            },
          ]),
        ]),
      );
      expect(seenHistos).toEqual(histos);
      // the resume really did drop something, or the test above would prove nothing about it
      expect(out.scalars["loss"]?.map(([s]) => s)).toEqual([1, 2, 3, 4, 5, 6]);
      expect(num(out.scalars["loss"]![3]![1])).toBe(14);
    },
  );

  it.skipIf("skipped" in found && !required)(
    `sees every scalar tag and step of a real run's metrics.jsonl${"skipped" in found ? ` (skipped: ${found.skipped})` : ""}`,
    async () => {
      if (!("python" in found)) throw new Error(`PBRL_REQUIRE_FIXTURE_PYTHON=1 but ${found.skipped}`);
      const out = mkdtempSync(path.join(tmpdir(), "pbrl-tb-run-"));
      dirs.push(out);
      const t = new MADPOIterTrainer({
        ...ITERATIVE_RUN,
        args: { ...ITERATIVE_RUN.args, num_iterations: 2, output_dir: out, verbose: false, report_to: "tensorboard" },
      });
      await t.train();
      t.dispose();
      const r = spawnSync(found.python, [script, tensorBoardDir(out)], { encoding: "utf8", timeout: 120_000 });
      expect(r.status, r.stderr).toBe(0);
      const seen = (JSON.parse(r.stdout) as PyOutput).scalars;
      const expected: Record<string, [number, number][]> = {};
      for (const rec of untimedMetrics(path.join(out, "metrics.jsonl"))) {
        for (const [k, v] of Object.entries(rec))
          if (typeof v === "number" && !["step", "epoch", "update"].includes(k)) (expected[k] ??= []).push([rec["step"] as number, Math.fround(v)]);
      }
      expect(Object.keys(seen).sort()).toEqual(Object.keys(expected).sort());
      for (const [tag, points] of Object.entries(expected))
        expect(
          seen[tag]!.map(([s, v]) => [s, num(v)]),
          tag,
        ).toEqual(points);
    },
    300_000,
  );
});
