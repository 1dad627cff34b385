// Request and response shapes of the non-deployment resources, and the envelopes every
// resource shares (lists, problems). These zod schemas are also the OpenAPI components.
import { z } from "zod";
import { strictObject } from "./deployment-spec.ts";
import { LIMITS, boundedInt, counter, id, text, timestamp } from "./limits.ts";
import { KEY_ROLES } from "./principal.ts";

export const ProjectName = z
  .string()
  .min(1)
  .max(57)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, "must be a DNS-1123 label: lower-case letters, digits and '-', starting and ending with a letter or digit")
  .describe("DNS-1123 label of at most 57 characters; the project's namespace in a cluster is berth-<name>.");

const MaxGpus = boundedInt(0, 1_000_000)
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
    id: id().describe("prj_…"),
    name: ProjectName,
    maxGpus: MaxGpus.optional(),
    allowCustomCommands: AllowCustomCommands,
    namespace: z.string().max(63).regex(/^[a-z0-9-]+$/).describe("The Kubernetes namespace of this project in every cluster."),
    resourceVersion: counter(),
    createdAt: timestamp(),
    updatedAt: timestamp(),
  })
  .meta({ id: "Project" });
export type Project = z.infer<typeof Project>;

export const ApiKeyCreate = strictObject({
    name: z.string().min(1).max(128).describe("What the key is for; shown in lists."),
    role: z.enum(KEY_ROLES).describe("viewer reads; editor also writes deployments; admin also manages projects and keys."),
    projectId: id()
      .optional()
      .describe("Bind the key to one project. A project-bound caller's keys are always bound to its project."),
  })
  .meta({ id: "ApiKeyCreate" });

export const ApiKey = z
  .object({
    id: id().describe("key_…"),
    name: text(128),
    role: z.enum(KEY_ROLES),
    projectId: id().nullable().describe("null for an installation-wide key"),
    prefix: z.string().max(32).regex(/^[A-Za-z0-9_]+$/).describe("The first characters of the token, to recognise it; the token itself is never shown again."),
    revokedAt: timestamp().nullable(),
    createdAt: timestamp(),
    updatedAt: timestamp(),
  })
  .meta({ id: "ApiKey" });
export type ApiKey = z.infer<typeof ApiKey>;

export const ApiKeyCreated = ApiKey.extend({
  token: z.string().max(LIMITS.token).regex(/^bp_[A-Za-z0-9_-]+$/).describe("The bearer token (bp_…). Shown only in this answer; store it now."),
}).meta({ id: "ApiKeyCreated" });

export const ProblemError = z
  .object({
    pointer: text(LIMITS.shortText).optional().describe("RFC 6901 JSON pointer into the request body"),
    parameter: text(LIMITS.name).optional().describe("The query or path parameter at fault"),
    header: text(LIMITS.name).optional().describe("The header at fault"),
    message: text(),
  })
  .meta({ id: "ProblemError" });

/** The most field errors one problem lists (a body may be wrong in more places; the first ones are named). */
export const PROBLEM_ERRORS_MAX = 256;

export const Problem = z
  .object({
    type: z.string().max(LIMITS.url).describe("A URI naming the kind of problem").meta({ format: "uri-reference" }),
    title: text(LIMITS.shortText),
    status: boundedInt(400, 599),
    detail: text(),
    instance: text(LIMITS.name).describe("The request id (also in X-Request-Id)"),
    errors: z.array(ProblemError).max(PROBLEM_ERRORS_MAX).optional(),
  })
  .catchall(z.unknown())
  .meta({ id: "Problem", description: "RFC 9457 problem details" });

export function listOf<T extends z.ZodType>(item: T, id: string) {
  return z
    .object({
      items: z.array(item).max(LIMITS.page),
      nextCursor: z.string().max(LIMITS.token).nullable().describe("Pass as ?cursor= for the next page; null on the last page."),
    })
    .meta({ id });
}

export const ListQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).meta({ format: "int32" }).default(50).describe("Page size, 1–200"),
  cursor: z.string().max(512).optional().describe("nextCursor of the previous page"),
});
