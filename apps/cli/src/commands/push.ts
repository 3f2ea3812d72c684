import { describeSkipped, pushToHub } from "@pbrl/models";
import { parseFlags, requireString } from "../args.js";
import type { CliIO } from "../io.js";

export const PUSH_HELP = `pbrl push --model DIR --repo org/name [options]

Uploads the files of a checkpoint folder (what pbrl train or pbrl convert wrote) to a Hugging Face
hub model repository in one commit, creating the repository when it does not exist. A folder
without README.md gets a basic model card (base model when known, "trained with pbrl"); the
folder itself is not changed.

Only what the folder holds goes up: a symlink is followed only when it leads to a place inside the
folder (or, for a snapshot of the Hugging Face cache, into that repository's blobs), never out of
it nor into a folder that holds it. Hidden files and folders (.env, .DS_Store, …) stay out unless
--include-hidden is given; .git, .cache and *.incomplete files always do. Each path left out is
printed with the reason.

The token comes from HF_TOKEN only (a token with write access: https://huggingface.co/settings/tokens)
and is never printed. HF_ENDPOINT selects another hub.

  --model DIR          the checkpoint folder to upload
  --repo org/name      the hub repository
  --private            create the repository private (an existing one keeps its visibility)
  --message M          the commit message (default "Upload model trained with pbrl")
  --base_model ID      the hub id training started from, for the model card
  --include-hidden     upload hidden files and folders too (names beginning with ".")
`;

export async function pushCommand(argv: string[], io: CliIO): Promise<number> {
  const { values } = parseFlags(
    argv,
    {
      model: { type: "string" },
      repo: { type: "string" },
      private: { type: "boolean" },
      message: { type: "string" },
      base_model: { type: "string" },
      "include-hidden": { type: "boolean" },
    },
    "push",
  );
  const dir = requireString(values.model, "model", "push");
  const repo = requireString(values.repo, "repo", "push");
  const r = await pushToHub({
    dir,
    repo,
    ...(values.private === true ? { private: true } : {}),
    ...(values.message !== undefined ? { commitMessage: values.message } : {}),
    ...(values.base_model !== undefined ? { baseModel: values.base_model } : {}),
    ...(values["include-hidden"] === true ? { includeHidden: true } : {}),
  });
  const notes = [
    r.createdRepo ? `created ${values.private === true ? "private " : ""}repository` : "existing repository",
    r.generatedModelCard ? "generated README.md" : undefined,
  ]
    .filter(Boolean)
    .join(", ");
  for (const s of r.skipped) io.out(`pbrl: not uploaded: ${describeSkipped(s)}\n`);
  io.out(`pbrl: pushed ${r.files.length} files to ${r.url}${r.commit !== undefined ? ` (commit ${r.commit})` : ""}; ${notes}\n`);
  return 0;
}
