// `berth agent rotate-credential --api URL --token ba_…`: issues the agent a new credential and
// prints it. The old one keeps working for the overlap window (BERTH_AGENT_CREDENTIAL_OVERLAP_SECONDS
// on the API, default 10 min): store the new one where the agent reads it (its Secret) and
// restart the agent within that window.
import { rotateAgentCredential } from "../agent/api-client.ts";
import { parseCommandArgs, UsageError } from "./args.ts";

export const ROTATE_USAGE = `usage: berth agent rotate-credential --api URL --token ba_…

Prints a new agent credential for the cluster of --token (BERTH_API_URL and BERTH_AGENT_TOKEN
also work). The current credential keeps working until the time printed on stderr: store the
new one in the agent's Secret and restart the agent before then.`;

export async function runAgentRotate(args: string[]): Promise<number> {
  const { values } = parseCommandArgs(args, {
    name: "berth agent rotate-credential",
    usage: ROTATE_USAGE,
    options: { api: { type: "string" }, token: { type: "string" } },
  });
  const api = values.api ?? process.env.BERTH_API_URL;
  const token = values.token ?? process.env.BERTH_AGENT_TOKEN;
  if (!api || !token) throw new UsageError("--api URL and --token are required", ROTATE_USAGE);
  if (!/^https?:\/\//.test(api)) throw new UsageError(`--api must be an http:// or https:// URL (got "${api}")`, ROTATE_USAGE);
  const rotated = await rotateAgentCredential(api, token);
  process.stdout.write(`${rotated.token}\n`);
  process.stderr.write(`new credential for cluster ${rotated.clusterId}; the previous one stops working at ${rotated.previousExpiresAt}\n`);
  return 0;
}
