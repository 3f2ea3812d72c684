/**
 * One round's queue of comparisons for people to judge. Each comparison needs `labelsPerPair`
 * labels from different annotators; it is leased to at most as many people at once as it still
 * needs, so nobody's time goes into a label that would be thrown away, and with one label a pair
 * no two people ever see the same comparison at once. A lease that runs out returns its
 * comparison to the queue. A pick is saved to the label log (fsynced) before it counts, so what
 * the queue reports is always what a restart would read back.
 */
import { randomBytes } from "node:crypto";
import { LabelConflictError } from "./errors.js";
import { LabelLog, readLabels } from "./label-log.js";
import { makeLabelRecord } from "./label-record.js";
import type { Comparison, LabelRecord, RecordedVerdict, Side, Verdict } from "./types.js";
import { RECORDED_VERDICTS, VERDICTS } from "./types.js";

export const DEFAULT_LEASE_MS = 10 * 60 * 1000;

/** Where accepted picks go; {@link LabelLog} is the one pbrl uses. */
export interface LabelSink {
  append(record: LabelRecord): Promise<void>;
}

export interface LabelRoundOptions {
  comparisons: readonly Comparison[];
  /** Labels each comparison needs from different annotators (default 1). */
  labelsPerPair?: number;
  /** Records already on disk for this round (resume); those of other comparisons are ignored. */
  records?: readonly LabelRecord[];
  /** The shown order: true puts the target on the left. See {@link seededOrder}. */
  leftIsTarget: (comparisonId: string) => boolean;
  /** How long a person holds a comparison before it goes back to the queue (default 10 minutes). */
  leaseMs?: number;
  sink: LabelSink;
  /** Milliseconds since the epoch; injectable so tests can move time. */
  now?: () => number;
}

/** A comparison handed to one annotator. `left`/`right` are what the page shows. */
export interface Lease {
  leaseId: string;
  annotator: string;
  comparison: Comparison;
  left: string[];
  right: string[];
  leftIs: Side;
  /** Milliseconds since the epoch. */
  expiresAt: number;
}

export interface ComparisonOutcome {
  comparisonId: string;
  itemIndex: number;
  itemId?: string;
  labels: number;
  /** Has all the labels it needs. */
  decided: boolean;
  /** The majority verdict of a decided comparison; null while undecided or when the top verdicts tie. */
  verdict: RecordedVerdict | null;
  /** Share of labels agreeing with the most common verdict; null without labels. */
  agreement: number | null;
  counts: Record<RecordedVerdict, number>;
  annotators: string[];
}

/** A decided comparison with a winner: a preference pair. */
export interface HumanPair {
  comparison: Comparison;
  winner: Side;
  winnerCompletions: string[];
  loserCompletions: string[];
  agreement: number;
  annotators: string[];
  /** The labels that decided it, in the order they were saved. */
  labels: LabelRecord[];
}

export interface LabelProgress {
  total: number;
  decided: number;
  labels: number;
  /** Comparisons leased or being saved right now. */
  inFlight: number;
}

export interface WaitForOptions {
  /** Decided comparisons to wait for (default: all). */
  minLabels?: number;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export interface WaitResult {
  reason: "min_labels" | "all_decided" | "timeout";
  progress: LabelProgress;
}

interface Slot {
  comparison: Comparison;
  labels: LabelRecord[];
  /** Annotators with a saved or saving label: never asked again. */
  labelledBy: Set<string>;
}

export class LabelRound {
  readonly labelsPerPair: number;
  readonly leaseMs: number;
  private readonly slots: Slot[] = [];
  private readonly byId = new Map<string, Slot>();
  private readonly leases = new Map<string, Lease>();
  /** Leases whose pick is being saved; they still hold their comparison. */
  private readonly saving = new Map<string, Lease>();
  /** Ids that did exist, so a late pick hears "expired" rather than "unknown". */
  private readonly expired = new Set<string>();
  /** Per annotator, the comparisons they skipped and when, to offer others first. */
  private readonly skipped = new Map<string, Map<string, number>>();
  private skipCount = 0;
  private readonly listeners = new Set<() => void>();
  private readonly leftIsTarget: (comparisonId: string) => boolean;
  private readonly sink: LabelSink;
  private readonly now: () => number;

  constructor(options: LabelRoundOptions) {
    this.labelsPerPair = options.labelsPerPair ?? 1;
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    if (!Number.isInteger(this.labelsPerPair) || this.labelsPerPair < 1)
      throw new RangeError(`labelsPerPair must be a positive integer, got ${this.labelsPerPair}`);
    if (!(this.leaseMs > 0)) throw new RangeError(`leaseMs must be positive, got ${this.leaseMs}`);
    this.leftIsTarget = options.leftIsTarget;
    this.sink = options.sink;
    this.now = options.now ?? Date.now;
    for (const comparison of options.comparisons) {
      if (this.byId.has(comparison.id)) throw new RangeError(`comparison id "${comparison.id}" appears twice`);
      if (comparison.target.length !== comparison.comparator.length || comparison.target.length !== comparison.roles.length)
        throw new RangeError(`comparison "${comparison.id}": roles, target and comparator must have one entry per agent`);
      const slot: Slot = { comparison, labels: [], labelledBy: new Set() };
      this.slots.push(slot);
      this.byId.set(comparison.id, slot);
    }
    for (const record of options.records ?? []) {
      const slot = this.byId.get(record.comparison_id);
      // a second line by the same person (files joined by hand) would count their voice twice
      if (slot === undefined || slot.labelledBy.has(record.annotator)) continue;
      slot.labels.push(record);
      slot.labelledBy.add(record.annotator);
    }
  }

  /** A round whose labels live in `<dir>/round_NNNN.jsonl`, resuming from what the file holds. */
  static async open(options: Omit<LabelRoundOptions, "sink" | "records"> & { dir: string; round: number }): Promise<LabelRound> {
    const records = await readLabels(options.dir, options.round);
    return new LabelRound({ ...options, records, sink: new LabelLog(options.dir, options.round) });
  }

  /** The next comparison for `annotator`, or null when none is open to them now. */
  next(annotator: string): Lease | null {
    checkAnnotator(annotator);
    this.expireLeases();
    // a reloaded page gets the comparison it already holds, instead of taking a second one
    for (const lease of this.leases.values()) if (lease.annotator === annotator) return lease;
    const skips = this.skipped.get(annotator);
    let fallback: { slot: Slot; at: number } | null = null;
    for (const slot of this.slots) {
      if (!this.openTo(slot, annotator)) continue;
      const at = skips?.get(slot.comparison.id);
      if (at === undefined) return this.lease(slot, annotator);
      if (fallback === null || at < fallback.at) fallback = { slot, at };
    }
    return fallback === null ? null : this.lease(fallback.slot, annotator);
  }

  /** Gives a leased comparison back to the queue; false when the lease is not held. */
  skip(leaseId: string): boolean {
    this.expireLeases();
    const lease = this.leases.get(leaseId);
    if (lease === undefined) return false;
    this.leases.delete(leaseId);
    let skips = this.skipped.get(lease.annotator);
    if (skips === undefined) this.skipped.set(lease.annotator, (skips = new Map()));
    skips.set(lease.comparison.id, ++this.skipCount);
    this.notify();
    return true;
  }

  /**
   * Saves a pick and resolves with its record once it is durable. Throws {@link LabelConflictError}
   * (and changes nothing) for a lease that is unknown, expired, another annotator's or already
   * used, and for a second pick by the same annotator on the same comparison.
   */
  async submit(leaseId: string, annotator: string, verdict: Verdict, rationale?: string | null): Promise<LabelRecord> {
    checkAnnotator(annotator);
    if (!VERDICTS.includes(verdict)) throw new TypeError(`verdict must be one of ${VERDICTS.join(", ")}, got ${String(verdict)}`);
    this.expireLeases();
    const lease = this.leases.get(leaseId);
    if (lease === undefined) {
      if (this.saving.has(leaseId)) throw new LabelConflictError("lease_in_use");
      throw new LabelConflictError(this.expired.has(leaseId) ? "expired_lease" : "unknown_lease");
    }
    if (lease.annotator !== annotator) throw new LabelConflictError("foreign_lease");
    const slot = this.byId.get(lease.comparison.id) as Slot;
    if (slot.labelledBy.has(annotator)) throw new LabelConflictError("already_labelled");
    // taken synchronously, before any await: a second request for this lease or comparison now conflicts
    this.leases.delete(leaseId);
    this.saving.set(leaseId, lease);
    slot.labelledBy.add(annotator);
    const record = makeLabelRecord({
      comparison: lease.comparison,
      shownLeft: lease.leftIs,
      verdict,
      annotator,
      rationale: rationale === undefined || rationale === null || rationale.trim() === "" ? null : rationale,
      labelledAt: new Date(this.now()),
    });
    try {
      await this.sink.append(record);
    } catch (e) {
      // not saved: the person may try again with the same lease
      slot.labelledBy.delete(annotator);
      this.leases.set(leaseId, lease);
      throw e;
    } finally {
      this.saving.delete(leaseId);
    }
    slot.labels.push(record);
    this.notify();
    return record;
  }

  /** Per comparison, in comparison order: its labels' majority verdict, agreement and annotators. */
  outcome(): ComparisonOutcome[] {
    return this.slots.map((slot) => {
      const counts = Object.fromEntries(RECORDED_VERDICTS.map((v) => [v, 0])) as Record<RecordedVerdict, number>;
      for (const r of slot.labels) counts[r.verdict] += 1;
      const top = Math.max(...Object.values(counts));
      const leaders = RECORDED_VERDICTS.filter((v) => counts[v] === top);
      const decided = this.isDecided(slot);
      const out: ComparisonOutcome = {
        comparisonId: slot.comparison.id,
        itemIndex: slot.comparison.itemIndex,
        labels: slot.labels.length,
        decided,
        verdict: decided && leaders.length === 1 ? (leaders[0] as RecordedVerdict) : null,
        agreement: slot.labels.length === 0 ? null : top / slot.labels.length,
        counts,
        annotators: slot.labels.map((r) => r.annotator),
      };
      if (slot.comparison.itemId !== undefined) out.itemId = slot.comparison.itemId;
      return out;
    });
  }

  /** The decided comparisons whose verdict names a winner, in comparison order. */
  pairs(): HumanPair[] {
    const pairs: HumanPair[] = [];
    this.outcome().forEach((o, i) => {
      if (o.verdict !== "target" && o.verdict !== "comparator") return;
      const comparison = (this.slots[i] as Slot).comparison;
      const loser = o.verdict === "target" ? comparison.comparator : comparison.target;
      pairs.push({
        comparison,
        winner: o.verdict,
        winnerCompletions: comparison[o.verdict],
        loserCompletions: loser,
        agreement: o.agreement ?? 1,
        annotators: o.annotators,
        labels: [...(this.slots[i] as Slot).labels],
      });
    });
    return pairs;
  }

  progress(): LabelProgress {
    this.expireLeases();
    let decided = 0;
    let labels = 0;
    for (const slot of this.slots) {
      labels += slot.labels.length;
      if (this.isDecided(slot)) decided += 1;
    }
    const inFlight = new Set([...this.leases.values(), ...this.saving.values()].map((l) => l.comparison.id)).size;
    return { total: this.slots.length, decided, labels, inFlight };
  }

  /** Resolves once `minLabels` comparisons (default all) are decided, all are, or the timeout passes. */
  waitFor(options: WaitForOptions = {}): Promise<WaitResult> {
    const { signal } = options;
    const minLabels = options.minLabels ?? this.slots.length;
    return new Promise<WaitResult>((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const finish = (reason: WaitResult["reason"]): void => {
        cleanup();
        resolve({ reason, progress: this.progress() });
      };
      const check = (): void => {
        const p = this.progress();
        if (p.decided >= p.total) finish("all_decided");
        else if (p.decided >= minLabels) finish("min_labels");
      };
      const onAbort = (): void => {
        cleanup();
        reject(signal?.reason instanceof Error ? signal.reason : new Error("waiting for labels was aborted"));
      };
      const cleanup = (): void => {
        this.listeners.delete(check);
        if (timer !== undefined) clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
      };
      if (signal?.aborted === true) return onAbort();
      this.listeners.add(check);
      signal?.addEventListener("abort", onAbort, { once: true });
      if (options.timeoutMs !== undefined) timer = setTimeout(() => finish("timeout"), options.timeoutMs);
      check();
    });
  }

  /** Has every label it needs. */
  private isDecided(slot: Slot): boolean {
    return slot.labels.length >= this.labelsPerPair;
  }

  private openTo(slot: Slot, annotator: string): boolean {
    if (slot.labelledBy.has(annotator)) return false;
    let held = 0;
    for (const l of this.leases.values()) if (l.comparison.id === slot.comparison.id) held += 1;
    for (const l of this.saving.values()) if (l.comparison.id === slot.comparison.id) held += 1;
    return slot.labels.length + held < this.labelsPerPair;
  }

  private lease(slot: Slot, annotator: string): Lease {
    const { comparison } = slot;
    const leftIs: Side = this.leftIsTarget(comparison.id) ? "target" : "comparator";
    const lease: Lease = {
      // unguessable, so one person cannot act on another's lease by counting
      leaseId: randomBytes(16).toString("base64url"),
      annotator,
      comparison,
      left: leftIs === "target" ? comparison.target : comparison.comparator,
      right: leftIs === "target" ? comparison.comparator : comparison.target,
      leftIs,
      expiresAt: this.now() + this.leaseMs,
    };
    this.leases.set(lease.leaseId, lease);
    return lease;
  }

  private expireLeases(): void {
    const now = this.now();
    for (const [id, lease] of this.leases)
      if (lease.expiresAt <= now) {
        this.leases.delete(id);
        this.expired.add(id);
      }
  }

  private notify(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

function checkAnnotator(annotator: string): void {
  if (typeof annotator !== "string" || annotator.trim() === "") throw new TypeError("annotator must be a non-empty name");
}
