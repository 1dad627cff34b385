// A kubeconfig for the simulated cluster, for kubectl (`--kubeconfig <file>`) and for
// client-node (`kc.loadFromFile` or the options object for `kc.loadFromOptions`).
import { writeFileSync } from "node:fs";
import { stringify } from "yaml";

export interface KubeconfigOptions {
  /** Bearer token the simulated API server requires (when it requires one). */
  token?: string;
  /** Cluster, user and context name. */
  name?: string;
  /** Default namespace of the context. */
  namespace?: string;
}

/** The kubeconfig as an object: what `kc.loadFromOptions(...)` takes. */
export function kubeconfigFor(url: string, options: KubeconfigOptions = {}) {
  const name = options.name ?? "berth-sim";
  return {
    apiVersion: "v1",
    kind: "Config",
    // A TLS simulated cluster has a self-signed certificate on loopback.
    clusters: [{ name, cluster: { server: url, ...(url.startsWith("https:") && { "insecure-skip-tls-verify": true }) } }],
    users: [{ name, user: options.token ? { token: options.token } : {} }],
    contexts: [{ name, context: { cluster: name, user: name, ...(options.namespace && { namespace: options.namespace }) } }],
    "current-context": name,
  };
}

/** client-node's own option shape (flattened clusters/users/contexts) for `kc.loadFromOptions`. */
export function kubeConfigOptions(url: string, options: KubeconfigOptions = {}) {
  const name = options.name ?? "berth-sim";
  return {
    clusters: [{ name, server: url, skipTLSVerify: true }],
    users: [{ name, ...(options.token && { token: options.token }) }],
    contexts: [{ name, cluster: name, user: name, ...(options.namespace && { namespace: options.namespace }) }],
    currentContext: name,
  };
}

/** Writes a kubeconfig file (mode 0600: it may hold the token). */
export function writeKubeconfig(path: string, url: string, options: KubeconfigOptions = {}): string {
  writeFileSync(path, stringify(kubeconfigFor(url, options)), { mode: 0o600 });
  return path;
}
