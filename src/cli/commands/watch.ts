// berth watch: follows GET /v1/deployments?watch=true (resuming across disconnects), one
// line per notice until interrupted; -o json prints each notice as one JSON line.
import { stringify as toYaml } from "yaml";
import { COMMON_HELP, openSession, parseCommand, usageError } from "../user/session.ts";

const USAGE = `usage: berth watch [deployments] [--resource-version RV] [--project ID] [-o table|json|yaml]

Without --resource-version the watch starts with every current deployment (ADDED).
Prints one line per notice: TYPE NAME ID PHASE rv=… gen=… (-o json: the notice as one JSON line).

${COMMON_HELP}`;

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(args, { "resource-version": { type: "string" } }, USAGE);
  if (positionals.length > 1 || (positionals.length === 1 && !["deployments", "deployment"].includes(positionals[0]!))) {
    throw usageError(`watch takes no argument but an optional "deployments"`, USAGE);
  }
  const from = values["resource-version"];
  if (from !== undefined && !/^\d+$/.test(from)) throw usageError("--resource-version must be a number", USAGE);
  const session = openSession(values);
  const stop = new AbortController();
  const interrupt = () => stop.abort();
  process.once("SIGINT", interrupt);
  process.once("SIGTERM", interrupt);
  try {
    const notices = session.client.watchDeployments({
      signal: stop.signal,
      ...(from === undefined ? {} : { resourceVersion: Number(from) }),
      ...(session.project === undefined ? {} : { projectId: session.project }),
    });
    for await (const notice of notices) {
      if (session.output === "json") process.stdout.write(JSON.stringify(notice) + "\n");
      else if (session.output === "yaml") process.stdout.write("---\n" + toYaml(notice));
      else {
        const object = notice.object;
        const details = notice.type === "DELETED" ? "" : ` ${notice.object.status.phase} gen=${notice.object.generation}`;
        process.stdout.write(`${notice.type.padEnd(8)} ${object.name} ${object.id}${details} rv=${notice.resourceVersion}\n`);
      }
    }
  } finally {
    process.off("SIGINT", interrupt);
    process.off("SIGTERM", interrupt);
  }
}
