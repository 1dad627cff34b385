// Loopback addresses for pods (127.0.1.1 upward) and Services (127.0.200.1 upward). Linux
// routes all of 127.0.0.0/8 to the loopback interface, so each pod can bind its own address
// with the ports its spec names. An address is claimed across processes by binding a sentinel
// listener on it (port 65535, outside the ephemeral range), so two simulated clusters on one
// machine (parallel test files) never hand out the same address; the claim ends with the
// process. Released addresses are reused only after the rest of the range, like real IPAM.
// An allocation may name its object ("pods/ns/name"): addresses remembered from an earlier run
// are then handed back to the same objects (and kept from others) so a restarted cluster keeps
// the addresses clients hold, as long as nothing else took them meanwhile.
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

export interface AddressMemory {
  /** Object key → address, from an earlier run; those addresses are reserved for their keys. */
  remembered?: Record<string, string>;
  /** Called after each keyed allocation or release with every key's address (held or still reserved). */
  onChange?: (assigned: Record<string, string>) => void;
}

export class AddressPool {
  readonly #first: number;
  readonly #last: number;
  #next: number;
  readonly #claims = new Map<string, Server>();
  /** Keys of the addresses this pool holds for named objects. */
  readonly #keys = new Map<string, string>();
  /** Remembered addresses not yet handed back (key → address). */
  readonly #reserved: Map<string, string>;
  readonly #onChange: ((assigned: Record<string, string>) => void) | undefined;

  constructor(first: string, last: string, memory: AddressMemory = {}) {
    this.#first = toNumber(first);
    this.#last = toNumber(last);
    this.#next = this.#first;
    const inRange = Object.entries(memory.remembered ?? {}).filter(([, address]) => {
      try {
        const n = toNumber(address);
        return n >= this.#first && n <= this.#last;
      } catch {
        return false;
      }
    });
    this.#reserved = new Map(inRange);
    this.#onChange = memory.onChange;
  }

  /** Every key's address: those held now and those remembered but not yet asked for. */
  assigned(): Record<string, string> {
    return Object.fromEntries([...this.#reserved, ...[...this.#keys].map(([address, key]) => [key, address] as const)]);
  }

  /**
   * An address, claimed: the one remembered for `key` when it is still free, else the next
   * free address in the range that is not reserved for another key. Throws when the range is exhausted.
   */
  async allocate(key?: string): Promise<string> {
    const remembered = key === undefined ? undefined : this.#reserved.get(key);
    if (key !== undefined && remembered !== undefined) {
      this.#reserved.delete(key);
      if (!this.#claims.has(remembered)) {
        const server = await claim(remembered);
        if (server && !this.#claims.has(remembered)) return this.#hold(remembered, server, key);
        server?.close();
      }
    }
    const reserved = new Set(this.#reserved.values());
    const size = this.#last - this.#first + 1;
    for (let tried = 0; tried < size; tried++) {
      const candidate = this.#next;
      this.#next = candidate >= this.#last ? this.#first : candidate + 1;
      const last = candidate & 255;
      if (last === 0 || last === 255) continue;
      const address = toAddress(candidate);
      if (this.#claims.has(address) || reserved.has(address)) continue;
      const server = await claim(address);
      if (!server) continue;
      // Another allocate() in this process may have claimed it while we waited.
      if (this.#claims.has(address)) {
        server.close();
        continue;
      }
      return this.#hold(address, server, key);
    }
    throw new Error(`no free address in ${toAddress(this.#first)}–${toAddress(this.#last)}`);
  }

  #hold(address: string, server: Server, key: string | undefined): string {
    this.#claims.set(address, server);
    if (key !== undefined) {
      this.#keys.set(address, key);
      this.#onChange?.(this.assigned());
    }
    return address;
  }

  release(address: string): void {
    this.#claims.get(address)?.close();
    this.#claims.delete(address);
    if (this.#keys.delete(address)) this.#onChange?.(this.assigned());
  }

  close(): void {
    for (const server of this.#claims.values()) server.close();
    this.#claims.clear();
  }
}
