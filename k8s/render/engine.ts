// What one engine file renders for one pod (its command, args, env, ports), and the facts
// about the pod's place in its instance that both engine files share.
import type { V1ContainerPort, V1EnvVar, V1Volume, V1VolumeMount } from "@kubernetes/client-node";
import type { DeploymentSpec, Role } from "../../src/domain/deployment-spec.ts";
import { isGroup } from "./names.ts";
import type { ResolvedOptions } from "./types.ts";

export interface EngineContext {
  spec: DeploymentSpec;
  role: Role;
  deploymentName: string;
  namespace: string;
  replica: number;
  /** Index in the instance: 0 leads; an elastic role's member is its DP rank. */
  member: number;
  options: ResolvedOptions;
  /** The model argument: a Hugging Face repository, a path in the mounted claim, or a URI. */
  model: string;
}

export interface EnginePlan {
  command: string[];
  /** berth's arguments; the role's extraArgs are appended after them when `acceptsExtraArgs`. */
  args: string[];
  acceptsExtraArgs: boolean;
  /** Variables berth owns for this pod (the user cannot replace them). */
  env: V1EnvVar[];
  /** Variables berth suggests; a user variable of the same name replaces them. */
  defaultEnv: V1EnvVar[];
  ports: V1ContainerPort[];
  /** Answers the OpenAI API on the engine port: probes, drain hook, role Service, router discovery. */
  serves: boolean;
  /**
   * How readiness and liveness probe once the startup probe saw `/health` answer: `/health`, or a
   * TCP connect where `/health` answers 503 by design (an elastic leader for the whole of a resize,
   * while it keeps serving: dropping it from the Service then would refuse clients it could serve).
   */
  steadyProbe: "http" | "tcp";
  annotations: Record<string, string>;
  volumes: { volume: V1Volume; mount: V1VolumeMount }[];
}

/** Kubernetes expands `$(NAME)` in command and args from the container's env (docs/design.md §9: the process kubelet too). */
export const envRef = (name: string) => `$(${name})`;
export const LEADER_ADDRESS = envRef("BERTH_LEADER_ADDRESS");
export const POD_IP = envRef("BERTH_POD_IP");

export const podIpEnv = (name: string): V1EnvVar => ({ name, valueFrom: { fieldRef: { fieldPath: "status.podIP" } } });

export function httpPort(ctx: EngineContext): V1ContainerPort {
  return { name: "http", containerPort: ctx.options.enginePort, protocol: "TCP" };
}

/** A multi-pod instance whose members each run their own API server (external DP). */
export function everyMemberServes(role: Role): boolean {
  return role.parallelism.externalDP && !role.elastic && role.size > 1 && role.parallelism.data > 1;
}

export function isLeader(ctx: EngineContext): boolean {
  return ctx.member === 0;
}

export { isGroup };
