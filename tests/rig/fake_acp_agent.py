"""A scripted ACP agent on stdio, for faults the real `qwen --acp` never makes.

    python -m tests.rig.fake_acp_agent SCRIPT.json

SCRIPT (all keys optional):
    {"turns": [[ACTION, ...], ...],   one list per prompt, in order (across restarts); then "OK."
     "state": "dir",                  sessions kept here (session/load replays them)
     "log": "file",                   every message received, one JSON a line
     "auth_required": false,          session/new fails with -32000 until authenticate
     "auth_fails": false,             authenticate fails as 0.24.4's does with no key configured
     "auth_methods": [...],           initialize's authMethods (default: qwen 0.24.4's, its terminal sign-in)
     "refuse_session": null,          session/new fails with -32603 and this message (e.g. a bad cwd)
     "config_only": false,            modes and models offered only as configOptions
     "more_options": [],              more configOptions offered (both ways), each as sent; set_config_option
                                      takes their values (a boolean's with "type": "boolean") and answers them
     "agent_name": "fake-acp",        initialize's agentInfo.name ("qwen-code" poses as qwen: its
                                      renameSession and deleteSession answer {"success": true}, as
                                      qwen 0.24.4's do)
     "qwen_answers": {},              posing as qwen: qwen's own methods (qwen/control/session/btw, …)
                                      answered with these answers as given, by method
     "announce_commands": true,       an available_commands_update after session/new
     "qwen_answer_delay": 0,          seconds each of those takes to answer
     "always_rule": null,             posing as qwen: an answer proceed_always_user (or _project) to a
                                      session/request_permission adds this allow rule to the user's (or
                                      workspace's) rules in qwen/permissions/getSettings' answer the moment
                                      it is read, as qwen 0.24.4 writes it before the tool runs
     "rewind_files": [],              what rewindSession says it restored, as qwen 0.24.4 would
                                      (only with a promptId and rewindFiles not false)
     "rewind_delay": 0,               seconds rewindSession takes to answer
     "branch_points": false,          each prompt's answer gives its branch point (_meta "qwen.branchPoint"), and
                                      qwen/control/session/branch copies the session up to one into a new
                                      session in the same folder, as qwen 0.24.4's does
     "listed_sessions": {"count": N, "title_chars": M}   session/list answers N made-up sessions
                                      (titles of M characters) besides those in "state"
     "session_ids": [],               the ids session/new answers with, in order (then fresh UUIDs): an
                                      agent's hostile id
     "list_delay": 0,                 seconds session/list takes to answer (a `$/cancel_request` is logged only)
     "open_delay": 0,                 seconds session/load and session/resume take to answer (load replays
                                      after it; a `$/cancel_request` is logged only)
     "list_page": 0,                  session/list answers pages of this many sessions with qwen's
                                      numeric cursor and nextCursor (0: all at once)
     "capabilities": {...},           initialize's agentCapabilities (default: qwen 0.24.4's: load, list,
                                      images, embedded context, MCP over HTTP and SSE); session/close and
                                      session/delete are answered {} where its sessionCapabilities name them,
                                      logout where its auth names it (then session/new needs a sign-in)
     "exit_on_start": null,           exit with this code right after starting
     "start_gate": null,              answer initialize only once this file exists (the test decides
                                      when the agent has started)
     "mcp_status": null,              posing as qwen: {"servers": [...], "tools": {name: [...]}} is what
                                      qwen/status/session/resources (its mcp cell) and
                                      qwen/status/workspace/mcp/tools answer; restart refuses a session's
                                      server as 0.24.4's does ("MCP server not configured")
     "grandchild": "pid file",        start tests/rig/grandchild.py first (its pid appended to the file)
     "store_lock": "dir"}             hold it as qwen holds its extension store's (tests/rig/store_lock.py)

ACTION:
    {"chunks": ["a", "b"], "delay": 0}   agent_message_chunk per item
    {"echo": "prefix"}                   one agent_message_chunk: the prefix and the prompt's text
    {"stream": N, "size": 10}            N chunks of `size` characters
    {"stall": seconds}                   wait (a session/cancel ends the turn "cancelled")
    {"gate": "file"}                     wait until the file exists (a session/cancel ends the turn
                                         "cancelled"): the test decides when the turn goes on
    {"deaf": seconds}                    wait, deaf to session/cancel (a hung agent)
    {"raw": "text"}                      write this line as it is (malformed JSON)
    {"big": N}                           one agent_message_chunk of N characters (a huge line)
    {"update": {...}}                    any session/update
    {"notify": method, "params": {...}}  any notification (a "sessionId" of "" becomes the prompt's session)
    {"request": method, "params": {...}} ask the client and wait for its answer (logged);
                                         with "wait": false, ask and go on (the answer is not awaited);
                                         a "sessionId" of "" becomes the prompt's session
    {"parallel": [{"request", "params"}, ...]}  ask them all at once, then wait for every answer
    {"tool_calls": N}                    N tool calls, each started then completed (a flood)
                                         ("pause_every": K, "pause": S: a pause of S seconds,
                                         0.05 by default, after every K of them)
    {"stderr": N}                        one line of N characters on stderr
    {"ignore_cancel": true}              the rest of the turn goes on after a session/cancel
    {"stop_reading": true}               stop reading stdin for good after the line being read
                                         (the client's writes fill the pipe, then block)
    {"crash": code}                      exit at once
    {"stop": "end_turn"}                 the turn's stopReason
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

try:
    from .grandchild import start as start_grandchild  # python -m tests.rig.fake_acp_agent
    from .store_lock import hold as hold_store_lock
except ImportError:
    from grandchild import start as start_grandchild  # python tests/rig/fake_acp_agent.py
    from store_lock import hold as hold_store_lock

# qwen 0.24.4's initialize answer: one method, completed by running qwen with these args in a terminal.
QWEN_AUTH_METHODS = [{"id": "openai", "name": "Use OpenAI API key",
                      "description": "Requires setting the `OPENAI_API_KEY` environment variable",
                      "_meta": {"type": "terminal", "args": ["--auth-type=openai"]}}]
MODES = [
    {"id": "plan", "name": "Plan"},
    {"id": "default", "name": "Default"},
    {"id": "yolo", "name": "YOLO"},
]
MODELS = [
    {"modelId": "$runtime|openai|fake-model(openai)", "name": "fake-model", "_meta": {"contextLimit": 1000}},
    {"modelId": "$runtime|openai|other-model(openai)", "name": "other-model", "_meta": {"contextLimit": 2000}},
]


class Agent:
    def __init__(self, script: dict[str, Any]) -> None:
        self.turns: list[list[dict[str, Any]]] = list(script.get("turns", []))
        self.state = Path(script["state"]) if script.get("state") else None
        self.log_path = Path(script["log"]) if script.get("log") else None
        self.auth_required = bool(script.get("auth_required"))
        self.auth_fails = bool(script.get("auth_fails"))
        self.auth_methods = script.get("auth_methods", QWEN_AUTH_METHODS)
        self.refuse_session: str | None = script.get("refuse_session")
        self.config_only = bool(script.get("config_only"))
        self.more_options: list[dict[str, Any]] = list(script.get("more_options", []))
        self.capabilities = script.get("capabilities", {
            "loadSession": True, "promptCapabilities": {"image": True, "embeddedContext": True},
            "sessionCapabilities": {"list": {}}, "mcpCapabilities": {"http": True, "sse": True},
        })
        self.session_capabilities: dict[str, Any] = self.capabilities.get("sessionCapabilities") or {}
        self.model = MODELS[0]["modelId"]
        self.write_lock = threading.Lock()
        self.cancelled = threading.Event()
        self.deaf_to_stdin = threading.Event()
        self.answers: dict[int, threading.Event] = {}
        self.results: dict[int, Any] = {}
        self.next_id = 1000
        self.mode = "default"
        self.agent_name = str(script.get("agent_name", "fake-acp"))
        self.mcp_status: dict[str, Any] | None = script.get("mcp_status")
        self.rewind_files: list[str] = list(script.get("rewind_files", []))
        self.rewind_delay = float(script.get("rewind_delay", 0))
        self.qwen_answers: dict[str, Any] = dict(script.get("qwen_answers", {}))
        self.announces_commands = script.get("announce_commands", True)
        self.list_delay = float(script.get("list_delay", 0))
        self.open_delay = float(script.get("open_delay", 0))
        self.qwen_answer_delay = float(script.get("qwen_answer_delay", 0))
        self.always_rule: str | None = script.get("always_rule")
        self.asked: dict[int, str] = {}  # our requests' methods, by id
        self.branch_points = bool(script.get("branch_points"))
        self.listed_sessions: dict[str, int] = dict(script.get("listed_sessions", {}))
        self.session_ids: list[str] = list(script.get("session_ids", []))
        self.list_page = int(script.get("list_page", 0))
        self.prompts: dict[str, list[str]] = {}  # session -> the promptIds of its history (qwen's snapshots)
        self.prompt_count = 0  # qwen numbers promptIds on and never reuses one after a rewind
        self.busy: set[str] = set()
        self.start_gate = Path(script["start_gate"]) if script.get("start_gate") else None

    # --- io ----------------------------------------------------------------

    def write(self, message: dict[str, Any] | str) -> None:
        line = message if isinstance(message, str) else json.dumps(message)
        with self.write_lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    def log(self, message: Any) -> None:
        if self.log_path is not None:
            with self.log_path.open("a", encoding="utf-8") as out:
                out.write(json.dumps(message) + "\n")

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self.write({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session_id, "update": update}})

    def chunk(self, session_id: str, text: str, kind: str = "agent_message_chunk") -> None:
        self.update(session_id, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})

    def wait_for_file(self, gate: Path) -> bool:
        """Wait until `gate` exists; True when a session/cancel came first."""
        while not gate.exists():
            if self.cancelled.wait(0.01):
                return True
        return False

    def ask(self, method: str, params: Any) -> Any:
        return self.ask_all([(method, params)])[0]

    def ask_all(self, requests: list[tuple[str, Any]]) -> list[Any]:
        ids = []
        for method, params in requests:
            self.next_id += 1
            ids.append(self.next_id)
            self.answers[self.next_id] = threading.Event()
            self.asked[self.next_id] = method
            self.write({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + 30
        for request_id in ids:
            self.answers[request_id].wait(max(deadline - time.monotonic(), 0))
        return [self.results.get(request_id) for request_id in ids]

    # --- sessions on disk ---------------------------------------------------

    def history(self, session_id: str) -> list[dict[str, Any]]:
        if self.state is None:
            return []
        path = self.state / f"{session_id}.json"
        return json.loads(path.read_text()) if path.exists() else []

    def remember(self, session_id: str, cwd: str, entry: dict[str, Any]) -> None:
        if self.state is None:
            return
        self.state.mkdir(parents=True, exist_ok=True)
        entries = [*self.history(session_id), entry]
        (self.state / f"{session_id}.json").write_text(json.dumps(entries))
        meta = self.state / f"{session_id}.meta"
        info = json.loads(meta.read_text()) if meta.exists() else {"cwd": cwd, "title": entry.get("text", "")[:40],
                                                                       "preview": entry.get("text", "")[:40]}
        # One reading of the clock for the seconds and their fraction: two readings
        # across a second's turn made a later write sort before an earlier one.
        seconds, nanoseconds = divmod(time.time_ns(), 10**9)
        info["updatedAt"] = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + f".{nanoseconds:09d}Z"
        self.write_meta(meta, info)

    @staticmethod
    def write_meta(meta: Path, info: dict[str, Any]) -> None:
        """At once: requests are handled on threads of their own, and session/list reads these."""
        partial = meta.with_suffix(f".{threading.get_ident()}.tmp")
        partial.write_text(json.dumps(info))
        os.replace(partial, meta)

    def turns_used(self) -> int:
        """Turns taken so far, by this process or an earlier one (restarts)."""
        if self.state is None:
            self.used = getattr(self, "used", -1) + 1
            return self.used
        self.state.mkdir(parents=True, exist_ok=True)
        counter = self.state / "turns-used"
        used = int(counter.read_text()) if counter.exists() else 0
        counter.write_text(str(used + 1))
        return used

    # --- methods -------------------------------------------------------------

    def config_options(self) -> list[dict[str, Any]]:
        return [
            {"id": "mode", "name": "Mode", "category": "mode", "type": "select", "currentValue": self.mode,
             "options": [{"value": m["id"], "name": m["name"]} for m in MODES]},
            {"id": "model", "name": "Model", "category": "model", "type": "select", "currentValue": self.model,
             "options": [{"value": m["modelId"], "name": m["name"]} for m in MODELS]},
            *self.more_options,
        ]

    def session_answer(self, session_id: str) -> dict[str, Any]:
        if self.config_only:
            return {"sessionId": session_id, "configOptions": self.config_options()}
        return {
            "sessionId": session_id,
            "modes": {"currentModeId": self.mode, "availableModes": MODES},
            "models": {"currentModelId": MODELS[0]["modelId"], "availableModels": MODELS},
            **({"configOptions": self.config_options()} if self.more_options else {}),
        }

    def handle(self, message: dict[str, Any]) -> Any:
        method, params = message.get("method"), message.get("params") or {}
        if method == "initialize":
            if self.start_gate is not None:
                self.wait_for_file(self.start_gate)
            return {
                "protocolVersion": 1,
                "agentInfo": {"name": self.agent_name, "version": "1.0"},
                "authMethods": self.auth_methods,
                "agentCapabilities": self.capabilities,
            }
        if method == "authenticate":
            if self.auth_fails:  # qwen 0.24.4 with a fresh HOME and no OPENAI_API_KEY
                raise RpcError(-32603, "Internal error")
            self.auth_required = False
            return {}
        if method == "session/new":
            if self.auth_required:
                raise RpcError(-32000, "Authentication required: Use Qwen Code CLI to authenticate first.")
            if self.refuse_session is not None:
                raise RpcError(-32603, "Internal error", {"details": self.refuse_session})
            session_id = self.session_ids.pop(0) if self.session_ids else str(uuid.uuid4())
            self.cwd = params.get("cwd", "")
            threading.Thread(target=self.announce_commands, args=(session_id,), daemon=True).start()
            return self.session_answer(session_id)
        if method in ("session/load", "session/resume"):
            time.sleep(self.open_delay)
        if method == "session/load":
            session_id = params["sessionId"]
            if self.state is None or not (self.state / f"{session_id}.json").exists():
                raise RpcError(-32603, "Internal error", {"details": f"session {session_id} not found"})
            self.prompts[session_id] = []  # qwen keeps each prompt's id in the session's record
            for entry in self.history(session_id):
                if entry["role"] == "user":
                    self.prompts[session_id].append(entry["promptId"])
                    self.prompt_count = max(self.prompt_count, int(entry["promptId"].rpartition("#")[2]))
                kind = "user_message_chunk" if entry["role"] == "user" else "agent_message_chunk"
                self.chunk(session_id, entry["text"], kind)
            return self.session_answer(session_id)
        if method == "session/resume":
            session_id = params["sessionId"]
            if self.state is None or not (self.state / f"{session_id}.json").exists():
                raise RpcError(-32603, "Internal error", {"details": f"session {session_id} not found"})
            self.prompts[session_id] = [e["promptId"] for e in self.history(session_id) if e["role"] == "user"]
            return self.session_answer(session_id)  # as qwen 0.24.4: nothing replayed
        if method == "session/list":
            time.sleep(self.list_delay)
            sessions = []
            for meta in sorted((self.state or Path("/nonexistent")).glob("*.meta")):
                info = json.loads(meta.read_text())
                sessions.append({"sessionId": meta.stem, "cwd": info["cwd"], "title": info["title"],
                                 "updatedAt": info.get("updatedAt", "2026-01-01T00:00:00Z"),
                                 "_meta": {"preview": info.get("preview", "")}})
            sessions.sort(key=lambda entry: entry["updatedAt"], reverse=True)
            title = "t" * self.listed_sessions.get("title_chars", 10)
            sessions += [{"sessionId": f"listed-{n}", "cwd": self.cwd, "title": title, "updatedAt": "2026-01-01T00:00:00Z"}
                         for n in range(self.listed_sessions.get("count", 0))]
            if not self.list_page:
                return {"sessions": sessions}
            start = int(params.get("cursor") or 0)
            following = start + self.list_page
            return {"sessions": sessions[start:following],
                    **({"nextCursor": str(following)} if following < len(sessions) else {})}
        if method in ("session/close", "session/delete") and method.partition("/")[2] in self.session_capabilities:
            return {}  # ACP's stable methods, where "capabilities" announce them
        if method == "logout" and "logout" in (self.capabilities.get("auth") or {}):
            self.auth_required = True
            return {}
        if method == "session/set_mode":
            self.mode = params["modeId"]
            self.write({"jsonrpc": "2.0", "method": "qwen/notify/session/mode-update",
                        "params": {"v": 1, "sessionId": params["sessionId"], "currentModeId": self.mode}})
            return {}
        if method == "session/set_config_option":
            if params.get("configId") == "mode":
                self.mode = params["value"]
            elif params.get("configId") == "model":
                self.model = params["value"]
            elif any(o["id"] == params.get("configId") for o in self.more_options):
                option = next(o for o in self.more_options if o["id"] == params.get("configId"))
                if (option["type"] == "boolean") != (params.get("type") == "boolean"):
                    raise RpcError(-32602, "Invalid params: a boolean option takes a boolean request")
                option["currentValue"] = params["value"]
            else:
                raise RpcError(-32602, "Invalid params")
            return {"configOptions": self.config_options()}
        if method == "session/set_model":
            if params.get("modelId") not in [m["modelId"] for m in MODELS]:
                raise RpcError(-32603, "Internal error")
            return {}
        if method == "session/prompt":
            return self.prompt(params)
        if method in ("renameSession", "deleteSession") and self.agent_name == "qwen-code":
            meta = (self.state or Path("/nonexistent")) / f"{params.get('sessionId')}.meta"
            if meta.exists() and method == "renameSession":  # kept, as qwen keeps its sessions' titles
                self.write_meta(meta, {**json.loads(meta.read_text()), "title": params.get("title", "")})
            elif meta.exists():
                meta.unlink()
                meta.with_suffix(".json").unlink(missing_ok=True)
            return {"success": True}
        if method in self.qwen_answers and self.agent_name == "qwen-code":
            time.sleep(self.qwen_answer_delay)
            return self.qwen_answers[method]
        if method == "qwen/status/session/rewind_snapshots":
            ids = self.prompts.get(params.get("sessionId", ""), [])
            return {"snapshots": [{"promptId": prompt_id, "turnIndex": index, "timestamp": "2026-01-01T00:00:00Z",
                                   "diffStats": {"filesChanged": 0, "insertions": 0, "deletions": 0}}
                                  for index, prompt_id in enumerate(ids)]}
        if method == "rewindSession":
            return self.rewind(params)
        if method.startswith(("qwen/status/session/resources", "qwen/status/workspace/mcp/tools",
                              "qwen/control/workspace/mcp/restart")) and self.mcp_status is not None:
            return self.mcp_answer(method, params)
        if method == "qwen/control/session/branch" and self.branch_points:
            return self.branch(params)
        raise RpcError(-32601, f"Method not found: {method}")

    def mcp_answer(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert self.mcp_status is not None
        if method == "qwen/status/session/resources":
            return {"v": 1, "sessionId": params.get("sessionId"), "mcp": {"servers": self.mcp_status["servers"]}}
        tools = self.mcp_status.get("tools", {}).get(params.get("serverName"))
        if method == "qwen/status/workspace/mcp/tools":
            return {"tools": tools} if tools is not None else {
                "tools": [], "errors": [{"kind": "mcp_tools", "status": "error", "error": "MCP server not configured"}]}
        if tools is None:
            raise RpcError(-32004, f"MCP server not configured: {json.dumps(params.get('serverName'))}")
        return {"serverName": params.get("serverName"), "restarted": True}

    def rewind(self, params: dict[str, Any]) -> dict[str, Any]:
        """qwen 0.24.4's rewindSession: to before prompt `targetTurnIndex`, or
        the prompt `promptId` names (files are restored only with a promptId)."""
        session_id = params.get("sessionId", "")
        ids = self.prompts.get(session_id, [])
        if session_id in self.busy:
            raise RpcError(-32602, "Cannot rewind while a prompt is running", {"errorKind": "session_busy"})
        time.sleep(self.rewind_delay)
        prompt_id = params.get("promptId")
        index = params.get("targetTurnIndex")
        if prompt_id is not None and index is None:
            if not isinstance(prompt_id, str) or not prompt_id.startswith(f"{session_id}########"):
                raise RpcError(-32602, "Invalid promptId format", {"errorKind": "invalid_rewind_target"})
            if prompt_id not in ids:
                raise RpcError(-32602, "Snapshot not found for the given promptId",
                               {"errorKind": "invalid_rewind_target"})
            index = ids.index(prompt_id)
        if not isinstance(index, int) or index < 0 or index >= len(ids):
            raise RpcError(-32602, "Invalid params: Cannot rewind to the requested turn. It may have been compressed or "
                           "does not exist.", {"errorKind": "invalid_rewind_target"})
        del ids[index:]
        entries = self.history(session_id)
        users = [n for n, entry in enumerate(entries) if entry["role"] == "user"]
        if self.state is not None and index < len(users):
            (self.state / f"{session_id}.json").write_text(json.dumps(entries[: users[index]]))
        restores = prompt_id is not None and params.get("rewindFiles") is not False
        return {"success": True, "historyBeforeRewind": [], "targetTurnIndex": index, "apiTruncateIndex": index,
                "filesChanged": self.rewind_files if restores else [], "filesFailed": []}

    def branch(self, params: dict[str, Any]) -> dict[str, Any]:
        """A new session holding the source's entries up to the turn of branch point `atRecordId` (its promptId)."""
        source = str(params.get("sessionId", ""))
        entries = self.history(source)
        users = [n for n, entry in enumerate(entries) if entry["role"] == "user"]
        turn = next((k for k, n in enumerate(users) if entries[n].get("promptId") == params.get("atRecordId")), None)
        meta = (self.state or Path("/nonexistent")) / f"{source}.meta"
        if self.state is None or turn is None or not meta.exists():
            raise RpcError(-32009, "Not a branch point")
        new_id = str(uuid.uuid4())
        kept = entries[: users[turn + 1]] if turn + 1 < len(users) else entries
        (self.state / f"{new_id}.json").write_text(json.dumps(kept))
        info = json.loads(meta.read_text())
        self.write_meta(self.state / f"{new_id}.meta", {**info, "title": f"{info['title']} (branch)"})
        self.prompts[new_id] = [entry["promptId"] for entry in kept if entry["role"] == "user"]
        return {"newSessionId": new_id, "title": f"{info['title']} (branch)", "displayName": info["title"]}

    def announce_commands(self, session_id: str) -> None:
        if not self.announces_commands:
            return
        time.sleep(0.05)
        self.update(session_id, {"sessionUpdate": "available_commands_update", "availableCommands": [
            {"name": "compress", "description": "Compress the context"},
            {"name": "memory", "description": "Manage memory"},
        ]})

    def prompt(self, params: dict[str, Any]) -> dict[str, Any]:
        session_id = params["sessionId"]
        self.cancelled.clear()
        text = "".join(b.get("text", "") for b in params.get("prompt", []) if b.get("type") == "text")
        self.prompt_count += 1
        prompt_id = f"{session_id}########{self.prompt_count}"
        self.remember(session_id, getattr(self, "cwd", ""), {"role": "user", "text": text, "promptId": prompt_id})
        self.prompts.setdefault(session_id, []).append(prompt_id)
        self.busy.add(session_id)
        try:
            answer = self.run_turn(session_id, text)
        finally:
            self.busy.discard(session_id)
        if self.branch_points and answer["stopReason"] == "end_turn":
            answer["_meta"] = {"qwen.branchPoint": {"checkpointUuid": prompt_id}}
        return answer

    def run_turn(self, session_id: str, text: str) -> dict[str, Any]:
        used = self.turns_used()
        actions = self.turns[used] if used < len(self.turns) else [{"chunks": ["OK."]}]
        said: list[str] = []
        stop = "end_turn"
        ignore_cancel = False
        for action in actions:
            ignore_cancel = ignore_cancel or bool(action.get("ignore_cancel"))
            if self.cancelled.is_set() and not ignore_cancel:
                stop = "cancelled"
                break
            if "chunks" in action:
                for piece in action["chunks"]:
                    self.chunk(session_id, piece)
                    said.append(piece)
                    if action.get("delay"):
                        time.sleep(action["delay"])
            elif "echo" in action:
                said.append(f"{action['echo']}{text}")
                self.chunk(session_id, said[-1])
            elif "stream" in action:
                piece = "x" * (action.get("size", 10) - 1) + " "
                for _ in range(action["stream"]):
                    if self.cancelled.is_set():
                        break
                    self.chunk(session_id, piece)
            elif "stall" in action:
                if self.cancelled.wait(action["stall"]):
                    stop = "cancelled"
                    break
            elif "gate" in action:
                if self.wait_for_file(Path(action["gate"])):
                    stop = "cancelled"
                    break
            elif "deaf" in action:
                time.sleep(action["deaf"])
            elif "raw" in action:
                self.write(action["raw"])
            elif "big" in action:
                self.chunk(session_id, "y" * action["big"])
            elif "update" in action:
                self.update(session_id, action["update"])
            elif "notify" in action:
                params = dict(action.get("params", {}))
                if params.get("sessionId") == "":
                    params["sessionId"] = session_id
                self.write({"jsonrpc": "2.0", "method": action["notify"], "params": params})
            elif "request" in action and action.get("wait") is False:
                self.next_id += 1
                self.write({"jsonrpc": "2.0", "id": self.next_id, "method": action["request"],
                            "params": of_session(action.get("params", {}), session_id)})
            elif "request" in action:
                answer = self.ask(action["request"], of_session(action.get("params", {}), session_id))
                self.log({"answer_to": action["request"], "answer": answer})
            elif "stop_reading" in action:
                self.deaf_to_stdin.set()
            elif "parallel" in action:
                asked = [(r["request"], of_session(r.get("params", {}), session_id)) for r in action["parallel"]]
                for (method, _), answer in zip(asked, self.ask_all(asked), strict=True):
                    self.log({"answer_to": method, "answer": answer})
            elif "tool_calls" in action:
                for number in range(action["tool_calls"]):
                    self.update(session_id, {"sessionUpdate": "tool_call", "toolCallId": f"c{number}",
                                             "title": f"read f{number}.py", "kind": "read", "status": "in_progress"})
                    self.update(session_id, {"sessionUpdate": "tool_call_update", "toolCallId": f"c{number}",
                                             "status": "completed"})
                    if action.get("pause_every") and (number + 1) % action["pause_every"] == 0:
                        time.sleep(action.get("pause", 0.05))  # the editor applies what came so far
            elif "stderr" in action:
                sys.stderr.write("e" * action["stderr"] + "\n")
                sys.stderr.flush()
            elif "crash" in action:
                os._exit(action["crash"])
            elif "stop" in action:
                stop = action["stop"]
        if self.cancelled.is_set():
            stop = "cancelled"
        if said:
            self.remember(session_id, getattr(self, "cwd", ""), {"role": "agent", "text": "".join(said)})
        return {"stopReason": stop}

    def write_always_rule(self, method: str | None, result: Any) -> None:
        """qwen's settings after an "always" answer: the rule added to its scope."""
        chosen = (result or {}).get("outcome", {}).get("optionId") if isinstance(result, dict) else None
        scope = {"proceed_always_user": "user", "proceed_always_project": "workspace"}.get(str(chosen))
        settings = self.qwen_answers.get("qwen/permissions/getSettings")
        if method != "session/request_permission" or scope is None or self.always_rule is None or settings is None:
            return
        rules = settings[scope]["rules"]
        self.qwen_answers["qwen/permissions/getSettings"] = {
            **settings, scope: {**settings[scope], "rules": {**rules, "allow": [*rules["allow"], self.always_rule]}}}

    # --- main loop -----------------------------------------------------------

    def serve(self, message: dict[str, Any]) -> None:
        try:
            result = self.handle(message)
            self.write({"jsonrpc": "2.0", "id": message["id"], "result": result})
        except RpcError as error:
            self.write({"jsonrpc": "2.0", "id": message["id"], "error": error.body()})

    def run(self) -> None:
        for line in sys.stdin:
            if self.deaf_to_stdin.is_set():
                threading.Event().wait()  # never reads again; the process lives on
            if not line.strip():
                continue
            message = json.loads(line)
            self.log(message)
            if "method" not in message:
                request_id = message.get("id")
                self.results[request_id] = message.get("result", message.get("error"))
                self.write_always_rule(self.asked.get(request_id), self.results[request_id])
                if request_id in self.answers:
                    self.answers[request_id].set()
            elif message["method"] == "session/cancel":
                self.cancelled.set()
            elif "id" in message:
                threading.Thread(target=self.serve, args=(message,), daemon=True).start()


def of_session(params: Any, session_id: str) -> Any:
    """`params` of a request the script asks, its blank sessionId made the prompt's session."""
    if isinstance(params, dict) and params.get("sessionId") == "":
        return {**params, "sessionId": session_id}
    return params


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            body["data"] = self.data
        return body


def main() -> None:
    script = json.loads(Path(sys.argv[1]).read_text()) if len(sys.argv) > 1 else {}
    if script.get("exit_on_start") is not None:
        sys.stderr.write("fake agent: refusing to start\n")
        sys.exit(script["exit_on_start"])
    if script.get("store_lock"):
        hold_store_lock(Path(script["store_lock"]))
    if script.get("grandchild"):
        start_grandchild(script["grandchild"])
    sys.stderr.write(f"fake agent {os.getpid()} ready\n")
    sys.stderr.flush()
    Agent(script).run()


if __name__ == "__main__":
    main()
