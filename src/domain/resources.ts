// Request and response shapes of the non-deployment resources, and the envelopes every
// resource shares (lists, problems). These zod schemas are also the OpenAPI components.
import { z } from "zod";
import { strictObject } from "./deployment-spec.ts";
import { KEY_ROLES } from "./principal.ts";

export const ProjectName = z
  .string()
  .min(1)
  .max(57)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit")
  .describe("DNS-1123 label of at most 57 characters; the project's namespace in a cluster is berth-<name>.");

const MaxGpus = z
  .number()
  .int()
  .min(0)
  .max(1_000_000)
  .describe("GPU quota: the most GPUs all of the project's deployments may request together. Absent = no quota.");

const AllowCustomCommands = z
  .boolean()
  .describe(
    "Whether the project's editors may set a role's `command` (the take-over tier). Default false: only an installation-wide admin key may then write a deployment with a new or changed command. Only an installation admin may set it.",
  );

export const ProjectCreate = strictObject({ name: ProjectName, maxGpus: MaxGpus.optional(), allowCustomCommands: AllowCustomCommands.optional() })
  .meta({ id: "ProjectCreate" });

export const ProjectPatch = strictObject({
  maxGpus: MaxGpus.nullable().optional().describe("A number sets the quota; null removes it."),
  allowCustomCommands: AllowCustomCommands.optional(),
})
  .meta({ id: "ProjectPatch" });

export const Project = z
  .object({
    id: z.string().describe("prj_…"),
    name: z.string(),
    maxGpus: z.number().int().optional(),
    allowCustomCommands: AllowCustomCommands,
    namespace: z.string().describe("The Kubernetes namespace of this project in every cluster."),
    resourceVersion: z.number().int(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .meta({ id: "Project" });
export type Project = z.infer<typeof Project>;

export const ApiKeyCreate = strictObject({
    name: z.string().min(1).max(128).describe("What the key is for; shown in lists."),
    role: z.enum(KEY_ROLES).describe("viewer reads; editor also writes deployments; admin also manages projects and keys."),
    projectId: z
      .string()
      .max(64)
      .optional()
      .describe("Bind the key to one project. A project-bound caller's keys are always bound to its project."),
  })
  .meta({ id: "ApiKeyCreate" });

export const ApiKey = z
  .object({
    id: z.string().describe("key_…"),
    name: z.string(),
    role: z.enum(KEY_ROLES),
    projectId: z.string().nullable().describe("null for an installation-wide key"),
    prefix: z.string().describe("The first characters of the token, to recognise it; the token itself is never shown again."),
    revokedAt: z.string().datetime().nullable(),
    createdAt: z.string().datetime(),
    updatedAt: z.string().datetime(),
  })
  .meta({ id: "ApiKey" });
export type ApiKey = z.infer<typeof ApiKey>;

export const ApiKeyCreated = ApiKey.extend({
  token: z.string().describe("The bearer token (bp_…). Shown only in this answer; store it now."),
}).meta({ id: "ApiKeyCreated" });

export const ProblemError = z
  .object({
    pointer: z.string().optional().describe("RFC 6901 JSON pointer into the request body"),
    parameter: z.string().optional().describe("The query or path parameter at fault"),
    header: z.string().optional().describe("The header at fault"),
    message: z.string(),
  })
  .meta({ id: "ProblemError" });

export const Problem = z
  .object({
    type: z.string().describe("A URI naming the kind of problem"),
    title: z.string(),
    status: z.number().int(),
    detail: z.string(),
    instance: z.string().describe("The request id (also in X-Request-Id)"),
    errors: z.array(ProblemError).optional(),
  })
  .catchall(z.unknown())
  .meta({ id: "Problem", description: "RFC 9457 problem details" });

export function listOf<T extends z.ZodType>(item: T, id: string) {
  return z
    .object({
      items: z.array(item),
      nextCursor: z.string().nullable().describe("Pass as ?cursor= for the next page; null on the last page."),
    })
    .meta({ id });
}

export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50).describe("Page size, 1–200"),
  cursor: z.string().max(512).optional().describe("nextCursor of the previous page"),
});
