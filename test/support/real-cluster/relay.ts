// The test process's side of netns-relay.mjs: an address inside the namespace made
// reachable on 127.0.0.1 here (`reach`), and a server on this side made reachable at an
// address inside (`expose`), both carried over Unix sockets.
import { createConnection, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import { rmSync } from "node:fs";

export interface HostPort {
  host: string;
  port: number;
}

function pipeBoth(a: Socket, b: Socket): void {
  a.pipe(b);
  b.pipe(a);
  const close = () => {
    a.destroy();
    b.destroy();
  };
  a.on("error", close).on("close", close);
  b.on("error", close).on("close", close);
}

function listen(server: Server, ...args: unknown[]): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    (server.listen as (...a: unknown[]) => void)(...args, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

export class RelayClient {
  readonly #controlSocket: string;
  readonly #dir: string;
  readonly #reached = new Map<string, Promise<HostPort>>();
  readonly #servers: Server[] = [];
  readonly #controls: Socket[] = [];
  #exposed = 0;

  constructor(controlSocket: string, dir: string) {
    this.#controlSocket = controlSocket;
    this.#dir = dir;
  }

  /** A 127.0.0.1 address here whose connections arrive at `host:port` inside the namespace. */
  reach(host: string, port: number): Promise<HostPort> {
    const key = `${host}:${port}`;
    let reached = this.#reached.get(key);
    if (!reached) {
      reached = this.#listenForward(key);
      this.#reached.set(key, reached);
    }
    return reached;
  }

  async #listenForward(target: string): Promise<HostPort> {
    const server = createServer((inbound) => {
      const relay = createConnection(this.#controlSocket);
      relay.once("connect", () => {
        relay.write(`CONNECT ${target}\n`);
        pipeBoth(inbound, relay);
      });
      relay.once("error", () => inbound.destroy());
    });
    this.#servers.push(server);
    await listen(server, 0, "127.0.0.1");
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("relay: no TCP address");
    return { host: "127.0.0.1", port: address.port };
  }

  /** Makes `local` (an address on this side) answer at `inside` within the namespace. */
  async expose(local: HostPort, inside: HostPort): Promise<void> {
    const path = join(this.#dir, `expose-${++this.#exposed}.sock`);
    rmSync(path, { force: true });
    const server = createServer((inbound) => {
      const upstream = createConnection(local.port, local.host);
      upstream.once("connect", () => pipeBoth(inbound, upstream));
      upstream.once("error", () => inbound.destroy());
    });
    this.#servers.push(server);
    await listen(server, path);
    const control = createConnection(this.#controlSocket);
    this.#controls.push(control);
    const answer = await new Promise<string>((resolve, reject) => {
      control.once("error", reject);
      control.once("connect", () => control.write(`LISTEN ${inside.host}:${inside.port} ${path}\n`));
      control.once("data", (chunk) => resolve(chunk.toString("utf8").trim()));
    });
    if (answer !== "OK") throw new Error(`relay: cannot listen on ${inside.host}:${inside.port} inside the namespace: ${answer}`);
  }

  close(): void {
    for (const control of this.#controls) control.destroy();
    for (const server of this.#servers) server.close();
    this.#reached.clear();
  }
}
