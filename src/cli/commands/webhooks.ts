// berth webhooks list | create | delete | test: webhook endpoints (the signing secret is
// shown once, in the create answer).
import { unwrap, type components } from "../../../clients/typescript/src/index.ts";
import { age, renderTable } from "../user/format.ts";
import { fetchList, hintMore, LIST_HELP, LIST_OPTIONS } from "../user/listing.ts";
import { COMMON_HELP, openSession, parseCommand, usageError } from "../user/session.ts";

const USAGE = `usage: berth webhooks list [--limit N] [--cursor C | --all]
       berth webhooks create ENDPOINT_URL --event TYPE [--event TYPE…] [--description TEXT] [--disabled]
       berth webhooks delete ID
       berth webhooks test ID

--event takes an event type (deployment.created, …) or "*" for all. --project
binds the endpoint to a project (with an installation-wide key; absent, it gets
every project's events) and filters the list. The signing secret is printed once.

${LIST_HELP}
${COMMON_HELP}`;

type WebhookCreate = components["schemas"]["WebhookCreate"];

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(
    args,
    { ...LIST_OPTIONS, event: { type: "string", multiple: true }, description: { type: "string" }, disabled: { type: "boolean" } },
    USAGE,
  );
  const [verb, ...rest] = positionals;
  switch (verb) {
    case "list":
    case undefined: {
      const s = openSession(values);
      const page = await fetchList(s, "/v1/webhooks", values, USAGE, s.project ? { projectId: s.project } : {});
      if (s.output !== "table") return s.printBody(page);
      process.stdout.write(
        renderTable(
          ["ID", "URL", "EVENTS", "ENABLED", "PROJECT", "AGE"],
          page.items.map((w) => [
            w.id,
            w.url,
            w.eventTypes.join(","),
            w.enabled ? "yes" : `no (${w.disabledReason ?? "?"})`,
            w.projectId ?? "<all>",
            age(w.createdAt),
          ]),
        ),
      );
      return hintMore(page, "berth webhooks list");
    }
    case "create": {
      if (rest.length !== 1) throw usageError("webhooks create needs the endpoint URL", USAGE);
      if (!values.event?.length) throw usageError('webhooks create needs at least one --event TYPE (or --event "*")', USAGE);
      const s = openSession(values);
      const body = {
        url: rest[0]!,
        // The API names the accepted types in its problem if one is unknown.
        eventTypes: values.event as WebhookCreate["eventTypes"],
        ...(values.description === undefined ? {} : { description: values.description }),
        ...(values.disabled ? { enabled: false } : {}),
        ...(s.project ? { projectId: s.project } : {}),
      };
      const created = await unwrap(s.client.POST("/v1/webhooks", { body }));
      if (s.output !== "table") return s.printBody(created);
      process.stdout.write(`webhook ${created.id} created for ${created.url} (${created.eventTypes.join(", ")})\n`);
      process.stdout.write(`secret: ${created.secret}\n`);
      process.stderr.write("the signing secret is shown only now; store it\n");
      return;
    }
    case "delete": {
      if (rest.length !== 1) throw usageError("webhooks delete needs one webhook id", USAGE);
      const s = openSession(values);
      await unwrap(s.client.DELETE("/v1/webhooks/{id}", { params: { path: { id: rest[0]! } } }));
      s.say(`webhook ${rest[0]} deleted`);
      return;
    }
    case "test": {
      if (rest.length !== 1) throw usageError("webhooks test needs one webhook id", USAGE);
      const s = openSession(values);
      const delivery = await unwrap(s.client.POST("/v1/webhooks/{id}/test", { params: { path: { id: rest[0]! } } }));
      if (s.output !== "table") return s.printBody(delivery);
      const last = delivery.attempts[delivery.attempts.length - 1];
      const outcome = last ? (last.statusCode !== undefined ? `HTTP ${last.statusCode}` : (last.error ?? "no answer")) : "not tried yet";
      process.stdout.write(`test delivery ${delivery.id} (event ${delivery.eventId}): ${delivery.status}, ${outcome}\n`);
      return;
    }
    default:
      throw usageError(`unknown webhooks command "${verb}"`, USAGE);
  }
}
