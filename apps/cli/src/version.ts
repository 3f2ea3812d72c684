import { existsSync, readFileSync } from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The version in the CLI's package.json, found from this module's folder upwards: src/ and dist/
 * sit beside it in the repository and in an installed package (node_modules/pbrl/dist/), and
 * the tests' compiled copy sits deeper, under node_modules/.cache. Read at run time, so the
 * version printed is the one installed, not one copied into the build.
 */
export function cliVersion(moduleUrl: string = import.meta.url): string {
  let dir = path.dirname(fileURLToPath(moduleUrl));
  for (;;) {
    const file = path.join(dir, "package.json");
    if (existsSync(file)) {
      try {
        const pkg = JSON.parse(readFileSync(file, "utf8")) as { name?: unknown; version?: unknown };
        if (pkg.name === "pbrl" && typeof pkg.version === "string") return pkg.version;
      } catch {
        // not a readable package.json: keep looking upwards
      }
    }
    const up = path.dirname(dir);
    if (up === dir) return "unknown";
    dir = up;
  }
}
