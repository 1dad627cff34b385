// One probe attempt against a pod's own address, worded like the kubelet's prober:
// httpGet (2xx/3xx succeed), tcpSocket (a connection opens), exec (exit 0; run on this machine
// with the container's environment). Named ports resolve through the container's ports.
// gRPC probes are not simulated and always succeed.
import { spawn } from "node:child_process";
import { request } from "node:http";
import { connect } from "node:net";

export interface ProbeSpec {
  httpGet?: { path?: string; port: number | string; host?: string; scheme?: string; httpHeaders?: { name: string; value: string }[] };
  tcpSocket?: { port: number | string; host?: string };
  exec?: { command?: string[] };
  grpc?: { port: number };
  timeoutSeconds?: number;
}

export interface ProbeTarget {
  podIP: string;
  ports: readonly { name?: string; containerPort: number }[];
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export interface ProbeResult {
  ok: boolean;
  message: string;
}

export function resolvePort(port: number | string, ports: ProbeTarget["ports"]): number | undefined {
  if (typeof port === "number") return port;
  if (/^\d+$/.test(port)) return Number(port);
  return ports.find((p) => p.name === port)?.containerPort;
}

const hostPort = (host: string, port: number) => (host.includes(":") ? `[${host}]:${port}` : `${host}:${port}`);

function httpProbe(spec: NonNullable<ProbeSpec["httpGet"]>, target: ProbeTarget, timeoutMs: number): Promise<ProbeResult> {
  const port = resolvePort(spec.port, target.ports);
  if (port === undefined) return Promise.resolve({ ok: false, message: `port "${spec.port}" not found in the container's ports` });
  const host = spec.host || target.podIP;
  const path = spec.path ?? "/";
  const url = `http://${hostPort(host, port)}${path}`;
  if ((spec.scheme ?? "HTTP").toUpperCase() !== "HTTP") return Promise.resolve({ ok: false, message: `scheme ${spec.scheme} is not simulated` });
  return new Promise((resolve) => {
    const headers: Record<string, string> = { "User-Agent": "kube-probe/1.32", Accept: "*/*" };
    for (const header of spec.httpHeaders ?? []) headers[header.name] = header.value;
    const req = request({ host, port, path, method: "GET", headers, timeout: timeoutMs }, (res) => {
      res.resume();
      const status = res.statusCode ?? 0;
      resolve(status >= 200 && status < 400 ? { ok: true, message: "" } : { ok: false, message: `HTTP probe failed with statuscode: ${status}` });
    });
    req.on("timeout", () => {
      req.destroy();
      resolve({ ok: false, message: `Get "${url}": context deadline exceeded (Client.Timeout exceeded while awaiting headers)` });
    });
    req.on("error", (error: NodeJS.ErrnoException) => {
      const why = error.code === "ECONNREFUSED" ? "connect: connection refused" : error.message;
      resolve({ ok: false, message: `Get "${url}": dial tcp ${hostPort(host, port)}: ${why}` });
    });
    req.end();
  });
}

function tcpProbe(spec: NonNullable<ProbeSpec["tcpSocket"]>, target: ProbeTarget, timeoutMs: number): Promise<ProbeResult> {
  const port = resolvePort(spec.port, target.ports);
  if (port === undefined) return Promise.resolve({ ok: false, message: `port "${spec.port}" not found in the container's ports` });
  const host = spec.host || target.podIP;
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: timeoutMs });
    socket.once("connect", () => {
      socket.destroy();
      resolve({ ok: true, message: "" });
    });
    socket.once("timeout", () => {
      socket.destroy();
      resolve({ ok: false, message: `dial tcp ${hostPort(host, port)}: i/o timeout` });
    });
    socket.once("error", (error: NodeJS.ErrnoException) => {
      resolve({ ok: false, message: `dial tcp ${hostPort(host, port)}: ${error.code === "ECONNREFUSED" ? "connect: connection refused" : error.message}` });
    });
  });
}

function execProbe(command: string[], target: ProbeTarget, timeoutMs: number): Promise<ProbeResult> {
  if (command.length === 0) return Promise.resolve({ ok: false, message: "exec probe has no command" });
  return new Promise((resolve) => {
    let output = "";
    const child = spawn(command[0]!, command.slice(1), { env: target.env, cwd: target.cwd, stdio: ["ignore", "pipe", "pipe"], detached: true });
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // Already gone.
      }
      resolve({ ok: false, message: `command timed out after ${timeoutMs / 1000}s` });
    }, timeoutMs);
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.once("error", (error) => {
      clearTimeout(timer);
      resolve({ ok: false, message: error.message });
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve(code === 0 ? { ok: true, message: "" } : { ok: false, message: output.trim().slice(-1024) || `command exited with ${code}` });
    });
  });
}

export function runProbe(spec: ProbeSpec, target: ProbeTarget): Promise<ProbeResult> {
  const timeoutMs = (spec.timeoutSeconds ?? 1) * 1000;
  if (spec.httpGet) return httpProbe(spec.httpGet, target, timeoutMs);
  if (spec.tcpSocket) return tcpProbe(spec.tcpSocket, target, timeoutMs);
  if (spec.exec) return execProbe(spec.exec.command ?? [], target, timeoutMs);
  return Promise.resolve({ ok: true, message: "" });
}
