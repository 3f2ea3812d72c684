/**
 * Gradients that free each intermediate gradient as soon as it has been used.
 *
 * tfjs 4.22's `engine.gradients` (behind tf.grads, tf.variableGrads, tf.valueAndGrads) walks the
 * tape backward and keeps every tensor's gradient until the whole backward pass ends, so a
 * training step holds a gradient for every activation of every layer at once: for a
 * SmolLM2-135M-shaped model at 4 × 128 tokens the libtorch backend peaked at 4.8 GB of live
 * tensors where PyTorch, which frees them as it goes, needs 3.3 GB of RSS in all. This is the same
 * walk — the same nodes, gradient functions and accumulation, in the same order, so every
 * gradient is bit-for-bit what tfjs computes — except that a node's output gradients and the
 * tensors it saved for its gradient are disposed once its input gradients exist. Higher-order gradients (a gradient taken inside a gradient
 * function) keep tfjs's own walk. Installed on tfjs's engine when @pbrl/core-tensor loads.
 */
import { tf } from "./tf.js";

type Tensor = tf.Tensor;
type GradFunc = () => Tensor;
interface TapeNode {
  id: number;
  kernelName: string;
  inputs: Record<string, Tensor>;
  outputs: Tensor[];
  gradient?: (dys: (Tensor | null)[]) => Record<string, GradFunc>;
  saved?: Tensor[];
}
interface EngineInternals {
  state: { activeTape: TapeNode[] | null; gradientDepth: number };
  scopedRun<T>(start: () => void, end: () => void, f: () => T): T;
  startTape(): void;
  endTape(): void;
  tidy<T>(nameOrFn: string | (() => T), fn?: () => T): T;
  gradients(f: () => Tensor, xs: Tensor[], dy?: Tensor, allowNoGradients?: boolean): { value: Tensor; grads: Tensor[] };
}

/** The tape nodes on a path from some x to y, their inputs pruned to those that depend on an x (tfjs's getFilteredNodesXToY). */
function nodesFromXToY(tape: readonly TapeNode[], xs: readonly Tensor[], y: Tensor): TapeNode[] {
  const fromX = new Set<number>(xs.map((x) => x.id));
  const nodesFromX = new Set<number>();
  for (const node of tape) {
    if (Object.values(node.inputs).some((input) => fromX.has(input.id))) {
      for (const o of node.outputs) fromX.add(o.id);
      nodesFromX.add(node.id);
    }
  }
  const toY = new Set<number>([y.id]);
  const nodesToY = new Set<number>();
  for (let i = tape.length - 1; i >= 0; i--) {
    const node = tape[i]!;
    if (node.outputs.some((o) => toY.has(o.id))) {
      for (const input of Object.values(node.inputs)) toY.add(input.id);
      nodesToY.add(node.id);
    }
  }
  return tape
    .filter((n) => nodesFromX.has(n.id) && nodesToY.has(n.id))
    .map((n) => ({ ...n, inputs: Object.fromEntries(Object.entries(n.inputs).filter(([, t]) => fromX.has(t.id))) }));
}

/** tfjs's backward walk, disposing each node's output gradients (all but `keep`) once its input gradients are made. */
function backpropagate(engine: EngineInternals, grads: Map<number, Tensor>, tape: readonly TapeNode[], keep: ReadonlySet<Tensor>): void {
  for (let i = tape.length - 1; i >= 0; i--) {
    const node = tape[i]!;
    const dys = node.outputs.map((o) => grads.get(o.id) ?? null);
    if (node.gradient === undefined) throw new Error(`Cannot compute gradient: gradient function not found for ${node.kernelName}.`);
    const inputGradients = node.gradient(dys);
    const made = new Set<Tensor>();
    for (const [inputName, x] of Object.entries(node.inputs)) {
      const f = inputGradients[inputName];
      if (f === undefined) throw new Error(`Cannot backprop through input ${inputName}. Available gradients found: ${Object.keys(inputGradients)}.`);
      const dx = engine.tidy(f);
      if (dx.dtype !== "float32")
        throw new Error(`Error in gradient for op ${node.kernelName}. The gradient of input ${inputName} must have 'float32' dtype, but has '${dx.dtype}'`);
      if (!tf.util.arraysEqual(dx.shape, x.shape)) {
        throw new Error(
          `Error in gradient for op ${node.kernelName}. The gradient of input '${inputName}' has shape '${dx.shape}', which does not match the shape of the input '${x.shape}'`,
        );
      }
      const previous = grads.get(x.id);
      if (previous === undefined) {
        grads.set(x.id, dx);
      } else {
        grads.set(x.id, tf.add(previous, dx));
        previous.dispose();
      }
      made.add(grads.get(x.id)!);
    }
    // Each tensor is the output of one node, so its gradient is not needed again: free it, unless
    // it is the caller's dy or it became an input's gradient itself. Likewise the tensors this
    // node saved for its gradient (tfjs saves a clone per node), which tfjs keeps to the end.
    node.outputs.forEach((o, j) => {
      const dy = dys[j];
      if (dy === null || dy === undefined || keep.has(dy) || made.has(dy)) return;
      dy.dispose();
      grads.delete(o.id);
    });
    for (const t of node.saved ?? []) if (!made.has(t)) t.dispose();
  }
}

function leanGradients(engine: EngineInternals, tfjsGradients: EngineInternals["gradients"]): EngineInternals["gradients"] {
  return function gradients(f, xs, dy, allowNoGradients = false) {
    // Inside a gradient function (higher-order gradients) tfjs's own walk keeps what it needs.
    if (engine.state.gradientDepth > 0) return tfjsGradients.call(engine, f, xs, dy, allowNoGradients);
    tf.util.assert(xs.length > 0, () => "gradients() received an empty list of xs.");
    if (dy !== undefined && dy !== null && dy.dtype !== "float32") throw new Error(`dy must have 'float32' dtype, but has '${dy.dtype}'`);
    const y = engine.scopedRun(
      () => engine.startTape(),
      () => engine.endTape(),
      () => engine.tidy("forward", f),
    );
    tf.util.assert(y instanceof tf.Tensor, () => "The result y returned by f() must be a tensor.");
    const tape = engine.state.activeTape ?? [];
    const filtered = nodesFromXToY(tape, xs, y);
    if (!allowNoGradients && filtered.length === 0 && xs.length > 0) {
      throw new Error("Cannot compute gradient of y=f(x) with respect to x. Make sure that the f you passed encloses all operations that lead from x to y.");
    }
    return engine.tidy("backward", () => {
      const seed = dy ?? tf.ones(y.shape);
      const grads = new Map<number, Tensor>([[y.id, seed]]);
      backpropagate(engine, grads, filtered, new Set(dy === undefined || dy === null ? [] : [dy]));
      const result = xs.map((x) => grads.get(x.id)) as Tensor[]; // undefined where allowNoGradients found none, as in tfjs
      for (const node of tape) for (const t of node.saved ?? []) t.dispose();
      engine.state.activeTape = null;
      return { value: y, grads: result };
    });
  };
}

let tfjsGradients: EngineInternals["gradients"] | undefined;

/** Replaces tfjs's engine.gradients by {@link leanGradients} (once per tfjs engine). */
export function installLeanGradients(): void {
  if (tfjsGradients !== undefined) return;
  const engine = tf.engine() as unknown as EngineInternals;
  tfjsGradients = engine.gradients;
  engine.gradients = leanGradients(engine, tfjsGradients);
}

/** Puts tfjs's own engine.gradients back (to compare with it). */
export function uninstallLeanGradients(): void {
  if (tfjsGradients === undefined) return;
  (tf.engine() as unknown as EngineInternals).gradients = tfjsGradients;
  tfjsGradients = undefined;
}
