import { CentralizedParseError, type CentralizedAdapter, type TaskItem } from "@pbrl/preference-data";

/**
 * The default centralized adapter, domain-neutral: the joint prompt lists every role's own prompt
 * under `Agent {i} original prompt:` (0-based) and asks for one `<agent_{i}>` section per role;
 * parsing reads those sections back. Same structure as CoMLRL's tagged adapter, so a model
 * prompted by either produces text both can split.
 */
export class TaggedCentralizedAdapter implements CentralizedAdapter {
  buildPrompt(_item: TaskItem, agentPrompts: readonly string[]): string {
    const n = agentPrompts.length;
    const prompts = agentPrompts.map((p, i) => `Agent ${i} original prompt:\n${p}`).join("\n\n");
    const sections = agentPrompts.map((_, i) => `<agent_${i}>\n...\n</agent_${i}>`).join("\n");
    return (
      [
        `You are a centralized coordinator that writes the separate outputs of ${n} agents.`,
        "Each output has to satisfy the original prompt of its agent. Keep the outputs separate;\ndo not merge them, and write nothing outside the required tags.",
        prompts,
        `Answer with exactly one section per agent, in this format:\n${sections}`,
      ].join("\n\n") + "\n"
    );
  }

  parseCompletion(completion: string, _item: TaskItem, numAgents: number): string[] {
    let found = false;
    const out = Array.from({ length: numAgents }, (_, i) => {
      const m = sectionPattern(i).exec(completion);
      if (m === null) return "";
      found = true;
      return m[1]!.trim();
    });
    if (!found) throw new CentralizedParseError(`no <agent_i> sections (i = 0 … ${numAgents - 1}) in the joint completion`);
    return out;
  }
}

/** `<agent_i> … </agent_i>`, first and shortest match, any case, across lines, spaces allowed in the tags. */
function sectionPattern(i: number): RegExp {
  return new RegExp(`<\\s*agent_${i}\\s*>([\\s\\S]*?)<\\s*/\\s*agent_${i}\\s*>`, "i");
}
