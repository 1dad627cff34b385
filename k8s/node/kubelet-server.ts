// The node's own HTTPS endpoint on port 10250, where the API server asks a kubelet for a pod's
// container logs (`kubectl logs` → GET pods/log → GET /containerLogs/<ns>/<pod>/<container>).
// As the kubelet does it: callers authenticate with a client certificate the cluster's CA signed
// (the API server's `--kubelet-client-certificate`), and are authorized by a SubjectAccessReview
// for the node's `proxy` subresource (the kubelet's webhook mode maps every path outside /stats,
// /metrics, /logs and /spec to it). The serving certificate is self-signed at start: the API
// server verifies a kubelet's certificate only when given `--kubelet-certificate-authority`.
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TLSSocket } from "node:tls";
import { promisify } from "node:util";
import * as k8s from "@kubernetes/client-node";
import type { PodLogRequest, PodLogSource } from "../sim/api-server.ts";
import type { KubeObject } from "../sim/objects.ts";

export const KUBELET_PORT = 10250;
const run = promisify(execFile);

export interface KubeletServerOptions {
  kubeConfig: k8s.KubeConfig;
  nodeName: string;
  /** The node's address: the server listens there and its certificate names it. */
  address: string;
  port?: number;
  logs: PodLogSource;
  pod(namespace: string, name: string): KubeObject | undefined;
}

export interface KubeletServer {
  port: number;
  close(): Promise<void>;
}

/** The query of a container log request, as the kubelet reads it. */
export function logRequestOf(container: string, query: URLSearchParams): PodLogRequest {
  const int = (name: string) => {
    const value = query.get(name);
    return value === null || value === "" ? undefined : Number.parseInt(value, 10);
  };
  const bool = (name: string) => query.get(name) === "true" || query.get(name) === "1";
  return {
    container,
    previous: bool("previous"),
    tailLines: int("tailLines"),
    limitBytes: int("limitBytes"),
    sinceSeconds: int("sinceSeconds"),
    timestamps: bool("timestamps"),
    follow: bool("follow"),
  };
}

/** The path's namespace, pod and container, or undefined for any other path. */
export function containerLogTarget(path: string): { namespace: string; pod: string; container: string } | undefined {
  const match = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(path);
  return match ? { namespace: decodeURIComponent(match[1]!), pod: decodeURIComponent(match[2]!), container: decodeURIComponent(match[3]!) } : undefined;
}

/** The CA bundle the cluster's kubeconfig trusts: client certificates must chain to it. */
function clusterCa(kc: k8s.KubeConfig): Buffer {
  const cluster = kc.getCurrentCluster();
  if (cluster?.caData) return Buffer.from(cluster.caData, "base64");
  if (cluster?.caFile) return readFileSync(cluster.caFile);
  throw new Error("the kubeconfig names no certificate authority: client certificates could not be checked");
}

async function selfSignedCertificate(nodeName: string, address: string): Promise<{ key: Buffer; cert: Buffer }> {
  const dir = mkdtempSync(join(tmpdir(), "berth-kubelet-tls-"));
  try {
    const [key, cert] = [join(dir, "key.pem"), join(dir, "cert.pem")];
    await run("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "365",
      "-subj", `/CN=${nodeName}`, "-addext", `subjectAltName=IP:${address},DNS:${nodeName}`, "-keyout", key, "-out", cert,
    ]);
    return { key: readFileSync(key), cert: readFileSync(cert) };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function startKubeletServer(options: KubeletServerOptions): Promise<KubeletServer> {
  const authorization = options.kubeConfig.makeApiClient(k8s.AuthorizationV1Api);
  const { key, cert } = await selfSignedCertificate(options.nodeName, options.address);

  /** Whether the certificate's subject may use the node's proxy subresource (webhook authorization). */
  const allowed = async (req: IncomingMessage): Promise<{ user: string; allowed: boolean }> => {
    const peer = (req.socket as TLSSocket).getPeerCertificate();
    const one = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);
    const user = one(peer.subject?.CN) ?? "";
    const organisations = peer.subject?.O as string | string[] | undefined;
    const groups = [...(Array.isArray(organisations) ? organisations : organisations ? [organisations] : []), "system:authenticated"];
    const review = await authorization.createSubjectAccessReview({
      body: { spec: { user, groups, resourceAttributes: { verb: req.method === "GET" ? "get" : "create", resource: "nodes", subresource: "proxy", name: options.nodeName } } },
    });
    return { user, allowed: review.status?.allowed === true };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? "/", "https://kubelet");
    const target = containerLogTarget(url.pathname);
    if (!target) return void res.writeHead(404, { "Content-Type": "text/plain" }).end("404 page not found\n");
    const { user, allowed: ok } = await allowed(req);
    if (!ok) {
      return void res.writeHead(403, { "Content-Type": "text/plain" }).end(`Forbidden (user=${user}, verb=get, resource=nodes, subresource=proxy)\n`);
    }
    const pod = options.pod(target.namespace, target.pod);
    if (!pod) return void res.writeHead(404, { "Content-Type": "text/plain" }).end(`pod "${target.pod}" not found on this node\n`);
    const request = logRequestOf(target.container, url.searchParams);
    let read: ReturnType<PodLogSource["read"]>;
    try {
      read = options.logs.read(pod, request);
    } catch (error) {
      const code = (error as { code?: number }).code ?? 500;
      return void res.writeHead(code, { "Content-Type": "text/plain" }).end(`${(error as Error).message}\n`);
    }
    if (!request.follow || !read.follow) return void res.writeHead(200, { "Content-Type": "text/plain" }).end(read.text);
    res.writeHead(200, { "Content-Type": "text/plain", "Transfer-Encoding": "chunked" });
    res.write(read.text);
    const stop = read.follow(
      (more) => void (!res.writableEnded && res.write(more)),
      () => void (!res.writableEnded && res.end()),
    );
    res.on("close", stop);
  };

  const server: Server = createServer({ key, cert, ca: clusterCa(options.kubeConfig), requestCert: true, rejectUnauthorized: true }, (req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { "Content-Type": "text/plain" });
      res.end(`${String(error)}\n`);
    });
  });
  const port = options.port ?? KUBELET_PORT;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, options.address, () => resolve());
  });
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
