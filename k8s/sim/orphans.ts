// Pod processes outlive a simulated cluster whose process was killed outright (SIGKILL, a
// crashed test worker): they run in their own process groups. Each carries
// BERTH_SIM_OWNER_PID; a starting cluster ends the groups whose owner is gone, so stale
// engines never hold the loopback addresses and ports a new cluster hands out. Linux only
// (reads /proc); elsewhere it does nothing.
import { readdirSync, readFileSync } from "node:fs";

export const OWNER_ENV = "BERTH_SIM_OWNER_PID";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** Kills process groups left by dead simulated clusters; returns how many processes were found. */
export function reapOrphans(): number {
  let entries: string[];
  try {
    entries = readdirSync("/proc").filter((name) => /^\d+$/.test(name));
  } catch {
    return 0;
  }
  let found = 0;
  for (const entry of entries) {
    let environ: string;
    try {
      environ = readFileSync(`/proc/${entry}/environ`, "utf8");
    } catch {
      continue;
    }
    const owner = environ.split("\u0000").find((item) => item.startsWith(`${OWNER_ENV}=`));
    if (!owner) continue;
    const ownerPid = Number(owner.slice(OWNER_ENV.length + 1));
    if (!Number.isInteger(ownerPid) || ownerPid === process.pid || alive(ownerPid)) continue;
    found++;
    const pid = Number(entry);
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // Gone already.
      }
    }
  }
  return found;
}
