// Role and instance Services, the router's objects and flags per kind, and the renderer's
// import boundary (pure: no db/, no routes/, no I/O modules).
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { V1ConfigMap, V1Deployment, V1Service } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { renderDeployment, renderInstanceService, renderRoleService, renderRouterObjects } from "../../../k8s/render/index.ts";
import { aDeployment } from "../../fixtures/deployment-builder.ts";
import { inputFor, OPTIONS, shape } from "./support.ts";

const routerDeployment = (file: string) => renderRouterObjects(shape(file)).find((o) => o.kind === "Deployment") as V1Deployment;
const routerArgv = (file: string) => {
  const container = routerDeployment(file).spec!.template.spec!.containers[0]!;
  return [...container.command!, ...container.args!];
};

describe("services", () => {
  it("a role Service selects the role's serving pods on the engine port", () => {
    expect(renderRoleService(shape("sglang-pd-gateway"), "prefill").spec).toEqual({
      type: "ClusterIP",
      selector: { "berth.dev/deployment-id": "dep_0123456789abcdefghjk", "berth.dev/role": "prefill", "berth.dev/serving": "true" },
      ports: [
        { name: "http", port: 30000, targetPort: "http", protocol: "TCP" },
        { name: "bootstrap", port: 8998, targetPort: "bootstrap", protocol: "TCP" },
      ],
    });
  });

  it("a multi-pod instance gets a headless Service publishing not-ready members; a single pod none", () => {
    const headless = renderInstanceService(shape("vllm-dp4-local2-multihost"), "server", 3)!;
    expect(headless.metadata!.name).toBe("dsv3-server-r3");
    expect(headless.spec).toMatchObject({ clusterIP: "None", publishNotReadyAddresses: true });
    expect(headless.spec!.selector).toEqual({ "berth.dev/deployment-id": "dep_0123456789abcdefghjk", "berth.dev/role": "server", "berth.dev/replica": "3" });
    expect(renderInstanceService(shape("vllm-aggregated-tp2-x2"), "server", 0)).toBeUndefined();
  });

  it("the bundle holds one role Service per role and one headless Service per multi-pod instance", () => {
    const names = (file: string) => renderDeployment(file.startsWith("x") ? inputFor(aDeployment().name("x").role({ name: "server", size: 2, replicas: 3, resources: { gpus: 8 }, parallelism: { tensor: 16 } }).build()) : shape(file)).services.map((s) => s.metadata!.name);
    expect(names("vllm-pd-builtin-router")).toEqual(["qwen-chat-prefill", "qwen-chat-decode"]);
    expect(names("x")).toEqual(["x-server", "x-server-r0", "x-server-r1", "x-server-r2"]);
  });

  it("a role at zero replicas keeps its Service and has no pods", () => {
    const bundle = renderDeployment(inputFor(aDeployment().replicas(0).build()));
    expect(bundle.pods).toEqual([]);
    expect(bundle.services.map((s) => s.metadata!.name)).toEqual(["qwen-chat-server"]);
  });
});

describe("router", () => {
  it("none without spec.router", () => {
    expect(renderRouterObjects(shape("vllm-aggregated-tp2-x2"))).toEqual([]);
  });

  it("builtin: `berth router` on 0.0.0.0 with the admin token file, policy and PD style", () => {
    expect(routerArgv("vllm-pd-builtin-router")).toEqual([
      "berth",
      "router",
      "--host",
      "0.0.0.0",
      "--port",
      "8080",
      "--admin-token-file",
      "/etc/berth/router-admin/token",
      "--policy",
      "round_robin",
      "--engine",
      "vllm",
    ]);
    expect(routerArgv("sglang-epd")).toContain("sglang");
    const spec = routerDeployment("vllm-pd-builtin-router").spec!.template.spec!;
    expect(spec.volumes).toContainEqual({ name: "admin-token", secret: { secretName: "qwen-chat-router-admin", items: [{ key: "token", path: "token" }] } });
    expect(spec.containers[0]!.image).toBe(OPTIONS.routerImage);
    expect(spec.containers[0]!.readinessProbe?.httpGet?.path).toBe("/admin/health");
  });

  it("builtin: the admin token Secret is configurable", () => {
    const input = { ...shape("vllm-pd-builtin-router"), options: { ...OPTIONS, routerAdminTokenSecret: { name: "berth-router", key: "admin" } } };
    const deployment = renderRouterObjects(input).find((o) => o.kind === "Deployment") as V1Deployment;
    expect(deployment.spec!.template.spec!.containers[0]!.args).toContain("/etc/berth/router-admin/admin");
    expect(deployment.spec!.template.spec!.volumes).toContainEqual({ name: "admin-token", secret: { secretName: "berth-router", items: [{ key: "admin", path: "admin" }] } });
  });

  it("vllm-router: PD switch, pod discovery by labels, both listeners on 0.0.0.0", () => {
    expect(routerArgv("vllm-pd-vllm-router")).toEqual([
      "vllm-router",
      "--host",
      "0.0.0.0",
      "--port",
      "8080",
      "--policy",
      "cache_aware",
      "--service-discovery",
      "--service-discovery-namespace",
      "berth-default",
      "--service-discovery-port",
      "8000",
      "--vllm-pd-disaggregation",
      "--prefill-selector",
      "berth.dev/deployment-id=dep_0123456789abcdefghjk",
      "berth.dev/role=prefill",
      "berth.dev/serving=true",
      "--decode-selector",
      "berth.dev/deployment-id=dep_0123456789abcdefghjk",
      "berth.dev/role=decode",
      "berth.dev/serving=true",
      "--prometheus-host",
      "0.0.0.0",
    ]);
  });

  it("sglang-gateway (smg): --pd-disaggregation, mapped policy, replicas, and RBAC to watch pods", () => {
    const argv = routerArgv("sglang-pd-gateway");
    expect(argv.slice(0, 7)).toEqual(["smg", "--host", "0.0.0.0", "--port", "8080", "--policy", "power_of_two"]);
    expect(argv).toContain("--pd-disaggregation");
    expect(routerDeployment("sglang-pd-gateway").spec!.replicas).toBe(2);
    const kinds = renderRouterObjects(shape("sglang-pd-gateway")).map((o) => `${o.kind}/${o.metadata!.name}`);
    expect(kinds).toEqual(["ConfigMap/qwen-chat-router", "Deployment/qwen-chat-router", "Service/qwen-chat", "ServiceAccount/qwen-chat-router", "Role/qwen-chat-router", "RoleBinding/qwen-chat-router"]);
    expect(routerDeployment("sglang-pd-gateway").spec!.template.spec!.serviceAccountName).toBe("qwen-chat-router");
  });

  it("an aggregated deployment behind an external router uses one selector", () => {
    const input = inputFor(aDeployment().engine("sglang").router("sglang-gateway").build());
    const deployment = renderRouterObjects(input).find((o) => o.kind === "Deployment") as V1Deployment;
    const args = deployment.spec!.template.spec!.containers[0]!.args!;
    expect(args.slice(args.indexOf("--selector"))).toEqual(["--selector", "berth.dev/deployment-id=dep_0123456789abcdefghjk", "berth.dev/role=server", "berth.dev/serving=true"]);
  });

  it("the router Service carries the deployment's name and the ConfigMap its wiring", () => {
    const objects = renderRouterObjects(shape("vllm-pd-builtin-router"));
    const service = objects.find((o) => o.kind === "Service") as V1Service;
    expect(service.metadata!.name).toBe("qwen-chat");
    expect(service.spec!.ports).toEqual([{ name: "http", port: 8080, targetPort: "http", protocol: "TCP" }]);
    const config = JSON.parse((objects.find((o) => o.kind === "ConfigMap") as V1ConfigMap).data!["router.json"]!);
    expect(config).toMatchObject({ kind: "builtin", policy: "round_robin", engine: "vllm", disaggregated: true });
    expect(config.roles.map((r: { service: string }) => r.service)).toEqual(["qwen-chat-prefill.berth-default.svc.cluster.local", "qwen-chat-decode.berth-default.svc.cluster.local"]);
  });

  it("router replicas do not roll the router; its image, policy or port do", () => {
    const hash = (edit: (input: ReturnType<typeof shape>) => void) => {
      const input = structuredClone(shape("vllm-pd-builtin-router"));
      edit(input);
      return (renderRouterObjects(input).find((o) => o.kind === "Deployment") as V1Deployment).spec!.template.metadata!.labels!["berth.dev/spec-hash"];
    };
    const base = hash(() => {});
    expect(hash((i) => void (i.deployment.spec.router!.replicas = 4))).toBe(base);
    expect(hash((i) => void (i.options.routerImage = "ghcr.io/berth/berth:0.2.0"))).not.toBe(base);
    expect(hash((i) => void (i.deployment.spec.router!.policy = "cache_aware"))).not.toBe(base);
    expect(hash((i) => void (i.options.routerPort = 9000))).not.toBe(base);
  });
});

describe("purity", () => {
  const dir = join(dirname(fileURLToPath(import.meta.url)), "../../../k8s/render");
  it.each(readdirSync(dir).filter((f) => f.endsWith(".ts")))("k8s/render/%s imports only the domain, types and itself", (file) => {
    const source = readFileSync(join(dir, file), "utf8");
    const imports = [...source.matchAll(/^import\s+(type\s+)?[^;]*?from\s+"([^"]+)"/gms)].map((m) => ({ typeOnly: Boolean(m[1]), from: m[2]! }));
    for (const { typeOnly, from } of imports) {
      expect(from, file).not.toMatch(/(^|\/)(db|routes)\//);
      expect(from, file).not.toMatch(/^node:/);
      if (from.startsWith("@kubernetes/")) expect(typeOnly, `${file} imports ${from} at run time`).toBe(true);
      expect(from.startsWith("./") || from.startsWith("../../src/domain/") || from.startsWith("@kubernetes/"), `${file}: ${from}`).toBe(true);
    }
    expect(source).not.toMatch(/Date\.now|new Date\(|Math\.random|crypto\.|process\.env|fetch\(/);
  });
});
