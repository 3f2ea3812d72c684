import { mutationConfig } from "../../scripts/mutation/config.mjs";

// The pure selection rules and the round collections built on them, and the dataset parsers:
// CSV, Parquet, JSON lines, strict UTF-8, the data-file rules of `datasets`, loadDataset, and the
// Hub's API and cache (tested against loopback servers speaking that API). Sampling and reward
// calls come later (their tests are the slow ones).
export default {
  ...mutationConfig({
    mutate: [
      "src/pair-selection.ts",
      "src/comparison-selection.ts",
      "src/compare.ts",
      "src/open-comparisons.ts",
      "src/collect.ts",
      "src/pair-record.ts",
      "src/datasets/csv.ts",
      "src/datasets/parquet.ts",
      "src/datasets/formats.ts",
      "src/datasets/data-files.ts",
      "src/datasets/load-dataset.ts",
      "src/datasets/utf8-file.ts",
      "src/datasets/errors.ts",
      "src/datasets/hub.ts",
      "src/datasets/hub-cache.ts",
      "src/datasets/hub-http.ts",
    ],
  }),
  // A mutant of a parser's loop (CSV, UTF-8, globs, a paged file list) can loop for ever, and
  // each costs timeoutMS: 5 s here, not the shared 60 s (the slowest test a dataset mutant runs,
  // a hub download that stalls and is retried, takes about 2 s).
  timeoutMS: 5_000,
};
