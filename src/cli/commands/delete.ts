// berth delete NAME|ID: 204 = removed now; 202 = an agent removes its objects first
// (--wait: until the record is gone).
import { BerthApiError, etagOf } from "../../../clients/typescript/src/index.ts";
import { deploymentAddress, dropResourceWord } from "../user/deployment-address.ts";
import { COMMON_HELP, openSession, parseCommand, usageError } from "../user/session.ts";
import { parseTimeout, WAIT_HELP, WAIT_OPTIONS, waitForDeployment } from "../user/wait.ts";

const USAGE = `usage: berth delete [deployment] NAME|ID [--if-match ETAG] [--wait [--timeout T]] [--project ID] [-o table|json|yaml]

${WAIT_HELP}

${COMMON_HELP}`;

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(args, { "if-match": { type: "string" }, ...WAIT_OPTIONS }, USAGE);
  const rest = dropResourceWord(positionals);
  if (rest.length !== 1) throw usageError("delete needs one deployment name or id", USAGE);
  if (values.timeout !== undefined && !values.wait) throw usageError("--timeout goes with --wait", USAGE);
  const timeoutMs = parseTimeout(values.timeout);
  const session = openSession(values);
  const address = deploymentAddress(session, rest[0]!);
  const ifMatch = values["if-match"];
  const { data, error, response } = await session.client.DELETE("/v1/deployments/{idOrName}", {
    params: { ...address, header: ifMatch === undefined ? {} : { "if-match": ifMatch } },
  });
  if (!response.ok) throw new BerthApiError(response, error);
  if (response.status === 202 && data) {
    if (session.output !== "table") session.printBody(data);
    if (!values.wait) {
      session.say(`deployment/${data.name} deleting (an agent is removing its objects; etag ${etagOf(response) ?? `"${data.resourceVersion}"`})`);
      return;
    }
    await waitForDeployment(session, data, "gone", timeoutMs);
    session.say(`deployment/${data.name} deleted`);
  } else {
    session.say(`deployment/${rest[0]} deleted`);
  }
}
