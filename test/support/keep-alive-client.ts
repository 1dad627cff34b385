// An HTTP/1.1 client over raw `net` sockets that behaves like a keep-alive agent with one
// connection (undici's `Agent({ connections: 1 })`): the next request reuses the socket
// unless the last answer said `Connection: close`. It reports whether a request went out on
// a reused socket, and fails loudly when a socket closes before its answer.
import net from "node:net";

export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The request went out on a socket an earlier answer had kept open. */
  reused: boolean;
}

export interface RawRequest {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: Buffer | string;
}

export class KeepAliveClient {
  /** Sockets opened so far. */
  connections = 0;
  private socket: net.Socket | undefined;
  private readonly host: string;
  private readonly port: number;

  constructor(url: string) {
    const parsed = new URL(url);
    this.host = parsed.hostname;
    this.port = Number(parsed.port);
  }

  async request(request: RawRequest): Promise<RawAnswer> {
    const reused = this.socket !== undefined && !this.socket.destroyed;
    const socket = reused ? this.socket! : await this.connect();
    this.socket = socket;
    const body = request.body === undefined ? Buffer.alloc(0) : Buffer.from(request.body);
    const head = [`${request.method} ${request.path} HTTP/1.1`, `host: ${this.host}:${this.port}`];
    for (const [name, value] of Object.entries(request.headers ?? {})) head.push(`${name}: ${value}`);
    if (body.length > 0 || request.method !== "GET") head.push(`content-length: ${body.length}`);
    const answer = readAnswer(socket, reused);
    socket.write(Buffer.concat([Buffer.from(head.join("\r\n") + "\r\n\r\n"), body]));
    const result = await answer;
    if (/\bclose\b/i.test(result.headers.connection ?? "")) {
      socket.destroy();
      this.socket = undefined;
    }
    return result;
  }

  close(): void {
    this.socket?.destroy();
    this.socket = undefined;
  }

  private connect(): Promise<net.Socket> {
    this.connections++;
    return new Promise((resolve, reject) => {
      const socket = net.connect(this.port, this.host, () => {
        socket.off("error", reject);
        resolve(socket);
      });
      socket.once("error", reject);
    });
  }
}

/** One answer with a Content-Length body; rejects if the socket closes or errs first. */
function readAnswer(socket: net.Socket, reused: boolean): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    let buffer = Buffer.alloc(0);
    const finish = (outcome: RawAnswer | Error) => {
      socket.off("data", onData);
      socket.off("close", onClose);
      socket.off("error", onError);
      // Writes of a body the server stopped reading may still fail after the answer came.
      socket.on("error", () => {});
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    const onData = (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const end = buffer.indexOf("\r\n\r\n");
      if (end < 0) return;
      const lines = buffer.subarray(0, end).toString("latin1").split("\r\n");
      const status = Number(lines[0]!.split(" ")[1]);
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(":");
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      if (headers["content-length"] === undefined) {
        finish(new Error(`HTTP ${status} without Content-Length; this client reads only sized answers`));
        return;
      }
      const length = Number(headers["content-length"]);
      if (buffer.length < end + 4 + length) return;
      finish({ status, headers, body: buffer.subarray(end + 4, end + 4 + length).toString("utf8"), reused });
    };
    const onClose = () => finish(new Error(`the server closed the ${reused ? "reused" : "new"} socket before answering`));
    const onError = (error: Error) => finish(new Error(`socket error before the answer (${reused ? "reused" : "new"} socket): ${error.message}`));
    socket.on("data", onData);
    socket.once("close", onClose);
    socket.once("error", onError);
  });
}
