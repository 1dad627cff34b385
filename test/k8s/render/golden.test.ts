// Golden files: every shape renders to exactly the committed YAML (regenerate with
// UPDATE_GOLDEN=1 after an intended change, then read the diff), and every rendered object
// passes the official Kubernetes schema of its kind plus the name and label rules the
// schemas do not check.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { stringify } from "yaml";
import { isDns1035Label, isDns1123Label, isLabelKey, isLabelValue } from "../../../src/domain/deployment-spec.ts";
import { LABELS, renderDeployment } from "../../../k8s/render/index.ts";
import { objectsOf, SHAPES, validateObject } from "./support.ts";

const GOLDEN_DIR = join(dirname(fileURLToPath(import.meta.url)), "../../golden/k8s");
const UPDATE = process.env.UPDATE_GOLDEN === "1";

function toYaml(objects: unknown[]): string {
  return objects.map((object) => stringify(object, { aliasDuplicateObjects: false, lineWidth: 0 })).join("---\n");
}

describe("golden renderings", () => {
  it.each(SHAPES.map((s) => [s.file, s] as const))("%s matches its golden file", (_file, { file, input }) => {
    const text = toYaml(objectsOf(renderDeployment(input)));
    const path = join(GOLDEN_DIR, `${file}.yaml`);
    if (UPDATE || !existsSync(path)) {
      if (!UPDATE) throw new Error(`golden file ${path} is missing; run with UPDATE_GOLDEN=1 to create it`);
      mkdirSync(GOLDEN_DIR, { recursive: true });
      writeFileSync(path, text);
    }
    expect(text).toBe(readFileSync(path, "utf8"));
  });

  it("renders the same bundle twice (pure: no clock, no randomness)", () => {
    for (const { input } of SHAPES) expect(renderDeployment(input)).toEqual(renderDeployment(structuredClone(input)));
  });
});

describe("schema validity", () => {
  it.each(SHAPES.map((s) => [s.file, s] as const))("%s: every object passes kubernetes-models validation", (_file, { input }) => {
    const objects = objectsOf(renderDeployment(input));
    expect(objects.length).toBeGreaterThan(0);
    for (const object of objects) expect(() => validateObject(object), `${object.kind} ${object.metadata?.name}`).not.toThrow();
  });

  it("a broken object is refused by the validator (the check has teeth)", () => {
    const pod = structuredClone(renderDeployment(SHAPES[0]!.input).pods[0]!);
    (pod.spec!.containers[0]!.ports![0] as { containerPort: unknown }).containerPort = "http";
    expect(() => validateObject(pod)).toThrow(/containerPort/);
  });

  it.each(SHAPES.map((s) => [s.file, s] as const))("%s: names are valid DNS labels of ≤ 63 characters, labels are valid", (_file, { input }) => {
    for (const object of objectsOf(renderDeployment(input))) {
      const meta = (object as { metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> } }).metadata;
      expect(meta.name.length, meta.name).toBeLessThanOrEqual(63);
      // Services need DNS-1035 (a letter first); everything else here DNS-1123.
      expect(object.kind === "Service" ? isDns1035Label(meta.name) : isDns1123Label(meta.name), meta.name).toBe(true);
      for (const [key, value] of Object.entries(meta.labels ?? {})) {
        expect(isLabelKey(key), key).toBe(true);
        expect(isLabelValue(value), `${key}=${value}`).toBe(true);
      }
    }
  });
});

describe("labels", () => {
  const REQUIRED = [
    LABELS.managedBy,
    LABELS.deployment,
    LABELS.deploymentId,
    LABELS.role,
    LABELS.roleKind,
    LABELS.replica,
    LABELS.member,
    LABELS.specHash,
  ];

  it.each(SHAPES.map((s) => [s.file, s] as const))("%s: every pod carries every berth label", (_file, { input }) => {
    const { pods } = renderDeployment(input);
    for (const pod of pods) {
      const labels = pod.metadata!.labels!;
      for (const key of REQUIRED) expect(labels[key], `${pod.metadata!.name} ${key}`).toBeDefined();
      expect(labels[LABELS.managedBy]).toBe("berth-agent");
      expect(labels[LABELS.deploymentId]).toBe(input.deployment.id);
      expect(pod.metadata!.name).toBe(`${input.deployment.name}-${labels[LABELS.role]}-r${labels[LABELS.replica]}-m${labels[LABELS.member]}`);
    }
  });

  it("names at the admission limit still fit: a 63-character pod name", () => {
    const input = structuredClone(SHAPES[0]!.input);
    // `<name>-server-r0-m0` with a 50-character deployment name is 63 characters.
    input.deployment.name = "a".repeat(50);
    const pod = renderDeployment(input).pods[0]!;
    expect(pod.metadata!.name).toHaveLength(63);
    expect(() => validateObject(pod)).not.toThrow();
  });
});
