// Fixtures and builders for the signals tests: exposition files under test/fixtures/metrics and
// engine samples built field by field.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { EngineValues } from "../../../src/agent/signals/engine.ts";
import type { EngineSample } from "../../../src/agent/signals/interval.ts";
import type { PodRef } from "../../../src/agent/signals/signals.ts";

export function fixture(name: string): string {
  return readFileSync(join(import.meta.dirname, "../../fixtures/metrics", name), "utf8");
}

export function aPod(overrides: Partial<PodRef> = {}): PodRef {
  return { uid: "uid-a", name: "chat-server-r0-m0", role: "server", engine: "vllm", ...overrides };
}

/** A sample `at` ms after 0 with every field exposed unless overridden (undefined removes a field). */
export function aSample(at: number, values: Partial<Record<keyof EngineValues, unknown>> = {}, extra: Partial<EngineSample> = {}): EngineSample {
  const base: EngineValues = {
    running: 2,
    waiting: 1,
    kvUsage: 0.5,
    ttft: { sum: 10, count: 100 },
    itl: { sum: 20, count: 2000 },
    queueTime: { sum: 2, count: 100 },
    promptTokens: 10_000,
    generationTokens: 20_000,
    requestsSucceeded: 100,
  };
  const merged = { ...base, ...values } as Record<string, unknown>;
  for (const key of Object.keys(merged)) if (merged[key] === undefined) delete merged[key];
  return { pod: aPod(), at, values: merged as EngineValues, ranks: ["0"], ...extra };
}
