// `berth agent install --print …`: prints the agent's install manifests (k8s/manifests) as
// multi-document YAML with the credential filled in. There is no apply yet; the output is
// meant for `kubectl apply -f -`. Bad flags exit 2 before anything is printed.
import {
  agentInstallYaml,
  DEFAULT_IMAGE,
  DEFAULT_NAMESPACE,
  PLACEHOLDER_TOKEN,
  renderAgentInstall,
} from "../../k8s/manifests/agent-install.ts";
import { isDns1123Label } from "../domain/deployment-spec.ts";
import { parseCommandArgs, reportUsage } from "./args.ts";

export const INSTALL_USAGE = `usage: berth agent install --print --api URL [--token ba_…] [--image IMAGE] [--namespace NS]

Prints the agent's Namespace, ServiceAccount, ClusterRole and binding, credential Secret and
Deployment as YAML. There is no apply yet: pipe it to kubectl apply -f -

  --print           required: write the manifests to stdout
  --api URL         the berth API the agent connects to (http:// or https://)
  --token ba_…      the agent credential (POST /v1/agent/register); without it the Secret
                    holds ${PLACEHOLDER_TOKEN}, to be replaced before applying
  --image IMAGE     default ${DEFAULT_IMAGE}
  --namespace NS    where the agent runs, default ${DEFAULT_NAMESPACE}
`;

export interface Io {
  stdout(text: string): Promise<void>;
  stderr(text: string): void;
}

/** Runs the command and answers its exit code (0, or 2 for bad flags). */
export async function runAgentInstall(args: string[], io: Io): Promise<number> {
  const fail = (message: string) => {
    io.stderr(`berth agent install: ${message}\n${INSTALL_USAGE}`);
    return 2;
  };
  let values;
  try {
    ({ values } = parseCommandArgs(args, {
      name: "berth agent install",
      usage: INSTALL_USAGE,
      options: {
        print: { type: "boolean" },
        api: { type: "string" },
        token: { type: "string" },
        image: { type: "string" },
        namespace: { type: "string" },
      },
    }));
  } catch (error) {
    let written = Promise.resolve();
    const code = reportUsage("berth agent install", error, { stdout: (text) => void (written = io.stdout(text)), stderr: io.stderr });
    if (code === undefined) throw error;
    await written;
    return code;
  }
  if (!values.print) return fail("--print is required (there is no apply yet: pipe the output to kubectl apply -f -)");
  if (values.api === undefined) return fail("--api URL is required");
  if (!isHttpUrl(values.api)) return fail(`--api must be an http:// or https:// URL, got "${values.api}"`);
  if (values.token !== undefined && !/^ba_[A-Za-z0-9]+$/.test(values.token)) {
    return fail("--token must be an agent credential (ba_…, from POST /v1/agent/register), not a user key");
  }
  if (values.image !== undefined && !/^[^\s]+$/.test(values.image)) return fail("--image must be a non-empty image reference without spaces");
  if (values.namespace !== undefined && !isDns1123Label(values.namespace)) {
    return fail(`--namespace must be a DNS-1123 label (lower case letters, digits, '-'; at most 63), got "${values.namespace}"`);
  }
  if (values.token === undefined) {
    io.stderr(`berth agent install: no --token: the Secret holds ${PLACEHOLDER_TOKEN}; replace it before applying\n`);
  }
  const objects = renderAgentInstall({
    apiUrl: values.api,
    token: values.token ?? PLACEHOLDER_TOKEN,
    ...(values.image !== undefined && { image: values.image }),
    ...(values.namespace !== undefined && { namespace: values.namespace }),
  });
  await io.stdout(agentInstallYaml(objects));
  return 0;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (url.protocol === "http:" || url.protocol === "https:") && url.host !== "";
  } catch {
    return false;
  }
}

/** The process's streams; stdout resolves once written, so exiting afterwards loses nothing on a pipe. */
export const processIo: Io = {
  stdout: (text) => new Promise<void>((resolve, reject) => process.stdout.write(text, (error) => (error ? reject(error) : resolve()))),
  stderr: (text) => void process.stderr.write(text),
};
