// `berth agent install --print`: a real `berth` process prints multi-document YAML with the
// credential in the Secret, refuses bad flags with exit 2 and prints nothing then, and kubectl
// 1.32 accepts the output against the simulated cluster (a client dry run, then a real apply
// read back with kubectl get). No server dry run: it creates nothing, so on a fresh cluster the
// namespaced objects fail with "namespaces berth-system not found", on a real API server too.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { agentInstallYaml, PLACEHOLDER_TOKEN, renderAgentInstall } from "../../k8s/manifests/agent-install.ts";
import { runAgentInstall } from "../../src/cli/agent-install.ts";
import { berthPrograms, startSimCluster, type SimCluster } from "../../k8s/sim/index.ts";
import { runBerth } from "../support/berth-process.ts";

const API = "https://berth.example.com";
const TOKEN = "ba_0123456789abcdef0123456789abcdef";
/** An image the simulated kubelet does not run: the agent pod stays in ImagePullBackOff instead of running a host command. */
const TEST_IMAGE = "example.invalid/berth-agent:test";

const install = (args: string[]) => runBerth(["agent", "install", ...args], {});

async function installInProcess(args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await runAgentInstall(args, { stdout: async (text) => void (stdout += text), stderr: (text) => void (stderr += text) });
  return { code, stdout, stderr };
}

const parse = (text: string) =>
  parseAllDocuments(text).map((doc) => {
    expect(doc.errors).toEqual([]);
    return doc.toJS() as { kind: string; metadata: { name: string; namespace?: string }; [key: string]: any };
  });

describe("berth agent install --print", () => {
  it("prints the eight objects as YAML with the token and API URL in the Secret", async () => {
    const result = await install(["--print", "--api", API, "--token", TOKEN]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const objects = parse(result.stdout);
    expect(objects.map((o) => o.kind)).toEqual(["Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Secret", "Deployment"]);
    expect(objects.find((o) => o.kind === "Secret")!.stringData).toEqual({ BERTH_API_URL: API, BERTH_AGENT_TOKEN: TOKEN });
    expect(result.stdout).toBe(agentInstallYaml(renderAgentInstall({ apiUrl: API, token: TOKEN })));
  });

  it("takes --image and --namespace", async () => {
    const result = await install(["--print", "--api", "http://10.0.0.5:8080", "--token", TOKEN, "--image", "registry.example/berth:dev", "--namespace", "ops-berth"]);
    expect(result.code).toBe(0);
    const objects = parse(result.stdout);
    expect(objects[0]!.metadata.name).toBe("ops-berth");
    expect(objects.filter((o) => o.metadata.namespace !== undefined).map((o) => o.metadata.namespace)).toEqual(["ops-berth", "ops-berth", "ops-berth", "ops-berth", "ops-berth"]);
    expect(objects.find((o) => o.kind === "Deployment")!.spec.template.spec.containers[0].image).toBe("registry.example/berth:dev");
  });

  it("without --token prints the placeholder and says so on stderr", async () => {
    const result = await install(["--print", "--api", API]);
    expect(result.code).toBe(0);
    expect(parse(result.stdout).find((o) => o.kind === "Secret")!.stringData.BERTH_AGENT_TOKEN).toBe(PLACEHOLDER_TOKEN);
    expect(result.stderr).toBe(`berth agent install: no --token: the Secret holds ${PLACEHOLDER_TOKEN}; replace it before applying\n`);
  });

  it.each([
    ["no --print", ["--api", API, "--token", TOKEN], "--print is required (there is no apply yet: pipe the output to kubectl apply -f -)"],
    ["no --api", ["--print", "--token", TOKEN], "--api URL is required"],
    ["--api not http(s)", ["--print", "--api", "ftp://berth.example.com", "--token", TOKEN], '--api must be an http:// or https:// URL, got "ftp://berth.example.com"'],
    ["--api not a URL", ["--print", "--api", "berth.example.com", "--token", TOKEN], '--api must be an http:// or https:// URL, got "berth.example.com"'],
    ["a user key as --token", ["--print", "--api", API, "--token", "bp_0123"], "--token must be an agent credential (ba_…, from POST /v1/agent/register), not a user key"],
    ["--namespace not a DNS label", ["--print", "--api", API, "--namespace", "Berth_System"], '--namespace must be a DNS-1123 label'],
    ["an empty --image", ["--print", "--api", API, "--image", ""], "--image must be a non-empty image reference without spaces"],
    ["an unknown flag", ["--print", "--api", API, "--apply"], "unknown option --apply"],
    ["a stray argument", ["--print", "--api", API, "kubectl"], 'unexpected argument "kubectl"'],
    ["a flag without its value", ["--print", "--api"], "option --api needs a value"],
  ])("%s: exit 2, a message naming the problem, nothing on stdout", async (_name, args, message) => {
    // In process (the same function the command runs): a process per case would add seconds each.
    const result = await installInProcess(args);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(`berth agent install: ${message}`);
    expect(result.stderr).toContain("usage: berth agent install --print --api URL");
  });

  it("a bad flag makes the process itself exit 2", async () => {
    const result = await install(["--api", API]);
    expect(result.code).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain("berth agent install: --print is required");
  });

  it("--help prints its usage, which says to pipe to kubectl", async () => {
    const result = await install(["--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("There is no apply yet: pipe it to kubectl apply -f -");
  });

  it("leaves `berth agent` as it was, and `berth --help` lists the install command", async () => {
    const agent = await runBerth(["agent", "--help"], {});
    expect(agent.code).toBe(0);
    expect(agent.stdout).toMatch(/^usage: berth agent --api URL --token ba_… \[--kubeconfig FILE\] \[--router-image IMAGE\]\n/);
    const noFlags = await runBerth(["agent"], { BERTH_API_URL: undefined, BERTH_AGENT_TOKEN: undefined });
    expect(noFlags.code).toBe(2);
    expect(noFlags.stderr).toContain("berth agent: --api URL and --token are required");
    const help = await runBerth(["--help"], {});
    expect(help.stdout).toContain("agent install --print --api URL [--token ba_…]");
  });
});

describe("kubectl accepts the printed manifests (simulated cluster)", () => {
  let cluster: SimCluster;
  let dir: string;
  let yaml: string;

  /** kubectl with the sim's kubeconfig and a private cache; resolves with its output, whatever the exit code. */
  function kubectl(args: string[], stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve, reject) => {
      const child = spawn("kubectl", ["--kubeconfig", cluster.kubeconfigPath!, "--cache-dir", join(dir, "cache"), ...args], { stdio: ["pipe", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk) => (stdout += chunk));
      child.stderr.on("data", (chunk) => (stderr += chunk));
      child.once("error", reject);
      child.once("exit", (code) => resolve({ code, stdout, stderr }));
      child.stdin.end(stdin ?? "");
    });
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "berth-agent-install-"));
    cluster = await startSimCluster({
      nodes: [{ name: "gpu-a", gpuType: "nvidia-h100-80gb", gpus: 8 }],
      programs: berthPrograms({ routerImage: "ghcr.io/berth/berth:0.1.0" }),
      kubeconfigPath: join(dir, "kubeconfig"),
    });
    const printed = await install(["--print", "--api", API, "--token", TOKEN, "--image", TEST_IMAGE]);
    expect(printed.code).toBe(0);
    yaml = printed.stdout;
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop({ now: true });
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  // The simulated API server serves no OpenAPI document (k8s/sim/README.md, "Not simulated"), so
  // kubectl's client-side schema validation cannot run against it: --validate=false. The schemas
  // themselves are checked with kubernetes-models in test/k8s/manifests.
  const CREATED = [
    "namespace/berth-system",
    "serviceaccount/berth-agent",
    "clusterrole.rbac.authorization.k8s.io/berth-agent",
    "clusterrolebinding.rbac.authorization.k8s.io/berth-agent",
    "role.rbac.authorization.k8s.io/berth-agent",
    "rolebinding.rbac.authorization.k8s.io/berth-agent",
    "secret/berth-agent",
    "deployment.apps/berth-agent",
  ];

  it("apply --dry-run=client", async () => {
    const result = await kubectl(["apply", "--dry-run=client", "--validate=false", "-f", "-"], yaml);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split("\n")).toEqual(CREATED.map((name) => `${name} created (dry run)`));
  }, 30_000);

  it("apply, then kubectl get reads back what was printed", async () => {
    const result = await kubectl(["apply", "--validate=false", "-f", "-"], yaml);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(result.stdout.trim().split("\n")).toEqual(CREATED.map((name) => `${name} created`));

    const get = async (args: string[]) => {
      const out = await kubectl(["get", ...args, "-o", "json"]);
      expect(out.stderr).toBe("");
      return JSON.parse(out.stdout);
    };
    const secret = await get(["-n", "berth-system", "secret", "berth-agent"]);
    const decode = (value: string) => Buffer.from(value, "base64").toString("utf8");
    expect({ api: decode(secret.data.BERTH_API_URL), token: decode(secret.data.BERTH_AGENT_TOKEN) }).toEqual({ api: API, token: TOKEN });
    const role = await get(["clusterrole", "berth-agent"]);
    const printedRole = parse(yaml).find((o) => o.kind === "ClusterRole")!;
    expect(role.rules).toEqual(printedRole.rules);
    const binding = await get(["clusterrolebinding", "berth-agent"]);
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: "berth-agent", namespace: "berth-system" }]);
    const deployment = await get(["-n", "berth-system", "deployment", "berth-agent"]);
    expect(deployment.spec.strategy.type).toBe("Recreate");
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.template.spec.serviceAccountName).toBe("berth-agent");
  }, 30_000);
});
