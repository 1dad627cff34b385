// Issues a user API key. The token is returned once and only its SHA-256 is stored.
// A project admin can issue keys for its own project only; an installation admin, any.
import type { z } from "zod";
import type { Db } from "../../../db/client.ts";
import { insertApiKey } from "../../../db/queries/api-keys.ts";
import { findProjectById } from "../../../db/queries/projects.ts";
import { Forbidden, InvalidSpec } from "../../domain/errors.ts";
import { newId, newToken, sha256Hex } from "../../domain/ids.ts";
import { requireUser, type KeyRole } from "../../domain/principal.ts";
import type { ApiKeyCreate, ApiKeyCreated } from "../../domain/resources.ts";
import type { ServiceContext } from "../context.ts";
import { toApiKey } from "./api-key-view.ts";

const PREFIX_LENGTH = 10;

export async function createApiKey({
  ctx,
  input,
}: {
  ctx: ServiceContext;
  input: z.infer<typeof ApiKeyCreate>;
}): Promise<z.infer<typeof ApiKeyCreated>> {
  const user = requireUser(ctx.principal, "admin");
  let projectId = input.projectId ?? null;
  if (user.projectId !== null) {
    if (projectId !== null && projectId !== user.projectId) {
      throw new Forbidden(`This key is bound to project "${user.projectId}"; it can only issue keys for that project.`);
    }
    projectId = user.projectId;
  }
  if (projectId !== null && !(await findProjectById(ctx.db, projectId))) {
    throw new InvalidSpec("The key names a project that does not exist.", [
      { pointer: "/projectId", message: `no project with id "${projectId}"; list projects with GET /v1/projects` },
    ]);
  }
  return issueApiKey(ctx.db, ctx.clock.now(), { name: input.name, role: input.role, projectId });
}

/** Creates the key row and returns it with its one-time token (also used by bootstrap). */
export async function issueApiKey(
  db: Db,
  now: Date,
  key: { name: string; role: KeyRole; projectId: string | null },
): Promise<z.infer<typeof ApiKeyCreated>> {
  const token = newToken("bp");
  const row = await insertApiKey(db, {
    id: newId("apiKey"),
    name: key.name,
    role: key.role,
    projectId: key.projectId,
    tokenPrefix: token.slice(0, PREFIX_LENGTH),
    tokenHash: await sha256Hex(token),
    createdAt: now,
    updatedAt: now,
  });
  return { ...toApiKey(row), token };
}
