import { describe, expect, it } from "vitest";
import { API_NAMESPACE } from "../../k8s/manifests/bundles.ts";
import { DEFAULT_NAMESPACE } from "../../k8s/manifests/agent-install.ts";
import { DEFAULT_AGENT_NAMESPACE } from "../../k8s/render/network-policies.ts";
import { namespaceName } from "../../k8s/render/names.ts";
import { ProjectName } from "../../src/domain/resources.ts";
import { projectNamespace, RESERVED_NAMESPACES, reservedProjectName } from "../../src/domain/project-names.ts";

describe("reserved project names", () => {
  it.each([
    ["default", /first project/, "default-team"],
    ["system", /berth-system is where berth's agent runs/, "system-team"],
    ["api", /berth-api is where berth's api runs/, "api-team"],
    ["kube", /Kubernetes/, "cluster-team"],
    ["kube-system", /Kubernetes/, "cluster-team"], // "system" is reserved too
    ["kube-public", /Kubernetes/, "public"],
    ["kube-default", /Kubernetes/, "cluster-team"],
  ])("%s is refused (%s), suggesting %s", (name, reason, suggestion) => {
    const reserved = reservedProjectName(name);
    expect(reserved?.reason).toMatch(reason);
    expect(reserved?.suggestion).toBe(suggestion);
    expect(reservedProjectName(reserved!.suggestion)).toBeUndefined();
    expect(ProjectName.safeParse(reserved!.suggestion).success).toBe(true);
  });

  it.each(["team-a", "defaults", "my-default", "systems", "apis", "kubeflow", "research", "demo"])("%s is free", (name) => {
    expect(reservedProjectName(name)).toBeUndefined();
  });

  it("knows the namespaces berth's own parts are installed into, and derives namespaces as the renderer does", () => {
    expect(RESERVED_NAMESPACES.agent).toBe(DEFAULT_AGENT_NAMESPACE);
    expect(RESERVED_NAMESPACES.agent).toBe(DEFAULT_NAMESPACE);
    expect(RESERVED_NAMESPACES.api).toBe(API_NAMESPACE);
    for (const name of ["team-a", "system", "x"]) expect(projectNamespace(name)).toBe(namespaceName(name));
  });
});
