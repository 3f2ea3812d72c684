/** Overview: trainer, how far the run got, backend, timings, files found, problems, the config. */
import { formatDuration } from "../format-number.js";
import type { RunData, TrainerName } from "../run-data.js";
import { code, el, note, p, section, table, type Content, type Html } from "./html.js";
import { timings } from "./timings.js";

const TRAINER_TEXT: Record<TrainerName, string> = {
  madpo: "MADPO: pairs collected once, then MADPO epochs",
  madpo_iter: "iterative MADPO: rounds of collection against a comparator, a replay buffer, MADPO per round",
  marlhf: "MARLHF: pairs collected once, a joint reward model fitted to them, then RL against it",
  marlhf_iter: "iterative MARLHF: rounds of collection against a comparator, a fresh reward model and RL per round",
};

/** The fields a reader looks for first; the rest of config.json is in a collapsed table. */
const KEY_FIELDS = [
  "trainer",
  "num_agents",
  "collaboration_mode",
  "num_iterations",
  "seed",
  "backend",
  "parallel_training",
  "preference_num_candidates",
  "preference_pairs_per_sample",
  "pair_selection",
  "comparator_policy",
  "comparator_history_k",
  "preference_replay_mode",
  "preference_replay_lambda",
  "preference_replay_k",
  "preference_replay_sample_size",
  "dpo_beta",
  "agent_learning_rate",
  "num_train_epochs",
  "train_batch_size",
  "rl_algorithm",
  "num_generations",
  "reward_learning_rate",
  "reward_num_train_epochs",
  "reference_kl_enabled",
  "reference_kl_coef",
  "max_new_tokens",
  "temperature",
  "top_p",
  "eval_interval",
  "eval_num_samples",
  "output_dir",
];

function value(v: unknown): string {
  return typeof v === "string" ? v : (JSON.stringify(v) ?? String(v));
}

function backendLine(run: RunData): string | null {
  // A run that logs its backend line puts it on a record (a string field "backend"); else the configured choice.
  for (const r of run.metrics.records) {
    const b = r["backend"];
    if (typeof b === "string" && b !== "") return b;
  }
  const configured = run.config?.["backend"];
  if (typeof configured !== "string") return null;
  return configured === "auto" ? "auto (the run's log says which backend ran: native when its addon is built, else wasm)" : `${configured} (configured)`;
}

function resumeHistory(config: Record<string, unknown> | null): Content[] {
  const list = config?.["resume_changes"];
  if (!Array.isArray(list) || list.length === 0) return [];
  const items = list.map((entry: unknown) => {
    const e = (entry ?? {}) as { after_round?: unknown; changes?: unknown };
    const changes = Array.isArray(e.changes)
      ? e.changes.map((c: unknown) => {
          const x = (c ?? {}) as { field?: unknown; from?: unknown; to?: unknown };
          return `${value(x.field)}: ${value(x.from)} → ${value(x.to)}`;
        })
      : [];
    return el("li", {}, `resumed after round ${value(e.after_round)}${changes.length > 0 ? ` with ${changes.join(", ")}` : ""}`);
  });
  return [el("h3", {}, "Resumes"), el("ul", {}, items)];
}

export function overviewSection(run: RunData): Html {
  const t = timings(run.metrics.records);
  const facts: [string, Content][] = [
    ["run folder", code(run.dir)],
    [
      "trainer",
      run.trainer === null
        ? "unknown (no config.json, and the files do not say)"
        : `${run.trainer}${run.trainerInferred ? " (guessed from the files: config.json is missing)" : ""} — ${TRAINER_TEXT[run.trainer]}`,
    ],
    ["status", el("span", { class: `status status-${run.status.state.replace(" ", "-")}` }, run.status.summary)],
  ];
  const backend = backendLine(run);
  if (backend !== null) facts.push(["backend", backend]);
  if (t.firstTime !== null) facts.push(["first record", t.firstTime], ["last record", t.lastTime ?? "—"]);
  if (t.computeSeconds !== null)
    facts.push(["compute time", `${formatDuration(t.computeSeconds)}${t.restarts > 0 ? ` over ${t.restarts + 1} sessions (resumed ${t.restarts}×)` : ""}`]);
  const config = run.config;
  const keyRows = config === null ? [] : KEY_FIELDS.filter((k) => k in config).map((k) => [k, value(config[k])]);
  return section(
    "overview",
    "Overview",
    table(["", ""], facts, "facts"),
    ...resumeHistory(config),
    el("h3", {}, "Files"),
    table(
      ["file", "found", ""],
      run.files.map((f) => [f.name, f.found ? "yes" : "no", f.detail]),
    ),
    ...(run.problems.length > 0
      ? [
          el("h3", {}, "Problems"),
          el(
            "ul",
            { class: "problems" },
            run.problems.map((x) => el("li", {}, x)),
          ),
        ]
      : []),
    el("h3", {}, "Configuration"),
    config === null
      ? note("config.json is missing or unreadable, so the configuration is unknown.")
      : [
          table(["field", "value"], keyRows, "config"),
          el(
            "details",
            {},
            el("summary", {}, `all ${Object.keys(config).length} fields of config.json`),
            table(
              ["field", "value"],
              Object.entries(config).map(([k, v]) => [k, value(v)]),
              "config",
            ),
          ),
        ],
    t.computeSeconds === null && run.metrics.records.length > 0
      ? p("The metrics carry no time stamps (runs before time and elapsed_s were logged), so there are no timings.")
      : [],
  );
}
