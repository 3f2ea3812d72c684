/**
 * The text a joint reward model reads: CoMLRL's `_format_joint_text` layout, literally. Parts are
 * joined by a blank line ("\n\n"): `Joint multi-agent response`, then for each agent i (1-based)
 * `Agent {i} prompt:` + newline + prompt and `Agent {i} response:` + newline + completion.
 * The agent count is the longer of the two lists; a missing prompt or completion is an empty
 * string, as in CoMLRL.
 */
export function jointText(prompts: readonly string[], completions: readonly string[]): string {
  const parts = ["Joint multi-agent response"];
  const agents = Math.max(prompts.length, completions.length);
  for (let i = 0; i < agents; i++) {
    parts.push(`Agent ${i + 1} prompt:\n${prompts[i] ?? ""}`);
    parts.push(`Agent ${i + 1} response:\n${completions[i] ?? ""}`);
  }
  return parts.join("\n\n");
}
