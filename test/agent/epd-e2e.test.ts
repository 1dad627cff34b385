// vLLM EPD end to end with real processes: `berth serve`, the simulated cluster, the agent and the
// builtin router. One encode, one prefill, one decode pod: the agent creates the ReadWriteMany
// claim `<deployment>-ec-cache`, the encode and prefill pods share its directory, and the
// deployment goes Ready. Image requests (data URLs) through the router run encoder → prefill →
// decode, streamed or not; the encoder's counters and the cache files show the work; text-only
// requests skip the encoder. Deleting the encoder pod while image requests run: every request
// settles within its bound, with an answer or a clear error. Deleting the deployment deletes the
// claim and its directory.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type AgentWorld, eventually, startAgentWorld } from "./e2e-support.ts";
import { pngDataUrl } from "../support/images.ts";

const NS = "berth-vision";
const MODEL = "Qwen/Qwen2.5-VL-7B-Instruct";
/** Every request is bounded; one still open after this has hung. */
const REQUEST_BOUND_MS = 90_000;

const png = pngDataUrl;

interface Outcome {
  status: number;
  text: string;
  ms: number;
}

async function ask(endpoint: string, content: unknown, extra: object = {}): Promise<Outcome> {
  const started = Date.now();
  const res = await fetch(`${endpoint}/v1/chat/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ model: MODEL, messages: [{ role: "user", content }], max_tokens: 8, ...extra }),
    signal: AbortSignal.timeout(REQUEST_BOUND_MS),
  });
  return { status: res.status, text: await res.text(), ms: Date.now() - started };
}

const withImage = (url: string) => [
  { type: "text", text: "What is in this picture?" },
  { type: "image_url", image_url: { url } },
];

describe("vLLM EPD through the builtin router on the simulated cluster", () => {
  let world: AgentWorld;
  let id: string;
  let endpoint: string;
  let claimDir: string;

  const metric = async (pod: string, name: string) => {
    const object = await world.kube.core.readNamespacedPod({ name: pod, namespace: NS });
    const text = await (await fetch(`http://${object.status!.podIP}:8000/metrics`)).text();
    return text
      .split("\n")
      .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
      .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(" ") + 1)), 0);
  };
  const encoderRequests = () => metric("vl-encode-r0-m0", "vllm:request_success_total");

  beforeAll(async () => {
    world = await startAgentWorld({ project: "vision" });
    world.startAgent();
  }, 90_000);
  afterAll(async () => {
    await world?.stop();
  }, 30_000);

  it("creates the shared claim, mounts it on encode and prefill, and goes Ready", async () => {
    id = await world.create("vl", {
      model: { name: MODEL },
      engine: { name: "vllm", image: "vllm/vllm-openai:v0.11.0" },
      router: { kind: "builtin" },
      roles: [
        { name: "encode", kind: "encode", replicas: 1, resources: { gpus: 1 } },
        { name: "prefill", kind: "prefill", replicas: 1, resources: { gpus: 1 } },
        { name: "decode", kind: "decode", replicas: 1, resources: { gpus: 1 } },
      ],
    });
    const ready = await world.readyDeployment(id, { timeoutMs: 120_000 });
    endpoint = ready.status.endpoint;
    expect(ready.status.roles.map((r: { name: string; ready: number }) => [r.name, r.ready])).toEqual([
      ["encode", 1],
      ["prefill", 1],
      ["decode", 1],
    ]);
    const claim = await world.kube.core.readNamespacedPersistentVolumeClaim({ name: "vl-ec-cache", namespace: NS });
    expect(claim.spec).toMatchObject({ accessModes: ["ReadWriteMany"], storageClassName: "standard", resources: { requests: { storage: "10Gi" } } });
    expect(claim.status?.phase).toBe("Bound");
    expect(claim.metadata?.labels?.["berth.dev/deployment-id"]).toBe(id);
    claimDir = join(world.cluster!.workDir, "volumes", claim.spec!.volumeName!);
    expect(existsSync(claimDir)).toBe(true);
  }, 150_000);

  it("answers image requests through encoder, prefill and decode (JSON and streamed); the encoder's counters and files show them", async () => {
    const before = await encoderRequests();
    const first = await ask(endpoint, withImage(png(560, 560, 1)));
    expect(first.status, first.text).toBe(200);
    expect(JSON.parse(first.text).usage.prompt_tokens).toBeGreaterThanOrEqual(400);

    const streamed = await ask(endpoint, withImage(png(280, 840, 2)), { stream: true });
    expect(streamed.status, streamed.text).toBe(200);
    expect(streamed.text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(streamed.text).toContain('"delta"');

    expect((await encoderRequests()) - before).toBe(2);
    // One directory per mm_hash, each with the file ECSharedStorageConnector names.
    const hashes = readdirSync(claimDir);
    expect(hashes).toHaveLength(2);
    for (const hash of hashes) expect(readdirSync(join(claimDir, hash))).toEqual(["encoder_cache.safetensors"]);
    // The prefill found every image in the shared cache: no local encode.
    const prefillLog = await world.kube.core.readNamespacedPodLog({ name: "vl-prefill-r0-m0", namespace: NS });
    expect(prefillLog).not.toContain("encoder cache miss");
  }, 90_000);

  it("sends text-only requests to prefill and decode only", async () => {
    const before = await encoderRequests();
    const prefillBefore = await metric("vl-prefill-r0-m0", "vllm:request_success_total");
    const answer = await ask(endpoint, "no picture this time");
    expect(answer.status, answer.text).toBe(200);
    expect(await encoderRequests()).toBe(before);
    expect(await metric("vl-prefill-r0-m0", "vllm:request_success_total")).toBe(prefillBefore + 1);
  }, 60_000);

  it("settles every image request within its bound while the encoder pod is deleted and recreated", async () => {
    const original = await world.kube.core.readNamespacedPod({ name: "vl-encode-r0-m0", namespace: NS });
    const outcomes: Array<Outcome | { error: string }> = [];
    let stop = false;
    let salt = 100;
    const client = async () => {
      while (!stop) {
        outcomes.push(await ask(endpoint, withImage(png(560, 560, salt++))).catch((error: Error) => ({ error: `${error.name}: ${error.message}` })));
      }
    };
    const clients = [client(), client(), client()];
    await eventually("a few answers before the delete", async () => (outcomes.length >= 3 ? true : undefined), 60_000);
    await world.kube.core.deleteNamespacedPod({ name: "vl-encode-r0-m0", namespace: NS });
    await eventually(
      "a new encoder pod, Ready",
      async () => {
        const pod = await world.kube.core.readNamespacedPod({ name: "vl-encode-r0-m0", namespace: NS }).catch(() => undefined);
        return pod && pod.metadata?.uid !== original.metadata?.uid && pod.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ? true : undefined;
      },
      120_000,
    );
    await world.readyDeployment(id, { timeoutMs: 120_000 });
    const settledBefore = outcomes.length;
    await eventually("answers after the restart", async () => (outcomes.length >= settledBefore + 3 ? true : undefined), 60_000);
    stop = true;
    await Promise.all(clients);

    // None hung: a fetch still open at the bound would have ended in a TimeoutError.
    const errors = outcomes.filter((o): o is { error: string } => "error" in o);
    expect(errors.filter((e) => /TimeoutError/.test(e.error))).toEqual([]);
    for (const outcome of outcomes.filter((o): o is Outcome => "status" in o)) {
      expect(outcome.ms).toBeLessThan(REQUEST_BOUND_MS);
      if (outcome.status === 200) continue;
      // A failure is an OpenAI error body that says what happened, never a bare 5xx or an empty body.
      const body = JSON.parse(outcome.text) as { error?: { message?: string } };
      expect([502, 503, 504], outcome.text).toContain(outcome.status);
      expect(body.error?.message?.length ?? 0, outcome.text).toBeGreaterThan(10);
    }
    const after = outcomes.slice(settledBefore).filter((o) => "status" in o && o.status === 200);
    expect(after.length).toBeGreaterThanOrEqual(1);
  }, 360_000);

  it("deleting the deployment deletes the claim and its directory", async () => {
    const deleted = await world.call("DELETE", `/v1/deployments/${id}`);
    expect([200, 202, 204]).toContain(deleted.status);
    await eventually(
      "the claim to go",
      async () => {
        const gone = await world.kube.core
          .readNamespacedPersistentVolumeClaim({ name: "vl-ec-cache", namespace: NS })
          .then(() => false)
          .catch((error: { code?: number }) => error.code === 404);
        return gone && !existsSync(claimDir) ? true : undefined;
      },
      120_000,
    );
  }, 150_000);
});
