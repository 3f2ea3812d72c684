import { describe, expect, it } from "vitest";
import { HUB_ID } from "../src/index.js";

// The hub's own rule (huggingface_hub's validate_repo_id): an id pbrl accepts is always a plain
// "org/name" that cannot lead out of a cache folder or name another repository.
describe("HUB_ID", () => {
  it.each(["org/name", "HuggingFaceTB/SmolLM2-135M", "Qwen/Qwen2.5-0.5B", "a/b", "user_1/model.v2", "_org/_x"])("accepts %s", (id) => {
    expect(HUB_ID.test(id)).toBe(true);
  });

  it.each([
    ["org/..", "a parent folder"],
    ["../x", "a parent folder"],
    ["org/.", "the folder itself"],
    ["org/.hidden", "a leading dot"],
    ["org/name-", "a trailing dash"],
    ["org/a--b", "the cache's separator"],
    ["org/a..b", "two dots"],
    ["org/name.git", "a .git ending"],
    ["/abs/x", "an absolute path"],
    ["org/name/x", "three parts"],
    ["org\\name", "a backslash"],
    ["org/na me", "a space"],
    [`org/${"x".repeat(97)}`, "over 96 characters"],
  ])("refuses %s (%s)", (id) => {
    expect(HUB_ID.test(id)).toBe(false);
  });
});
