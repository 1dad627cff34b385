// Shared fixtures for the renderer tests: one admissible deployment per topology, the render
// input around it, and schema validation of every rendered object with kubernetes-models.
import type { V1Pod } from "@kubernetes/client-node";
import { ConfigMap } from "kubernetes-models/v1/ConfigMap";
import { Namespace } from "kubernetes-models/v1/Namespace";
import { PersistentVolumeClaim } from "kubernetes-models/v1/PersistentVolumeClaim";
import { Pod } from "kubernetes-models/v1/Pod";
import { Service } from "kubernetes-models/v1/Service";
import { ServiceAccount } from "kubernetes-models/v1/ServiceAccount";
import { Deployment } from "kubernetes-models/apps/v1/Deployment";
import { Role } from "kubernetes-models/rbac.authorization.k8s.io/v1/Role";
import { RoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1/RoleBinding";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1/NetworkPolicy";
import { admitDeploymentSpec } from "../../../src/domain/admission.ts";
import { applySpecDefaults, type DeploymentSpec } from "../../../src/domain/deployment-spec.ts";
import type { RenderedDeployment, RenderInput, RenderOptions } from "../../../k8s/render/index.ts";
import { aDeployment, type DeploymentBody } from "../../fixtures/deployment-builder.ts";

export const DEPLOYMENT_ID = "dep_0123456789abcdefghjk";
export const OPTIONS: RenderOptions = { routerImage: "ghcr.io/berth/berth:0.1.0" };

export function inputFor(body: DeploymentBody, options: RenderOptions = OPTIONS, projectName = "default"): RenderInput {
  const spec = applySpecDefaults(body.spec);
  const problems = admitDeploymentSpec(body.name, spec, {});
  if (problems.length > 0) throw new Error(`fixture ${body.name} is not admissible: ${JSON.stringify(problems)}`);
  return { deployment: { id: DEPLOYMENT_ID, name: body.name, projectName, spec, generation: 3 }, options };
}

/**
 * A shape admission refuses but the renderer still renders: SGLang EPD (refused until berth runs
 * SGLang's /encode exchange, docs/decisions/0057); its arguments stay covered for that day.
 */
export function refusedInputFor(body: DeploymentBody, reason: RegExp): RenderInput {
  const spec = applySpecDefaults(body.spec);
  const problems = admitDeploymentSpec(body.name, spec, {});
  if (!problems.some((p) => reason.test(p.message))) throw new Error(`fixture ${body.name} is no longer refused for ${reason}: ${JSON.stringify(problems)}`);
  return { deployment: { id: DEPLOYMENT_ID, name: body.name, projectName: "default", spec, generation: 3 }, options: OPTIONS };
}

export function withSpec(input: RenderInput, edit: (spec: DeploymentSpec) => void): RenderInput {
  const copy = structuredClone(input);
  edit(copy.deployment.spec);
  return copy;
}

export interface Shape {
  /** Golden file name (without extension). */
  file: string;
  input: RenderInput;
}

/** One admissible deployment per shape the issue lists (plus a few the code has branches for). */
export const SHAPES: Shape[] = [
  { file: "vllm-aggregated-tp2-x2", input: inputFor(aDeployment().tp(2).replicas(2).build()) },
  {
    file: "vllm-dp4-local2-multihost",
    input: inputFor(
      aDeployment()
        .name("dsv3")
        .role({ name: "server", size: 2, resources: { gpus: 2, gpuType: "nvidia-h100-80gb", sharedMemory: "16Gi" }, parallelism: { tensor: 1, data: 4, dataLocal: 2, expert: true } })
        .build(),
    ),
  },
  {
    file: "vllm-multihost-tp16",
    input: inputFor(aDeployment().name("big").role({ name: "server", size: 2, resources: { gpus: 8 }, parallelism: { tensor: 16 } }).build()),
  },
  {
    file: "vllm-external-dp",
    input: inputFor(
      aDeployment()
        .name("moe")
        .router()
        .role({ name: "server", size: 4, resources: { gpus: 2 }, parallelism: { tensor: 2, data: 4, dataLocal: 1, expert: true, externalDP: true } })
        .build(),
    ),
  },
  {
    file: "vllm-hybrid-dp",
    input: inputFor(
      aDeployment()
        .name("moe")
        .router()
        .role({ name: "server", size: 2, resources: { gpus: 2 }, parallelism: { tensor: 1, data: 4, dataLocal: 2, expert: true, externalDP: true } })
        .build(),
    ),
  },
  { file: "vllm-pd-builtin-router", input: inputFor(aDeployment().pd().tp(2).build()) },
  { file: "vllm-pd-vllm-router", input: inputFor(aDeployment().pd().router("vllm-router").spec({ router: { kind: "vllm-router", policy: "cache_aware" } }).build()) },
  { file: "vllm-elastic-ep-w2", input: inputFor(aDeployment().name("dsv2").elastic(2, 8).tp(2).build()) },
  { file: "vllm-epd", input: inputFor(aDeployment().name("vl").epd().spec({ model: { name: "Qwen/Qwen2.5-VL-7B-Instruct" } }).build()) },
  { file: "sglang-aggregated", input: inputFor(aDeployment().engine("sglang").tp(2).build()) },
  {
    file: "sglang-multihost-nnodes2",
    input: inputFor(aDeployment().engine("sglang").name("big").role({ name: "server", size: 2, resources: { gpus: 8 }, parallelism: { tensor: 16 } }).build()),
  },
  {
    file: "sglang-pd-gateway",
    input: inputFor(
      aDeployment()
        .engine("sglang")
        .pd()
        .router("sglang-gateway")
        .spec({ router: { kind: "sglang-gateway", policy: "least_load", replicas: 2 }, kvTransfer: { connector: "mooncake", protocol: "tcp" } })
        .build(),
    ),
  },
  {
    file: "sglang-epd",
    input: refusedInputFor(aDeployment().engine("sglang").name("vl").epd().spec({ model: { name: "Qwen/Qwen3-VL-8B-Instruct" } }).build(), /supported with engine vllm only/),
  },
  {
    file: "command-takeover",
    input: inputFor(
      aDeployment()
        .role({
          name: "server",
          size: 2,
          resources: { gpus: 8 },
          command: ["/bin/sh", "-c", "exec /opt/serve.sh --rank $BERTH_MEMBER_INDEX"],
          env: [{ name: "VLLM_HOST_IP", value: "from-user" }],
          terminationGracePeriodSeconds: 60,
        })
        .build(),
    ),
  },
  {
    file: "hf-token-source",
    input: inputFor(
      aDeployment()
        .spec({
          model: {
            name: "meta-llama/Llama-3.1-8B-Instruct",
            source: { huggingFace: { repository: "meta-llama/Llama-3.1-8B-Instruct", revision: "0e9e39f249a16976918f6564b8830bc894c89659" } },
            hfTokenSecret: { name: "hf", key: "token" },
          },
        })
        .role({ name: "server", resources: { gpus: 1, gpuType: "amd-mi300x-192gb", cpu: "8", memory: "64Gi" }, extraArgs: ["--max-model-len", "8192"], env: [{ name: "VLLM_LOGGING_LEVEL", value: "DEBUG" }] })
        .build(),
    ),
  },
  {
    file: "pvc-source",
    input: inputFor(
      aDeployment()
        .engine("sglang")
        .spec({ model: { name: "qwen3-8b", source: { pvc: { claimName: "weights", path: "/qwen/Qwen3-8B/" } }, hfTokenSecret: { name: "hf", key: "token" } } })
        .build(),
      { ...OPTIONS, enginePort: 8080 },
    ),
  },
];

export function shape(file: string): RenderInput {
  const found = SHAPES.find((s) => s.file === file);
  if (!found) throw new Error(`no shape ${file}`);
  return found.input;
}

/** Every object of a bundle, in a stable order: namespace, NetworkPolicies, claims, Services, pods, router objects. */
export function objectsOf(bundle: RenderedDeployment): { apiVersion?: string; kind?: string; metadata?: { name?: string } }[] {
  return [bundle.namespace, ...bundle.networkPolicies, ...bundle.claims, ...bundle.services, ...bundle.pods, ...bundle.routerObjects];
}

const MODELS: Record<string, new (data: never) => { validate(): void }> = {
  "v1/Namespace": Namespace,
  "v1/Pod": Pod,
  "v1/Service": Service,
  "v1/ConfigMap": ConfigMap,
  "v1/PersistentVolumeClaim": PersistentVolumeClaim,
  "v1/ServiceAccount": ServiceAccount,
  "apps/v1/Deployment": Deployment,
  "rbac.authorization.k8s.io/v1/Role": Role,
  "rbac.authorization.k8s.io/v1/RoleBinding": RoleBinding,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
};

/** Validates against the official OpenAPI schema of its kind; throws with the schema's message. */
export function validateObject(object: { apiVersion?: string; kind?: string }): void {
  const Model = MODELS[`${object.apiVersion}/${object.kind}`];
  if (!Model) throw new Error(`no schema model for ${object.apiVersion}/${object.kind}`);
  new Model(structuredClone(object) as never).validate();
}

/** The engine container's whole argv (command + args), as the kubelet would exec it. */
export function argvOf(pod: V1Pod): string[] {
  const container = pod.spec!.containers[0]!;
  return [...(container.command ?? []), ...(container.args ?? [])];
}

export function envOf(pod: V1Pod): Record<string, unknown> {
  return Object.fromEntries((pod.spec!.containers[0]!.env ?? []).map((e) => [e.name, e.value ?? e.valueFrom]));
}
