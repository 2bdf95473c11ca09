// The TypeScript SDK peer for tests/bench/peers.sh: McpServer with one read tool returning a
// fixed 1 KB JSON, served statelessly (a new server and transport per request, no session id,
// JSON responses), as the SDK's stateless example does, on node:http.
import http from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const payload = { payload: "x".repeat(1024) };
const port = Number(process.argv[2] ?? 8790);

function makeServer() {
  const server = new McpServer({ name: "bench", version: "1.0.0" });
  server.registerTool(
    "bench_fixed_1kb",
    { description: "Returns a fixed 1 KB payload.", annotations: { readOnlyHint: true } },
    async () => ({ content: [{ type: "text", text: JSON.stringify(payload) }], structuredContent: payload }),
  );
  return server;
}

http
  .createServer(async (req, res) => {
    if (req.method !== "POST" || req.url !== "/mcp") {
      res.writeHead(405).end();
      return;
    }
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    let body;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      res.writeHead(400).end();
      return;
    }
    const server = makeServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => {
      transport.close();
      server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  })
  .listen(port, "127.0.0.1", () => console.error(`ts peer on http://127.0.0.1:${port}/mcp`));
