// berth login: check a key against the API, then save the URL and key (mode 0600).
import { createBerthClient, unwrap } from "../../../clients/typescript/src/index.ts";
import { configPath, writeSavedConfig } from "../user/config-file.ts";
import { fetchNamingUrl, parseCommand, usageError } from "../user/session.ts";

const USAGE = `usage: berth login --url URL --token KEY [--project ID]

Checks the key against the API and saves URL, key (and default project) to
$XDG_CONFIG_HOME/berth/config.json (else ~/.config/berth/config.json), mode 0600.`;

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(args, {}, USAGE);
  if (positionals.length > 0) throw usageError(`unexpected argument "${positionals[0]}"`, USAGE);
  if (!values.url || !values.token) throw usageError("login needs --url and --token", USAGE);
  const url = values.url.replace(/\/+$/, "");
  const client = createBerthClient({ baseUrl: url, token: values.token, fetch: fetchNamingUrl(url) });
  // Any user key may list deployments: a cheap check that the URL and the key both work.
  await unwrap(client.GET("/v1/deployments", { params: { query: { limit: 1, ...(values.project ? { projectId: values.project } : {}) } } }));
  const path = configPath(process.env);
  writeSavedConfig(path, { url, token: values.token, ...(values.project ? { project: values.project } : {}) });
  process.stdout.write(`logged in to ${url}; saved to ${path}\n`);
}
