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

/** What an agent hears when its credential no longer works: the way out is a new join token. */
export const REVOKED_CREDENTIAL_DETAIL =
  "The agent credential is unknown, revoked or expired; register the agent again with a new join token (POST /v1/clusters/{id}/join-token).";

export async function authenticate({ ctx, input }: { ctx: SystemContext; input: { authorization?: string } }): Promise<Principal> {
  const token = bearerToken(input.authorization);
  if (!token) {
    throw new Unauthorized("Send an API key as 'Authorization: Bearer <key>'.");
  }
  const now = ctx.clock.now();
  const cached = ctx.principals?.get(token, now);
  if (cached) return cached;
  const found = await lookUpPrincipal(ctx, token, now);
  if (!found) {
    throw new Unauthorized(token.startsWith("ba_") ? REVOKED_CREDENTIAL_DETAIL : UNKNOWN_KEY);
  }
  ctx.principals?.set(token, found.principal, now, found.notAfter);
  return found.principal;
}

async function lookUpPrincipal(ctx: SystemContext, token: string, now: Date): Promise<{ principal: Principal; notAfter?: Date } | undefined> {
  const hash = await sha256Hex(token);
  if (ctx.config.adminToken && hash === (await adminTokenHash(ctx.config.adminToken))) {
    return { principal: { kind: "user", keyId: ADMIN_TOKEN_KEY_ID, role: "admin", projectId: null } };
  }
  if (token.startsWith("ba_")) {
    const credential = await findActiveAgentCredentialByHash(ctx.db, hash, now);
    return (
      credential && {
        principal: { kind: "agent", credentialId: credential.id, clusterId: credential.clusterId },
        notAfter: credential.expiresAt ?? undefined,
      }
    );
  }
  const key = await findActiveApiKeyByHash(ctx.db, hash);
  return key && { principal: { kind: "user", keyId: key.id, role: key.role, projectId: key.projectId } };
}

/** The admin token's hash, computed once per configured token rather than per request. */
const adminHashes = new Map<string, Promise<string>>();
function adminTokenHash(token: string): Promise<string> {
  let hash = adminHashes.get(token);
  if (!hash) adminHashes.set(token, (hash = sha256Hex(token)));
  return hash;
}
