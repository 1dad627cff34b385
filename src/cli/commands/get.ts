// berth get NAME|ID: one deployment (a table row, or the API's body with -o json|yaml);
// --wait prints it once it has settled (Ready at its current generation).
import { unwrap } from "../../../clients/typescript/src/index.ts";
import { deploymentAddress, dropResourceWord } from "../user/deployment-address.ts";
import { DEPLOYMENT_COLUMNS, deploymentRow, renderTable } from "../user/format.ts";
import { COMMON_HELP, openSession, parseCommand, usageError } from "../user/session.ts";
import { parseTimeout, WAIT_HELP, WAIT_OPTIONS, waitForDeployment } from "../user/wait.ts";

const USAGE = `usage: berth get [deployment] NAME|ID [--wait [--timeout T]] [--project ID] [-o table|json|yaml]

${WAIT_HELP}

${COMMON_HELP}`;

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(args, WAIT_OPTIONS, USAGE);
  const rest = dropResourceWord(positionals);
  if (rest.length !== 1) throw usageError("get needs one deployment name or id", USAGE);
  if (values.timeout !== undefined && !values.wait) throw usageError("--timeout goes with --wait", USAGE);
  const timeoutMs = parseTimeout(values.timeout);
  const session = openSession(values);
  let deployment = await unwrap(session.client.GET("/v1/deployments/{idOrName}", { params: deploymentAddress(session, rest[0]!) }));
  if (values.wait) deployment = (await waitForDeployment(session, deployment, "settled", timeoutMs))!;
  if (session.output === "table") process.stdout.write(renderTable(DEPLOYMENT_COLUMNS, [deploymentRow(deployment)]));
  else session.printBody(deployment);
}
