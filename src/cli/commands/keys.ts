// berth keys list | create | revoke: API keys (admin). A new key's token is shown once.
import { unwrap } from "../../../clients/typescript/src/index.ts";
import { age, renderTable } from "../user/format.ts";
import { fetchList, hintMore, LIST_HELP, LIST_OPTIONS } from "../user/listing.ts";
import { COMMON_HELP, openSession, parseCommand, usageError } from "../user/session.ts";

const USAGE = `usage: berth keys list [--limit N] [--cursor C | --all]
       berth keys create --name NAME --role viewer|editor|admin [--project ID]
       berth keys revoke KEY_ID

A created key is bound to --project when given (else installation-wide, or the
caller's own project for a project-bound caller). Its token is printed once.

${LIST_HELP}
${COMMON_HELP}`;

const ROLES = ["viewer", "editor", "admin"] as const;

export async function run(args: string[]): Promise<void> {
  const { values, positionals } = parseCommand(args, { ...LIST_OPTIONS, name: { type: "string" }, role: { type: "string" } }, USAGE);
  const [verb, ...rest] = positionals;
  const session = () => openSession(values);
  switch (verb) {
    case "list":
    case undefined: {
      const s = session();
      const page = await fetchList(s, "/v1/api-keys", values, USAGE);
      if (s.output !== "table") return s.printBody(page);
      process.stdout.write(
        renderTable(
          ["ID", "NAME", "ROLE", "PROJECT", "PREFIX", "REVOKED", "AGE"],
          page.items.map((k) => [k.id, k.name, k.role, k.projectId ?? "<all>", k.prefix, k.revokedAt ? age(k.revokedAt) + " ago" : "-", age(k.createdAt)]),
        ),
      );
      return hintMore(page, "berth keys list");
    }
    case "create": {
      if (rest.length > 0) throw usageError(`unexpected argument "${rest[0]}"`, USAGE);
      if (!values.name || !values.role) throw usageError("keys create needs --name and --role", USAGE);
      if (!(ROLES as readonly string[]).includes(values.role)) throw usageError(`--role must be one of ${ROLES.join(", ")}`, USAGE);
      const s = session();
      const key = await unwrap(
        s.client.POST("/v1/api-keys", {
          body: { name: values.name, role: values.role as (typeof ROLES)[number], ...(s.project ? { projectId: s.project } : {}) },
        }),
      );
      if (s.output !== "table") return s.printBody(key);
      process.stdout.write(`key ${key.id} created (${key.role}, ${key.projectId ?? "installation-wide"})\n`);
      process.stdout.write(`token: ${key.token}\n`);
      process.stderr.write("the token is shown only now; store it\n");
      return;
    }
    case "revoke": {
      if (rest.length !== 1) throw usageError("keys revoke needs one key id", USAGE);
      const s = session();
      await unwrap(s.client.DELETE("/v1/api-keys/{id}", { params: { path: { id: rest[0]! } } }));
      s.say(`key ${rest[0]} revoked`);
      return;
    }
    default:
      throw usageError(`unknown keys command "${verb}"`, USAGE);
  }
}
