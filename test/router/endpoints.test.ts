// The endpoint registry: an endpoint updated in place (same id and url) keeps its identity and
// in-flight count, and what the push changed is what the next pick sees.
import { describe, expect, it } from "vitest";
import { EndpointRegistry, type EndpointConfig } from "../../src/router/endpoints.ts";
import { LeastLoad } from "../../src/router/policies/least-load.ts";

function push(registry: EndpointRegistry, configs: EndpointConfig[]): void {
  const reads = new Map(configs.map((config) => [config.id, { cards: [{ id: "m" }] }]));
  registry.replace(configs, reads, false);
}

describe("EndpointRegistry.replace", () => {
  it("applies a new ranks count in place, and the next least_load pick weighs by it", () => {
    const registry = new EndpointRegistry();
    const a: EndpointConfig = { id: "a", url: "http://10.0.0.1:8000", role: "server", state: "eligible" };
    const b: EndpointConfig = { id: "b", url: "http://10.0.0.2:8000", role: "server", state: "eligible" };
    push(registry, [a, b]);
    const endpointA = registry.get("a")!;
    endpointA.inFlight = 2;
    registry.get("b")!.inFlight = 1;
    const policy = new LeastLoad();
    const pickId = () => {
      const pool = registry.candidates("server", "m");
      return pool[policy.pick(pool).index]!.id;
    };
    expect(pickId()).toBe("b"); // 2 > 1

    push(registry, [{ ...a, ranks: 4 }, b]);
    expect(registry.get("a")).toBe(endpointA);
    expect(endpointA).toMatchObject({ ranks: 4, inFlight: 2 });
    expect(pickId()).toBe("a"); // 2 ÷ 4 < 1

    push(registry, [a, b]);
    expect(endpointA.ranks).toBeUndefined();
    expect(pickId()).toBe("b");
  });
});
