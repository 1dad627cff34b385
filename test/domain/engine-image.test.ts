import { describe, expect, it } from "vitest";
import { compareReleases, parseReleaseTag, readImageRelease, release, splitImageReference } from "../../src/domain/engine-image.ts";
import type { EngineName } from "../../src/domain/deployment-spec.ts";

describe("splitImageReference", () => {
  it.each([
    ["vllm/vllm-openai:v0.11.0", { path: "vllm/vllm-openai", tag: "v0.11.0" }],
    ["lmsysorg/sglang", { path: "lmsysorg/sglang" }],
    ["registry:5000/org/img:tag", { registry: "registry:5000", path: "org/img", tag: "tag" }],
    ["localhost/vllm/vllm-openai:v0.9.0", { registry: "localhost", path: "vllm/vllm-openai", tag: "v0.9.0" }],
    ["ghcr.io/a/b@sha256:abc", { registry: "ghcr.io", path: "a/b", digest: "sha256:abc" }],
    ["vllm/vllm-openai:v0.11.0@sha256:abc", { path: "vllm/vllm-openai", tag: "v0.11.0", digest: "sha256:abc" }],
  ])("%s", (image, parts) => {
    expect(splitImageReference(image)).toEqual(parts);
  });
});

describe("parseReleaseTag", () => {
  it.each<[string, { parts: number[]; preRelease: boolean; text: string } | undefined]>([
    ["v0.11.0", { parts: [0, 11, 0], preRelease: false, text: "0.11.0" }],
    ["0.5.3", { parts: [0, 5, 3], preRelease: false, text: "0.5.3" }],
    ["v0.5.3-cu129", { parts: [0, 5, 3], preRelease: false, text: "0.5.3" }],
    ["v0.10.1.1", { parts: [0, 10, 1, 1], preRelease: false, text: "0.10.1.1" }],
    ["v0.4.6.post4-cu124", { parts: [0, 4, 6], preRelease: false, text: "0.4.6.post4" }],
    ["v0.11.1rc1", { parts: [0, 11, 1], preRelease: true, text: "0.11.1rc1" }],
    ["nightly", undefined],
    ["latest", undefined],
    ["dev", undefined],
    ["cuda13.0-vllm0.30.0", undefined],
    ["v1", undefined],
  ])("%s", (tag, expected) => {
    expect(parseReleaseTag(tag)).toEqual(expected);
  });
});

describe("compareReleases", () => {
  it.each([
    ["0.11.0", "0.9.0", 1],
    ["0.9.0", "0.11.0", -1],
    ["0.10.1", "0.10.1.1", -1],
    ["0.10.1.0", "0.10.1", 0],
    ["0.11.1rc1", "0.11.1", -1],
    ["0.11.1rc1", "0.11.0", 1],
  ])("%s vs %s", (a, b, sign) => {
    expect(Math.sign(compareReleases(release(a), release(b)))).toBe(sign);
  });
});

describe("readImageRelease", () => {
  it.each<[EngineName, string, string | undefined]>([
    ["vllm", "vllm/vllm-openai:v0.11.0", "0.11.0"],
    ["vllm", "docker.io/vllm/vllm-openai:v0.10.1.1", "0.10.1.1"],
    ["vllm", "registry:5000/vllm/vllm-openai:v0.9.0", "0.9.0"],
    ["vllm", "vllm/vllm-openai:v0.11.0@sha256:0123", "0.11.0"],
    ["sglang", "lmsysorg/sglang:v0.5.3-cu129", "0.5.3"],
    ["vllm", "vllm/vllm-openai:nightly", undefined],
    ["vllm", "vllm/vllm-openai:latest", undefined],
    ["vllm", "vllm/vllm-openai", undefined],
    ["vllm", "vllm/vllm-openai@sha256:0123", undefined],
    ["vllm", "registry:5000/org/img:v0.11.0", undefined],
    ["vllm", "lmsysorg/sglang:v0.5.4", undefined],
  ])("%s %s", (engine, image, expected) => {
    const read = readImageRelease(engine, image);
    expect(read.readable ? read.release.text : undefined).toBe(expected);
  });

  it("says why an image names no release", () => {
    expect(readImageRelease("vllm", "vllm/vllm-openai@sha256:0123")).toMatchObject({ readable: false, why: "it is pinned by digest only, which does not name a release" });
    expect(readImageRelease("vllm", "vllm/vllm-openai:latest")).toMatchObject({ readable: false, why: 'tag "latest" does not name a release' });
    expect(readImageRelease("vllm", "registry:5000/org/img:tag")).toMatchObject({
      readable: false,
      why: '"org/img" is not an official vllm repository (vllm/vllm-openai), so its tag does not name a vllm release',
    });
  });
});
