// Turns a bearer token into a Principal: a user API key (bp_…), the installation admin
// token from configuration, or a cluster agent credential (ba_…). Unknown → 401.
import { findActiveApiKeyByHash } from "../../../db/queries/api-keys.ts";
import { findActiveAgentCredentialByHash } from "../../../db/queries/clusters.ts";
import { Unauthorized } from "../../domain/errors.ts";
import { sha256Hex } from "../../domain/ids.ts";
import type { Principal } from "../../domain/principal.ts";
import type { SystemContext } from "../context.ts";

export const ADMIN_TOKEN_KEY_ID = "admin-token";

export async function authenticate({ ctx, input }: { ctx: SystemContext; input: { authorization?: string } }): Promise<Principal> {
  const match = /^Bearer\s+(\S+)\s*$/i.exec(input.authorization ?? "");
  if (!match) {
    throw new Unauthorized("Send an API key as 'Authorization: Bearer <key>'.");
  }
  const token = match[1]!;
  const hash = await sha256Hex(token);
  if (ctx.config.adminToken && hash === (await sha256Hex(ctx.config.adminToken))) {
    return { kind: "user", keyId: ADMIN_TOKEN_KEY_ID, role: "admin", projectId: null };
  }
  if (token.startsWith("ba_")) {
    const credential = await findActiveAgentCredentialByHash(ctx.db, hash);
    if (credential) return { kind: "agent", credentialId: credential.id, clusterId: credential.clusterId };
  } else {
    const key = await findActiveApiKeyByHash(ctx.db, hash);
    if (key) return { kind: "user", keyId: key.id, role: key.role, projectId: key.projectId };
  }
  throw new Unauthorized("The API key is unknown or revoked.");
}
