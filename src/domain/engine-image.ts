// Reads an engine's release from its container image reference (docs/design.md §5.3): pure, no
// registry calls. Only the official repositories' tags are read as releases — a mirror keeps the
// path (`registry:5000/vllm/vllm-openai:v0.11.0`); any other repository is a custom build whose
// tag says nothing about which engine release it holds.
import type { EngineName } from "./deployment-spec.ts";

/** Repositories whose tags are the engine's release numbers (Docker Hub names, any registry in front). */
export const OFFICIAL_REPOSITORIES: Record<EngineName, readonly string[]> = {
  vllm: ["vllm/vllm-openai"],
  sglang: ["lmsysorg/sglang"],
};

export interface Release {
  /** Numeric parts: `0.10.1.1` → [0, 10, 1, 1]. */
  parts: number[];
  /** A pre-release (`rc1`, `a0`, `dev`): it comes before the release of the same parts. */
  preRelease: boolean;
  /** The release as written, without the leading `v` and build suffixes (`0.5.3`, `0.11.1rc1`). */
  text: string;
}

export type ImageRelease =
  | { readable: true; repository: string; tag: string; release: Release }
  | { readable: false; repository: string; tag?: string; digest?: string; why: string };

// `v0.11.0`, `0.5.3`, `v0.5.3-cu129`, `v0.10.1.1`, `v0.4.6.post4-cu124`, `v0.11.1rc1`.
const RELEASE_TAG = /^v?(\d+(?:\.\d+){1,3})(?:(rc|a|b|\.dev|dev)(\d*))?((?:\.post\d+)?)(?:[-_+].*)?$/;

/** Splits `[registry/]path[:tag][@digest]`; the registry is the first segment with a `.` or `:`, or `localhost`. */
export function splitImageReference(image: string): { registry?: string; path: string; tag?: string; digest?: string } {
  const [withoutDigest, digest] = image.split("@", 2) as [string, string | undefined];
  const slash = withoutDigest.lastIndexOf("/");
  const colon = withoutDigest.lastIndexOf(":");
  const hasTag = colon > slash;
  const name = hasTag ? withoutDigest.slice(0, colon) : withoutDigest;
  const tag = hasTag ? withoutDigest.slice(colon + 1) : undefined;
  const segments = name.split("/");
  const first = segments[0]!;
  const isRegistry = segments.length > 1 && (first.includes(".") || first.includes(":") || first === "localhost");
  return {
    ...(isRegistry && { registry: first }),
    path: (isRegistry ? segments.slice(1) : segments).join("/"),
    ...(tag !== undefined && { tag }),
    ...(digest !== undefined && { digest }),
  };
}

/** Parses a release tag (`v0.11.0`, `v0.5.3-cu129`); undefined for `latest`, `nightly` and the like. */
export function parseReleaseTag(tag: string): Release | undefined {
  const match = RELEASE_TAG.exec(tag);
  if (!match) return undefined;
  const [, numbers, pre, preNumber] = match;
  return {
    parts: numbers!.split(".").map(Number),
    preRelease: pre !== undefined,
    text: `${numbers}${pre ?? ""}${preNumber ?? ""}${match[4] ?? ""}`,
  };
}

/** `0.11.0` → Release; for the table's own literals (throws on a typo, caught by its tests). */
export function release(text: string): Release {
  const parsed = parseReleaseTag(text);
  if (!parsed) throw new Error(`not a release: ${text}`);
  return parsed;
}

/** Negative when a < b. Missing parts are 0; a pre-release sorts before the release of the same parts. */
export function compareReleases(a: Release, b: Release): number {
  const length = Math.max(a.parts.length, b.parts.length);
  for (let i = 0; i < length; i++) {
    const diff = (a.parts[i] ?? 0) - (b.parts[i] ?? 0);
    if (diff !== 0) return diff;
  }
  return Number(b.preRelease) - Number(a.preRelease);
}

/** The engine release an image holds, or why it cannot be told from the reference alone. */
export function readImageRelease(engine: EngineName, image: string): ImageRelease {
  const { path, tag, digest } = splitImageReference(image);
  const official = OFFICIAL_REPOSITORIES[engine].some((repo) => path === repo || path.endsWith(`/${repo}`) || path === `library/${repo}`);
  if (!official) {
    return {
      readable: false,
      repository: path,
      ...(tag !== undefined && { tag }),
      ...(digest !== undefined && { digest }),
      why: `"${path}" is not an official ${engine} repository (${OFFICIAL_REPOSITORIES[engine].join(", ")}), so its tag does not name a ${engine} release`,
    };
  }
  if (tag === undefined) {
    return {
      readable: false,
      repository: path,
      ...(digest !== undefined && { digest }),
      why: digest ? "it is pinned by digest only, which does not name a release" : "it has no tag (Kubernetes pulls latest), which does not name a release",
    };
  }
  const parsed = parseReleaseTag(tag);
  if (!parsed) {
    return { readable: false, repository: path, tag, ...(digest !== undefined && { digest }), why: `tag "${tag}" does not name a release` };
  }
  return { readable: true, repository: path, tag, release: parsed };
}
