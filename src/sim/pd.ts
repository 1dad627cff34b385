// Prefill/decode disaggregation, both styles. vLLM/NIXL: the prefill leg answers with
// `kv_transfer_params` (vLLM's NIXL connector, docs/design.md §12.1) and a decode leg carrying valid ones skips prefill
// compute, paying only the KV transfer. SGLang: the prefill server runs a bootstrap HTTP server
// (`--disaggregation-bootstrap-port`, on `--host`); a decode server asks it for the request's
// `bootstrap_room` and decodes once that prefill has run. The KV bytes themselves (NIXL, Mooncake)
// are modelled as a transfer time, not moved; the simulator's room exchange lives under /sim/kv.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { kvBytesPerToken, type PerfModel } from "../domain/perf-model.ts";

/** Link the KV travels over between prefill and decode pods: 25 GB/s ≈ one 200 Gb/s RDMA NIC. */
export const KV_LINK_GBS = 25;
/** Fixed cost of a transfer (handshake, descriptor exchange), model-ms. */
export const KV_TRANSFER_SETUP_MS = 1;

/** Model-ms to move a prompt's KV from prefill to decode. */
export function kvTransferMs(perf: PerfModel, promptTokens: number): number {
  return KV_TRANSFER_SETUP_MS + ((kvBytesPerToken(perf.model) * promptTokens) / (KV_LINK_GBS * 1e9)) * 1e3;
}

// ---------------------------------------------------------------------------------------------
// vLLM / NIXL

export interface NixlSide {
  engineId: string;
  /** VLLM_NIXL_SIDE_CHANNEL_HOST (default "localhost"). */
  host: string;
  /** VLLM_NIXL_SIDE_CHANNEL_PORT (default 5600); the answer carries base + DP index. */
  basePort: number;
  tensorParallel: number;
}

/** The prefill leg: `kv_transfer_params.do_remote_decode` is true. */
export function wantsRemoteDecode(params: Record<string, unknown> | undefined): boolean {
  return params?.do_remote_decode === true;
}

export type RemotePrefill = { kind: "none" } | { kind: "invalid" } | { kind: "valid"; remoteTokens?: number };

const REQUIRED_REMOTE_FIELDS = ["remote_block_ids", "remote_engine_id", "remote_request_id", "remote_host", "remote_port"] as const;

/**
 * The decode leg: `do_remote_prefill` with every field NIXL needs. Missing fields make vLLM warn
 * "Got invalid KVTransferParams" and compute the prompt itself.
 */
export function readRemotePrefill(params: Record<string, unknown> | undefined): RemotePrefill {
  if (params?.do_remote_prefill !== true) return { kind: "none" };
  for (const field of REQUIRED_REMOTE_FIELDS) {
    if (params[field] === undefined || params[field] === null) return { kind: "invalid" };
  }
  const remoteTokens = typeof params.remote_num_tokens === "number" ? params.remote_num_tokens : undefined;
  return { kind: "valid", remoteTokens };
}

let nextBlockId = 1;

/** What the prefill server returns at the top level of its (non-streaming) answer. */
export function prefillAnswerParams(side: NixlSide, rank: number, requestId: string, promptTokens: number, blockSize: number): Record<string, unknown> {
  const blocks = Math.ceil(promptTokens / blockSize);
  const ids = Array.from({ length: blocks }, () => nextBlockId++);
  return {
    do_remote_prefill: true,
    do_remote_decode: false,
    remote_block_ids: [ids],
    remote_engine_id: side.engineId,
    remote_request_id: requestId,
    remote_host: side.host,
    remote_port: side.basePort + rank,
    tp_size: side.tensorParallel,
    remote_num_tokens: promptTokens,
  };
}

// ---------------------------------------------------------------------------------------------
// SGLang bootstrap

interface Room {
  promptTokens?: number;
  onReady: (() => void)[];
  onFetched: (() => void)[];
  fetched: boolean;
  expiry?: NodeJS.Timeout;
}

/** Rooms on a prefill server: a prefill marks its room ready, a decode fetches it (once). */
export class BootstrapRooms {
  private readonly rooms = new Map<string, Room>();

  constructor(private readonly keepMs: number) {}

  private room(id: string): Room {
    let room = this.rooms.get(id);
    if (!room) {
      room = { onReady: [], onFetched: [], fetched: false };
      this.rooms.set(id, room);
      // An unclaimed room is forgotten after a while, as SGLang times out bootstraps.
      room.expiry = setTimeout(() => this.rooms.delete(id), this.keepMs);
      room.expiry.unref();
    }
    return room;
  }

  /** The prefill for `id` is done: its KV (promptTokens of it) can be taken. */
  ready(id: string, promptTokens: number): void {
    const room = this.room(id);
    room.promptTokens = promptTokens;
    for (const resolve of room.onReady.splice(0)) resolve();
  }

  /** Resolves true once a decode took the room's KV, false after `timeoutMs`. */
  waitForFetch(id: string, timeoutMs: number): Promise<boolean> {
    const room = this.room(id);
    if (room.fetched) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      room.onFetched.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** A decode asks for the room: the prompt length once ready (and the room is consumed), else undefined after `waitMs`. */
  async take(id: string, waitMs: number): Promise<number | undefined> {
    const room = this.room(id);
    if (room.promptTokens === undefined) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, waitMs);
        room.onReady.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    if (room.promptTokens === undefined) return undefined;
    room.fetched = true;
    for (const resolve of room.onFetched.splice(0)) resolve();
    // Kept a little longer: the prefill side may only now start waiting for this hand-over.
    clearTimeout(room.expiry);
    room.expiry = setTimeout(() => this.rooms.delete(id), 30_000);
    room.expiry.unref();
    return room.promptTokens;
  }

  get pending(): number {
    return [...this.rooms.values()].filter((room) => room.promptTokens !== undefined && !room.fetched).length;
  }
}

export interface BootstrapServer {
  port: number;
  close(): Promise<void>;
}

/**
 * The prefill server's bootstrap listener. `/health` and `/route` answer as SGLang's do; the decode
 * side's KV hand-over is `GET /sim/kv/<room>?wait_ms=N` (200 with the prompt length, or 202 pending).
 */
export function startBootstrapServer(host: string, port: number, rooms: BootstrapRooms): Promise<BootstrapServer> {
  const routes = new Map<string, unknown>();
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://bootstrap");
    const send = (status: number, body: unknown, type = "application/json") => {
      res.writeHead(status, { "content-type": type, "x-berth-simulated": "true" });
      res.end(typeof body === "string" ? body : JSON.stringify(body));
    };
    const kv = /^\/sim\/kv\/([^/]+)$/.exec(url.pathname);
    if (kv && req.method === "GET") {
      const waitMs = Math.min(Number(url.searchParams.get("wait_ms") ?? "1000") || 0, 30_000);
      void rooms.take(decodeURIComponent(kv[1]!), waitMs).then((promptTokens) => {
        if (promptTokens === undefined) send(202, { room: kv[1], state: "pending" });
        else send(200, { room: kv[1], state: "ready", prompt_tokens: promptTokens });
      });
      return;
    }
    if (url.pathname === "/health") return send(200, "OK", "text/plain");
    if (url.pathname === "/route" && req.method === "PUT") {
      let body = "";
      req.on("data", (chunk: Buffer) => (body += chunk.toString()));
      req.on("end", () => {
        routes.set(String(routes.size), body);
        send(200, "OK", "text/plain");
      });
      return;
    }
    if (url.pathname === "/route") return send(200, { prefill_attn_tp_size: 1, prefill_dp_size: 1, simulated: true });
    if (url.pathname === "/register_dp_rank" || url.pathname === "/query_dp_ranks") return send(200, {});
    send(404, { error: "Not Found" });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve({
        port: (server.address() as AddressInfo).port,
        close: () =>
          new Promise((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}

function hostForUrl(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}

/**
 * The decode side: polls the prefill's bootstrap server until its room is ready. Returns the
 * prompt length the prefill computed, or undefined when the server is unreachable or the room
 * never becomes ready within `timeoutMs`.
 */
export async function fetchPrefilledKv(host: string, port: number, room: string, timeoutMs: number, signal?: AbortSignal): Promise<number | undefined> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline && !signal?.aborted) {
    const waitMs = Math.max(1, Math.min(1000, deadline - Date.now()));
    try {
      const response = await fetch(`http://${hostForUrl(host)}:${port}/sim/kv/${encodeURIComponent(room)}?wait_ms=${waitMs}`, {
        signal: signal ? AbortSignal.any([signal, AbortSignal.timeout(waitMs + 2000)]) : AbortSignal.timeout(waitMs + 2000),
      });
      if (response.status === 200) return ((await response.json()) as { prompt_tokens: number }).prompt_tokens;
      await response.body?.cancel();
      if (response.status !== 202) return undefined;
    } catch {
      return undefined;
    }
  }
  return undefined;
}
