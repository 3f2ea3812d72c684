import type { CollectedPair } from "@pbrl/preference-data";
import type { LearnContext, Learner, PreferenceScoring } from "./learner.js";
import { runMadpoEpochs, type EpochSettings } from "./madpo-epochs.js";
import type { AgentExecution } from "./parallel/agent-execution.js";
import { STREAMS } from "./stream-names.js";
import type { LearnerParts } from "./trainer-core.js";

/**
 * MADPO's learning step: num_train_epochs of the multi-agent DPO loss over the chosen pairs, with
 * the agents where `execution` runs them (this thread, or a worker thread each). Nothing is kept
 * between steps but the agents and their optimizers.
 */
export class MadpoLearner implements Learner {
  constructor(
    private readonly o: {
      /** madpo_score_last_token as the collaboration mode settles it (centralized scoring includes the last token). */
      args: EpochSettings;
      execution: AgentExecution;
      /** Says once that reference_kl_enabled changes nothing (the base trainer's note, as CoMLRL computes the KL and never uses it). */
      noteReferenceKl?: { enabled: boolean; log: (line: string) => void };
    },
  ) {}

  checkAgents(): void {
    if (this.o.noteReferenceKl?.enabled)
      this.o.noteReferenceKl.log("pbrl: reference_kl_enabled has no effect on MADPO, whose objective has no reference model");
  }

  preferenceScoring(): PreferenceScoring | undefined {
    return undefined;
  }

  /** The epochs over `pairs`; mid-phase evaluations see the current weights. */
  learn(pairs: readonly CollectedPair[], ctx: LearnContext): Promise<void> {
    const agents = ctx.agents.map((ag, i) => ({ model: ag.model, optimizer: ctx.optimizers[i]!, padTokenId: ag.padTokenId }));
    return this.o.execution.train(agents, (team, syncWeights) =>
      runMadpoEpochs(pairs, {
        args: this.o.args,
        agents: team,
        counters: ctx.counters,
        shuffleRng: ctx.streams.get(STREAMS.shuffle),
        metrics: ctx.metrics,
        evaluate: async () => {
          await syncWeights();
          await ctx.evaluate();
        },
        progress: ctx.progress,
        label: ctx.label,
        extra: ctx.extra,
      }),
    );
  }

  async saveState(): Promise<void> {}

  async restoreState(): Promise<void> {}

  dispose(): void {}
}

/** MADPO's learning step for a trainer (the collaboration mode settles whether the last token is scored). */
export function madpoLearner(args: EpochSettings & { reference_kl_enabled: boolean }, parts: LearnerParts, noteReferenceKl: boolean): MadpoLearner {
  return new MadpoLearner({
    args: { ...args, madpo_score_last_token: parts.task.scoresWholeCompletion || args.madpo_score_last_token },
    execution: parts.execution,
    ...(noteReferenceKl && { noteReferenceKl: { enabled: args.reference_kl_enabled, log: parts.log } }),
  });
}
