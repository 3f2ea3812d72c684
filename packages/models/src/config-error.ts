/** A config.json pbrl cannot build a correct model from; the message names the file, the field and the value. */
export class ModelConfigError extends Error {
  override name = "ModelConfigError";
}
