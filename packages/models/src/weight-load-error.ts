/** Weights that cannot make this model: missing, mis-shaped or non-finite. The message names the tensor and its source. */
export class WeightLoadError extends Error {
  override name = "WeightLoadError";
}
