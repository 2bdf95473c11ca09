// Official MCP TypeScript SDK client (npm @modelcontextprotocol/sdk) against a running
// `gatehouse serve`.
//
//   SDK_NODE_MODULES=/path/to/node_modules node client.mjs http://127.0.0.1:PORT/mcp
//
// Connects over Streamable HTTP (the SDK's `initialize` handshake), lists tools (must include
// get_server_status) and calls get_server_status (must not be an error; structuredContent
// .store_backend must be "sqlite"). Exits 0 only if all of that held. On a failure it prints
// every HTTP exchange the SDK made (request, status, headers, body) so that a server deviation
// can be read off (on success too when SDK_TRACE is set).
//
// The SDK is installed outside the repo (see tests/sdk-clients.sh), so it is resolved from
// SDK_NODE_MODULES rather than from this file's folder.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";

const TIMEOUT_MS = 30_000;
const BODY_CAP = 2000;

const url = process.argv[2];
const modules = process.env.SDK_NODE_MODULES;
if (!url || !modules) {
  console.error("usage: SDK_NODE_MODULES=DIR node client.mjs MCP_URL");
  process.exit(2);
}
const require = createRequire(path.join(modules, "..", "package.json"));
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");
const sdkVersion = JSON.parse(
  readFileSync(path.join(modules, "@modelcontextprotocol", "sdk", "package.json"), "utf8"),
).version;

// ---- HTTP trace: what the SDK sent and what the server answered -------------------------
const trace = [];
const pending = [];
const shownHeaders = (headers, names) =>
  names.filter((n) => headers.get(n) !== null).map((n) => `${n}: ${headers.get(n)}`);

async function tracingFetch(input, init = {}) {
  const method = init.method ?? "GET";
  const reqHeaders = new Headers(init.headers);
  trace.push(`> ${method} ${input}`);
  for (const h of shownHeaders(reqHeaders, ["accept", "content-type", "mcp-protocol-version", "mcp-session-id", "last-event-id"])) {
    trace.push(`>   ${h}`);
  }
  if (typeof init.body === "string") trace.push(`>   body: ${init.body.slice(0, BODY_CAP)}`);
  let response;
  try {
    response = await fetch(input, init);
  } catch (err) {
    trace.push(`< (fetch failed: ${err?.cause?.message ?? err?.message ?? err})`);
    throw err;
  }
  const entry = [`< ${response.status} for ${method}`];
  for (const h of shownHeaders(response.headers, ["content-type", "mcp-session-id", "mcp-protocol-version", "allow"])) {
    entry.push(`<   ${h}`);
  }
  trace.push(entry);
  // A GET may be a long-lived SSE stream: leave its body alone. Other bodies are bounded.
  if (method !== "GET" && response.body) {
    pending.push(
      response
        .clone()
        .text()
        .then((text) => text.trim() && entry.push(`<   body: ${text.trim().slice(0, BODY_CAP)}`))
        .catch((err) => entry.push(`<   (body unreadable: ${err?.message ?? err})`)),
    );
  }
  return response;
}

async function printTrace() {
  await Promise.race([Promise.allSettled(pending), new Promise((r) => setTimeout(r, 1000))]);
  console.log("  HTTP exchanges:");
  if (trace.length === 0) console.log("    (no HTTP exchange)");
  for (const item of trace) for (const line of [item].flat()) console.log(`    ${line}`);
}

// ---- the check --------------------------------------------------------------------------
let step = "connect";
const client = new Client({ name: "gatehouse-sdk-test", version: "0.0.0" });
// Every request carries the MCP token the script created for this run.
const token = process.env.MCP_TOKEN;
if (!token) {
  console.error("MCP_TOKEN must hold an MCP token");
  process.exit(2);
}
const transport = new StreamableHTTPClientTransport(new URL(url), {
  fetch: tracingFetch,
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});

async function run() {
  await client.connect(transport, { timeout: TIMEOUT_MS });
  const version = transport.protocolVersion;

  step = "tools/list";
  const listed = await client.listTools(undefined, { timeout: TIMEOUT_MS });
  const names = listed.tools.map((t) => t.name);
  if (!names.includes("get_server_status")) {
    throw new Error(`tools/list has no get_server_status; tools: ${JSON.stringify(names)}`);
  }

  step = "tools/call get_server_status";
  const result = await client.callTool({ name: "get_server_status", arguments: {} }, undefined, { timeout: TIMEOUT_MS });
  if (result.isError) {
    throw new Error(`isError=true; content: ${JSON.stringify(result.content).slice(0, BODY_CAP)}`);
  }
  const structured = result.structuredContent;
  if (structured === null || typeof structured !== "object") {
    throw new Error(`no structuredContent object; result: ${JSON.stringify(result).slice(0, BODY_CAP)}`);
  }
  if (structured.store_backend !== "sqlite") {
    throw new Error(
      `structuredContent.store_backend is ${JSON.stringify(structured.store_backend)}, expected "sqlite"; ` +
        `structuredContent: ${JSON.stringify(structured).slice(0, BODY_CAP)}`,
    );
  }
  return `${version ?? "unknown version"}, ${names.length} tools`;
}

let code = 0;
try {
  const summary = await Promise.race([
    run(),
    new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out after ${TIMEOUT_MS} ms`)), TIMEOUT_MS).unref()),
  ]);
  console.log(`typescript (@modelcontextprotocol/sdk ${sdkVersion}): ok (${summary})`);
  if (process.env.SDK_TRACE) await printTrace();
} catch (err) {
  code = 1;
  const detail = [err?.stack?.split("\n")[0] ?? String(err)];
  if (err?.code !== undefined) detail.push(`code=${err.code}`);
  if (err?.data !== undefined) detail.push(`data=${JSON.stringify(err.data)}`);
  if (err?.cause) detail.push(`cause: ${err.cause?.message ?? err.cause}`);
  console.log(`typescript (@modelcontextprotocol/sdk ${sdkVersion}) FAILED: ${step} failed: ${detail.join("; ")}`);
  await printTrace();
}
try {
  await Promise.race([client.close(), new Promise((r) => setTimeout(r, 2000))]);
} catch {
  // closing is not under test
}
process.exit(code);
