"""A fake Anthropic Messages API for driving the real Claude Code CLI offline.

Standard library only. Start it, point `ANTHROPIC_BASE_URL` at `.url`, and script the
model's answers:

    with FakeAnthropic() as api:
        api.respond_tool_use("Bash", {"command": "subrosa fact list"})
        api.respond_text("Done.")
        ...run `claude -p`...
        api.agent_requests[1].tool_results()   # what the Bash tool printed

Every request is logged (`.requests`, bodies parsed as JSON). Only the agent loop's
requests (`.agent_requests`: they offer tools) take answers from the script; the side
requests Claude Code makes for itself (session titles, summaries, quota probes: no tools,
or one token) get `side_text`, so they never eat a scripted tool call. When the script is
empty the agent gets `default_text` and ends its turn.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "claude-sonnet-4-5-20250929"
_ids = itertools.count(1)


@dataclass(frozen=True)
class Text:
    """The model answers with text and ends its turn."""

    text: str


@dataclass(frozen=True)
class ToolUse:
    """The model calls one tool (`name`, `input`) and waits for its result."""

    name: str
    input: dict[str, Any]
    text: str = ""
    id: str = field(default_factory=lambda: f"toolu_fake{next(_ids):06d}")


Reply = Text | ToolUse


@dataclass
class Request:
    """One HTTP request Claude Code made: the parsed JSON body when there was one."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    reply: Reply | None = None
    at: float = field(default_factory=time.monotonic)  # when it arrived (for debugging)

    @property
    def is_messages(self) -> bool:
        return self.method == "POST" and self.path.split("?")[0] == "/v1/messages"

    @property
    def is_main(self) -> bool:
        """A call of the agent loop: it offers tools. Claude Code's side calls (session
        titles, summaries, the one-token quota probe) offer none, or ask for one token;
        the subagents' warm-ups of Claude Code 2.0 and 1.0 (one message, `Warmup`) offer
        tools but are side calls too."""
        body = self.body if isinstance(self.body, dict) else {}
        if not (self.is_messages and body.get("tools") and body.get("max_tokens") != 1):
            return False
        return _block_texts(self.messages[:2]) != ["Warmup"]

    @property
    def system_text(self) -> str:
        system = self.body.get("system") if isinstance(self.body, dict) else None
        if isinstance(system, str):
            return system
        return "\n".join(_block_texts(system or []))

    @property
    def messages(self) -> list[dict[str, Any]]:
        body = self.body if isinstance(self.body, dict) else {}
        messages = body.get("messages") or []
        return messages if isinstance(messages, list) else []

    def texts(self) -> list[str]:
        """Every text the request carries: system prompt, message texts, tool results."""
        out = [self.system_text]
        for message in self.messages:
            content = message.get("content")
            if isinstance(content, str):
                out.append(content)
            else:
                out.extend(_block_texts(content or []))
        return out

    def text(self) -> str:
        return "\n".join(self.texts())

    def new_messages(self) -> list[dict[str, Any]]:
        """The messages after the last assistant message: what this call adds to the
        conversation (the user's prompt, tool results, hook feedback)."""
        messages = self.messages
        last = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
        return messages[last + 1 :]

    def new_texts(self) -> list[str]:
        """The texts of `new_messages()`, tool results included."""
        out: list[str] = []
        for message in self.new_messages():
            content = message.get("content")
            out.extend([content] if isinstance(content, str) else _block_texts(content or []))
        return out

    def tool_results(self) -> list[str]:
        """The text of every tool_result block this call carries, in order."""
        return [
            "\n".join(_block_texts([block]))
            for message in self.new_messages()
            for block in (message.get("content") or [])
            if isinstance(block, dict) and block.get("type") == "tool_result"
        ]


def _block_texts(blocks: Any) -> list[str]:
    """Texts in a list of content blocks, tool_result contents included."""
    out: list[str] = []
    if not isinstance(blocks, list):
        return out
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            out.append(block["text"])
        inner = block.get("content")
        if isinstance(inner, str):
            out.append(inner)
        elif isinstance(inner, list):
            out.extend(_block_texts(inner))
    return out


class FakeAnthropic:
    """The fake API server; use as a context manager (it serves on a daemon thread)."""

    def __init__(self, default_text: str = "OK.", side_text: str = "Fake title") -> None:
        self.default_text = default_text
        self.side_text = side_text
        self.requests: list[Request] = []
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # --- scripting -----------------------------------------------------------------

    def respond_text(self, text: str) -> FakeAnthropic:
        """Queue a text answer for the next main-agent request."""
        with self._lock:
            self._script.append(Text(text))
        return self

    def respond_tool_use(self, name: str, input: dict[str, Any], text: str = "") -> FakeAnthropic:
        """Queue a tool call (e.g. `"Bash", {"command": "subrosa fact list"}`)."""
        with self._lock:
            self._script.append(ToolUse(name, input, text))
        return self

    def respond_bash(self, command: str) -> FakeAnthropic:
        """Queue a call of Claude Code's Bash tool."""
        return self.respond_tool_use("Bash", {"command": command, "description": command[:60]})

    @property
    def pending(self) -> int:
        """Scripted answers not yet given."""
        with self._lock:
            return len(self._script)

    # --- reading the log -----------------------------------------------------------

    @property
    def agent_requests(self) -> list[Request]:
        """The main agent's Messages requests, in order."""
        with self._lock:
            return [r for r in self.requests if r.is_main]

    @property
    def side_requests(self) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.is_messages and not r.is_main]

    def clear(self) -> None:
        """Forget the log (the script stays)."""
        with self._lock:
            self.requests.clear()

    # --- serving -------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _answer(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            if request.is_main and self._script:
                reply: Reply = self._script.popleft()
            elif request.is_main:
                reply = Text(self.default_text)
            else:
                reply = Text(self.side_text)
            request.reply = reply
            return reply


def _message(reply: Reply, model: str) -> dict[str, Any]:
    """A complete (non-streamed) Messages API response."""
    content: list[dict[str, Any]] = []
    if isinstance(reply, ToolUse):
        if reply.text:
            content.append({"type": "text", "text": reply.text})
        content.append(
            {"type": "tool_use", "id": reply.id, "name": reply.name, "input": reply.input}
        )
        stop = "tool_use"
    else:
        content.append({"type": "text", "text": reply.text})
        stop = "end_turn"
    return {
        "id": f"msg_fake{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": _usage(),
    }


def _usage() -> dict[str, int]:
    return {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
    }


def _sse(reply: Reply, model: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """The Messages API's streaming events for one reply."""
    whole = _message(reply, model)
    yield (
        "message_start",
        {"type": "message_start", "message": {**whole, "content": [], "stop_reason": None}},
    )
    for index, block in enumerate(whole["content"]):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        )
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _handler_for(api: FakeAnthropic) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _body(self) -> Any:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if not raw:
                return None
            try:
                return json.loads(raw)
            except ValueError:
                return raw.decode("utf-8", "replace")

        def _send_json(self, status: int, data: Any) -> None:
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def _handle(self) -> None:
            request = Request(self.command, self.path, dict(self.headers), self._body())
            route = self.path.split("?")[0]
            if request.is_messages:
                reply = api._answer(request)
                body = request.body if isinstance(request.body, dict) else {}
                model = str(body.get("model") or MODEL)
                if body.get("stream"):
                    self._stream(reply, model)
                else:
                    self._send_json(200, _message(reply, model))
                return
            with api._lock:
                api.requests.append(request)
            if route == "/v1/messages/count_tokens":
                self._send_json(200, {"input_tokens": 100})
            elif route.startswith("/v1/models"):
                self._send_json(
                    200, {"data": [], "has_more": False, "first_id": None, "last_id": None}
                )
            else:
                self._send_json(200, {})

        def _stream(self, reply: Reply, model: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()
            for event, data in _sse(reply, model):
                self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

        do_POST = _handle
        do_GET = _handle
        do_PUT = _handle
        do_DELETE = _handle
        do_PATCH = _handle

    return Handler
