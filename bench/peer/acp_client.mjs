// Benchmark peer for the chat: a client on the TypeScript ACP SDK
// (@agentclientprotocol/sdk), fed the same recorded agent (bench/chat_agent.py).
//
//   node acp_client.mjs PYTHON AGENT UNPACED PACED RATE
//
// Prints one JSON line: "rate" (session/update handled a second, first to
// last, while the agent writes UNPACED chunks at once) and "latency_ms"
// (chunk written → its text appended to the peer's transcript string, PACED
// chunks at RATE a second). Its "view" is that string: it has no editor.
import * as acp from "@agentclientprotocol/sdk";
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";

const [python, agentScript, unpaced, paced, rate] = process.argv.slice(2);
const agent = spawn(python, [agentScript], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

let transcript = "";
let handled = [];
let latencies = null;
const marker = /§(\d+)§/;

const app = acp.client().onNotification("session/update", ({ params }) => {
  const update = params.update;
  if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
    transcript += update.content.text;
    const now = process.hrtime.bigint(); // CLOCK_MONOTONIC, as the agent's time.monotonic_ns()
    handled.push(now);
    if (latencies !== null) {
      const match = marker.exec(update.content.text);
      if (match) latencies.push(Number(now - BigInt(match[1])) / 1e6);
    }
  }
});

const result = await app.connectWith(stream, async (cx) => {
  await cx.request("initialize", { protocolVersion: 1, clientCapabilities: { fs: { readTextFile: true, writeTextFile: true } } });
  const session = await cx.request("session/new", { cwd: process.cwd(), mcpServers: [] });
  const prompt = (text) => cx.request("session/prompt", { sessionId: session.sessionId, prompt: [{ type: "text", text }] });
  await prompt(`stream ${unpaced} 0 40`);
  const count = handled.length;
  const rateHandled = (count - 1) / (Number(handled[count - 1] - handled[0]) / 1e9);
  latencies = [];
  await prompt(`stream ${paced} ${rate} 40`);
  return { rate: rateHandled, handled: count, latency_ms: latencies, transcript_chars: transcript.length };
});
agent.stdin.end();
agent.kill();
process.stdout.write(JSON.stringify(result) + "\n");
process.exit(0);
