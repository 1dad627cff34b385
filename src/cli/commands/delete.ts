// berth delete NAME|ID: 204 = removed now; 202 = an agent removes its objects first.
import { BerthApiError, etagOf } from "../../../clients/typescript/src/index.ts";
import { deploymentAddress, dropResourceWord } from "../user/deployment-address.ts";
import { COMMON_HELP, openSession, parseCommand, usageError } from "../user/session.ts";

const USAGE = `usage: berth delete [deployment] NAME|ID [--if-match ETAG] [--project ID] [-o table|json|yaml]

${COMMON_HELP}`;

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(args, { "if-match": { type: "string" } }, USAGE);
  const rest = dropResourceWord(positionals);
  if (rest.length !== 1) throw usageError("delete needs one deployment name or id", USAGE);
  const session = openSession(values);
  const address = deploymentAddress(session, rest[0]!);
  const ifMatch = values["if-match"];
  const { data, error, response } = await session.client.DELETE("/v1/deployments/{idOrName}", {
    params: { ...address, header: ifMatch === undefined ? {} : { "if-match": ifMatch } },
  });
  if (!response.ok) throw new BerthApiError(response, error);
  if (response.status === 202 && data) {
    if (session.output !== "table") session.printBody(data);
    session.say(`deployment/${data.name} deleting (an agent is removing its objects; etag ${etagOf(response) ?? `"${data.resourceVersion}"`})`);
  } else {
    session.say(`deployment/${rest[0]} deleted`);
  }
}
