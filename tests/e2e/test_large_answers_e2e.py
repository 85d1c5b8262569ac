"""End to end: Node's own HTTP client (fetch, on which the CLI's MCP SDK
transport runs) reads a large closeDiff answer, which the server writes a
slice at a time in chunked transfer coding.

The CLI itself gives no sign of a closeDiff answer it could not read (it logs
it at debug level and goes on), so its runtime is driven directly: the same
Node 22 that runs qwen, talking to the window's server in the simulated editor.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.rig.qwen_cli import QwenCli
from tests.support.editor import Editor, open_editor

pytestmark = pytest.mark.e2e

# initialize, openDiff, closeDiff (after the review is up); prints the content's length and SHA-256.
CLIENT = r"""
const [port, token, filePath, size] = process.argv.slice(2);
const url = `http://127.0.0.1:${port}/mcp`;
let session = "";
let id = 0;
async function rpc(method, params) {
  const headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                   "Authorization": `Bearer ${token}`};
  if (session) { headers["Mcp-Session-Id"] = session; headers["Mcp-Protocol-Version"] = "2025-06-18"; }
  const response = await fetch(url, {method: "POST", headers, body: JSON.stringify({jsonrpc: "2.0", id: ++id, method, params})});
  if (!session) session = response.headers.get("mcp-session-id");
  return {encoding: response.headers.get("transfer-encoding"), body: await response.json()};
}
const line = 'say "café" \\ \u2028 \u{1F600}\n';
const content = line.repeat(Math.ceil(Number(size) / line.length)).slice(0, Number(size));
await rpc("initialize", {protocolVersion: "2025-06-18", capabilities: {}, clientInfo: {name: "node-fetch", version: "1"}});
await rpc("tools/call", {name: "openDiff", arguments: {filePath, newContent: content}});
await new Promise((resolve) => setTimeout(resolve, 500));
const closed = await rpc("tools/call", {name: "closeDiff", arguments: {filePath, suppressNotification: true}});
const text = JSON.parse(closed.body.result.content[0].text).content;
const { createHash } = await import("node:crypto");
console.log(JSON.stringify({encoding: closed.encoding, sent: createHash("sha256").update(content).digest("hex"),
                            length: text.length, got: createHash("sha256").update(text).digest("hex")}));
"""


@pytest.fixture
def editor(tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Editor]:
    with open_editor(tmp_path, monkeypatch, workspace=workspace) as editor:
        yield editor


def test_node_reads_a_streamed_closediff_answer_whole(editor: Editor, qwen_cli: QwenCli, tmp_path: Path) -> None:
    lock = editor.lock_info()
    script = tmp_path / "client.mjs"
    script.write_text(CLIENT)
    target = editor.workspace / "big.txt"
    target.write_text("old\n")
    size = 3_000_000
    run = subprocess.run(
        [str(qwen_cli.node), str(script), str(lock["port"]), lock["authToken"], str(target), str(size)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert run.returncode == 0, run.stderr
    answer = json.loads(run.stdout)
    assert answer["encoding"] == "chunked"  # written a slice at a time
    assert answer["length"] == size and answer["got"] == answer["sent"]
    editor.settle()
    assert editor.review_views() == []  # closeDiff closed the review's tabs
    assert target.read_text() == "old\n"
    editor.host.assert_no_errors()
