// kube-proxy for the simulated cluster: a TCP listener on each Service's ClusterIP and port
// that forwards every connection to a ready endpoint (round robin over the Service's
// Endpoints, read at connect time), so a Service is reachable from the host like a pod.
// An endpoint that refuses the connection is skipped for the next one; with no ready
// endpoint the connection is reset (a real cluster rejects it). Headless Services have no
// ClusterIP and no listener; UDP ports are not proxied.
import { createServer, connect, type Server, type Socket } from "node:net";
import type { KubeObject } from "./objects.ts";
import { resourceOf } from "./resources.ts";
import type { Store } from "./store.ts";

type Dict = Record<string, any>;

const SERVICES = resourceOf("services");
const ENDPOINTS = resourceOf("endpoints");
const CONNECT_TIMEOUT_MS = 3_000;

interface Listener {
  server: Server;
  /** `name` of the Service port (Endpoints ports carry the same name). */
  portName?: string;
  next: number;
}

export class ServiceProxy {
  /** `<namespace>/<service>` → `<clusterIP>:<port>` → listener. */
  readonly #listeners = new Map<string, Map<string, Listener>>();
  readonly #connections = new Set<Socket>();
  #unsubscribe?: () => void;

  constructor(
    private readonly store: Store,
    private readonly log: (line: string) => void = () => {},
  ) {}

  start(): void {
    this.#unsubscribe = this.store.subscribe((change) => {
      if (change.resource !== SERVICES) return;
      const key = `${change.object.metadata.namespace}/${change.object.metadata.name}`;
      setImmediate(() => this.#reconcile(key));
    });
    for (const service of this.store.list(SERVICES)) this.#reconcile(`${service.metadata.namespace}/${service.metadata.name}`);
  }

  #reconcile(key: string): void {
    const [namespace, name] = key.split("/") as [string, string];
    const service = this.store.get(SERVICES, namespace, name);
    const spec = service?.spec as Dict | undefined;
    const wanted = new Map<string, string | undefined>();
    if (spec?.clusterIP && spec.clusterIP !== "None") {
      for (const port of (spec.ports ?? []) as Dict[]) if ((port.protocol ?? "TCP") === "TCP") wanted.set(`${spec.clusterIP}:${port.port}`, port.name);
    }
    const current = this.#listeners.get(key) ?? new Map<string, Listener>();
    for (const [address, listener] of current) {
      if (!wanted.has(address)) {
        listener.server.close();
        current.delete(address);
      } else listener.portName = wanted.get(address);
    }
    for (const [address, portName] of wanted) {
      if (current.has(address)) continue;
      const [host, port] = address.split(":") as [string, string];
      const listener: Listener = { server: createServer((socket) => this.#forward(namespace, name, listener, socket)), portName, next: 0 };
      listener.server.on("error", (error) => this.log(`service ${key}: cannot listen on ${address}: ${error.message}`));
      listener.server.listen({ host, port: Number(port), exclusive: true });
      current.set(address, listener);
    }
    if (current.size > 0) this.#listeners.set(key, current);
    else this.#listeners.delete(key);
  }

  /** Ready endpoint addresses (ip:port) for the Service port, in a stable order. */
  #targets(namespace: string, name: string, portName: string | undefined): { host: string; port: number }[] {
    const endpoints: KubeObject | undefined = this.store.get(ENDPOINTS, namespace, name);
    const targets: { host: string; port: number }[] = [];
    for (const subset of ((endpoints?.subsets ?? []) as Dict[])) {
      const ports = (subset.ports ?? []) as Dict[];
      const port = ports.length === 1 && !portName ? ports[0] : ports.find((p) => (p.name ?? undefined) === portName);
      if (!port) continue;
      for (const address of (subset.addresses ?? []) as Dict[]) targets.push({ host: address.ip, port: port.port });
    }
    return targets;
  }

  #forward(namespace: string, name: string, listener: Listener, client: Socket): void {
    this.#connections.add(client);
    client.once("close", () => this.#connections.delete(client));
    client.pause();
    const targets = this.#targets(namespace, name, listener.portName);
    const start = listener.next++;
    const attempt = (tried: number) => {
      if (tried >= targets.length) {
        client.resetAndDestroy();
        return;
      }
      const target = targets[(start + tried) % targets.length]!;
      const upstream = connect({ host: target.host, port: target.port, timeout: CONNECT_TIMEOUT_MS });
      const refused = () => {
        upstream.destroy();
        attempt(tried + 1);
      };
      upstream.once("error", refused);
      upstream.once("timeout", refused);
      upstream.once("connect", () => {
        upstream.removeListener("error", refused);
        upstream.removeListener("timeout", refused);
        upstream.setTimeout(0);
        this.#connections.add(upstream);
        upstream.once("close", () => this.#connections.delete(upstream));
        upstream.on("error", () => client.destroy());
        client.on("error", () => upstream.destroy());
        upstream.pipe(client);
        client.pipe(upstream);
        client.resume();
      });
    };
    attempt(0);
  }

  stop(): void {
    this.#unsubscribe?.();
    for (const listeners of this.#listeners.values()) for (const listener of listeners.values()) listener.server.close();
    this.#listeners.clear();
    for (const socket of this.#connections) socket.destroy();
    this.#connections.clear();
  }
}
