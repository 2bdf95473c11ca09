// The official suite speaks to the product server through this: it adds the connection's
// credential, as a client configured with a token does, and maps its own address to the
// server's in Host and Origin (as a port forward would), so that the suite's localhost
// requests stay same-origin. Every other header and the body pass unchanged; a foreign Host or
// Origin the suite sends to test DNS-rebinding protection reaches the server as sent.
//
//   TARGET=http://127.0.0.1:PORT TOKEN=... node tests/conformance-proxy.js
// prints the URL to give the suite (http://127.0.0.1:PORT/mcp).
'use strict';
const http = require('http');
const target = new URL(process.env.TARGET);
const token = process.env.TOKEN;
let own = '';
const mapped = (value) => (value || '').split(own).join(`:${target.port}`);
const server = http.createServer((req, res) => {
  const headers = { ...req.headers, authorization: `Bearer ${token}` };
  headers.host = mapped(headers.host);
  if (headers.origin) headers.origin = mapped(headers.origin);
  const upstream = http.request(
    { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
    (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      answer.pipe(res);
    },
  );
  upstream.on('error', (e) => {
    res.writeHead(502);
    res.end(String(e));
  });
  req.pipe(upstream);
});
server.listen(0, '127.0.0.1', () => {
  own = `:${server.address().port}`;
  console.log(`http://127.0.0.1${own}/mcp`);
});
