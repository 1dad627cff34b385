// What `berth up` keeps between runs in $BERTH_DATA_DIR: the admin token it generated (when
// BERTH_ADMIN_TOKEN is not set), its cluster's id and the agent credential. The file is 0600:
// it holds credentials, like the database beside it. `--reset` removes it with the database.
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";

export const UpState = z.object({
  adminToken: z.string().min(16).optional(),
  clusterId: z.string().optional(),
  agentToken: z.string().optional(),
});
export type UpState = z.infer<typeof UpState>;

export const upStatePath = (dataDir: string) => join(dataDir, "up.json");
export const upKubeconfigPath = (dataDir: string) => join(dataDir, "kubeconfig");

/** The saved state; an unreadable file is treated as none (a new cluster is registered). */
export function readUpState(dataDir: string): UpState {
  const path = upStatePath(dataDir);
  if (!existsSync(path)) return {};
  try {
    const parsed = UpState.safeParse(JSON.parse(readFileSync(path, "utf8")));
    return parsed.success ? parsed.data : {};
  } catch {
    return {};
  }
}

export function writeUpState(dataDir: string, state: UpState): void {
  writeFileSync(upStatePath(dataDir), JSON.stringify(state, null, 2) + "\n", { mode: 0o600 });
}

/**
 * `--reset`: forget everything `berth up` made in the data directory (the embedded database, the
 * saved state, the kubeconfig). Only those entries: the directory may hold other things.
 */
export function resetUpData(dataDir: string): void {
  for (const entry of [join(dataDir, "db"), upStatePath(dataDir), upKubeconfigPath(dataDir)]) {
    rmSync(entry, { recursive: true, force: true });
  }
}
