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

/** A merge patch: only its outer shape is checked here; the merged spec is validated in full. */
export const DeploymentPatch = strictObject({
    spec: z.record(z.string(), z.unknown()).optional().describe("RFC 7396 merge patch applied to the stored (defaulted) spec"),
    labels: z
      .record(z.string(), z.string().nullable())
      .optional()
      .describe("RFC 7396 merge patch on labels; null removes a label"),
  })
  .meta({ id: "DeploymentPatch" });
export type DeploymentPatch = z.infer<typeof DeploymentPatch>;

export const Deployment = z
  .object({
    id: z.string().describe("dep_…"),
    name: z.string(),
    projectId: z.string(),
    labels: z.record(z.string(), z.string()),
    generation: z.number().int().describe("Increases on every spec change"),
    resourceVersion: z.number().int().describe("Increases on every change, spec or status; the ETag"),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
    spec: DeploymentSpec,
    status: DeploymentStatus,
  })
  .meta({ id: "Deployment" });
export type Deployment = z.infer<typeof Deployment>;
