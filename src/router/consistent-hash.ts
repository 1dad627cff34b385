// A consistent-hash ring for session affinity: each member owns `virtualNodes` points on a
// 32-bit circle and a key belongs to the first point clockwise from its hash. Adding a
// member moves only the keys that land on its new points (about 1/(n+1) of them); removing
// one moves only its own keys.

export const DEFAULT_VIRTUAL_NODES = 160;

export class HashRing {
  readonly members: readonly string[];
  private readonly points: Uint32Array;
  private readonly owners: Int32Array;

  constructor(members: readonly string[], virtualNodes = DEFAULT_VIRTUAL_NODES) {
    this.members = [...members];
    const entries: { point: number; owner: number }[] = [];
    this.members.forEach((member, owner) => {
      for (let v = 0; v < virtualNodes; v++) entries.push({ point: hash32(`${member}#${v}`), owner });
    });
    // Ties (two members on one point) break by member name, so the order of `members` never matters.
    entries.sort((x, y) => x.point - y.point || compare(this.members[x.owner]!, this.members[y.owner]!));
    this.points = Uint32Array.from(entries, (entry) => entry.point);
    this.owners = Int32Array.from(entries, (entry) => entry.owner);
  }

  /** The member owning `key`, or undefined on an empty ring. */
  lookup(key: string): string | undefined {
    const count = this.points.length;
    if (count === 0) return undefined;
    const target = hash32(key);
    let low = 0;
    let high = count;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.points[middle]! < target) low = middle + 1;
      else high = middle;
    }
    return this.members[this.owners[low === count ? 0 : low]!];
  }
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** FNV-1a over UTF-16 code units, finished with MurmurHash3's fmix32 for avalanche. */
export function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
