// Parameters shared by the routes of one deployment.
import { z } from "zod";

export const DeploymentPathParams = z.object({
  idOrName: z
    .string()
    .max(128)
    .meta({ param: { name: "idOrName", in: "path" }, description: "Deployment id (dep_…) or name" }),
});

export const ProjectScopeQuery = z.object({
  projectId: z
    .string()
    .max(64)
    .optional()
    .describe("With an installation-wide key, the project in which to look the name up"),
});

export const IfMatchHeaders = z.object({
  "if-match": z.string().max(256).optional().describe('Only apply if the ETag ("<resourceVersion>") still matches'),
});

export const ETagHeader = { ETag: { description: 'The resource version, quoted: "<resourceVersion>"', schema: { type: "string" as const, maxLength: 32, pattern: '^"[0-9]+"$' } } };
