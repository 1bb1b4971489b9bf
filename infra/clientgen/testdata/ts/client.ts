// A small program with openapi-fetch against the types openapi-typescript
// generates from the served contract (api.d.ts, written by the test beside
// this file). It is only compiled (tsc --noEmit, strict): a contract
// change that breaks what a TypeScript client writes fails the check.
// Each @ts-expect-error is a mistake the types must refuse: if the types
// went loose (any), the directive would be unused, and that is an error.
import createClient from "openapi-fetch";
import type { components, paths } from "./api.js";

type Schemas = components["schemas"];

export async function tour(baseUrl: string, secret: string, root: string): Promise<void> {
  const api = createClient<paths>({ baseUrl, headers: { Authorization: `Bearer ${secret}` } });

  const self = await api.GET("/v2/users/self/authorization");
  if (!self.data) throw new Error(self.error?.error.message ?? "no authorization");
  const principal: string = self.data.principal;

  // A service user: the one response with a key's secret.
  const su = await api.POST("/v2/accounts/{id}/service-users", {
    params: { path: { id: root } },
    body: { name: "deploy bot" },
  });
  const secretKey: string | undefined = su.data?.access_keys[0]?.secret_key;
  // @ts-expect-error a listed service user shows no secret
  const noSecret = (await api.GET("/v2/accounts/{id}/service-users", { params: { path: { id: root } } })).data?.[0]?.access_keys[0]?.secret_key;

  // An application, changed by merge patch with the ETag it was read at.
  const created = await api.POST("/v2/applications", { body: { name: "Shop", aliases: ["shop.example.com"] } });
  if (!created.data) throw new Error(created.error.error.message);
  const app: Schemas["Application"] = created.data;
  const etag = created.response.headers.get("ETag") ?? "*";
  await api.PATCH("/v2/applications/{id}", {
    params: { path: { id: app.id }, header: { "If-Match": etag } },
    headers: { "Content-Type": "application/merge-patch+json" },
    body: { name: "Shop 2" },
  });
  // @ts-expect-error an application's name is a string
  await api.POST("/v2/applications", { body: { name: 5 } });

  // A task with parameters, waited for.
  const task = await api.POST("/v2/tasks", {
    params: { query: { wait: 5 } },
    body: { type: "enter_maintenance", target: app.href, parameters: { maximum_duration: 3600 } },
  });
  const state: Schemas["Task"]["state"] | undefined = task.data?.state;
  // @ts-expect-error not a task type
  await api.POST("/v2/tasks", { body: { type: "reboot", target: app.href } });

  // An entitlement, the body with two shapes.
  await api.POST("/v2/accounts/{id}/entitlements", {
    params: { path: { id: root } },
    body: { resource: "applications", quantity: 5, period: "month", unit_price: 10 },
  });

  // An application test: its configuration as JSON, typed by the
  // contract, then as a tar archive, sent as bytes without a cast.
  const cfg: Schemas["TestConfiguration"] = {
    probabilities: 1,
    models: { home: { type: "user.StaticSession", requests: [{ name: "home", method: "GET", url: "http://shop.example.com/" }] } },
  };
  await api.PUT("/v2/tests/{id}", { params: { path: { id: "shop" } }, body: cfg });
  // The archive's type is the contract's: raw bytes, not a JSON string.
  const tar: paths["/v2/tests/{id}"]["patch"]["requestBody"]["content"]["application/x-tar"] = new Uint8Array(1024);
  const uploaded = await api.PATCH("/v2/tests/{id}", {
    params: { path: { id: "shop" } },
    headers: { "Content-Type": "application/x-tar" },
    body: tar,
    bodySerializer: (b) => b,
  });
  const testID: string | undefined = uploaded.data?.id;
  // A read answers the metadata (JSON) or, when Accept asks for it, the
  // archive: the client narrows, no cast.
  const read = await api.GET("/v2/tests/{id}", { params: { path: { id: "shop" } } });
  const lastRun: Schemas["ApplicationTest"]["last_run"] = typeof read.data === "object" ? read.data.last_run : undefined;
  const archive = await api.GET("/v2/tests/{id}", {
    params: { path: { id: "shop" } },
    headers: { Accept: "application/x-tar+x-bzip2" },
    parseAs: "blob",
  });
  const archiveBytes: number | undefined = archive.data?.size;
  // @ts-expect-error probabilities is a number
  const badCfg: Schemas["TestConfiguration"] = { probabilities: "all", models: {} };

  // A custom log record, every member the contract requires.
  await api.POST("/v2/applications/{id}/logs", {
    params: { path: { id: app.id } },
    body: { created: new Date().toISOString(), stream: "deploy", message: "v2 live", address: "192.0.2.1", filename: "deploy.log", hostname: "ci-1" },
  });

  const metrics = await api.GET("/v2/applications/{id}/metrics", {
    params: { path: { id: app.id }, query: { names: "requests", summarize: true } },
  });
  const resolution: number | undefined = metrics.data?.resolution;

  console.log(principal, secretKey, noSecret, state, testID, lastRun, archiveBytes, badCfg, resolution);
}
