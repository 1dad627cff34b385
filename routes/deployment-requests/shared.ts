// Parameters shared by the deployment-request routes.
import { z } from "zod";
import { AdmissionWarnings } from "../../src/domain/deployment.ts";
import { DeploymentRequestResource } from "../../src/domain/deployment-request.ts";

export const RequestParams = z.object({
  id: z.string().max(64).meta({ param: { name: "id", in: "path" }, description: "dreq_…" }),
});

export const ETagHeader = { ETag: { description: 'The resource version, quoted: "<resourceVersion>"', schema: { type: "string" as const, maxLength: 32, pattern: '^"[0-9]+"$' } } };

export const base = { tags: ["Deployment requests"] };

/** A request as a write that may have created its deployment answers it: with admission's warnings. */
export const DeploymentRequestApplied = DeploymentRequestResource.extend({ warnings: AdmissionWarnings.optional() }).meta({ id: "DeploymentRequestApplied" });
