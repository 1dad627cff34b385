// The event registry (docs/design.md §10): every type berth emits, the envelope every event
// shares, and the payload of each type. These schemas also describe the OpenAPI
// `webhooks` section, so a receiver can generate types for what it is sent.
import { z } from "zod";
import { LIMITS, boundedInt, counter, id, timestamp } from "./limits.ts";

export const EVENT_TYPES = [
  "deployment.created",
  "deployment.updated",
  "deployment.deleted",
  "deployment.ready",
  "deployment.degraded",
  "deployment.failed",
  "deployment.scaled",
  "deployment.resized",
  "replica.retiring",
  "replica.retired",
  "operation.started",
  "operation.succeeded",
  "operation.failed",
  "cluster.connected",
  "cluster.disconnected",
  "cluster.deleted",
  "request.ready",
  "request.deployed",
  "request.failed",
  "webhook.disabled",
  "webhook.test",
] as const;
export type EventType = (typeof EVENT_TYPES)[number];
export const EventTypeSchema = z.enum(EVENT_TYPES).meta({ id: "EventType" });

/** Types a webhook endpoint may subscribe to: all but `webhook.test`, which only the test verb sends. */
export const SUBSCRIBABLE_EVENT_TYPES = EVENT_TYPES.filter((type) => type !== "webhook.test");

export const Actor = z
  .object({
    kind: z.enum(["user", "agent", "autoscaler", "system"]).describe("Who made the change"),
    keyId: z.string().max(LIMITS.id).optional().describe("The API key (user) or agent credential (agent) used"),
  })
  .meta({ id: "Actor" });
export type Actor = z.infer<typeof Actor>;

export const DeploymentSummary = z
  .object({
    id: id(),
    name: z.string().max(LIMITS.name),
    projectId: z.string().max(LIMITS.id),
    generation: counter(),
    resourceVersion: counter(),
    phase: z.string().max(LIMITS.name),
  })
  .meta({ id: "DeploymentSummary" });
export type DeploymentSummary = z.infer<typeof DeploymentSummary>;

export const DeploymentChangedData = z
  .object({
    deployment: DeploymentSummary,
    actor: Actor,
    specChanged: z.boolean().describe("Whether the spec (and so generation) changed"),
    labelsChanged: z.boolean(),
    deletionRequested: z.boolean().optional().describe("true when this change is a user's request to delete"),
  })
  .meta({ id: "DeploymentChangedData" });

export const DeploymentLifecycleData = z
  .object({ deployment: DeploymentSummary, actor: Actor.optional() })
  .meta({ id: "DeploymentLifecycleData" });

export const DeploymentPhaseData = z
  .object({
    deployment: DeploymentSummary,
    previousPhase: z.string().max(LIMITS.text),
    message: z.string().max(LIMITS.text).optional().describe("Why, as the agent reported it"),
  })
  .meta({ id: "DeploymentPhaseData" });

export const DeploymentRequestSummary = z
  .object({
    id: id().describe("dreq_…"),
    name: z.string().max(LIMITS.name),
    projectId: z.string().max(LIMITS.id),
    phase: z.string().max(LIMITS.name),
    resourceVersion: counter(),
  })
  .meta({ id: "DeploymentRequestSummary" });
export type DeploymentRequestSummary = z.infer<typeof DeploymentRequestSummary>;

export const RequestReadyData = z
  .object({
    request: DeploymentRequestSummary,
    candidates: counter().describe("Feasible shapes found"),
    best: z.object({ gpus: counter(), why: z.string().max(LIMITS.text) }).describe("The first candidate"),
    actor: Actor,
  })
  .meta({ id: "RequestReadyData" });

export const RequestFailedData = z
  .object({
    request: DeploymentRequestSummary,
    reason: z.string().max(LIMITS.text),
    closest: z.object({ shortfall: z.string().max(LIMITS.text) }).optional().describe("The nearest shape's shortfall"),
    actor: Actor,
  })
  .meta({ id: "RequestFailedData" });

export const RequestDeployedData = z
  .object({
    request: DeploymentRequestSummary,
    deploymentId: z.string().max(LIMITS.id),
    candidate: counter().describe("Rank of the applied candidate"),
    actor: Actor,
  })
  .meta({ id: "RequestDeployedData" });

export const WebhookRef = z
  .object({
    id: id().describe("whk_…"),
    url: z.string().max(LIMITS.url),
    projectId: z.string().max(LIMITS.id).optional().describe("Absent for an installation-wide endpoint"),
  })
  .meta({ id: "WebhookRef" });

export const WebhookDisabledData = z
  .object({
    webhook: WebhookRef,
    reason: z.enum(["gone", "failing"]).describe("gone: the receiver answered 410; failing: every attempt failed for 3 days"),
    failingSince: timestamp().optional(),
    lastAttempt: z
      .object({ statusCode: boundedInt(100, 599).optional(), error: z.string().max(LIMITS.text).optional() })
      .describe("The attempt that disabled it"),
  })
  .meta({ id: "WebhookDisabledData" });

export const WebhookTestData = z
  .object({ webhook: WebhookRef, message: z.string().max(LIMITS.text) })
  .meta({ id: "WebhookTestData" });

export const OperationSummary = z
  .object({
    id: id().describe("op_…"),
    kind: z.enum(["retire", "resize", "restart"]),
    deploymentId: z.string().max(LIMITS.id),
    role: z.string().max(LIMITS.name),
    replica: counter().optional(),
    phase: z.string().max(LIMITS.name),
    step: z.string().max(LIMITS.text),
  })
  .meta({ id: "OperationSummary" });
export type OperationSummary = z.infer<typeof OperationSummary>;

export const OperationEventData = z
  .object({
    operation: OperationSummary,
    deployment: DeploymentSummary,
    actor: Actor,
    phase: z.enum(["Failed", "Aborted"]).optional().describe("operation.failed only: how it ended"),
    params: z.record(z.string().max(LIMITS.text), z.unknown()).optional(),
    result: z.record(z.string().max(LIMITS.text), z.unknown()).optional().describe("operation.succeeded: what it achieved"),
    error: z.object({ reason: z.string().max(LIMITS.text), message: z.string().max(LIMITS.text) }).optional().describe("operation.failed: why"),
  })
  .meta({ id: "OperationEventData" });

export const ReplicaRetirementData = z
  .object({
    deployment: DeploymentSummary,
    role: z.string().max(LIMITS.name),
    replica: counter().optional().describe("The replica index"),
    operationId: z.string().max(LIMITS.id).optional().describe("The retire operation (absent when an agent reported it without one)"),
    actor: Actor,
  })
  .meta({ id: "ReplicaRetirementData" });

export const ScaledSignal = z
  .object({ name: z.string().max(LIMITS.name), value: z.number(), unit: z.string().max(LIMITS.name), observedAt: timestamp() })
  .meta({ id: "ScaledSignal" });

export const DeploymentScaledData = z
  .object({
    deployment: DeploymentSummary,
    actor: Actor.describe("autoscaler for an applied change (the replicas PATCH), agent for a shadow recommendation"),
    role: z.string().max(LIMITS.name),
    from: counter().describe("Replicas before (shadow: the current replicas)"),
    to: counter().describe("Replicas after (shadow: the recommendation, not applied)"),
    mode: z.enum(["shadow", "active"]).describe("active: the autoscaler changed the spec; shadow: it only recommended"),
    reason: z.string().max(LIMITS.text).describe("Why, as a CamelCase word, e.g. QueueDepth"),
    message: z.string().max(LIMITS.text).optional().describe("Why, in words"),
    signals: z.array(ScaledSignal).max(64).describe("What the decision rested on"),
  })
  .meta({ id: "DeploymentScaledData" });

/** The payload of each type; types whose producer is not built yet carry a free-form object. */
export const EVENT_DATA: Record<EventType, z.ZodType> = {
  "deployment.created": DeploymentLifecycleData,
  "deployment.updated": DeploymentChangedData,
  "deployment.deleted": DeploymentLifecycleData,
  "deployment.ready": DeploymentPhaseData,
  "deployment.degraded": DeploymentPhaseData,
  "deployment.failed": DeploymentPhaseData,
  "deployment.scaled": DeploymentScaledData,
  "deployment.resized": z.record(z.string().max(LIMITS.text), z.unknown()),
  "replica.retiring": ReplicaRetirementData,
  "replica.retired": ReplicaRetirementData,
  "operation.started": OperationEventData,
  "operation.succeeded": OperationEventData,
  "operation.failed": OperationEventData,
  "cluster.connected": z.record(z.string().max(LIMITS.text), z.unknown()),
  "cluster.disconnected": z.record(z.string().max(LIMITS.text), z.unknown()),
  "cluster.deleted": z.record(z.string().max(LIMITS.text), z.unknown()),
  "request.ready": RequestReadyData,
  "request.deployed": RequestDeployedData,
  "request.failed": RequestFailedData,
  "webhook.disabled": WebhookDisabledData,
  "webhook.test": WebhookTestData,
};

export const Event = z
  .object({
    seq: counter().describe("Global, increasing; resume a stream after it"),
    id: id().describe("evt_…; also the webhook-id of its deliveries"),
    type: EventTypeSchema,
    occurredAt: timestamp(),
    projectId: z.string().max(LIMITS.id).nullable().describe("null for installation-wide events (clusters)"),
    deploymentId: z.string().max(LIMITS.id).optional(),
    data: z.record(z.string().max(LIMITS.text), z.unknown()),
  })
  .meta({ id: "Event" });
export type Event = z.infer<typeof Event>;

/** Phases whose entry is an event of its own. */
export const PHASE_EVENTS: Partial<Record<string, EventType>> = {
  Ready: "deployment.ready",
  Degraded: "deployment.degraded",
  Failed: "deployment.failed",
};
