// The OpenAPI document's `webhooks` section: one signed POST per event type, its body the
// { type, timestamp, data } envelope with that type's payload schema from EVENT_DATA.
import type { OpenAPIObject, OperationObject, ParameterObject, ReferenceObject, SchemaObject } from "openapi3-ts/oas31";
import { beforeAll, describe, expect, it } from "vitest";
import { renderOpenApiJson } from "../../src/api/openapi-file.ts";
import { EVENT_TYPES } from "../../src/domain/events.ts";

let doc: OpenAPIObject;
beforeAll(async () => {
  doc = JSON.parse(await renderOpenApiJson()) as OpenAPIObject;
});

const resolve = (ref: string) => doc.components!.schemas![ref.replace("#/components/schemas/", "")] as SchemaObject;

describe("OpenAPI webhooks", () => {
  it("describes every event type, and nothing else", () => {
    expect(Object.keys(doc.webhooks ?? {}).sort()).toEqual([...EVENT_TYPES].sort());
  });

  it.each([...EVENT_TYPES])("%s: a signed POST with its payload schema", (type) => {
    const operation = doc.webhooks![type]!.post as OperationObject;
    expect(operation.security).toEqual([]);
    expect((operation.parameters as ParameterObject[]).map((p) => `${p.in}:${p.name}`)).toEqual([
      "header:webhook-id",
      "header:webhook-timestamp",
      "header:webhook-signature",
    ]);
    const ref = (operation.requestBody as { content: Record<string, { schema: ReferenceObject }> }).content["application/json"]!.schema.$ref;
    const envelope = resolve(ref);
    expect(envelope.required).toEqual(["type", "timestamp", "data"]);
    expect((envelope.properties!.type as SchemaObject).enum).toEqual([type]);
    const data = envelope.properties!.data as ReferenceObject & SchemaObject;
    if (data.$ref) expect(resolve(data.$ref)).toBeDefined();
    else expect(data.type).toBe("object");
  });

  it("names the payloads of the events berth emits today", () => {
    const dataRef = (type: string) => {
      const operation = doc.webhooks![type]!.post as OperationObject;
      const ref = (operation.requestBody as { content: Record<string, { schema: ReferenceObject }> }).content["application/json"]!.schema.$ref;
      return ((resolve(ref).properties!.data as ReferenceObject).$ref ?? "").split("/").pop();
    };
    expect(dataRef("deployment.created")).toBe("DeploymentLifecycleData");
    expect(dataRef("deployment.updated")).toBe("DeploymentChangedData");
    expect(dataRef("deployment.ready")).toBe("DeploymentPhaseData");
    expect(dataRef("webhook.disabled")).toBe("WebhookDisabledData");
    expect(dataRef("webhook.test")).toBe("WebhookTestData");
  });
});
