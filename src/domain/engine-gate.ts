// The engine-release gate of admission (docs/design.md §5.3): a feature the spec uses that the
// image's release is known to lack is refused (422 at /spec/engine/image); an image whose release
// cannot be read, and a known failure the spec matches, are accepted with a warning. Pure.
import type { DeploymentSpec } from "./deployment-spec.ts";
import { compareReleases, readImageRelease, release, type Release } from "./engine-image.ts";
import { compatibilityOf, featuresOfSpec, KNOWN_FAILURE_MATCHES, type FeatureSupport, type KnownFailure } from "./engine-compatibility.ts";
import type { FieldError } from "./errors.ts";

export interface EngineGateResult {
  errors: FieldError[];
  /** Human-readable, one sentence each; returned in `warnings[]` and as `Warning: 299` headers. */
  warnings: string[];
}

const IMAGE_POINTER = "/spec/engine/image";
const ENGINE_TITLE = { vllm: "vLLM", sglang: "SGLang" } as const;

/** Whether `support` is known to be missing from `at`: below its first release, or at/below a release that lacks it. */
export function isBelowMinimum(support: FeatureSupport, at: Release): boolean {
  if (support.minimum !== "unknown" && compareReleases(at, release(support.minimum)) < 0) return true;
  return support.absentIn !== undefined && compareReleases(at, release(support.absentIn)) <= 0;
}

/** Whether a known failure's release range covers `at` (undefined: the release is unknown, so it may). */
export function failureCoversRelease(failure: KnownFailure, at: Release | undefined): boolean {
  if (!at) return true;
  const { from, after } = failure.releases;
  if (from !== undefined && compareReleases(at, release(from)) < 0) return false;
  if (after !== undefined && compareReleases(at, release(after)) <= 0) return false;
  return true;
}

function floorOf(support: FeatureSupport, title: string): string {
  return support.minimum !== "unknown" ? `${title} ${support.minimum} or later` : `a ${title} release after ${support.absentIn}`;
}

/**
 * `previous` is the stored spec on an update. A feature the stored spec already used with the same
 * image is not refused again, only warned about (validation ratcheting, as Kubernetes does for
 * stored objects, KEP-4008: https://github.com/kubernetes/enhancements/tree/master/keps/sig-api-machinery/4008-crd-ratcheting):
 * a deployment admitted before the table knew better must still take a replicas PATCH (the
 * autoscaler's) or a resize; changing the image or adding the feature is checked in full.
 */
export function checkEngineCompatibility(spec: DeploymentSpec, previous?: DeploymentSpec): EngineGateResult {
  const engine = spec.engine.name;
  const title = ENGINE_TITLE[engine];
  const image = spec.engine.image;
  const table = compatibilityOf(engine);
  const features = featuresOfSpec(spec);
  const used = table.features.filter((support) => features.includes(support.feature));
  const read = readImageRelease(engine, image);
  const errors: FieldError[] = [];
  const warnings: string[] = [];

  const stored = previous && previous.engine.name === engine && previous.engine.image === image ? featuresOfSpec(previous) : [];
  if (read.readable) {
    for (const support of used) {
      if (!isBelowMinimum(support, read.release)) continue;
      const message = `image ${image} is ${title} ${read.release.text}, but ${support.feature} (${support.flags.join(" ")}) needs ${floorOf(support, title)} (${support.source}); use an image of ${floorOf(support, title)}, or drop the ${support.feature} shape from the spec`;
      if (stored.includes(support.feature)) warnings.push(`${message} (kept: the stored spec already uses it with this image)`);
      else errors.push({ pointer: IMAGE_POINTER, message });
    }
  } else {
    const gated = used.filter((support) => support.minimum !== "unknown" || support.absentIn !== undefined);
    const checks = gated.length > 0 ? ` whether it has ${gated.map((s) => `${s.feature} (needs ${floorOf(s, title)})`).join(", ")}` : " which engine release it holds";
    warnings.push(
      `engine.image ${image}: ${read.why}; berth accepted it without checking${checks}. Use an official tag such as ${table.officialRepositories[0]}:v<release> to have it checked`,
    );
  }

  for (const failure of table.knownFailures) {
    const matches = KNOWN_FAILURE_MATCHES[failure.id];
    if (!matches?.(spec, features)) continue;
    if (!failureCoversRelease(failure, read.readable ? read.release : undefined)) continue;
    warnings.push(`known ${title} failure ${failure.id}: ${failure.summary}. Way out: ${failure.workaround}. Source: ${failure.source}`);
  }
  return { errors, warnings };
}
