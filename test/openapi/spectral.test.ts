// The committed document passes Spectral's OpenAPI rules and the OWASP API Security ruleset
// with the repository's .spectral.yaml: no errors. The CLI runs from node_modules, as a
// developer or CI would run it, over the committed file.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SPECTRAL = fileURLToPath(new URL("../../node_modules/@stoplight/spectral-cli/dist/index.js", import.meta.url));
const ERROR = 0;

interface Finding {
  code: string;
  message: string;
  path: Array<string | number>;
  severity: number;
}

async function lint(): Promise<Finding[]> {
  // Spectral exits 1 when it finds errors; the JSON on stdout is the answer either way.
  const run = promisify(execFile)(process.execPath, [SPECTRAL, "lint", "openapi/openapi.json", "--ruleset", ".spectral.yaml", "--format", "json", "--quiet"], {
    cwd: ROOT,
    maxBuffer: 64 * 1024 * 1024,
    timeout: 240_000,
  });
  const { stdout } = await run.catch((error: { stdout?: string; stderr?: string }) => {
    if (!error.stdout) throw new Error(`spectral produced no report: ${error.stderr ?? String(error)}`);
    return { stdout: error.stdout };
  });
  return JSON.parse(stdout) as Finding[];
}

describe("Spectral (spectral:oas + OWASP) over openapi/openapi.json", () => {
  it("reports no errors", { timeout: 300_000 }, async () => {
    const findings = await lint();
    const errors = findings.filter((finding) => finding.severity === ERROR);
    const listed = errors.map((finding) => `${finding.code} at ${finding.path.join("/")}: ${finding.message}`);
    expect(listed, listed.slice(0, 50).join("\n")).toEqual([]);
  });
});
