// Multimodal inputs and vLLM's encoder-cache (EC) disaggregation with ECSharedStorageConnector
// (vllm/distributed/ec_transfer/ec_connector/shared_storage_connector.py): an `ec_producer`
// runs the vision encoder and saves each item's output to
// `<shared_storage_path>/<mm_hash>/encoder_cache.safetensors`; an `ec_consumer` (the prefill)
// checks that file per item and loads it instead of encoding. A missing file is not an error:
// vLLM's scheduler (vllm/v1/core/sched/scheduler.py `_try_schedule_encoder_inputs`) loads an
// item externally only when `has_cache_item` is true and otherwise schedules it for the local
// encoder, so a miss costs the consumer the encode time. Embeddings are not computed here: the
// file is a valid safetensors document whose `ec_cache` tensor has the item's token count as its
// first dimension and no data. Only `data:` URLs are read; nothing is fetched.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { PerfModel } from "../domain/perf-model.ts";
import { RequestError } from "./openai.ts";

export type EcRole = "ec_producer" | "ec_consumer";

export interface EcTransferConfig {
  ec_connector?: string;
  ec_role?: string;
  ec_connector_extra_config?: { shared_storage_path?: unknown; [key: string]: unknown };
  [key: string]: unknown;
}

/** One image of a request: vLLM's mm_hash and the placeholder tokens it takes in the prompt. */
export interface MediaItem {
  hash: string;
  tokens: number;
}

/** Placeholder tokens of an image whose size cannot be read (LLaVA-1.5's 336 px grid: 24 × 24). */
export const DEFAULT_IMAGE_TOKENS = 576;
/** Qwen2-VL/2.5-VL: one token per 28 × 28 pixel patch after the 2 × 2 merge (Qwen2-VL paper §2.1). */
const PIXELS_PER_TOKEN_SIDE = 28;
const MAX_IMAGE_TOKENS = 16_384;

/** The file ECSharedStorageConnector reads and writes for one item. */
export function ecCacheFile(storagePath: string, hash: string): string {
  return join(storagePath, hash, "encoder_cache.safetensors");
}

/**
 * mm_hash of one image: vLLM's MultiModalHasher (vllm/multimodal/hasher.py) hashes the model id
 * and the item; with VLLM_MM_HASHER_ALGORITHM=sha256 (its FIPS choice; blake3 is the default and
 * not in node:crypto) the digest is sha256. We hash the encoded bytes, not decoded pixels.
 */
export function mmHash(model: string, bytes: Uint8Array): string {
  return createHash("sha256").update("model_id").update(model).update("image").update(bytes).digest("hex");
}

/** Width and height from a PNG IHDR or a GIF logical screen; undefined for other formats. */
export function imageSize(bytes: Uint8Array): { width: number; height: number } | undefined {
  const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.length >= 24 && view.readUInt32BE(0) === 0x89504e47 && view.toString("latin1", 12, 16) === "IHDR") {
    return { width: view.readUInt32BE(16), height: view.readUInt32BE(20) };
  }
  if (view.length >= 10 && view.toString("latin1", 0, 3) === "GIF") return { width: view.readUInt16LE(6), height: view.readUInt16LE(8) };
  return undefined;
}

export function imageTokens(bytes: Uint8Array): number {
  const size = imageSize(bytes);
  if (!size) return DEFAULT_IMAGE_TOKENS;
  const tokens = Math.ceil(size.width / PIXELS_PER_TOKEN_SIDE) * Math.ceil(size.height / PIXELS_PER_TOKEN_SIDE);
  return Math.min(MAX_IMAGE_TOKENS, Math.max(1, tokens));
}

function decodeDataUrl(url: string, where: string): Uint8Array {
  const match = /^data:([^,]*?)(;base64)?,(.*)$/s.exec(url);
  if (!match) throw new RequestError(400, `${where}: not a data URL`);
  if (!match[1]!.startsWith("image/")) throw new RequestError(400, `${where}: the data URL's media type is "${match[1]}", not an image`);
  return match[2] ? Buffer.from(match[3]!, "base64") : Buffer.from(decodeURIComponent(match[3]!), "latin1");
}

/**
 * The images of a chat body, in order. `image_url` parts with `data:` URLs are read; an http(s)
 * URL is refused (a real vLLM would download it — the simulator reaches nothing off loopback).
 */
export function readMedia(model: string, body: unknown): MediaItem[] {
  const messages = (body as { messages?: unknown })?.messages;
  if (!Array.isArray(messages)) return [];
  const items: MediaItem[] = [];
  messages.forEach((message, m) => {
    const content = (message as { content?: unknown } | null)?.content;
    if (!Array.isArray(content)) return;
    content.forEach((part, p) => {
      if (!part || typeof part !== "object" || (part as { type?: unknown }).type !== "image_url") return;
      const where = `messages[${m}].content[${p}].image_url`;
      const field = (part as { image_url?: unknown }).image_url;
      const url = typeof field === "string" ? field : (field as { url?: unknown } | null)?.url;
      if (typeof url !== "string") throw new RequestError(400, `${where}.url is required`);
      if (!url.startsWith("data:")) {
        throw new RequestError(400, `${where}: berth-sim reads only data: URLs and fetches nothing; inline the image as data:image/png;base64,…`);
      }
      const bytes = decodeDataUrl(url, where);
      items.push({ hash: mmHash(model, bytes), tokens: imageTokens(bytes) });
    });
  });
  return items;
}

/** Token ids standing for an item's placeholders, stable per mm_hash (so prefix caching sees the image). */
export function placeholderIds(item: MediaItem): number[] {
  const seed = Number.parseInt(item.hash.slice(0, 8), 16);
  return Array.from({ length: item.tokens }, (_, i) => 1_000_000 + ((seed + i * 2654435761) % 1_000_000));
}

/** Writes the item's safetensors file atomically (a consumer never sees half a file). */
export function saveEncoderCache(storagePath: string, item: MediaItem, hiddenSize: number): void {
  const file = ecCacheFile(storagePath, item.hash);
  mkdirSync(join(file, ".."), { recursive: true });
  const header = JSON.stringify({
    __metadata__: { num_token: String(item.tokens), hidden_size: String(hiddenSize), producer: "berth-sim" },
    ec_cache: { dtype: "BF16", shape: [item.tokens, 0], data_offsets: [0, 0] },
  });
  const headerBytes = Buffer.from(header, "utf8");
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(headerBytes.length));
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, Buffer.concat([length, headerBytes]));
  renameSync(temp, file);
}

/** The token count of a saved item, or undefined when its file is absent or unreadable. */
export function loadEncoderCache(storagePath: string, hash: string): number | undefined {
  const file = ecCacheFile(storagePath, hash);
  if (!existsSync(file)) return undefined;
  try {
    const bytes = readFileSync(file);
    const length = Number(bytes.readBigUInt64LE(0));
    const header = JSON.parse(bytes.toString("utf8", 8, 8 + length)) as { ec_cache?: { shape?: number[] } };
    const tokens = header.ec_cache?.shape?.[0];
    return typeof tokens === "number" ? tokens : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Model-ms the vision encoder takes for `tokens` placeholder tokens: a ViT of
 * `VISION_PARAMS_B` parameters (Qwen2-VL's is ≈ 675 M, Qwen2-VL paper §2.1) over four patches per
 * token (the 2 × 2 merge), compute-bound at the prefill's efficiency.
 */
export const VISION_PARAMS_B = 0.675;
export function encodeMs(perf: PerfModel, tokens: number): number {
  if (tokens <= 0) return 0;
  const flops = 2 * VISION_PARAMS_B * 1e9 * tokens * 4;
  const llmFlopsPerToken = 2 * perf.model.activeParamsB * 1e9;
  // prefillTokensPerSecond is the TP group's compute-bound rate for the language model.
  return (flops / llmFlopsPerToken / perf.prefillTokensPerSecond) * 1e3;
}

export interface EcSide {
  role: EcRole;
  connector: string;
  /** shared_storage_path as configured (a path inside the pod). */
  configuredPath: string;
  /** Where the files really go: the configured path through the pod's volume mounts. */
  storagePath: string;
}

/**
 * The EC side of an engine. `mounts` maps a pod's mount paths to host directories (the
 * simulated cluster's kubelet passes them in BERTH_VOLUME_MOUNTS); the longest mount prefix wins.
 */
export function ecSide(config: EcTransferConfig | undefined, mounts: Readonly<Record<string, string>>): EcSide | undefined {
  if (!config?.ec_connector) return undefined;
  const path = config.ec_connector_extra_config?.shared_storage_path;
  // ECSharedStorageConnector reads shared_storage_path with "/tmp" as its default.
  const configuredPath = typeof path === "string" && path !== "" ? path : "/tmp";
  let storagePath = configuredPath;
  for (const [mountPath, host] of Object.entries(mounts).sort((a, b) => b[0].length - a[0].length)) {
    const base = mountPath.replace(/\/+$/, "");
    if (configuredPath === base || configuredPath.startsWith(`${base}/`)) {
      storagePath = host + configuredPath.slice(base.length);
      break;
    }
  }
  return { role: config.ec_role as EcRole, connector: config.ec_connector, configuredPath, storagePath };
}

/** BERTH_VOLUME_MOUNTS: a JSON object of mount path → host directory; anything else is no mounts. */
export function readVolumeMounts(value: string | undefined): Record<string, string> {
  if (!value) return {};
  try {
    const parsed = JSON.parse(value) as unknown;
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return {};
    return Object.fromEntries(Object.entries(parsed).filter((entry): entry is [string, string] => typeof entry[1] === "string"));
  } catch {
    return {};
  }
}
