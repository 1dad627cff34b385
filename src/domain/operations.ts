// Operations (docs/design.md §3.3): long-running work on one role or replica of a deployment —
// retire, resize, restart — persisted so a restarted agent resumes it. Phases only move
// forward (Pending → Running → a terminal phase); terminal phases are final.
import { z } from "zod";
import { strictObject } from "./deployment-spec.ts";
import { LIMITS, boundedInt, counter, id, timestamp } from "./limits.ts";

export const OPERATION_KINDS = ["retire", "resize", "restart"] as const;
export type OperationKind = (typeof OPERATION_KINDS)[number];

export const OPERATION_PHASES = ["Pending", "Running", "Succeeded", "Failed", "Aborted"] as const;
export type OperationPhase = (typeof OPERATION_PHASES)[number];

export const ACTIVE_OPERATION_PHASES = ["Pending", "Running"] as const satisfies readonly OperationPhase[];
export const TERMINAL_OPERATION_PHASES = ["Succeeded", "Failed", "Aborted"] as const satisfies readonly OperationPhase[];

/** The phases each phase may move to (staying in a non-terminal phase is always allowed). */
export const OPERATION_TRANSITIONS: Record<OperationPhase, readonly OperationPhase[]> = {
  Pending: ["Pending", "Running", "Failed", "Aborted"],
  Running: ["Running", "Succeeded", "Failed", "Aborted"],
  Succeeded: [],
  Failed: [],
  Aborted: [],
};

export function isTerminalPhase(phase: string): boolean {
  return (TERMINAL_OPERATION_PHASES as readonly string[]).includes(phase);
}

const STEP = /^[A-Z][A-Za-z0-9]*$/;

export const OperationKindSchema = z
  .enum(OPERATION_KINDS)
  .describe("retire: remove one replica through the drain protocol; resize: change an elastic role's DP width; restart: replace a replica's pods.");
export const OperationPhaseSchema = z.enum(OPERATION_PHASES).describe("Pending → Running → Succeeded | Failed | Aborted; terminal phases are final.");

const StepName = z
  .string()
  .min(1)
  .max(64)
  .regex(STEP, { error: "must be a CamelCase word such as Draining" })
  .describe("The protocol step, in CamelCase: retire goes Withdrawing → Draining → Deleting → Settling; resize e.g. AdmittingPods → Joining → Scaling → Verifying → UpdatingRouter.");

export const OperationStep = strictObject({
  name: StepName,
  startedAt: timestamp().describe("When the step began."),
  finishedAt: timestamp().describe("When it ended; absent while it runs.").optional(),
}).meta({ id: "OperationStep" });
export type OperationStep = z.infer<typeof OperationStep>;

export const OperationProgress = strictObject({
  current: z.number().min(0).max(1e12).describe("Where the step stands, e.g. 3 ranks joined, or 5 requests still in flight."),
  target: z.number().min(0).max(1e12).describe("Where it ends, e.g. 4 ranks, or 0 requests in flight.").optional(),
  unit: z.string().min(1).max(64).describe("What current and target count, e.g. `ranks`, `requests`, `pods`."),
}).meta({ id: "OperationProgress" });

export const OperationError = strictObject({
  reason: z.string().min(1).max(128).regex(STEP, { error: "must be a CamelCase word such as DrainBudgetExceeded" }).describe("Machine-readable cause in CamelCase, e.g. `DrainBudgetExceeded`."),
  message: z.string().max(32768).describe("What went wrong and what was kept (an aborted retirement keeps the replica)."),
}).meta({ id: "OperationError" });

const Params = z.record(z.string().max(LIMITS.text), z.unknown()).describe("The operation's inputs, e.g. `{ fromWidth, toWidth }` for a resize.");
const Result = z.record(z.string().max(LIMITS.text), z.unknown()).describe("What the operation achieved, e.g. `{ width: 4 }`.");

export const Operation = z
  .object({
    id: id().describe("op_…"),
    kind: OperationKindSchema,
    deploymentId: z.string().max(LIMITS.id),
    projectId: z.string().max(LIMITS.id),
    role: z.string().max(LIMITS.name).describe("The role it works on."),
    replica: counter().optional().describe("The replica index it works on (retire, restart); absent for a whole role (resize)."),
    phase: OperationPhaseSchema,
    step: z.string().max(LIMITS.text).describe("The current protocol step."),
    params: Params.optional(),
    steps: z.array(OperationStep).describe("Every step so far, oldest first; the last one is open while the operation runs."),
    message: z.string().max(LIMITS.text).describe("What is happening now, for people."),
    progress: OperationProgress.optional(),
    startedAt: timestamp().describe("When the operation was recorded."),
    finishedAt: timestamp().optional().describe("When it entered a terminal phase (set by the server)."),
    result: Result.optional(),
    error: OperationError.optional(),
    resourceVersion: counter(),
    createdAt: timestamp(),
    updatedAt: timestamp(),
  })
  .meta({ id: "Operation" });
export type Operation = z.infer<typeof Operation>;

export const AgentOperationCreate = strictObject({
  kind: OperationKindSchema,
  deploymentId: z.string().max(64).describe("A deployment of the agent's cluster."),
  role: z.string().min(1).max(63).describe("A role of that deployment."),
  replica: boundedInt(0, 1_000_000).describe("The replica index (retire, restart).").optional(),
  params: Params.optional(),
  phase: z.enum(ACTIVE_OPERATION_PHASES).describe("Pending, or Running when work has already begun; defaults to Pending.").optional(),
  step: StepName,
  message: z.string().max(32768).describe("What is happening now; defaults to empty.").optional(),
}).meta({ id: "AgentOperationCreate" });
export type AgentOperationCreate = z.infer<typeof AgentOperationCreate>;

export const AgentOperationPatch = strictObject({
  phase: OperationPhaseSchema.optional(),
  step: StepName.optional(),
  steps: z
    .array(OperationStep)
    .max(256)
    .describe("Replaces the step history; without it the server closes the open step and opens a new one whenever `step` changes.")
    .optional(),
  message: z.string().max(32768).optional(),
  progress: OperationProgress.nullable().describe("null removes it.").optional(),
  result: Result.nullable().describe("null removes it.").optional(),
  error: OperationError.nullable().describe("null removes it.").optional(),
}).meta({ id: "AgentOperationPatch" });
export type AgentOperationPatch = z.infer<typeof AgentOperationPatch>;

export const ResizeRequest = strictObject({
  width: boundedInt(1, 1024).describe("The new data-parallel width (ranks): 2..elastic.maxWidth, not the current one."),
}).meta({ id: "ResizeRequest" });
export type ResizeRequest = z.infer<typeof ResizeRequest>;
