// berth scale DEPLOYMENT ROLE=N…: a merge patch of the roles' replicas with If-Match.
// Merge patches replace arrays, so the patch carries every role as read, with only the
// named roles' replicas changed; if the deployment changed in between (412, e.g. the
// agent's status write), it reads again and retries once.
import { BerthApiError, etagOf, unwrap, type Deployment } from "../../../clients/typescript/src/index.ts";
import { deploymentAddress } from "../user/deployment-address.ts";
import { COMMON_HELP, CliError, openSession, parseCommand, usageError } from "../user/session.ts";

const USAGE = `usage: berth scale DEPLOYMENT ROLE=REPLICAS [ROLE=REPLICAS…] [--project ID] [-o table|json|yaml]

${COMMON_HELP}`;

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(args, {}, USAGE);
  const [target, ...assignments] = positionals;
  if (!target || assignments.length === 0) throw usageError("scale needs a deployment and at least one ROLE=REPLICAS", USAGE);
  const wanted = new Map<string, number>();
  for (const assignment of assignments) {
    const match = /^([^=]+)=(\d+)$/.exec(assignment);
    if (!match) throw usageError(`"${assignment}" is not ROLE=REPLICAS`, USAGE);
    wanted.set(match[1]!, Number(match[2]));
  }
  const session = openSession(values);
  const { client } = session;
  const address = deploymentAddress(session, target);
  for (let attempt = 1; ; attempt++) {
    const read = await client.GET("/v1/deployments/{idOrName}", { params: address });
    const current = await unwrap(read);
    const unknown = [...wanted.keys()].filter((name) => !current.spec.roles.some((role) => role.name === name));
    if (unknown.length > 0) {
      throw new CliError(`deployment ${current.name} has no role ${unknown.map((n) => `"${n}"`).join(", ")} (its roles: ${current.spec.roles.map((r) => r.name).join(", ")})`);
    }
    const roles = current.spec.roles.map((role) => (wanted.has(role.name) ? { ...role, replicas: wanted.get(role.name)! } : role));
    const changes = changedReplicas(current, roles);
    if (changes.length === 0) {
      if (session.output !== "table") session.printBody(current);
      session.say(`deployment/${current.name} unchanged`);
      return;
    }
    const patched = await client.PATCH("/v1/deployments/{idOrName}", {
      params: { path: { idOrName: current.id }, header: { "if-match": etagOf(read.response) } },
      headers: { "Content-Type": "application/merge-patch+json" },
      body: { spec: { roles } },
    });
    if (patched.response.status === 412 && attempt === 1) {
      process.stderr.write(`berth: ${current.name} changed since it was read; reading it again\n`);
      continue;
    }
    if (!patched.response.ok) throw new BerthApiError(patched.response, patched.error);
    const after = patched.data!;
    if (session.output !== "table") session.printBody(after);
    session.say(`deployment/${after.name} scaled: ${changes.join(", ")}`);
    return;
  }
}

function changedReplicas(current: Deployment, roles: Deployment["spec"]["roles"]): string[] {
  return roles.flatMap((role, i) => {
    const before = current.spec.roles[i]!.replicas;
    return before === role.replicas ? [] : [`${role.name} ${before} -> ${role.replicas}`];
  });
}
