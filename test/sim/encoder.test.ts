// vLLM EPD in the simulator: images in chat bodies, the mm_hash-keyed shared-storage encoder cache,
// an ec_producer (encoder) writing it, an ec_consumer (prefill) reading it or encoding a miss
// locally, and the generic counters that show the encoder's work. Real processes, a real directory.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DEFAULT_IMAGE_TOKENS,
  ecCacheFile,
  ecSide,
  encodeMs,
  imageTokens,
  loadEncoderCache,
  mmHash,
  readMedia,
  readVolumeMounts,
  saveEncoderCache,
} from "../../src/sim/encoder.ts";
import { RequestError } from "../../src/sim/openai.ts";
import { metricValue, post, readSse, scrape, startSim, type SimProcess } from "./harness.ts";
import { pngHeader } from "../support/images.ts";

const MODEL = "Qwen/Qwen2.5-VL-7B-Instruct";

const png = pngHeader;
const dataUrl = (bytes: Buffer) => `data:image/png;base64,${bytes.toString("base64")}`;
const chat = (url: string, text = "What is in this picture?") => ({
  model: MODEL,
  max_tokens: 4,
  messages: [{ role: "user", content: [{ type: "text", text }, { type: "image_url", image_url: { url } }] }],
});

describe("reading images", () => {
  it.each([
    [png(280, 280), 100],
    [png(300, 100), 11 * 4],
    [Buffer.from("GIF89a\x38\x00\x1c\x00", "latin1"), 2],
    [Buffer.from("not an image"), DEFAULT_IMAGE_TOKENS],
  ])("placeholder tokens follow the image size (%#)", (bytes, tokens) => {
    expect(imageTokens(bytes)).toBe(tokens);
  });

  it("hashes the bytes with the model id: the same image has one mm_hash, another model another", () => {
    const image = png(56, 56);
    expect(mmHash(MODEL, image)).toBe(mmHash(MODEL, Buffer.from(image)));
    expect(mmHash(MODEL, image)).not.toBe(mmHash("other/model", image));
    expect(mmHash(MODEL, image)).not.toBe(mmHash(MODEL, png(56, 56, 1)));
    expect(mmHash(MODEL, image)).toMatch(/^[0-9a-f]{64}$/);
  });

  it("reads image_url parts with data URLs (object or string form), in order; text parts add no items", () => {
    const a = png(28, 28);
    const b = png(56, 28);
    const items = readMedia(MODEL, {
      messages: [
        { role: "system", content: "plain" },
        { role: "user", content: [{ type: "image_url", image_url: { url: dataUrl(a) } }, { type: "text", text: "and" }, { type: "image_url", image_url: dataUrl(b) }] },
      ],
    });
    expect(items).toEqual([
      { hash: mmHash(MODEL, a), tokens: 1 },
      { hash: mmHash(MODEL, b), tokens: 2 },
    ]);
  });

  it.each([
    ["https://example.com/cat.png", /reads only data: URLs and fetches nothing/],
    ["data:text/plain;base64,aGk=", /media type is "text\/plain", not an image/],
  ])("refuses %s with a 400 naming the part", (url, message) => {
    const body = { messages: [{ role: "user", content: [{ type: "image_url", image_url: { url } }] }] };
    let error: unknown;
    try {
      readMedia(MODEL, body);
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(RequestError);
    expect((error as RequestError).status).toBe(400);
    expect((error as RequestError).message).toMatch(/messages\[0\]\.content\[0\]\.image_url/);
    expect((error as RequestError).message).toMatch(message);
  });
});

describe("the shared-storage encoder cache", () => {
  const dir = mkdtempSync(join(tmpdir(), "ec-unit-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("saves <path>/<mm_hash>/encoder_cache.safetensors atomically and loads its token count back", () => {
    const item = { hash: "ab".repeat(32), tokens: 123 };
    expect(loadEncoderCache(dir, item.hash)).toBeUndefined();
    saveEncoderCache(dir, item, 3584);
    expect(ecCacheFile(dir, item.hash)).toBe(join(dir, item.hash, "encoder_cache.safetensors"));
    expect(loadEncoderCache(dir, item.hash)).toBe(123);
    expect(readdirSync(join(dir, item.hash))).toEqual(["encoder_cache.safetensors"]);
  });

  it("resolves shared_storage_path through the pod's mounts (longest prefix), /tmp by default", () => {
    const mounts = readVolumeMounts(JSON.stringify({ "/ec-cache": "/host/claim", "/ec-cache/deep": "/host/other", "/x": 3 }));
    expect(mounts).toEqual({ "/ec-cache": "/host/claim", "/ec-cache/deep": "/host/other" });
    const config = (path?: string) => ({ ec_connector: "ECSharedStorageConnector", ec_role: "ec_consumer", ec_connector_extra_config: path ? { shared_storage_path: path } : {} });
    expect(ecSide(config("/ec-cache"), mounts)?.storagePath).toBe("/host/claim");
    expect(ecSide(config("/ec-cache/a"), mounts)?.storagePath).toBe("/host/claim/a");
    expect(ecSide(config("/ec-cache/deep/b"), mounts)?.storagePath).toBe("/host/other/b");
    expect(ecSide(config("/ec-cachex"), mounts)?.storagePath).toBe("/ec-cachex");
    expect(ecSide(config(), {})).toMatchObject({ storagePath: "/tmp", configuredPath: "/tmp", role: "ec_consumer" });
    expect(ecSide(undefined, mounts)).toBeUndefined();
    expect(readVolumeMounts("not json")).toEqual({});
  });

  it("the encoder's cost grows with the image's tokens and is far below prefilling them", () => {
    // 8 B active parameters at 10 000 prompt tokens/s: 1000 image tokens are 4000 ViT patches of
    // 2 × 0.675 GFLOP = 5.4 TFLOP, the work of 337.5 language-model tokens: 33.75 ms.
    const perf = { model: { activeParamsB: 8 }, prefillTokensPerSecond: 10_000 } as never;
    expect(encodeMs(perf, 0)).toBe(0);
    expect(encodeMs(perf, 1000)).toBeCloseTo(33.75, 6);
    expect(encodeMs(perf, 2000)).toBeCloseTo(67.5, 6);
  });
});

describe("vLLM EPD across real processes sharing one directory", () => {
  const dir = mkdtempSync(join(tmpdir(), "ec-e2e-"));
  let encoder: SimProcess;
  let prefill: SimProcess;
  let aggregated: SimProcess;
  const ec = (role: string) => JSON.stringify({ ec_connector: "ECSharedStorageConnector", ec_role: role, ec_connector_extra_config: { shared_storage_path: "/ec-cache" } });
  const engine = (extra: string[]) => ["vllm", "serve", MODEL, "--port", "0", "--host", "127.0.0.1", "--max-model-len", "32768", ...extra];
  const mounts = { BERTH_VOLUME_MOUNTS: JSON.stringify({ "/ec-cache": dir }) };

  beforeAll(async () => {
    [encoder, prefill, aggregated] = await Promise.all([
      startSim(["--gpu-type", "nvidia-h100-80gb"], engine(["--ec-transfer-config", ec("ec_producer")]), mounts),
      startSim(["--gpu-type", "nvidia-h100-80gb"], engine(["--ec-transfer-config", ec("ec_consumer")]), mounts),
      startSim(["--gpu-type", "nvidia-h100-80gb"], engine([])),
    ]);
  });
  afterAll(async () => {
    await Promise.all([encoder?.stop(), prefill?.stop(), aggregated?.stop()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("logs its EC role and the host directory behind /ec-cache", () => {
    expect(encoder.logLine("simulating vllm")).toMatchObject({ ecRole: "ec_producer", ecStoragePath: dir });
    expect(prefill.logLine("simulating vllm")).toMatchObject({ ecRole: "ec_consumer", ecStoragePath: dir });
  });

  it("the encoder writes the image's cache file and answers one token; its counters show the work", async () => {
    const image = png(560, 560);
    const hash = mmHash(MODEL, image);
    const before = await scrape(encoder.url);
    const answer = await post(`${encoder.url}/v1/chat/completions`, { ...chat(dataUrl(image)), max_tokens: 1, stream: false }, { "X-Request-Id": "epd-1" });
    expect(answer.status).toBe(200);
    const body = (await answer.json()) as any;
    expect(body.usage.completion_tokens).toBe(1);
    expect(body.usage.prompt_tokens).toBeGreaterThanOrEqual(400);
    expect(loadEncoderCache(dir, hash)).toBe(400);
    const after = await scrape(encoder.url);
    const success = (text: string) => metricValue(text, "vllm:request_success_total", { finished_reason: "length" }) ?? 0;
    expect(success(after) - success(before)).toBe(1);
    expect((metricValue(after, "vllm:prompt_tokens_total") ?? 0) - (metricValue(before, "vllm:prompt_tokens_total") ?? 0)).toBe(body.usage.prompt_tokens);
  });

  it("the prefill loads an encoded image from the shared directory and encodes a miss itself (logged), both answering", async () => {
    const cached = png(840, 840);
    await post(`${encoder.url}/v1/chat/completions`, { ...chat(dataUrl(cached)), max_tokens: 1 });
    expect(loadEncoderCache(dir, mmHash(MODEL, cached))).toBe(900);

    const hit = await post(`${prefill.url}/v1/chat/completions`, chat(dataUrl(cached)), { "X-Request-Id": "epd-hit" });
    expect(hit.status).toBe(200);
    expect(prefill.stdout()).not.toContain("epd-hit");

    const missImage = png(840, 840, 7);
    const miss = await post(`${prefill.url}/v1/chat/completions`, chat(dataUrl(missImage)), { "X-Request-Id": "epd-miss" });
    expect(miss.status).toBe(200);
    const warning = prefill.logLine("encoder cache miss");
    expect(warning).toMatchObject({ requestId: "epd-miss", misses: [mmHash(MODEL, missImage)], storagePath: dir });
    // The consumer never writes the cache: only the producer saves (save_caches returns early otherwise).
    expect(loadEncoderCache(dir, mmHash(MODEL, missImage))).toBeUndefined();
  });

  it("streams an image request and counts its placeholder tokens on an engine without EC", async () => {
    const sentAt = Date.now();
    const response = await post(`${aggregated.url}/v1/chat/completions`, { ...chat(dataUrl(png(280, 280))), stream: true, stream_options: { include_usage: true } });
    expect(response.status).toBe(200);
    const sse = await readSse(response, sentAt);
    expect(sse.events.at(-1)).toBe("data: [DONE]");
    const usage = sse.chunks.at(-1)?.usage;
    const text = await post(`${aggregated.url}/v1/chat/completions`, { ...chat("data:image/png;base64,"), messages: [{ role: "user", content: "What is in this picture?" }] });
    const textUsage = ((await text.json()) as any).usage;
    expect(usage.prompt_tokens - textUsage.prompt_tokens).toBeGreaterThanOrEqual(100);
  });

  it("answers an http image URL with vLLM's 400 envelope and fetches nothing", async () => {
    const response = await post(`${encoder.url}/v1/chat/completions`, chat("http://127.0.0.1:9/cat.png"));
    expect(response.status).toBe(400);
    const body = (await response.json()) as any;
    expect(body.error.message).toMatch(/fetches nothing/);
  });
});
