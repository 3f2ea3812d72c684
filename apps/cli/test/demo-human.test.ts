// `pbrl demo preference_labeler=human` as a person would run it: the built CLI in its own process
// prints the labelling link and the instructions, and a judge on the page's API (picking the
// answer with more letter e's) labels every comparison of a short run, which then trains on the
// picks and ends as the demo does.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { readLabels, TOKEN_HEADER } from "@pbrl/human-labels";
import { readRoundFile } from "@pbrl/preference-data";

const DIST_MAIN = path.resolve(import.meta.dirname, "../dist/main.js");

describe("pbrl demo preference_labeler=human", () => {
  it.skipIf(!existsSync(DIST_MAIN))(
    "prints the link and the keys, waits for the person, trains on the picks",
    async () => {
      const out = path.join(mkdtempSync(path.join(tmpdir(), "pbrl-demo-human-")), "run");
      const child = spawn(process.execPath, [DIST_MAIN, "demo", "preference_labeler=human", `output_dir=${out}`, "num_iterations=2", "eval_num_samples=8"], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      let err = "";
      let stdout = "";
      child.stderr.on("data", (d: Buffer) => (err += d.toString()));
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      let exited = false;
      const code = new Promise<number | null>((resolve) => child.on("exit", (c) => ((exited = true), resolve(c))));
      while (!/label at (\S+)/.test(err) && !exited) await new Promise((r) => setTimeout(r, 50));
      const url = new URL(/label at (\S+)/.exec(err)![1]!);
      expect(err).toMatch(/you are the judge: .*Press 1 if the left pair is better, 2 if the right one is, 3 for a tie, 4 if both are bad, s to skip/);
      const headers = { [TOKEN_HEADER]: url.searchParams.get("token")!, "content-type": "application/json" };
      const es = (texts: string[]) => texts.join("").split("e").length - 1;
      let picks = 0;
      while (!exited) {
        const next = (await fetch(new URL("/api/next?annotator=judge", url), { headers })
          .then((r) => r.json())
          .catch(() => ({ done: true }))) as { done: boolean; leaseId: string; left: string[]; right: string[] };
        if (next.done) {
          await new Promise((r) => setTimeout(r, 100));
          continue;
        }
        const verdict = es(next.left) === es(next.right) ? "tie" : es(next.left) > es(next.right) ? "left" : "right";
        const saved = await fetch(new URL("/api/label", url), {
          method: "POST",
          headers,
          body: JSON.stringify({ leaseId: next.leaseId, annotator: "judge", verdict }),
        });
        if (saved.status === 200) picks += 1;
      }
      expect(await code, err).toBe(0);
      expect(picks).toBe(24); // 12 texts a round, one comparison each, 2 rounds
      for (const round of [1, 2]) {
        expect(await readLabels(path.join(out, "human_labels"), round)).toHaveLength(12);
        expect((await readRoundFile(path.join(out, "preference_replay", `iteration_000${round}.json`))).scorer).toBe("human");
      }
      expect(stdout).toMatch(/eval reward before: \d\.\d{4}/);
      expect(stdout).toMatch(/eval reward after : \d\.\d{4}/);
      expect(stdout).toMatch(/2 rounds, \d+ new preference pairs, [1-9]\d* updates/);
    },
    300_000,
  );
});
