// Stand-ins for a tokenizer and a sampler: text → token ids (deterministic, about one id per short
// word or symbol), token blocks → chained prefix hashes (the prefix cache's keys), chat messages →
// one prompt, and seeded, reproducible output text. Nothing here is a real vocabulary.

// One piece: a word of up to 8 letters, up to 3 digits, one other symbol, or a run of whitespace,
// each with its leading space — close enough to BPE counts for English to size prompts.
const PIECE = /\s?[A-Za-z]{1,8}|\s?\d{1,3}|\s?[^\sA-Za-z\d]|\s+/gy;

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;

function fnv1a(text: string): number {
  let hash = FNV_OFFSET;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, FNV_PRIME);
  }
  return hash >>> 0;
}

export interface Tokenized {
  /** Token ids, or only the first `limit` of them when the text is longer. */
  ids: number[];
  /** The full token count, even past the limit. */
  count: number;
}

/** Token ids of `text`; past `limit` tokens only counts (a 10 MB prompt costs no 10 MB array). */
export function tokenize(text: string, limit = Number.POSITIVE_INFINITY): Tokenized {
  const ids: number[] = [];
  let count = 0;
  PIECE.lastIndex = 0;
  let match: RegExpExecArray | null;
  while ((match = PIECE.exec(text)) !== null) {
    if (count < limit) ids.push(fnv1a(match[0]));
    count++;
  }
  return { ids, count };
}

/**
 * Hashes of the full blocks of a token sequence, each chained on its parent (as vLLM's block hash
 * is), so equal hashes mean equal prefixes. Two independent 32-bit FNV chains make a 64-bit key.
 */
export function blockHashes(ids: readonly number[], blockSize: number): string[] {
  const hashes: string[] = [];
  let a = FNV_OFFSET;
  let b = 0x9747b28c;
  for (let start = 0; start + blockSize <= ids.length; start += blockSize) {
    for (let i = start; i < start + blockSize; i++) {
      const id = ids[i]!;
      a = Math.imul(a ^ id, FNV_PRIME) >>> 0;
      b = Math.imul(b ^ ((id * 31 + 7) >>> 0), 0x5bd1e995) >>> 0;
      b ^= b >>> 13;
    }
    hashes.push(a.toString(36) + ":" + b.toString(36));
  }
  return hashes;
}

export interface ChatMessage {
  role: string;
  content: string;
}

/** A chat template in the style of the common ones, ending with the assistant's turn (add_generation_prompt). */
export function renderChat(messages: readonly ChatMessage[]): string {
  let prompt = "";
  for (const message of messages) prompt += `<|start|>${message.role}\n${message.content}<|end|>\n`;
  return prompt + "<|start|>assistant\n";
}

const WORDS = (
  "the of and to in is that it for as with was on be by this are from or an at which have not " +
  "model token cache batch prefill decode engine router replica latency throughput memory block " +
  "simulated berth request stream queue kernel tensor expert rank layer weight serve answer river " +
  "stone light signal window garden orbit lantern meadow harbor copper silver quiet rapid gentle " +
  "north summer winter morning evening valley forest ocean island bridge tower market letter story"
).split(" ");

function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Generation {
  /** Where the "model" would emit end-of-sequence on its own (16–128 tokens). */
  naturalLength: number;
  /** The text of output token `index` (0-based). */
  piece(index: number): string;
}

/** A reproducible output for `seedKey`: same key, same text and length. */
export function planGeneration(seedKey: string): Generation {
  const random = mulberry32(fnv1a(seedKey));
  const naturalLength = 16 + Math.floor(random() * 113);
  const pieces: string[] = [];
  return {
    naturalLength,
    piece(index: number): string {
      while (pieces.length <= index) {
        const word = WORDS[Math.floor(random() * WORDS.length)]!;
        pieces.push(pieces.length === 0 ? word[0]!.toUpperCase() + word.slice(1) : " " + word);
      }
      return pieces[index]!;
    },
  };
}

/** A stable key for a prompt (ids or text), for seeding. */
export function promptKey(ids: readonly number[]): string {
  let a = FNV_OFFSET;
  for (const id of ids) a = Math.imul(a ^ id, FNV_PRIME) >>> 0;
  return `${ids.length}:${a.toString(36)}`;
}
