// Who a request is: the admin token, static users, ServiceAccount tokens and when they die (pure
// apart from the random token; the clock and the ServiceAccount look-up are passed in).
import { describe, expect, it } from "vitest";
import { ADMIN, Authenticator, expirationOf } from "../../../k8s/sim/authn.ts";
import { ApiError, type KubeObject } from "../../../k8s/sim/objects.ts";

const account = (uid: string): KubeObject => ({ metadata: { namespace: "berth-system", name: "berth-agent", uid } });

function setup(adminToken?: string) {
  let now = 1_000_000;
  const accounts = new Map<string, KubeObject>([["berth-system/berth-agent", account("uid-1")]]);
  const authenticator = new Authenticator(adminToken, [{ token: "alice-token", username: "alice", groups: ["team-a"] }], (ns, name) => accounts.get(`${ns}/${name}`), () => now);
  return { authenticator, accounts, advance: (ms: number) => (now += ms) };
}

const unauthorized = (run: () => unknown) => {
  try {
    run();
  } catch (error) {
    return error instanceof ApiError && error.code === 401 && error.reason === "Unauthorized";
  }
  return false;
};

describe("Authenticator", () => {
  it("an open cluster: no credentials is the superuser, an unknown token is 401", () => {
    const { authenticator } = setup();
    expect(authenticator.authenticate(undefined)).toEqual(ADMIN);
    expect(unauthorized(() => authenticator.authenticate("Bearer nope"))).toBe(true);
    expect(unauthorized(() => authenticator.authenticate("Basic YTpi"))).toBe(true);
  });

  it("with an admin token: it is system:masters, no credentials is 401", () => {
    const { authenticator } = setup("root");
    expect(authenticator.authenticate("Bearer root")).toEqual(ADMIN);
    expect(unauthorized(() => authenticator.authenticate(undefined))).toBe(true);
  });

  it("a static user has its groups and system:authenticated", () => {
    expect(setup().authenticator.authenticate("Bearer alice-token")).toEqual({ username: "alice", groups: ["team-a", "system:authenticated"] });
  });

  it("a ServiceAccount token is the account until it expires", () => {
    const { authenticator, advance } = setup();
    const issued = authenticator.issue(account("uid-1"), { spec: { expirationSeconds: 600 } });
    const token = (issued.status as { token: string }).token;
    expect(issued.spec).toEqual({ audiences: [], expirationSeconds: 600, boundObjectRef: null });
    expect(authenticator.authenticate(`Bearer ${token}`)).toEqual({
      username: "system:serviceaccount:berth-system:berth-agent",
      uid: "uid-1",
      groups: ["system:serviceaccounts", "system:serviceaccounts:berth-system", "system:authenticated"],
    });
    advance(599_999);
    expect(authenticator.authenticate(`Bearer ${token}`).username).toBe("system:serviceaccount:berth-system:berth-agent");
    advance(1);
    expect(unauthorized(() => authenticator.authenticate(`Bearer ${token}`))).toBe(true);
  });

  it("a ServiceAccount token dies with its account, and a new account of the same name does not revive it", () => {
    const { authenticator, accounts } = setup();
    const token = (authenticator.issue(account("uid-1"), {}).status as { token: string }).token;
    accounts.set("berth-system/berth-agent", account("uid-2"));
    expect(unauthorized(() => authenticator.authenticate(`Bearer ${token}`))).toBe(true);
    accounts.delete("berth-system/berth-agent");
    expect(unauthorized(() => authenticator.authenticate(`Bearer ${token}`))).toBe(true);
  });
});

describe("expirationOf", () => {
  it.each<[unknown, number | string]>([
    [{}, 3600],
    [{ spec: { expirationSeconds: 600 } }, 600],
    [{ spec: { expirationSeconds: 86_400 } }, 86_400],
    [{ spec: { expirationSeconds: 599 } }, 'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes'],
    [{ spec: { expirationSeconds: "1h" } }, 'TokenRequest.authentication.k8s.io "" is invalid: spec.expirationSeconds: Invalid value: "1h": may not specify a duration less than 10 minutes'],
  ])("%j → %s", (body, expected) => {
    if (typeof expected === "number") expect(expirationOf(body)).toBe(expected);
    else expect(() => expirationOf(body)).toThrow(expected);
  });
});
