// package.json promises a Node range (`engines.node`); every installed package must accept all of
// it, or `npm ci` warns EBADENGINE on a machine the README says is enough. Read from the lockfile,
// which records each package's own `engines`, so the check needs no network and no install.
import { readFileSync } from "node:fs";
import semver from "semver";
import { describe, expect, it } from "vitest";

const root = new URL("../../", import.meta.url);
const manifest = JSON.parse(readFileSync(new URL("package.json", root), "utf8")) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(new URL("package-lock.json", root), "utf8")) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[]; optional?: boolean }>;
};

describe("the Node range in package.json", () => {
  const promised = manifest.engines.node;
  const lowest = semver.minVersion(promised);

  it("is a range with a lowest version, and the running Node is inside it", () => {
    expect(lowest).not.toBeNull();
    expect(semver.satisfies(process.version, promised)).toBe(true);
  });

  it("is accepted by every package in the lockfile, from its lowest version up", () => {
    const refusing: string[] = [];
    for (const [path, entry] of Object.entries(lock.packages)) {
      const range = entry.engines && !Array.isArray(entry.engines) ? entry.engines.node : undefined;
      if (!path || !range) continue;
      // Both ends: the lowest promised version and the one running here.
      for (const version of [lowest!.version, process.version]) {
        if (!semver.satisfies(version, range, { includePrerelease: true })) {
          refusing.push(`${path.replace(/^node_modules\//, "")}@${entry.version} wants node ${range}, not ${version}`);
          break;
        }
      }
    }
    expect(refusing).toEqual([]);
  });
});
