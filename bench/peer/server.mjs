// The benchmark peer: the companion's MCP server built the way the VS Code
// companion builds it (packages/vscode-ide-companion/src/ide-server.ts in
// QwenLM/qwen-code): Express, the TypeScript MCP SDK's Streamable HTTP
// transport, one stateful session per initialize, CORS/Host/bearer checks,
// and openDiff / closeDiff answering at once (no editor behind them).
//
// Control, one JSON object a line:
//   stdout: {"port": N, "token": "..."} once listening, then answers.
//   stdin:  {"cmd": "notify", "params": {...}}  ide/contextUpdate to every session -> {}
//           {"cmd": "rss"}                      -> {"rss": bytes}
//           {"cmd": "quit"}

import { randomBytes, randomUUID } from 'node:crypto';
import { createInterface } from 'node:readline';
import cors from 'cors';
import express from 'express';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';

const token = randomBytes(32).toString('hex');
const transports = {};
const diffs = new Map();
let port = 0;

function createMcpServer() {
  const server = new McpServer(
    { name: 'bench-peer-companion', version: '1.0.0' },
    { capabilities: { logging: {} } },
  );
  server.registerTool(
    'openDiff',
    {
      description: 'Open a diff view comparing a file with proposed new content.',
      inputSchema: { filePath: z.string(), newContent: z.string() },
    },
    async ({ filePath, newContent }) => {
      diffs.set(filePath, newContent);
      return { content: [] };
    },
  );
  server.registerTool(
    'closeDiff',
    {
      description: 'Close the diff view of a file.',
      inputSchema: { filePath: z.string(), suppressNotification: z.boolean().optional() },
    },
    async ({ filePath }) => {
      const content = diffs.get(filePath);
      diffs.delete(filePath);
      return { content: [{ type: 'text', text: JSON.stringify({ content }) }] };
    },
  );
  return server;
}

const app = express();
// The companion's limit is 10mb; a 10 MB newContent, JSON-escaped, needs more
// (the package allows 32 MiB).
app.use(express.json({ limit: '32mb' }));
app.use(
  cors({
    origin: (origin, callback) =>
      origin ? callback(new Error('Request denied by CORS policy.'), false) : callback(null, true),
  }),
);
app.use((req, res, next) => {
  const host = req.headers.host || '';
  if (host !== `localhost:${port}` && host !== `127.0.0.1:${port}`) {
    res.status(403).json({ error: 'Invalid Host header' });
    return;
  }
  next();
});
app.use((req, res, next) => {
  const parts = (req.headers.authorization || '').split(' ');
  if (parts.length !== 2 || parts[0] !== 'Bearer' || parts[1] !== token) {
    res.status(401).send('Unauthorized');
    return;
  }
  next();
});

app.post('/mcp', async (req, res) => {
  const sessionId = req.headers['mcp-session-id'];
  let transport;
  if (sessionId && transports[sessionId]) {
    transport = transports[sessionId];
  } else if (!sessionId && isInitializeRequest(req.body)) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        transports[id] = transport;
      },
    });
    const keepAlive = setInterval(() => {
      transport.send({ jsonrpc: '2.0', method: 'ping' }).catch(() => clearInterval(keepAlive));
    }, 30000);
    transport.onclose = () => {
      clearInterval(keepAlive);
      if (transport.sessionId) delete transports[transport.sessionId];
    };
    await createMcpServer().connect(transport);
  } else {
    res.status(400).json({
      jsonrpc: '2.0',
      error: { code: -32000, message: 'Bad Request: No valid session ID provided' },
      id: null,
    });
    return;
  }
  await transport.handleRequest(req, res, req.body);
});

app.get('/mcp', async (req, res) => {
  const transport = transports[req.headers['mcp-session-id']];
  if (!transport) {
    res.status(400).send('Invalid or missing session ID');
    return;
  }
  await transport.handleRequest(req, res);
});

function reply(message) {
  process.stdout.write(JSON.stringify(message) + '\n');
}

const server = app.listen(0, '127.0.0.1', () => {
  port = server.address().port;
  reply({ port, token });
});

createInterface({ input: process.stdin }).on('line', (line) => {
  const command = JSON.parse(line);
  if (command.cmd === 'notify') {
    const message = { jsonrpc: '2.0', method: 'ide/contextUpdate', params: command.params };
    for (const transport of Object.values(transports)) transport.send(message);
    reply({});
  } else if (command.cmd === 'rss') {
    reply({ rss: process.memoryUsage().rss });
  } else if (command.cmd === 'quit') {
    server.closeAllConnections();
    server.close(() => process.exit(0));
  }
});
