import type { Policy } from "@pbrl/preference-data";
import { loadModelSources, pairWithAgent, releaseLoaded, type LoadedModel, type ModelSource } from "./model-sources.js";
import type { PolicySource, RoundPolicy } from "./policy-source.js";

/**
 * `model`: frozen models loaded once, on the first round (or by `load()` up front), and kept for
 * every round until dispose (CoMLRL's MARLHFIter reloads them each round; nothing changes them).
 */
export class FrozenModels implements PolicySource {
  readonly description: string;
  private loading: Promise<RoundPolicy[]> | undefined;
  private loadedModels: LoadedModel[] = [];
  private ready: RoundPolicy[] | undefined;
  private disposed = false;

  /**
   * `sources[slot]` answers in place of `agents[slot]`, with that agent's tokenizer, placed on
   * `devices[slot]` (comparator_devices resolved; default "auto").
   */
  constructor(
    private readonly sources: readonly ModelSource[],
    private readonly agents: readonly Policy[],
    private readonly agentIndices: readonly number[] = agents.map((_, i) => i),
    private readonly devices: readonly string[] = sources.map(() => "auto"),
  ) {
    if (sources.length !== agents.length) throw new RangeError(`model comparator: ${sources.length} model sources for ${agents.length} agents`);
    if (devices.length !== sources.length) throw new RangeError(`model comparator: ${devices.length} devices for ${sources.length} model sources`);
    this.description = [...new Set(sources.map((s) => (typeof s === "string" ? s : "a model object")))].join(", ");
  }

  /** Loads the models now (idempotent). */
  load(): Promise<RoundPolicy[]> {
    if (this.disposed) return Promise.reject(new Error("model comparator: used after dispose()"));
    this.loading ??= this.loadOnce();
    return this.loading;
  }

  private async loadOnce(): Promise<RoundPolicy[]> {
    const loaded = await loadModelSources(this.sources, this.devices);
    try {
      if (this.disposed) throw new Error("model comparator: disposed while its models were loading");
      const policies = loaded.map((m, slot) => pairWithAgent(m, this.agents[slot]!, this.agentIndices[slot]!, "comparator model"));
      this.loadedModels = loaded;
      this.ready = policies;
      return policies;
    } catch (err) {
      releaseLoaded(loaded);
      // A failed load is not cached: a later beginRound retries and reports the error again.
      this.loading = undefined;
      throw err;
    }
  }

  async beginRound(): Promise<void> {
    await this.load();
  }

  policies(): readonly RoundPolicy[] {
    if (this.ready === undefined) throw new Error("model comparator: sample() called before the models were loaded; call beginRound first");
    return this.ready;
  }

  async endRound(): Promise<void> {}

  dispose(): void {
    releaseLoaded(this.loadedModels);
    this.loadedModels = [];
    this.ready = undefined;
    this.disposed = true;
  }
}
