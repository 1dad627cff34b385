// scrapePods: bounded concurrency and time, every failure kind reported as missing (fake fetch);
// then real simulator processes on loopback: rates and means consistent with the requests sent, a
// killed pod `unreachable`, the same pod restarted `reset` for exactly one interval.
import { afterAll, describe, expect, it } from "vitest";
import { aggregateRoles } from "../../../src/agent/signals/aggregate.ts";
import type { EngineSample } from "../../../src/agent/signals/interval.ts";
import { scrapePods, type EnginePod } from "../../../src/agent/signals/scrape.ts";
import { ENGINE_SIGNALS } from "../../../src/agent/signals/signals.ts";
import { post, startSim, type SimProcess } from "../../sim/harness.ts";
import { fixture } from "./support.ts";

const pod = (name: string, url: string, overrides: Partial<EnginePod> = {}): EnginePod => ({ uid: `uid-${name}`, name, url, role: "chat", engine: "vllm", ...overrides });
const signal = (roles: ReturnType<typeof aggregateRoles>, name: string) => roles[0]!.signals.find((s) => s.name === name)!;

describe("scrapePods with a stand-in fetch", () => {
  it("reads at most `concurrency` pods at once and returns results in pod order", async () => {
    let active = 0;
    let peak = 0;
    const body = fixture("sim-vllm-dp2.txt");
    const fakeFetch = (async () => {
      active++;
      peak = Math.max(peak, active);
      await new Promise((resolve) => setTimeout(resolve, 5));
      active--;
      return new Response(body, { status: 200 });
    }) as typeof fetch;
    const pods = Array.from({ length: 40 }, (_, i) => pod(`p${i}`, `http://127.0.0.1:${10_000 + i}`));
    const result = await scrapePods(pods, new Map(), { timeoutMs: 1_000, fetch: fakeFetch, concurrency: 5 });
    expect(peak).toBe(5);
    expect(result.failures).toEqual([]);
    expect(result.intervals.map((interval) => interval.pod.name)).toEqual(pods.map((p) => p.name));
    expect(result.intervals[0]).toMatchObject({ running: 0, waiting: 0 });
    expect([...result.samples.keys()]).toEqual(pods.map((p) => p.uid));
  });

  it.each([
    ["a 404 (SGLang without --enable-metrics)", () => new Response("Not Found", { status: 404 }), "not-exposed", /404/],
    ["a 503 (vLLM scaling)", () => new Response("{}", { status: 503 }), "unreachable", /503/],
    ["an unparsable body", () => new Response("vllm:num_requests_running{engine=0} 1\n", { status: 200 }), "unreachable", /unparsable \/metrics: line 1/],
    ["a body over the cap", () => new Response("x 1\n".repeat(1000), { status: 200 }), "unreachable", /larger than 1000 bytes/],
    [
      "no answer within the timeout",
      (_: unknown, init?: RequestInit) =>
        new Promise<Response>((_, reject) => init!.signal!.addEventListener("abort", () => reject(init!.signal!.reason))),
      "unreachable",
      /timeout|aborted/i,
    ],
  ] as const)("reports %s as a failure, keeping the previous sample as the next base", async (_, answer, reason, detail) => {
    const previous = new Map<string, EngineSample>([["uid-a", { pod: pod("a", "x"), at: 1, values: { running: 3 }, ranks: ["0"] }]]);
    const started = Date.now();
    const result = await scrapePods([pod("a", "http://127.0.0.1:1")], previous, { timeoutMs: 200, maxBytes: 1000, fetch: (async (url: unknown, init?: RequestInit) => answer(url, init)) as typeof fetch });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(result.intervals).toEqual([]);
    expect(result.failures).toEqual([{ pod: { uid: "uid-a", name: "a", role: "chat", engine: "vllm" }, reason, detail: expect.stringMatching(detail) }]);
    expect(result.samples.get("uid-a")).toBe(previous.get("uid-a"));
  });

  it("forgets the samples of pods no longer listed", async () => {
    const previous = new Map<string, EngineSample>([["uid-gone", { pod: pod("gone", "x"), at: 1, values: {}, ranks: [] }]]);
    const result = await scrapePods([], previous, { timeoutMs: 100, fetch: (async () => new Response("")) as typeof fetch });
    expect(result.samples.size).toBe(0);
  });
});

describe("scrapePods against simulator processes on loopback", () => {
  const sims: SimProcess[] = [];
  afterAll(async () => {
    await Promise.all(sims.map((sim) => sim.stop()));
  });
  const VLLM = (port = "0") => ["vllm", "serve", "Qwen/Qwen3-8B", "--port", port, "--host", "127.0.0.1", "--served-model-name", "qwen"];
  const chat = (sim: SimProcess, maxTokens: number, model = "qwen") =>
    post(`${sim.url}/v1/chat/completions`, { model, messages: [{ role: "user", content: "tell me about harbours" }], max_tokens: maxTokens, ignore_eos: true });

  it("reports two vLLM pods per role: rates from what was sent, TTFT > 0, unreachable when killed, reset once after a restart", async () => {
    const a = await startSim(["--latency-profile", "fast"], VLLM());
    const b = await startSim(["--latency-profile", "fast"], VLLM());
    sims.push(a, b);
    const pods = [pod("chat-server-r0-m0", a.url), pod("chat-server-r1-m0", b.url)];
    const options = { timeoutMs: 2_000 };
    const aggregate = (result: Awaited<ReturnType<typeof scrapePods>>) =>
      aggregateRoles({ roles: ["chat"], intervals: result.intervals, failures: result.failures, now: Date.now() });

    const first = await scrapePods(pods, new Map(), options);
    const firstReadAt = Date.now();
    expect(first.failures).toEqual([]);
    const firstRoles = aggregate(first);
    expect(signal(firstRoles, "requests_running")).toMatchObject({ value: 0, podCount: 2 });
    expect(signal(firstRoles, "requests_per_second")).toMatchObject({ podCount: 0 });
    expect(signal(firstRoles, "requests_per_second")).not.toHaveProperty("value");
    expect(firstRoles[0]!.missing).toContainEqual({ name: "requests_per_second", pod: "chat-server-r0-m0", reason: "first-read" });
    expect(firstRoles[0]!.missing.filter((m) => m.reason === "first-read")).toHaveLength(2 * 8);

    // 4 requests on a, 2 on b, all finished before the next read; one long one on a still running then.
    const finished = await Promise.all([...[1, 2, 3, 4].map(() => chat(a, 8)), ...[1, 2].map(() => chat(b, 8))]);
    for (const response of finished) expect((await response.json()).usage.completion_tokens).toBe(8);
    const long = await post(`${a.url}/v1/chat/completions`, { model: "qwen", messages: [{ role: "user", content: "go on" }], max_tokens: 600, ignore_eos: true, stream: true });
    // Read until the first generated text: the request is then in the running batch, not waiting.
    const reader = long.body!.getReader();
    const decoder = new TextDecoder();
    let streamed = "";
    for (let chunks = 0; chunks < 50 && !/"content":"[^"]/.test(streamed); chunks++) streamed += decoder.decode((await reader.read()).value);
    expect(streamed).toMatch(/"content":"[^"]/);
    const second = await scrapePods(pods, first.samples, options);
    const secondReadAt = Date.now();
    const roles = aggregate(second);
    expect(roles[0]!.missing).toEqual([]);
    const [intervalA, intervalB] = second.intervals;
    expect(intervalA!.requestRate! * intervalA!.seconds!).toBeCloseTo(4, 6);
    expect(intervalB!.requestRate! * intervalB!.seconds!).toBeCloseTo(2, 6);
    // The role's rate against the test's own clock: 6 requests over the time between the reads.
    expect(signal(roles, "requests_per_second").value).toBeGreaterThan((6 / ((secondReadAt - firstReadAt) / 1000)) * 0.8);
    expect(signal(roles, "requests_per_second").value).toBeLessThan((6 / ((secondReadAt - firstReadAt) / 1000)) * 1.25 + 1);
    expect(signal(roles, "generation_tokens_per_second").value! * intervalA!.seconds!).toBeGreaterThanOrEqual(6 * 8 * 0.8);
    expect(signal(roles, "prompt_tokens_per_second").value).toBeGreaterThan(0);
    // The six finished requests generated 8 tokens each; the long one still running generates more,
    // which the per-request histograms leave out (the counters alone would not).
    expect(signal(roles, "generation_tokens_per_request").value).toBe(8);
    expect(signal(roles, "ttft_mean")).toMatchObject({ unit: "ms", podCount: 2 });
    expect(signal(roles, "ttft_mean").value).toBeGreaterThan(0);
    expect(signal(roles, "itl_mean").value).toBeGreaterThan(0);
    // Six requests on idle engines: scheduled at once, but a wait of 0 is a mean, not an absent one.
    expect(signal(roles, "queue_time_mean").value).toBeGreaterThanOrEqual(0);
    expect(signal(roles, "requests_running")).toMatchObject({ value: 1, podCount: 2 });
    expect(signal(roles, "requests_waiting")).toMatchObject({ value: 0, podCount: 2 });
    expect(signal(roles, "kv_cache_usage").value).toBeGreaterThan(0);
    await reader.cancel();

    b.child.kill("SIGKILL");
    await b.exited;
    const third = await scrapePods(pods, second.samples, options);
    expect(third.failures).toEqual([expect.objectContaining({ pod: expect.objectContaining({ name: "chat-server-r1-m0" }), reason: "unreachable" })]);
    const killed = aggregate(third);
    expect(signal(killed, "requests_running")).toMatchObject({ podCount: 1 });
    expect(killed[0]!.missing).toEqual(Object.values(ENGINE_SIGNALS).map(({ name }) => ({ name, pod: "chat-server-r1-m0", reason: "unreachable" })));

    // The same pod (uid) comes back on its port as a new process: its counters start again from 0.
    const b2 = await startSim(["--latency-profile", "fast"], VLLM(String(b.port)));
    sims.push(b2);
    const fourth = await scrapePods(pods, third.samples, options);
    expect(fourth.failures).toEqual([]);
    expect(fourth.intervals[1]!.resetCause).toBe("counter-decreased");
    const restarted = aggregate(fourth);
    expect(restarted[0]!.missing).toEqual(
      ["requests_per_second", "prompt_tokens_per_second", "generation_tokens_per_second", "prompt_tokens_per_request", "generation_tokens_per_request", "ttft_mean", "itl_mean", "queue_time_mean"].map((name) => ({ name, pod: "chat-server-r1-m0", reason: "reset" })),
    );
    expect(signal(restarted, "requests_running")).toMatchObject({ podCount: 2 });

    await (await chat(b2, 8)).json();
    const fifth = await scrapePods(pods, fourth.samples, options);
    const recovered = aggregate(fifth);
    expect(recovered[0]!.missing).toEqual([]);
    expect(fifth.intervals[1]!.requestRate! * fifth.intervals[1]!.seconds!).toBeCloseTo(1, 6);
    expect(fifth.intervals[1]).toMatchObject({ requests: 1, generationTokens: 8 });
  });

  it("reads SGLang's names, and an SGLang server without --enable-metrics as not-exposed", async () => {
    const LAUNCH = ["python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B", "--port", "0", "--host", "127.0.0.1"];
    const withMetrics = await startSim(["--latency-profile", "fast"], [...LAUNCH, "--enable-metrics", "--dp-size", "2"]);
    const without = await startSim(["--latency-profile", "fast"], LAUNCH);
    sims.push(withMetrics, without);
    const pods = [pod("sg-0", withMetrics.url, { engine: "sglang" }), pod("sg-1", without.url, { engine: "sglang" })];
    const first = await scrapePods(pods, new Map(), { timeoutMs: 2_000 });
    expect(first.failures).toEqual([expect.objectContaining({ pod: expect.objectContaining({ name: "sg-1" }), reason: "not-exposed" })]);
    for (const response of await Promise.all([1, 2, 3].map(() => chat(withMetrics, 8, "Qwen/Qwen3-8B")))) expect(response.status).toBe(200);
    const second = await scrapePods(pods, first.samples, { timeoutMs: 2_000 });
    const roles = aggregateRoles({ roles: ["chat"], intervals: second.intervals, failures: second.failures, now: Date.now() });
    const [interval] = second.intervals;
    expect(interval!.requestRate! * interval!.seconds!).toBeCloseTo(3, 6);
    expect(interval!.ttft!.count).toBe(3);
    expect(signal(roles, "ttft_mean").value).toBeGreaterThan(0);
    expect(signal(roles, "itl_mean").value).toBeGreaterThan(0);
    expect(signal(roles, "requests_running")).toMatchObject({ value: 0, podCount: 1 });
    expect(roles[0]!.missing).toEqual(Object.values(ENGINE_SIGNALS).map(({ name }) => ({ name, pod: "sg-1", reason: "not-exposed" })));
  });
});
