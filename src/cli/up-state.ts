// What `berth up` keeps between runs in $BERTH_DATA_DIR: the admin token it generated (when
// BERTH_ADMIN_TOKEN is not set), its cluster's id and the agent credential, and the simulated
// cluster's API server port and pod/Service addresses (so kubeconfigs and endpoint URLs stay
// valid across restarts). The files are 0600: they hold credentials, like the database beside
// them. `--reset` removes them with the database.
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { z } from "zod";

export const UpState = z.object({
  adminToken: z.string().min(16).optional(),
  clusterId: z.string().optional(),
  agentToken: z.string().optional(),
  /** The simulated cluster's API server port (the kubeconfig's server URL). */
  simPort: z.number().int().min(1).max(65535).optional(),
  /** Simulated pod and Service addresses by object key ("pods/<ns>/<name>", "services/<ns>/<name>"). */
  simAddresses: z.record(z.string(), z.string()).optional(),
});
export type UpState = z.infer<typeof UpState>;

export const upStatePath = (dataDir: string) => join(dataDir, "up.json");
export const upKubeconfigPath = (dataDir: string) => join(dataDir, "kubeconfig");
/** The banner of the last start (URL, token, exports), for a terminal whose scrollback lost it. */
export const upBannerPath = (dataDir: string) => join(dataDir, "up.txt");

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
  writePrivate(upStatePath(dataDir), JSON.stringify(state, null, 2) + "\n");
}

/** Merges `changes` into the saved state. */
export function updateUpState(dataDir: string, changes: Partial<UpState>): void {
  writeUpState(dataDir, { ...readUpState(dataDir), ...changes });
}

export function writeUpBanner(dataDir: string, text: string): void {
  writePrivate(upBannerPath(dataDir), text);
}

/** Mode 0600 also when the file existed with a looser mode (the mode option applies only on create). */
function writePrivate(path: string, text: string): void {
  writeFileSync(path, text, { mode: 0o600 });
  chmodSync(path, 0o600);
}

/**
 * `--reset`: forget everything `berth up` made in the data directory (the embedded database, the
 * saved state, the kubeconfig). Only those entries: the directory may hold other things.
 */
export function resetUpData(dataDir: string): void {
  for (const entry of [join(dataDir, "db"), upStatePath(dataDir), upKubeconfigPath(dataDir), upBannerPath(dataDir)]) {
    rmSync(entry, { recursive: true, force: true });
  }
}
