// A minimal WebSocket→TCP proxy so the Neon serverless driver can talk to a plain
// local PostgreSQL in tests (the driver speaks only WebSocket). Each WebSocket on ws://127.0.0.1:PORT/v1
// gets its own TCP connection; binary frames are copied both ways unchanged.
import net from "node:net";
import type { AddressInfo } from "node:net";
import { WebSocketServer } from "ws";
import type { RawData, WebSocket } from "ws";

export interface NeonProxy {
  port: number;
  close(): Promise<void>;
}

export interface NeonProxyOptions {
  /** Default PostgreSQL target, used when the client sends no `?address=host:port`. */
  host: string;
  port: number;
  /** Port to listen on (default: any free port). */
  listenPort?: number;
}

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "::1", "[::1]"]);

/** Parses `?address=host:port`; returns undefined when absent, throws when not a loopback target. */
function requestedTarget(rawUrl: string | undefined): { host: string; port: number } | undefined {
  const url = new URL(rawUrl ?? "/", "ws://proxy.invalid");
  const address = url.searchParams.get("address");
  if (!address) return undefined;
  const sep = address.lastIndexOf(":");
  const host = sep > 0 ? address.slice(0, sep) : "";
  const port = Number(sep > 0 ? address.slice(sep + 1) : NaN);
  if (!LOOPBACK_HOSTS.has(host) && !/^127(\.\d{1,3}){3}$/.test(host)) {
    throw new Error(`neon proxy: refusing non-loopback target ${address}`);
  }
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new Error(`neon proxy: bad target port in ${address}`);
  }
  return { host: host.replace(/^\[(.*)\]$/, "$1"), port };
}

export async function startNeonProxy(options: NeonProxyOptions): Promise<NeonProxy> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: options.listenPort ?? 0, path: "/v1" });
  const sockets = new Set<net.Socket>();

  wss.on("connection", (ws: WebSocket, req) => {
    let target: { host: string; port: number };
    try {
      target = requestedTarget(req.url) ?? { host: options.host, port: options.port };
    } catch (error) {
      ws.close(1008, (error as Error).message.slice(0, 120));
      return;
    }

    const tcp = net.connect({ host: target.host, port: target.port });
    tcp.setNoDelay(true);
    sockets.add(tcp);
    // Frames that arrive before the TCP connection is up are buffered by the socket.
    ws.on("message", (data: RawData) => {
      tcp.write(Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data));
    });
    tcp.on("data", (chunk) => {
      if (ws.readyState === ws.OPEN) ws.send(chunk, { binary: true });
    });
    ws.on("close", () => tcp.end());
    ws.on("error", () => tcp.destroy());
    tcp.on("close", () => {
      sockets.delete(tcp);
      if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close();
    });
    tcp.on("error", () => ws.terminate());
  });

  await new Promise<void>((resolve, reject) => {
    wss.once("listening", resolve);
    wss.once("error", reject);
  });
  const port = (wss.address() as AddressInfo).port;

  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        for (const socket of sockets) socket.destroy();
        wss.close(() => resolve());
      }),
  };
}
