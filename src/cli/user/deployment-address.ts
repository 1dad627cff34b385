// How the CLI names a deployment: an id (dep_…) is used as is; a name is looked up in
// --project when given (an installation-wide key needs it when the name is in several projects).
import type { Session } from "./session.ts";

export function deploymentAddress(session: Session, idOrName: string, projectId = session.project) {
  const byName = !idOrName.startsWith("dep_");
  return {
    path: { idOrName },
    query: byName && projectId !== undefined ? { projectId } : {},
  };
}

/** `berth get deployment NAME` and `berth get NAME` mean the same. */
export function dropResourceWord(positionals: string[]): string[] {
  const words = ["deployment", "deployments", "deploy", "dep"];
  return positionals.length > 1 && words.includes(positionals[0]!) ? positionals.slice(1) : positionals;
}
