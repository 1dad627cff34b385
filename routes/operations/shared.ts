// Parameters shared by the operation routes (user and agent side).
import { z } from "zod";
import { OPERATION_KINDS, OPERATION_PHASES } from "../../src/domain/operations.ts";
import { ListQuery } from "../../src/domain/resources.ts";

export const OperationParams = z.object({
  id: z.string().max(64).meta({ param: { name: "id", in: "path" }, description: "op_…" }),
});

export const OperationFilterQuery = ListQuery.extend({
  deploymentId: z.string().max(64).optional().describe("Only this deployment's operations"),
  kind: z.enum(OPERATION_KINDS).optional().describe("Only operations of this kind"),
  phase: z
    .preprocess(
      (phase) => (phase === undefined || Array.isArray(phase) ? phase : [phase]),
      z.array(z.enum(OPERATION_PHASES)).max(5).optional(),
    )
    .describe("Only operations in this phase; repeat for several (phase=Pending&phase=Running)"),
});

export const ETagHeader = { ETag: { description: 'The resource version, quoted: "<resourceVersion>"', schema: { type: "string" as const, maxLength: 32, pattern: '^"[0-9]+"$' } } };

export const base = { tags: ["Operations"] };
