// Who a request is (authentication). The cluster's admin token is the superuser
// (`system:masters`); static user tokens name a user and groups; ServiceAccount tokens come from
// the `serviceaccounts/<name>/token` subresource (TokenRequest, what `kubectl create token`
// calls) and are opaque random strings, not JWTs: only this server reads them. A token dies at
// its expiry or when its ServiceAccount is gone (a new one of the same name has another uid).
// A request without credentials on a cluster without an admin token is the superuser too, so an
// open loopback cluster stays fully open; a credential that is not known is 401, as from
// kube-apiserver, never a silent fall back to anonymous.
import { errors, fieldError, type KubeObject } from "./objects.ts";

export interface UserInfo {
  username: string;
  uid?: string;
  groups: string[];
}

export const MASTERS = "system:masters";
export const AUTHENTICATED = "system:authenticated";

export const ADMIN: UserInfo = { username: "system:admin", groups: [MASTERS, AUTHENTICATED] };

/** A user the cluster knows by a static token (`SimClusterOptions.users`). */
export interface StaticUser {
  token: string;
  username: string;
  groups?: string[];
}

interface IssuedToken {
  namespace: string;
  name: string;
  /** The ServiceAccount's uid when the token was issued. */
  uid: string;
  expiresAt: number;
}

/** kube-apiserver's bounds for expirationSeconds: at least 10 minutes; 1 hour when absent. */
export const MIN_EXPIRATION_SECONDS = 600;
export const DEFAULT_EXPIRATION_SECONDS = 3600;

export const serviceAccountUser = (namespace: string, name: string, uid?: string): UserInfo => ({
  username: `system:serviceaccount:${namespace}:${name}`,
  ...(uid && { uid }),
  groups: ["system:serviceaccounts", `system:serviceaccounts:${namespace}`, AUTHENTICATED],
});

/** The validated `spec.expirationSeconds` of a TokenRequest body (pure). */
export function expirationOf(body: unknown): number {
  const spec = ((body as Record<string, any> | null)?.spec ?? {}) as Record<string, unknown>;
  const seconds = spec.expirationSeconds ?? DEFAULT_EXPIRATION_SECONDS;
  if (typeof seconds !== "number" || !Number.isInteger(seconds) || seconds < MIN_EXPIRATION_SECONDS) {
    // The TokenRequest object has no name of its own: kube-apiserver says `TokenRequest.authentication.k8s.io "" is invalid`.
    throw errors.invalid({ resource: "tokenrequests", group: "authentication.k8s.io", kind: "TokenRequest" }, "", [
      fieldError.invalid("spec.expirationSeconds", seconds, `may not specify a duration less than ${MIN_EXPIRATION_SECONDS / 60} minutes`),
    ]);
  }
  return seconds;
}

export class Authenticator {
  readonly #issued = new Map<string, IssuedToken>();
  readonly #users: Map<string, UserInfo>;

  constructor(
    private readonly adminToken: string | undefined,
    users: readonly StaticUser[],
    /** The ServiceAccount as stored now, to check a token's account still exists. */
    private readonly findServiceAccount: (namespace: string, name: string) => KubeObject | undefined,
    private readonly now: () => number = Date.now,
  ) {
    this.#users = new Map(users.map((u) => [u.token, { username: u.username, groups: [...new Set([...(u.groups ?? []), AUTHENTICATED])] }]));
  }

  /** The identity behind an `Authorization` header; throws 401 for one that is not known. */
  authenticate(authorization: string | undefined): UserInfo {
    if (!authorization) {
      if (this.adminToken) throw errors.unauthorized();
      return ADMIN;
    }
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    if (!match) throw errors.unauthorized();
    const token = match[1]!;
    if (this.adminToken && token === this.adminToken) return ADMIN;
    const user = this.#users.get(token);
    if (user) return user;
    const issued = this.#issued.get(token);
    if (!issued) throw errors.unauthorized();
    const account = this.findServiceAccount(issued.namespace, issued.name);
    if (this.now() >= issued.expiresAt || account?.metadata.uid !== issued.uid || account.metadata.deletionTimestamp) {
      this.#issued.delete(token);
      throw errors.unauthorized();
    }
    return serviceAccountUser(issued.namespace, issued.name, issued.uid);
  }

  /** TokenRequest: a new token for the ServiceAccount and the TokenRequest object answered. */
  issue(account: KubeObject, body: unknown): KubeObject {
    const expirationSeconds = expirationOf(body);
    const bytes = crypto.getRandomValues(new Uint8Array(32));
    const token = `berth-sim.${Buffer.from(bytes).toString("base64url")}`;
    const expiresAt = this.now() + expirationSeconds * 1000;
    const { namespace, name, uid } = account.metadata;
    this.#issued.set(token, { namespace: namespace!, name: name!, uid: uid!, expiresAt });
    const spec = ((body as Record<string, any> | null)?.spec ?? {}) as Record<string, unknown>;
    return {
      kind: "TokenRequest",
      apiVersion: "authentication.k8s.io/v1",
      metadata: { name, namespace, creationTimestamp: null as unknown as string },
      spec: { audiences: spec.audiences ?? [], expirationSeconds, boundObjectRef: spec.boundObjectRef ?? null },
      status: { token, expirationTimestamp: new Date(expiresAt).toISOString().replace(/\.\d{3}Z$/, "Z") },
    };
  }
}
