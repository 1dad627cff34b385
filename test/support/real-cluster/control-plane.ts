// A real Kubernetes control plane for tests: etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler and kube-proxy (iptables mode), built from source by
// scripts/build-control-plane.sh, started in a network namespace of their own that holds
// only `lo`, so no packet they or their pods send can leave it.
//
// Addresses inside the namespace: every pod address is local (`10.244.0.0/16` routed to `lo`),
// the apiserver listens on 10.244.0.1:6443, Services take 10.96.0.0/16 (also local, with source
// 10.244.0.254: without a source kube-proxy's masquerade on `lo` drops the connection, and with
// an endpoint's own address as source the connection is a hairpin, masqueraded and dropped). The test
// process reaches inside through a relay (relay.ts); kubeconfigs for both sides are written.
//
// Authentication is by client certificate (CN = user, O = groups); authorization Node,RBAC;
// admission as a production cluster runs it (PodSecurity, NodeRestriction,
// ValidatingAdmissionPolicy, …).
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { reapOrphans } from "../../../k8s/sim/orphans.ts";
import { createCertificateAuthority, createServiceAccountKeys, issueCertificate, type KeyPair } from "./certificates.ts";
import {
  createNetworkNamespace,
  deleteNetworkNamespace,
  ipInside,
  listNetworkNamespaces,
  logTail,
  type NamespacedProcess,
  startInside,
  stopProcess,
} from "./processes.ts";
import { type HostPort, RelayClient } from "./relay.ts";

const run = promisify(execFile);
const ROOT = join(import.meta.dirname, "../../..");

export const POD_CIDR = "10.244.0.0/16";
export const SERVICE_CIDR = "10.96.0.0/16";
export const APISERVER_ADDRESS = "10.244.0.1";
export const APISERVER_PORT = 6443;
export const KUBERNETES_SERVICE_IP = "10.96.0.1";
/** The source address of connections to Service addresses (held by no pod, node or apiserver). */
export const SERVICE_SOURCE = "10.244.0.254";
const NAMESPACE_PREFIX = "berth-rc-";

export const ADMISSION_PLUGINS = [
  "NamespaceLifecycle",
  "LimitRanger",
  "ServiceAccount",
  "NodeRestriction",
  "PodSecurity",
  "ResourceQuota",
  "DefaultStorageClass",
  "MutatingAdmissionWebhook",
  "ValidatingAdmissionWebhook",
  "ValidatingAdmissionPolicy",
];

let binDirectory: Promise<string> | undefined;

/**
 * The directory of the pinned binaries, building them first if this machine's cache lacks
 * them (minutes, once). A failed build fails the caller: no real-cluster test skips.
 */
export function controlPlaneBinaries(): Promise<string> {
  binDirectory ??= run("bash", [join(ROOT, "scripts/build-control-plane.sh")], { maxBuffer: 64 * 1024 * 1024 })
    .then(({ stdout }) => stdout.trim().split("\n").at(-1)!)
    .catch((error) => {
      binDirectory = undefined;
      throw new Error(`building the Kubernetes control plane failed: ${String(error.stderr ?? error).slice(-4000)}`);
    });
  return binDirectory;
}

export interface Identity {
  user: string;
  groups?: readonly string[];
}

export interface Kubeconfigs {
  /** For processes in this test process's network namespace (through the relay). */
  outside: string;
  /** For processes inside the cluster's namespace (https://10.244.0.1:6443). */
  inside: string;
}

export interface RealCluster {
  namespace: string;
  dir: string;
  ca: KeyPair;
  /** The admin's (system:masters) kubeconfigs. */
  admin: Kubeconfigs;
  /** The apiserver from this process: https://127.0.0.1:<relay port>. */
  serverUrl: string;
  startMs: number;
  relay: RelayClient;
  /** The relay's control socket (cluster-fetch.ts routes fetch() through it). */
  relaySocket: string;
  /** Kubeconfigs for a client-certificate identity, e.g. a node's `system:node:<name>`. */
  kubeconfigsFor(name: string, identity: Identity): Promise<Kubeconfigs>;
  /** Kubeconfigs carrying a bearer token (a ServiceAccount's, from TokenRequest). */
  tokenKubeconfigs(name: string, token: string): Kubeconfigs;
  /** `kubectl` as the admin, from this process. */
  kubectl(args: readonly string[], options?: { kubeconfig?: string; input?: string }): Promise<{ stdout: string; stderr: string }>;
  /** Starts a process inside the cluster's network namespace. */
  startInside(name: string, command: string, args: readonly string[], env?: NodeJS.ProcessEnv): NamespacedProcess;
  reach(host: string, port: number): Promise<HostPort>;
  /**
   * Starts kube-proxy (iptables mode) for the whole namespace, as node `nodeName`: every pod of
   * every node shares this network, so one kube-proxy serves them all. It waits up to 30 s for
   * its Node object to exist, so start it once a node has registered.
   */
  startProxy(nodeName: string): Promise<void>;
  stop(): Promise<void>;
}

function kubeconfig(server: string, ca: string, user: Record<string, string>): string {
  return JSON.stringify({
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "berth-test", cluster: { server, "certificate-authority": ca } }],
    users: [{ name: "user", user }],
    contexts: [{ name: "berth-test", context: { cluster: "berth-test", user: "user" } }],
    "current-context": "berth-test",
  });
}

/** Namespaces and processes left by test processes that died without stopping their cluster. */
async function reapDeadClusters(): Promise<void> {
  reapOrphans();
  for (const name of await listNetworkNamespaces().catch(() => [])) {
    if (!name.startsWith(NAMESPACE_PREFIX)) continue;
    const owner = Number(name.slice(NAMESPACE_PREFIX.length).split("-")[0]);
    let alive = false;
    try {
      process.kill(owner, 0);
      alive = true;
    } catch (error) {
      alive = (error as NodeJS.ErrnoException).code === "EPERM";
    }
    if (!alive) await deleteNetworkNamespace(name);
  }
}

interface Probe {
  url: string;
  ca: string;
  cert: KeyPair;
}

function getStatus({ url, ca, cert }: Probe): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca: readFileSync(ca), cert: readFileSync(cert.cert), key: readFileSync(cert.key), timeout: 2_000 }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => (body += chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end();
  });
}

async function waitFor(what: string, check: () => Promise<boolean>, processes: readonly NamespacedProcess[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    const dead = processes.find((p) => p.child.exitCode !== null || p.child.signalCode !== null);
    if (dead) throw new Error(`${dead.name} exited while waiting for ${what}:\n${logTail(dead)}`);
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? ` (${String(last)})` : ""}\n${processes.map((p) => `--- ${p.name}\n${logTail(p, 15)}`).join("\n")}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

let clusters = 0;

export async function startRealCluster(): Promise<RealCluster> {
  const started = performance.now();
  const bin = await controlPlaneBinaries();
  await reapDeadClusters();
  const namespace = `${NAMESPACE_PREFIX}${process.pid}-${++clusters}`;
  const dir = mkdtempSync(join(tmpdir(), "berth-real-cluster-"));
  const pki = join(dir, "pki");
  mkdirSync(pki);
  writeFileSync(join(dir, "owner.pid"), String(process.pid));

  const processes: NamespacedProcess[] = [];
  let relay: RelayClient | undefined;
  const stop = async () => {
    relay?.close();
    for (const p of [...processes].reverse()) await stopProcess(p);
    await deleteNetworkNamespace(namespace);
    // BERTH_KEEP_CLUSTER_LOGS=1 keeps the directory (every process's log) for a look after a failure.
    if (process.env.BERTH_KEEP_CLUSTER_LOGS) process.stderr.write(`real cluster logs kept in ${dir}\n`);
    else rmSync(dir, { recursive: true, force: true });
  };

  try {
    await createNetworkNamespace(namespace);
    await ipInside(namespace, ["route", "add", "local", POD_CIDR, "dev", "lo"]);
    // Connections to Services leave from SERVICE_SOURCE: kube-proxy masquerades a connection whose
    // source is the endpoint it lands on (hairpin), and masquerading on `lo` drops it, so the
    // source must be an address no endpoint has (the apiserver's own would break the kubernetes
    // Service for every pod).
    await ipInside(namespace, ["route", "add", "local", SERVICE_CIDR, "dev", "lo", "src", SERVICE_SOURCE]);

    const ca = await createCertificateAuthority(pki);
    const [serving, admin, controllerManager, scheduler, proxy, kubeletClient, saKeys] = await Promise.all([
      issueCertificate(ca, pki, {
        name: "apiserver",
        commonName: "kube-apiserver",
        altNames: [
          `IP:${APISERVER_ADDRESS}`, `IP:${KUBERNETES_SERVICE_IP}`, "IP:127.0.0.1",
          "DNS:localhost", "DNS:kubernetes", "DNS:kubernetes.default", "DNS:kubernetes.default.svc", "DNS:kubernetes.default.svc.cluster.local",
        ],
      }),
      issueCertificate(ca, pki, { name: "admin", commonName: "berth-test-admin", organisations: ["system:masters"] }),
      issueCertificate(ca, pki, { name: "controller-manager", commonName: "system:kube-controller-manager" }),
      issueCertificate(ca, pki, { name: "scheduler", commonName: "system:kube-scheduler" }),
      issueCertificate(ca, pki, { name: "proxy", commonName: "system:kube-proxy", organisations: ["system:node-proxier"] }),
      issueCertificate(ca, pki, { name: "kubelet-client", commonName: "kube-apiserver-kubelet-client", organisations: ["system:masters"] }),
      createServiceAccountKeys(pki),
    ]);

    const socket = join(dir, "relay.sock");
    const relayProcess = startInside(namespace, dir, "relay", process.execPath, [join(import.meta.dirname, "netns-relay.mjs"), socket]);
    processes.push(relayProcess);
    relay = new RelayClient(socket, dir);
    await waitFor("the relay", async () => readFileSync(relayProcess.logFile, "utf8").includes("relay ready"), processes, 10_000);
    const apiserverHere = await relay.reach(APISERVER_ADDRESS, APISERVER_PORT);
    const serverUrl = `https://${apiserverHere.host}:${apiserverHere.port}`;
    const insideUrl = `https://${APISERVER_ADDRESS}:${APISERVER_PORT}`;
    const certUser = (pair: KeyPair) => ({ "client-certificate": pair.cert, "client-key": pair.key });
    const writeKubeconfigs = (name: string, user: Record<string, string>): Kubeconfigs => {
      const paths = { outside: join(dir, `${name}.kubeconfig`), inside: join(dir, `${name}.inside.kubeconfig`) };
      writeFileSync(paths.outside, kubeconfig(serverUrl, ca.cert, user), { mode: 0o600 });
      writeFileSync(paths.inside, kubeconfig(insideUrl, ca.cert, user), { mode: 0o600 });
      return paths;
    };
    const adminConfigs = writeKubeconfigs("admin", certUser(admin));
    const cmConfig = writeKubeconfigs("controller-manager", certUser(controllerManager)).inside;
    const schedulerConfig = writeKubeconfigs("scheduler", certUser(scheduler)).inside;
    const proxyConfig = writeKubeconfigs("proxy", certUser(proxy)).inside;

    const etcdDir = join(dir, "etcd");
    processes.push(
      startInside(namespace, dir, "etcd", join(bin, "etcd"), [
        "--name=berth-test", `--data-dir=${etcdDir}`, "--unsafe-no-fsync", "--log-level=warn",
        "--listen-client-urls=http://127.0.0.1:2379", "--advertise-client-urls=http://127.0.0.1:2379",
        "--listen-peer-urls=http://127.0.0.1:2380", "--initial-advertise-peer-urls=http://127.0.0.1:2380",
        "--initial-cluster=berth-test=http://127.0.0.1:2380", "--listen-metrics-urls=http://127.0.0.1:2381",
      ]),
    );
    processes.push(
      startInside(namespace, dir, "kube-apiserver", join(bin, "kube-apiserver"), [
        "--etcd-servers=http://127.0.0.1:2379",
        `--advertise-address=${APISERVER_ADDRESS}`, "--bind-address=0.0.0.0", `--secure-port=${APISERVER_PORT}`,
        `--service-cluster-ip-range=${SERVICE_CIDR}`,
        `--tls-cert-file=${serving.cert}`, `--tls-private-key-file=${serving.key}`, `--client-ca-file=${ca.cert}`,
        "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
        `--service-account-key-file=${saKeys.publicKey}`, `--service-account-signing-key-file=${saKeys.privateKey}`,
        "--authorization-mode=Node,RBAC", `--enable-admission-plugins=${ADMISSION_PLUGINS.join(",")}`,
        "--allow-privileged=true", "--profiling=false", "--anonymous-auth=false",
        `--kubelet-client-certificate=${kubeletClient.cert}`, `--kubelet-client-key=${kubeletClient.key}`,
        // As kubeadm sets it: a node's name does not resolve here, its InternalIP is its address.
        "--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
      ]),
    );
    const probe = (url: string) => ({ url, ca: ca.cert, cert: admin });
    await waitFor("kube-apiserver /readyz", async () => (await getStatus(probe(`${serverUrl}/readyz`))).status === 200, processes, 60_000);

    const componentArgs = (config: string) => [`--kubeconfig=${config}`, `--authentication-kubeconfig=${config}`, `--authorization-kubeconfig=${config}`, "--leader-elect=false", "--bind-address=127.0.0.1"];
    processes.push(
      startInside(namespace, dir, "kube-controller-manager", join(bin, "kube-controller-manager"), [
        ...componentArgs(cmConfig),
        `--service-account-private-key-file=${saKeys.privateKey}`, `--root-ca-file=${ca.cert}`, "--use-service-account-credentials=true",
        `--cluster-signing-cert-file=${ca.cert}`, `--cluster-signing-key-file=${ca.key}`, `--cluster-cidr=${POD_CIDR}`,
      ]),
      startInside(namespace, dir, "kube-scheduler", join(bin, "kube-scheduler"), componentArgs(schedulerConfig)),
    );
    // Ready for work when the controllers and the scheduler answer their health checks and the
    // default namespace has its ServiceAccount (pods are refused until it does).
    const kubectl: RealCluster["kubectl"] = (args, options = {}) => {
      const child = run("kubectl", ["--kubeconfig", options.kubeconfig ?? adminConfigs.outside, ...args], { maxBuffer: 32 * 1024 * 1024 });
      if (options.input !== undefined) {
        child.child.stdin!.end(options.input);
      }
      return child;
    };
    await waitFor(
      "the default ServiceAccount (controller manager at work)",
      async () => (await getStatus(probe(`${serverUrl}/api/v1/namespaces/default/serviceaccounts/default`))).status === 200,
      processes,
      60_000,
    );
    const startMs = Math.round(performance.now() - started);
    if (process.env.BERTH_TEST_QUIET !== "1") console.log(`[real-cluster] ${namespace} ready in ${startMs} ms`);

    return {
      namespace,
      dir,
      ca,
      admin: adminConfigs,
      serverUrl,
      startMs,
      relay,
      relaySocket: socket,
      kubeconfigsFor: async (name, identity) => {
        const pair = await issueCertificate(ca, pki, { name, commonName: identity.user, organisations: identity.groups });
        return writeKubeconfigs(name, certUser(pair));
      },
      tokenKubeconfigs: (name, token) => writeKubeconfigs(name, { token }),
      kubectl,
      startInside: (name, command, args, env) => {
        const started = startInside(namespace, dir, name, command, args, env);
        processes.push(started);
        return started;
      },
      reach: (host, port) => relay!.reach(host, port),
      startProxy: async (nodeName) => {
        const proxyProcess = startInside(namespace, dir, "kube-proxy", join(bin, "kube-proxy"), [
          `--kubeconfig=${proxyConfig}`, "--proxy-mode=iptables", `--cluster-cidr=${POD_CIDR}`, "--conntrack-max-per-core=0",
          `--hostname-override=${nodeName}`, "--nodeport-addresses=primary", "--metrics-bind-address=127.0.0.1:10249", "--healthz-bind-address=127.0.0.1:10256",
        ]);
        processes.push(proxyProcess);
        // Its /healthz answers 200 once the rules are synced.
        const health = await relay!.reach("127.0.0.1", 10256);
        await waitFor(
          "kube-proxy's first sync",
          async () => (await fetch(`http://${health.host}:${health.port}/healthz`, { signal: AbortSignal.timeout(2_000) })).status === 200,
          [proxyProcess],
          60_000,
        );
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
