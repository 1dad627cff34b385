#!/usr/bin/env node
// Runs the TypeScript CLI through tsx so `npx berth <command>` works right after `npm ci`.
import { register } from "tsx/esm/api";
register();
await import("../src/cli/main.ts");
