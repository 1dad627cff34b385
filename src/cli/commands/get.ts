// berth get NAME|ID: one deployment (a table row, or the API's body with -o json|yaml).
import { unwrap } from "../../../clients/typescript/src/index.ts";
import { deploymentAddress, dropResourceWord } from "../user/deployment-address.ts";
import { DEPLOYMENT_COLUMNS, deploymentRow, renderTable } from "../user/format.ts";
import { COMMON_HELP, openSession, parseCommand, usageError } from "../user/session.ts";

const USAGE = `usage: berth get [deployment] NAME|ID [--project ID] [-o table|json|yaml]

${COMMON_HELP}`;

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(args, {}, USAGE);
  const rest = dropResourceWord(positionals);
  if (rest.length !== 1) throw usageError("get needs one deployment name or id", USAGE);
  const session = openSession(values);
  const deployment = await unwrap(session.client.GET("/v1/deployments/{idOrName}", { params: deploymentAddress(session, rest[0]!) }));
  if (session.output === "table") process.stdout.write(renderTable(DEPLOYMENT_COLUMNS, [deploymentRow(deployment)]));
  else session.printBody(deployment);
}
