// Addresses remembered from an earlier run go back to the same objects and are kept from others.
import { afterEach, describe, expect, it } from "vitest";
import { AddressPool } from "../../../k8s/sim/ip-pool.ts";

const pools: AddressPool[] = [];
const pool = (...args: ConstructorParameters<typeof AddressPool>) => {
  const made = new AddressPool(...args);
  pools.push(made);
  return made;
};
afterEach(() => pools.splice(0).forEach((p) => p.close()));

describe("AddressPool with remembered addresses", () => {
  it("hands a remembered key its address, and other keys the next free ones around it", async () => {
    const changes: Record<string, string>[] = [];
    const p = pool("127.77.0.1", "127.77.0.20", { remembered: { "services/ns/router": "127.77.0.3" }, onChange: (a) => changes.push(a) });
    expect(await p.allocate("pods/ns/a")).toBe("127.77.0.1");
    expect(await p.allocate("pods/ns/b")).toBe("127.77.0.2");
    expect(await p.allocate("pods/ns/c")).toBe("127.77.0.4");
    expect(await p.allocate("services/ns/router")).toBe("127.77.0.3");
    expect(changes.at(-1)).toEqual({ "pods/ns/a": "127.77.0.1", "pods/ns/b": "127.77.0.2", "pods/ns/c": "127.77.0.4", "services/ns/router": "127.77.0.3" });
    p.release("127.77.0.2");
    expect(changes.at(-1)).not.toHaveProperty("pods/ns/b");
  });

  it("reports remembered keys not yet asked for, and ignores addresses outside its range", async () => {
    const p = pool("127.77.1.1", "127.77.1.20", { remembered: { "pods/ns/later": "127.77.1.5", "pods/ns/elsewhere": "127.0.0.9" } });
    expect(p.assigned()).toEqual({ "pods/ns/later": "127.77.1.5" });
    expect(await p.allocate("pods/ns/elsewhere")).toBe("127.77.1.1");
  });

  it("gives a key a new address when its old one is taken", async () => {
    const holder = pool("127.77.2.7", "127.77.2.7");
    expect(await holder.allocate()).toBe("127.77.2.7");
    const p = pool("127.77.2.1", "127.77.2.20", { remembered: { "pods/ns/a": "127.77.2.7" } });
    expect(await p.allocate("pods/ns/a")).toBe("127.77.2.1");
  });
});
