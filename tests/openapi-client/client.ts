// What a user writes against the generated types: openapi-fetch typed by generated/schema.d.ts.
// It must compile under `tsc --strict` (a partial settings update in particular) and then run
// against a live promptgate, printing what it saw as one JSON line.
import createClient from "openapi-fetch";
import type { paths } from "./generated/schema.js";

// Node's `process`, declared here so the check needs no @types/node.
declare const process: { argv: string[] };

const base = process.argv[2];
const api = createClient<paths>({ baseUrl: base });

const before = await api.GET("/v1/settings");
// A partial update: one top-level field and one nested field, nothing else.
const put = await api.PUT("/v1/settings", {
  body: { preferred_name: "Ada", localization: { currency: "EUR" } },
});
const thread = await api.POST("/v1/threads", { body: { title: "from a generated client" } });
const threads = await api.GET("/v1/threads");
const missing = await api.GET("/v1/threads/{id}", { params: { path: { id: "no-such-thread" } } });

console.log(
  JSON.stringify({
    settings_status: before.response.status,
    time_zone_before: before.data?.time_zone,
    put_status: put.response.status,
    preferred_name: put.data?.preferred_name,
    currency: put.data?.localization.currency,
    time_format: put.data?.localization.time_format,
    thread_status: thread.response.status,
    thread_title: thread.data?.title,
    threads_status: threads.response.status,
    missing_status: missing.response.status,
    missing_code: missing.error?.error.code,
  }),
);
