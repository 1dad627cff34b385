// Turns a bearer token into a Principal: a user API key (bp_…), the installation admin
// token from configuration, or a cluster agent credential (ba_…). Unknown → 401.
import { findActiveApiKeyByHash } from "../../../db/queries/api-keys.ts";
import { findActiveAgentCredentialByHash } from "../../../db/queries/clusters.ts";
import { Unauthorized } from "../../domain/errors.ts";
import { sha256Hex } from "../../domain/ids.ts";
import type { Principal } from "../../domain/principal.ts";
import type { SystemContext } from "../context.ts";

export const ADMIN_TOKEN_KEY_ID = "admin-token";
export const UNKNOWN_KEY = "The API key is unknown or revoked.";

/** The token of an `Authorization: Bearer <token>` header, or undefined when there is none. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "")?.[1];
}

export async function authenticate({ ctx, input }: { ctx: SystemContext; input: { authorization?: string } }): Promise<Principal> {
  const token = bearerToken(input.authorization);
  if (!token) {
    throw new Unauthorized("Send an API key as 'Authorization: Bearer <key>'.");
  }
  const now = ctx.clock.now();
  const cached = ctx.principals?.get(token, now);
  if (cached) return cached;
  const principal = await lookUpPrincipal(ctx, token);
  if (!principal) throw new Unauthorized(UNKNOWN_KEY);
  ctx.principals?.set(token, principal, now);
  return principal;
}

async function lookUpPrincipal(ctx: SystemContext, token: string): Promise<Principal | undefined> {
  const hash = await sha256Hex(token);
  if (ctx.config.adminToken && hash === (await adminTokenHash(ctx.config.adminToken))) {
    return { kind: "user", keyId: ADMIN_TOKEN_KEY_ID, role: "admin", projectId: null };
  }
  if (token.startsWith("ba_")) {
    const credential = await findActiveAgentCredentialByHash(ctx.db, hash);
    return credential && { kind: "agent", credentialId: credential.id, clusterId: credential.clusterId };
  }
  const key = await findActiveApiKeyByHash(ctx.db, hash);
  return key && { kind: "user", keyId: key.id, role: key.role, projectId: key.projectId };
}

/** The admin token's hash, computed once per configured token rather than per request. */
const adminHashes = new Map<string, Promise<string>>();
function adminTokenHash(token: string): Promise<string> {
  let hash = adminHashes.get(token);
  if (!hash) adminHashes.set(token, (hash = sha256Hex(token)));
  return hash;
}
