// Applies the SSRF guard (src/domain/webhook-url.ts) with the runtime's resolver: once
// when a URL is stored (422 at /url) and again before every attempt, on the addresses
// the name resolves to then, returning the one address the transport must connect to —
// so a name that re-resolves somewhere private between check and connect (DNS
// rebinding) cannot slip through. Every resolved address must pass, not just one.
import { InvalidSpec } from "../../domain/errors.ts";
import type { AttemptFailure } from "../../domain/webhook-attempt-failure.ts";
import { checkAddress, parseWebhookUrl } from "../../domain/webhook-url.ts";
import type { SystemContext } from "../context.ts";

/** Thrown when a delivery's URL may not be reached now; the attempt records its class, not the detail. */
export class RefusedTarget extends Error {
  constructor(readonly failure: Extract<AttemptFailure, "url_refused" | "address_refused" | "dns_failure">, detail: string) {
    super(detail);
  }
}

/** Checks a URL for storing; returns its normalised form. A name that does not resolve (yet) is accepted. */
export async function admitWebhookUrl(ctx: SystemContext, raw: string): Promise<string> {
  const allowPrivate = ctx.config.webhooks.allowPrivateAddresses;
  const refuse = (reason: string) =>
    new InvalidSpec("The webhook URL is not allowed.", [{ pointer: "/url", message: reason }]);
  const parsed = parseWebhookUrl(raw, { allowPrivate, allowHttp: ctx.config.webhooks.allowHttp });
  if (!parsed.ok) throw refuse(parsed.reason);
  if (!allowPrivate && parsed.host.kind === "name" && ctx.webhookTransport?.resolve) {
    let addresses: string[] = [];
    try {
      addresses = await ctx.webhookTransport.resolve(parsed.host.name);
    } catch {
      // Not resolvable now: the check is repeated before every attempt anyway.
    }
    for (const address of addresses) {
      const verdict = checkAddress(address);
      if (!verdict.ok) throw refuse(`${parsed.host.name} resolves to ${verdict.reason}`);
    }
  }
  return parsed.url.href;
}

/** Where one attempt connects: a checked address (or null where the runtime cannot resolve). */
export async function resolveDeliveryTarget(ctx: SystemContext, raw: string): Promise<{ url: URL; address: string | null }> {
  const allowPrivate = ctx.config.webhooks.allowPrivateAddresses;
  const parsed = parseWebhookUrl(raw, { allowPrivate, allowHttp: ctx.config.webhooks.allowHttp });
  if (!parsed.ok) throw new RefusedTarget("url_refused", `refused: ${parsed.reason}`);
  if (parsed.host.kind === "ip") return { url: parsed.url, address: parsed.host.address };
  const transport = ctx.webhookTransport;
  if (!transport?.resolve) return { url: parsed.url, address: null };
  let addresses: string[];
  try {
    addresses = await transport.resolve(parsed.host.name);
  } catch (error) {
    throw new RefusedTarget("dns_failure", `DNS: ${parsed.host.name} did not resolve (${(error as Error).message})`);
  }
  if (addresses.length === 0) throw new RefusedTarget("dns_failure", `DNS: ${parsed.host.name} has no addresses`);
  if (!allowPrivate) {
    for (const address of addresses) {
      const verdict = checkAddress(address);
      if (!verdict.ok) throw new RefusedTarget("address_refused", `refused: ${parsed.host.name} resolves to ${verdict.reason}`);
    }
  }
  return { url: parsed.url, address: addresses[0]! };
}
