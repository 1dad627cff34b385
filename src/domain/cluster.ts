// Clusters and the agent protocol's bodies (docs/design.md §4): heartbeat inventory, the
// desired-state answer, and agent-side events.
import { z } from "zod";
import { Deployment } from "./deployment.ts";
import { ScalingSignal, strictObject } from "./deployment-spec.ts";
import { LIMITS, boundedInt, counter, id, timestamp } from "./limits.ts";

export const InventoryNode = strictObject({
  name: z.string().min(1).max(253),
  gpuType: z.string().max(64).optional().describe("e.g. nvidia-h100-80gb; absent on nodes without GPUs"),
  gpuCapacity: boundedInt(0, 4096),
  gpuAllocatable: boundedInt(0, 4096),
  gpuFree: boundedInt(0, 4096).describe("Allocatable GPUs no pod holds"),
}).meta({ id: "InventoryNode" });

export const Inventory = strictObject({
  nodes: z.array(InventoryNode).max(5000),
  podScope: strictObject({ namespaces: z.array(z.string().min(1).max(63)).min(1).max(1000) })
    .optional()
    .describe(
      "Present when the agent runs in namespaced mode: gpuFree subtracts only the pods of these namespaces (the only ones it may list), so it over-counts GPUs that other tenants' pods hold on shared nodes",
    ),
}).meta({ id: "Inventory" });
export type Inventory = z.infer<typeof Inventory>;

export const Heartbeat = strictObject({
  agentVersion: z.string().min(1).max(64),
  inventory: Inventory,
}).meta({ id: "Heartbeat" });
export type Heartbeat = z.infer<typeof Heartbeat>;

export const ClusterPhase = z.enum(["Pending", "Connected", "Disconnected"]);

export const Cluster = z
  .object({
    id: id(),
    name: z.string().max(LIMITS.name),
    status: z.object({
      phase: ClusterPhase.describe("Pending until the first heartbeat; Disconnected after 30 s without one"),
      lastHeartbeatAt: timestamp().nullable(),
      agentVersion: z.string().max(LIMITS.text).nullable(),
    }),
    inventory: Inventory.nullable().describe("The last inventory the agent reported; null until then"),
    resourceVersion: counter(),
    createdAt: timestamp(),
    updatedAt: timestamp(),
  })
  .meta({ id: "Cluster" });
export type Cluster = z.infer<typeof Cluster>;

export const DesiredState = z
  .object({
    resourceVersion: counter().describe("Pass as ?since= on the next call"),
    items: z.array(
      z.object({
        deployment: Deployment,
        projectName: z.string().max(LIMITS.text).describe("The deployment's project name; its namespace is `berth-<projectName>`"),
        deleting: z.boolean().describe("A user asked to delete it: remove every object, then confirm"),
      }),
    ),
    deleted: z
      .array(z.object({ id: z.string().max(LIMITS.id), name: z.string().max(LIMITS.name), projectId: z.string().max(LIMITS.id), resourceVersion: counter() }))
      .describe("Deployments removed since `since` (tombstones)"),
  })
  .meta({ id: "DesiredState" });
export type DesiredState = z.infer<typeof DesiredState>;

/** What an agent may report into the event log. */
export const AGENT_EVENT_TYPES = ["replica.retiring", "replica.retired", "deployment.scaled", "deployment.resized"] as const;

export const AgentEvent = strictObject({
  type: z.enum(AGENT_EVENT_TYPES),
  deploymentId: z.string().max(64),
  data: z
    .record(z.string().max(LIMITS.text), z.unknown())
    .default({})
    .describe("At most 16 KiB as JSON, nested at most 8 levels, 512 keys in all; no `__proto__`, `constructor` or `prototype` keys."),
}).meta({ id: "AgentEvent" });
export type AgentEvent = z.infer<typeof AgentEvent>;

/**
 * The data of an agent-posted `deployment.scaled`: a shadow recommendation (the autoscaler
 * did not apply it). Applied changes are recorded by the autoscaler's replicas PATCH itself.
 */
export const AgentScaledData = strictObject({
  role: z.string().min(1).max(63).describe("A role of the deployment."),
  from: boundedInt(0, 1_000_000).describe("Replicas now."),
  to: boundedInt(0, 1_000_000).describe("Replicas recommended."),
  mode: z.enum(["shadow", "active"]).describe("Must be shadow here: active changes are recorded by the replicas PATCH."),
  reason: z.string().min(1).max(128).describe("Why, as a CamelCase word, e.g. `QueueDepth`."),
  message: z.string().max(4096).describe("Why, in words.").optional(),
  signals: z.array(ScalingSignal).max(64).default([]).describe("What the recommendation rests on."),
}).meta({ id: "AgentScaledData" });
export type AgentScaledData = z.infer<typeof AgentScaledData>;
