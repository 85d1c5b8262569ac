"""A scripted model speaking the Gemini API's REST shape on 127.0.0.1, for the
real gemini-cli (pointed at it by GOOGLE_GEMINI_BASE_URL).

The first streamed turn asks for one `write_file` call (path and content set
by the test); once a `functionResponse` comes back it answers "done". The
requests are kept for the test to read.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakeGeminiModel:
    def __init__(self, file_path: str, content: str) -> None:
        self.file_path = file_path
        self.content = content
        self.requests: list[tuple[str, dict[str, Any]]] = []
        model = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = json.loads(body or b"{}")
                model.requests.append((self.path, request))
                if ":streamGenerateContent" in self.path:
                    chunk = {"candidates": [{"content": {"role": "model", "parts": [model.answer(request)]},
                                             "finishReason": "STOP", "index": 0}],
                             "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2}}
                    self._send("text/event-stream", f"data: {json.dumps(chunk)}\r\n\r\n".encode())
                else:  # countTokens and other side calls: an empty answer is enough
                    self._send("application/json", b"{}")

            def _send(self, kind: str, data: bytes) -> None:
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake gemini model", daemon=True)

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        if self.function_responses(request):
            return {"text": "done"}
        return {"functionCall": {"name": "write_file", "args": {"file_path": self.file_path, "content": self.content}}}

    @staticmethod
    def function_responses(request: dict[str, Any]) -> list[dict[str, Any]]:
        return [part["functionResponse"] for turn in request.get("contents", []) for part in turn.get("parts", [])
                if "functionResponse" in part]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def __enter__(self) -> FakeGeminiModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
