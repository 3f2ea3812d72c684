/** A safetensors file or checkpoint folder that cannot be read; the message names the file and what is wrong. */
export class SafetensorsError extends Error {
  override name = "SafetensorsError";
}
