// The event registry (docs/design.md §10): every type berth emits, the envelope every event
// shares, and the payload of each type. These schemas also describe the OpenAPI
// `webhooks` section, so a receiver can generate types for what it is sent.
import { z } from "zod";

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
    keyId: z.string().optional().describe("The API key (user) or agent credential (agent) used"),
  })
  .meta({ id: "Actor" });
export type Actor = z.infer<typeof Actor>;

export const DeploymentSummary = z
  .object({
    id: z.string(),
    name: z.string(),
    projectId: z.string(),
    generation: z.number().int(),
    resourceVersion: z.number().int(),
    phase: z.string(),
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
    previousPhase: z.string(),
    message: z.string().optional().describe("Why, as the agent reported it"),
  })
  .meta({ id: "DeploymentPhaseData" });

export const DeploymentRequestSummary = z
  .object({
    id: z.string().describe("dreq_…"),
    name: z.string(),
    projectId: z.string(),
    phase: z.string(),
    resourceVersion: z.number().int(),
  })
  .meta({ id: "DeploymentRequestSummary" });
export type DeploymentRequestSummary = z.infer<typeof DeploymentRequestSummary>;

export const RequestReadyData = z
  .object({
    request: DeploymentRequestSummary,
    candidates: z.number().int().describe("Feasible shapes found"),
    best: z.object({ gpus: z.number().int(), why: z.string() }).describe("The first candidate"),
    actor: Actor,
  })
  .meta({ id: "RequestReadyData" });

export const RequestFailedData = z
  .object({
    request: DeploymentRequestSummary,
    reason: z.string(),
    closest: z.object({ shortfall: z.string() }).optional().describe("The nearest shape's shortfall"),
    actor: Actor,
  })
  .meta({ id: "RequestFailedData" });

export const RequestDeployedData = z
  .object({
    request: DeploymentRequestSummary,
    deploymentId: z.string(),
    candidate: z.number().int().describe("Rank of the applied candidate"),
    actor: Actor,
  })
  .meta({ id: "RequestDeployedData" });

export const WebhookRef = z
  .object({
    id: z.string().describe("whk_…"),
    url: z.string(),
    projectId: z.string().optional().describe("Absent for an installation-wide endpoint"),
  })
  .meta({ id: "WebhookRef" });

export const WebhookDisabledData = z
  .object({
    webhook: WebhookRef,
    reason: z.enum(["gone", "failing"]).describe("gone: the receiver answered 410; failing: every attempt failed for 3 days"),
    failingSince: z.string().datetime().optional(),
    lastAttempt: z
      .object({ statusCode: z.number().int().optional(), error: z.string().optional() })
      .describe("The attempt that disabled it"),
  })
  .meta({ id: "WebhookDisabledData" });

export const WebhookTestData = z
  .object({ webhook: WebhookRef, message: z.string() })
  .meta({ id: "WebhookTestData" });

export const OperationSummary = z
  .object({
    id: z.string().describe("op_…"),
    kind: z.enum(["retire", "resize", "restart"]),
    deploymentId: z.string(),
    role: z.string(),
    replica: z.number().int().optional(),
    phase: z.string(),
    step: z.string(),
  })
  .meta({ id: "OperationSummary" });
export type OperationSummary = z.infer<typeof OperationSummary>;

export const OperationEventData = z
  .object({
    operation: OperationSummary,
    deployment: DeploymentSummary,
    actor: Actor,
    phase: z.enum(["Failed", "Aborted"]).optional().describe("operation.failed only: how it ended"),
    params: z.record(z.string(), z.unknown()).optional(),
    result: z.record(z.string(), z.unknown()).optional().describe("operation.succeeded: what it achieved"),
    error: z.object({ reason: z.string(), message: z.string() }).optional().describe("operation.failed: why"),
  })
  .meta({ id: "OperationEventData" });

export const ReplicaRetirementData = z
  .object({
    deployment: DeploymentSummary,
    role: z.string(),
    replica: z.number().int().optional().describe("The replica index"),
    operationId: z.string().optional().describe("The retire operation (absent when an agent reported it without one)"),
    actor: Actor,
  })
  .meta({ id: "ReplicaRetirementData" });

export const ScaledSignal = z
  .object({ name: z.string(), value: z.number(), unit: z.string(), observedAt: z.string() })
  .meta({ id: "ScaledSignal" });

export const DeploymentScaledData = z
  .object({
    deployment: DeploymentSummary,
    actor: Actor.describe("autoscaler for an applied change (the replicas PATCH), agent for a shadow recommendation"),
    role: z.string(),
    from: z.number().int().describe("Replicas before (shadow: the current replicas)"),
    to: z.number().int().describe("Replicas after (shadow: the recommendation, not applied)"),
    mode: z.enum(["shadow", "active"]).describe("active: the autoscaler changed the spec; shadow: it only recommended"),
    reason: z.string().describe("Why, as a CamelCase word, e.g. QueueDepth"),
    message: z.string().optional().describe("Why, in words"),
    signals: z.array(ScaledSignal).describe("What the decision rested on"),
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
  "deployment.resized": z.record(z.string(), z.unknown()),
  "replica.retiring": ReplicaRetirementData,
  "replica.retired": ReplicaRetirementData,
  "operation.started": OperationEventData,
  "operation.succeeded": OperationEventData,
  "operation.failed": OperationEventData,
  "cluster.connected": z.record(z.string(), z.unknown()),
  "cluster.disconnected": z.record(z.string(), z.unknown()),
  "cluster.deleted": z.record(z.string(), z.unknown()),
  "request.ready": RequestReadyData,
  "request.deployed": RequestDeployedData,
  "request.failed": RequestFailedData,
  "webhook.disabled": WebhookDisabledData,
  "webhook.test": WebhookTestData,
};

export const Event = z
  .object({
    seq: z.number().int().describe("Global, increasing; resume a stream after it"),
    id: z.string().describe("evt_…; also the webhook-id of its deliveries"),
    type: EventTypeSchema,
    occurredAt: z.string().datetime(),
    projectId: z.string().nullable().describe("null for installation-wide events (clusters)"),
    deploymentId: z.string().optional(),
    data: z.record(z.string(), z.unknown()),
  })
  .meta({ id: "Event" });
export type Event = z.infer<typeof Event>;

/** Phases whose entry is an event of its own. */
export const PHASE_EVENTS: Partial<Record<string, EventType>> = {
  Ready: "deployment.ready",
  Degraded: "deployment.degraded",
  Failed: "deployment.failed",
};
