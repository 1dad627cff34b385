// Loopback addresses for pods (127.0.1.1 upward) and Services (127.0.200.1 upward). Linux
// routes all of 127.0.0.0/8 to the loopback interface, so each pod can bind its own address
// with the ports its spec names. An address is claimed across processes by binding a sentinel
// listener on it (port 65535, outside the ephemeral range), so two simulated clusters on one
// machine (parallel test files) never hand out the same address; the claim ends with the
// process. Released addresses are reused only after the rest of the range, like real IPAM.
import { createServer, type Server } from "node:net";

export const SENTINEL_PORT = 65535;

function toNumber(address: string): number {
  const parts = address.split(".").map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) throw new Error(`not an IPv4 address: ${address}`);
  return ((parts[0]! << 24) >>> 0) + (parts[1]! << 16) + (parts[2]! << 8) + parts[3]!;
}

const toAddress = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");

function claim(address: string): Promise<Server | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer((socket) => socket.destroy());
    server.once("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "EADDRINUSE") resolve(undefined);
      else if (error.code === "EADDRNOTAVAIL") {
        reject(new Error(`cannot bind ${address}: the simulated cluster needs all of 127.0.0.0/8 on the loopback interface (Linux has it; on macOS add aliases with \`ifconfig lo0 alias ${address}\`)`));
      } else reject(error);
    });
    server.listen({ host: address, port: SENTINEL_PORT, exclusive: true }, () => {
      server.unref();
      resolve(server);
    });
  });
}

export class AddressPool {
  readonly #first: number;
  readonly #last: number;
  #next: number;
  readonly #claims = new Map<string, Server>();

  constructor(first: string, last: string) {
    this.#first = toNumber(first);
    this.#last = toNumber(last);
    this.#next = this.#first;
  }

  /** The next free address in the range, claimed; throws when the range is exhausted. */
  async allocate(): Promise<string> {
    const size = this.#last - this.#first + 1;
    for (let tried = 0; tried < size; tried++) {
      const candidate = this.#next;
      this.#next = candidate >= this.#last ? this.#first : candidate + 1;
      const last = candidate & 255;
      if (last === 0 || last === 255) continue;
      const address = toAddress(candidate);
      if (this.#claims.has(address)) continue;
      const server = await claim(address);
      if (!server) continue;
      // Another allocate() in this process may have claimed it while we waited.
      if (this.#claims.has(address)) {
        server.close();
        continue;
      }
      this.#claims.set(address, server);
      return address;
    }
    throw new Error(`no free address in ${toAddress(this.#first)}–${toAddress(this.#last)}`);
  }

  release(address: string): void {
    this.#claims.get(address)?.close();
    this.#claims.delete(address);
  }

  close(): void {
    for (const server of this.#claims.values()) server.close();
    this.#claims.clear();
  }
}
