// The ModelDeployment resource as clients see it, and the bodies of its write verbs.
// The spec and status shapes themselves live in deployment-spec.ts.
import { z } from "zod";
import {
  DeploymentLabels,
  DeploymentName,
  DeploymentSpec,
  DeploymentSpecInput,
  DeploymentStatus,
  strictObject,
} from "./deployment-spec.ts";
import { LIMITS, counter, id, timestamp } from "./limits.ts";

const ProjectIdField = z
  .string()
  .max(64)
  .describe("The project; implied by a project-bound key, required with an installation-wide key.");

export const DeploymentCreate = strictObject({
    name: DeploymentName,
    projectId: ProjectIdField.optional(),
    labels: DeploymentLabels.optional(),
    spec: DeploymentSpecInput,
  })
  .meta({ id: "DeploymentCreate" });
export type DeploymentCreate = z.infer<typeof DeploymentCreate>;

export const DeploymentReplace = strictObject({
    name: DeploymentName.optional().describe("If given, must equal the current name (names are immutable)."),
    projectId: ProjectIdField.optional().describe("If given, must equal the current project."),
    labels: DeploymentLabels.optional().describe("Replaces every label; absent = no labels."),
    spec: DeploymentSpecInput,
  })
  .meta({ id: "DeploymentReplace" });
export type DeploymentReplace = z.infer<typeof DeploymentReplace>;

/** Deeper than any spec field; a deeper patch is refused before the (recursive) merge runs. */
const MAX_PATCH_DEPTH = 32;

/** How deeply objects and arrays nest in a JSON value (a scalar is 0), counted without recursion. */
function nestingDepth(value: unknown): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (typeof current !== "object" || current === null) continue;
    deepest = Math.max(deepest, depth + 1);
    if (deepest > MAX_PATCH_DEPTH) return deepest;
    for (const child of Object.values(current)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** A merge patch: only its outer shape is checked here; the merged spec is validated in full. */
export const DeploymentPatch = strictObject({
    spec: z
      .record(z.string().max(LIMITS.text), z.unknown())
      .refine((patch) => nestingDepth(patch) <= MAX_PATCH_DEPTH, {
        error: `is nested more than ${MAX_PATCH_DEPTH} levels deep; no spec field lies that deep`,
      })
      .optional()
      .describe("RFC 7396 merge patch applied to the stored (defaulted) spec"),
    labels: z
      .record(z.string().max(LIMITS.text), z.string().max(LIMITS.text).nullable())
      .optional()
      .describe("RFC 7396 merge patch on labels; null removes a label"),
  })
  .meta({ id: "DeploymentPatch" });
export type DeploymentPatch = z.infer<typeof DeploymentPatch>;

export const Deployment = z
  .object({
    id: id().describe("dep_…"),
    name: z.string().max(LIMITS.name),
    projectId: z.string().max(LIMITS.id),
    labels: z.record(z.string().max(LIMITS.text), z.string().max(LIMITS.text)),
    generation: counter().describe("Increases on every spec change"),
    resourceVersion: counter().describe("Increases on every change, spec or status; the ETag"),
    createdAt: timestamp(),
    updatedAt: timestamp(),
    spec: DeploymentSpec,
    status: DeploymentStatus,
  })
  .meta({ id: "Deployment" });
export type Deployment = z.infer<typeof Deployment>;

export const AdmissionWarnings = z
  .array(z.string().max(LIMITS.text))
  .max(LIMITS.mapEntries)
  .describe("Admitted with reservations (an image tag naming no release, a known engine failure the spec matches); also sent as `Warning: 299` headers. Absent when there are none.");

export const DeploymentWritten = Deployment.extend({ warnings: AdmissionWarnings.optional() }).meta({ id: "DeploymentWritten" });
