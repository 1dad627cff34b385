// Counts the streams and long-polls each key holds open on this instance, so one key cannot
// hold every connection (docs/design.md §14.2). Counting is per instance: with N instances a
// key may hold up to N × cap in all, which still bounds what each instance carries.
import { TooManyOpen } from "../../domain/errors.ts";

export type SlotKind = "stream" | "long-poll";

export class OpenSlots {
  private readonly open = new Map<string, number>();

  /** How many `kind` slots `holder` has open now. */
  count(kind: SlotKind, holder: string): number {
    return this.open.get(`${kind}:${holder}`) ?? 0;
  }

  /**
   * Takes a slot or throws 429 naming how many are open and the cap (0 = no cap). The returned
   * release is idempotent, so every way a stream can end may call it.
   */
  acquire(kind: SlotKind, holder: string, cap: number): () => void {
    const key = `${kind}:${holder}`;
    const open = this.open.get(key) ?? 0;
    if (cap > 0 && open >= cap) {
      const what = kind === "stream" ? "event streams" : "long-polls";
      throw new TooManyOpen(
        `This key already has ${open} ${what} open on this instance, the cap (${cap}); close one (or wait for one to end) and retry.`,
        open,
        cap,
        1,
      );
    }
    this.open.set(key, open + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(key) ?? 1) - 1;
      if (left <= 0) this.open.delete(key);
      else this.open.set(key, left);
    };
  }
}
