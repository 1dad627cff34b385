// The CLI's saved login: $XDG_CONFIG_HOME/berth/config.json (else ~/.config/berth/config.json),
// written with mode 0600 in a 0700 directory because it holds a bearer token.
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

export interface SavedConfig {
  url?: string;
  token?: string;
  project?: string;
}

export function configPath(env: Record<string, string | undefined>): string {
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), ".config");
  return join(base, "berth", "config.json");
}

export function readSavedConfig(path: string): SavedConfig {
  if (!existsSync(path)) return {};
  const text = readFileSync(path, "utf8");
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) throw new Error("not a JSON object");
    const { url, token, project } = parsed as Record<string, unknown>;
    return {
      ...(typeof url === "string" ? { url } : {}),
      ...(typeof token === "string" ? { token } : {}),
      ...(typeof project === "string" ? { project } : {}),
    };
  } catch (error) {
    throw new Error(`${path} is not a valid berth config (${(error as Error).message}); run berth login again`);
  }
}

export function writeSavedConfig(path: string, config: SavedConfig): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, JSON.stringify(config, null, 2) + "\n", { mode: 0o600 });
  // The mode option applies only when the file is created; an older file may be looser.
  chmodSync(path, 0o600);
}
