// First start of an empty database: create the `default` project and, unless an
// admin token is configured, one installation-admin key whose token is returned so
// the entry point can print it once. Later starts do nothing.
import { lockBootstrap } from "../../db/queries/bootstrap.ts";
import { countApiKeys } from "../../db/queries/api-keys.ts";
import { findProjectByName, insertProject } from "../../db/queries/projects.ts";
import { newId } from "../domain/ids.ts";
import { issueApiKey } from "./api-keys/create-api-key.ts";
import type { SystemContext } from "./context.ts";

export const DEFAULT_PROJECT = "default";

export async function bootstrapInstallation({ ctx }: { ctx: SystemContext }): Promise<{ adminToken?: string }> {
  return ctx.db.transaction(async (tx) => {
    await lockBootstrap(tx);
    const now = ctx.clock.now();
    const empty = (await countApiKeys(tx)) === 0 && !(await findProjectByName(tx, DEFAULT_PROJECT));
    if (!empty) return {};
    await insertProject(tx, { id: newId("project"), name: DEFAULT_PROJECT, maxGpus: null, allowCustomCommands: false, createdAt: now, updatedAt: now });
    if (ctx.config.adminToken) return {};
    const key = await issueApiKey(tx, now, { name: "bootstrap admin", role: "admin", projectId: null });
    return { adminToken: key.token };
  });
}
