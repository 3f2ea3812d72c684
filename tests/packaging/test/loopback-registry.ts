// A package registry on 127.0.0.1 (random port) serving given tarballs, so that npm installs the
// packed packages the way a user's `npm install` would (packuments, tarball URLs, integrity)
// without a network.
import { createHash } from "node:crypto";
import { appendFileSync, createReadStream, existsSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { PackageManifest } from "./workspace.js";

export interface RegistryPackage {
  manifest: PackageManifest;
  /** Path of the package's .tgz, whose package.json is `manifest`. */
  tarball: string;
}

export interface LoopbackRegistry {
  url: string;
  close(): Promise<void>;
}

/** Orders x.y.z versions; a prerelease sorts before its release. */
function compareVersions(a: string, b: string): number {
  const parse = (v: string) => {
    const [core = "", pre] = v.split("-", 2);
    return { nums: core.split(".").map(Number), pre };
  };
  const x = parse(a);
  const y = parse(b);
  for (let i = 0; i < 3; i++) if (x.nums[i] !== y.nums[i]) return (x.nums[i] ?? 0) - (y.nums[i] ?? 0);
  if (x.pre === y.pre) return 0;
  return x.pre === undefined ? 1 : y.pre === undefined ? -1 : x.pre < y.pre ? -1 : 1;
}

const INSTALL_SCRIPTS = ["preinstall", "install", "postinstall"];

/**
 * Serves `packages` on 127.0.0.1; every path asked for that it does not have is appended to
 * `missesFile` (the suites run in other processes than this server), for an error that names them.
 */
export async function startLoopbackRegistry(packages: readonly RegistryPackage[], missesFile: string): Promise<LoopbackRegistry> {
  const byName = new Map<string, { manifest: PackageManifest; tarball: string; urlPath: string; integrity: string; shasum: string }[]>();
  const tarballs = new Map<string, string>();
  for (const { manifest, tarball } of packages) {
    const data = readFileSync(tarball);
    const urlPath = `/${manifest.name}/-/${manifest.name.split("/").pop()}-${manifest.version}.tgz`;
    const entry = {
      manifest,
      tarball,
      urlPath,
      integrity: `sha512-${createHash("sha512").update(data).digest("base64")}`,
      shasum: createHash("sha1").update(data).digest("hex"),
    };
    byName.set(manifest.name, [...(byName.get(manifest.name) ?? []), entry]);
    tarballs.set(urlPath, tarball);
  }
  const server = createServer((req, res) => {
    // npm asks for scoped packuments as /@scope%2fname.
    const urlPath = decodeURIComponent(new URL(req.url ?? "/", "http://127.0.0.1").pathname);
    const tarball = tarballs.get(urlPath);
    if (tarball !== undefined) {
      res.writeHead(200, { "content-type": "application/octet-stream" });
      createReadStream(tarball).pipe(res);
      return;
    }
    const versions = byName.get(urlPath.slice(1));
    if (versions === undefined) {
      appendFileSync(missesFile, `${urlPath}\n`);
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: "not found" }));
      return;
    }
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const latest = versions
      .map((v) => v.manifest.version)
      .sort(compareVersions)
      .at(-1)!;
    const packument = {
      name: urlPath.slice(1),
      "dist-tags": { latest },
      versions: Object.fromEntries(
        versions.map((v) => [
          v.manifest.version,
          {
            ...v.manifest,
            _id: `${v.manifest.name}@${v.manifest.version}`,
            hasInstallScript: INSTALL_SCRIPTS.some((s) => v.manifest.scripts?.[s] !== undefined),
            dist: { tarball: `${base}${v.urlPath}`, integrity: v.integrity, shasum: v.shasum },
          },
        ]),
      ),
    };
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(packument));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((e) => (e ? reject(e) : resolve()));
        server.closeAllConnections(); // npm's idle keep-alive sockets would hold close() open
      }),
  };
}

/** The paths the registry could not answer so far, for an install's error message. */
export function registryMisses(missesFile: string): string {
  const misses = existsSync(missesFile) ? readFileSync(missesFile, "utf8").split("\n").filter(Boolean) : [];
  return misses.length > 0 ? [...new Set(misses)].join(", ") : "none";
}
