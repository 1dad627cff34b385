// Parameters shared by the deployment-request routes.
import { z } from "zod";

export const RequestParams = z.object({
  id: z.string().max(64).meta({ param: { name: "id", in: "path" }, description: "dreq_…" }),
});

export const ETagHeader = { ETag: { description: 'The resource version, quoted: "<resourceVersion>"', schema: { type: "string" as const } } };

export const base = { tags: ["Deployment requests"] };
