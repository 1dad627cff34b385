// Prepared statements are built once per database handle (a pool, a PGlite client or
// a transaction) and reused, keyed weakly so a closed handle takes its statements along.
import type { Db } from "../client.ts";

export function preparedPerDb<T>(build: (db: Db) => T): (db: Db) => T {
  const cache = new WeakMap<Db, T>();
  return (db) => {
    let prepared = cache.get(db);
    if (!prepared) cache.set(db, (prepared = build(db)));
    return prepared;
  };
}
