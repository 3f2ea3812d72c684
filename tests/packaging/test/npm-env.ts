// Runs npm and pnpm as a user's project would on a new machine, but isolated and offline: a cache,
// store and config files of their own (the user's ~/.npmrc, cache and pnpm store are never read or
// written), the given loopback registry or none, and a proxy that goes nowhere for anything that
// is not on 127.0.0.1.
import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

/** Nothing listens on the discard port: a request that would leave the machine fails at once. */
const NOWHERE = "http://127.0.0.1:9/";

/** The PBRL_* settings a test must not inherit: which backend runs and whether the addon builds. */
const PBRL_CHOICES = ["PBRL_BACKEND", "PBRL_NATIVE", "PBRL_NATIVE_ADDON", "PBRL_NATIVE_BUILD"];

/** The environment without the settings of the package manager running this suite, and without PBRL_* choices. */
function inheritedEnv(): NodeJS.ProcessEnv {
  // pnpm, running this suite, passes its own npm_*/pnpm_* settings (registry, store, user agent) to children.
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^p?npm_/i.test(k) && !PBRL_CHOICES.includes(k)));
}

export function isolatedNpmEnv(home: string, registry: string = NOWHERE): NodeJS.ProcessEnv {
  mkdirSync(home, { recursive: true });
  const userrc = path.join(home, "npmrc");
  const globalrc = path.join(home, "npmrc-global");
  writeFileSync(userrc, "");
  writeFileSync(globalrc, "");
  const env = inheritedEnv();
  return {
    ...env,
    npm_config_cache: path.join(home, "cache"),
    npm_config_userconfig: userrc,
    npm_config_globalconfig: globalrc,
    npm_config_registry: registry,
    npm_config_proxy: NOWHERE,
    npm_config_https_proxy: NOWHERE,
    npm_config_noproxy: "127.0.0.1",
    npm_config_update_notifier: "false",
    npm_config_audit: "false",
    npm_config_fund: "false",
  };
}

/**
 * pnpm on a new machine: HOME (and the XDG folders under it) empty, so no user config, cache,
 * state or store is found, and store and cache named inside it; only the given registry reachable.
 */
export function isolatedPnpmEnv(home: string, registry: string): NodeJS.ProcessEnv {
  mkdirSync(home, { recursive: true });
  return {
    ...inheritedEnv(),
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, ".config"),
    XDG_CACHE_HOME: path.join(home, ".cache"),
    XDG_DATA_HOME: path.join(home, ".local/share"),
    XDG_STATE_HOME: path.join(home, ".local/state"),
    pnpm_config_store_dir: path.join(home, "store"),
    pnpm_config_cache_dir: path.join(home, "cache"),
    pnpm_config_registry: registry,
    pnpm_config_proxy: NOWHERE,
    pnpm_config_https_proxy: NOWHERE,
    pnpm_config_noproxy: "127.0.0.1",
    pnpm_config_update_notifier: "false",
  };
}

/** Runs npm and returns what it printed, stdout then stderr (where install scripts' lines go). */
export async function npm(args: readonly string[], cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  try {
    const r = await execFileAsync("npm", args, { cwd, env, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
    return `${r.stdout}${r.stderr}`;
  } catch (e) {
    const err = e as Error & { stdout?: string; stderr?: string };
    throw new Error(`npm ${args.join(" ")} failed in ${cwd}: ${err.message}\n${err.stdout ?? ""}${err.stderr ?? ""}`);
  }
}
