// A loopback TCP proxy that can cut every open connection and hold new ones back, to
// test what a client does when its stream drops.
import { createConnection, createServer, type Server, type Socket } from "node:net";

export class DroppingProxy {
  private server: Server | undefined;
  private readonly open = new Set<Socket>();
  private held: Socket[] = [];
  private paused = false;
  /** The first bytes each client connection sent (its request line and headers). */
  readonly requests: string[] = [];
  url = "";

  constructor(private readonly upstreamPort: number) {}

  async start(): Promise<string> {
    this.server = createServer((client) => (this.paused ? this.held.push(client) : this.pipe(client)));
    await new Promise<void>((resolve) => this.server!.listen(0, "127.0.0.1", resolve));
    const address = this.server.address();
    this.url = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
    return this.url;
  }

  private pipe(client: Socket) {
    const upstream = createConnection({ host: "127.0.0.1", port: this.upstreamPort });
    const index = this.requests.push("") - 1;
    client.on("data", (chunk: Buffer) => {
      if (this.requests[index]!.length < 4096) this.requests[index] += chunk.toString("latin1");
    });
    for (const socket of [client, upstream]) {
      this.open.add(socket);
      socket.on("close", () => this.open.delete(socket));
      socket.on("error", () => {});
    }
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  }

  /** Cuts every open connection (both sides). */
  dropAll(): void {
    for (const socket of this.open) socket.destroy();
  }

  /** New connections wait until resume(). */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    const held = this.held;
    this.held = [];
    for (const client of held) this.pipe(client);
  }

  async close(): Promise<void> {
    this.dropAll();
    for (const client of this.held) client.destroy();
    await new Promise<void>((resolve) => this.server?.close(() => resolve()) ?? resolve());
  }
}

/** Resolves once check() holds, polling every 10 ms (fails after timeoutMs). */
export async function eventually(check: () => boolean, timeoutMs = 5000, what = "condition"): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`${what} not reached in ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
