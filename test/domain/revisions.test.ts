import { describe, expect, it } from "vitest";
import { applySpecDefaults, DeploymentSpecInput, type DeploymentSpec } from "../../src/domain/deployment-spec.ts";
import { describeRetained, rollbackSpec } from "../../src/domain/revisions.ts";

const spec = (roles: { name: string; replicas: number; width?: number }[], options: { image?: string; mode?: "off" | "shadow" | "active" } = {}): DeploymentSpec =>
  applySpecDefaults(
    DeploymentSpecInput.parse({
      model: { name: "deepseek-ai/DeepSeek-V2-Lite" },
      engine: { name: "vllm", image: options.image ?? "vllm/vllm-openai:v0.11.0" },
      roles: roles.map((r) => ({
        name: r.name,
        replicas: r.replicas,
        resources: { gpus: 1 },
        ...(r.width && { parallelism: { expert: true }, elastic: { width: r.width, maxWidth: 8 } }),
      })),
      ...(options.mode && { scaling: { mode: options.mode, roles: roles.map((r) => ({ name: r.name, maxReplicas: 10 })) } }),
    }),
  );

describe("rollbackSpec", () => {
  it.each([
    // current, target, expected replicas, why
    [spec([{ name: "main", replicas: 5 }]), spec([{ name: "main", replicas: 2 }], { image: "old" }), [2], "scaling off: the target's replicas"],
    [spec([{ name: "main", replicas: 5 }], { mode: "shadow" }), spec([{ name: "main", replicas: 2 }], { image: "old", mode: "shadow" }), [2], "shadow only recommends"],
    [spec([{ name: "main", replicas: 5 }], { mode: "active" }), spec([{ name: "main", replicas: 2 }], { image: "old", mode: "active" }), [5], "active: the autoscaler owns replicas"],
    [spec([{ name: "main", replicas: 5 }], { mode: "active" }), spec([{ name: "main", replicas: 2 }], { image: "old" }), [5], "decided by the current mode"],
  ])("%#: %s", (current, target, replicas, _why) => {
    const result = rollbackSpec(current, target);
    expect(result.engine.image).toBe("old");
    expect(result.roles.map((r) => r.replicas)).toEqual(replicas);
  });

  it("keeps the current elastic width and takes the rest of the role from the target", () => {
    const current = spec([{ name: "ep", replicas: 1, width: 6 }]);
    const target = spec([{ name: "ep", replicas: 2, width: 2 }], { image: "old" });
    const result = rollbackSpec(current, target);
    expect(result.roles[0]).toMatchObject({ replicas: 2, elastic: { width: 6, maxWidth: 8 } });
    expect(result.engine.image).toBe("old");
  });

  it("leaves a role the current spec lacks, and a differing elastic shape, to admission", () => {
    const current = spec([{ name: "main", replicas: 3 }], { mode: "active" });
    const target = spec([{ name: "other", replicas: 1, width: 2 }]);
    expect(rollbackSpec(current, target).roles).toEqual(target.roles);
  });

  it("gives back the current spec for a target equal to it: the write path then writes nothing", () => {
    const current = spec([{ name: "main", replicas: 3 }], { mode: "active" });
    expect(rollbackSpec(current, structuredClone(current))).toEqual(current);
  });
});

describe("describeRetained", () => {
  it.each([
    [undefined, "no revisions are retained"],
    [{ oldest: 4, newest: 4 }, "only generation 4 is retained"],
    [{ oldest: 3, newest: 52 }, "generations 3–52 are retained"],
  ])("%j → %s", (range, text) => {
    expect(describeRetained(range)).toBe(text);
  });
});
