// Who may read the API's /metrics (docs/design.md §14.7): everyone when no token is configured
// (the NetworkPolicy of deploy/api decides who reaches the port), else only a caller presenting
// `Authorization: Bearer <token>`. Both sides are hashed first, so the comparison always runs
// over 32 bytes: its time tells nothing about the token's length or its first matching bytes.

export type MetricsAccess = "allowed" | "missing" | "wrong";

export async function metricsAccess(authorization: string | undefined, token: string | undefined): Promise<MetricsAccess> {
  if (token === undefined) return "allowed";
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? "");
  if (!match) return "missing";
  return (await constantTimeEqual(match[1]!, token)) ? "allowed" : "wrong";
}

/** Whether two strings are equal, in time that depends on neither (SHA-256 of each, then every byte compared). */
export async function constantTimeEqual(a: string, b: string): Promise<boolean> {
  const [x, y] = await Promise.all([digest(a), digest(b)]);
  let difference = 0;
  for (let i = 0; i < x.length; i++) difference |= x[i]! ^ y[i]!;
  return difference === 0;
}

async function digest(value: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(value)));
}
