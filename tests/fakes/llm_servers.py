"""Local HTTP servers that speak the Anthropic Messages and OpenAI Chat Completions wire formats.

Provider tests point the REAL ``anthropic`` / ``openai`` SDK clients (through routedriver's adapters or
directly) at these servers on 127.0.0.1, script what the "model" answers, and check what the SDK sent.
No network, no mocking of the SDKs.

Example::

    from routedriver.llm.anthropic_chat import AnthropicChat
    from routedriver.llm.types import Message
    from tests.fakes.llm_servers import AnthropicServer, Reply

    with AnthropicServer() as server:
        server.enqueue(
            Reply.tool_calls([("read", {"file_path": "a.txt"}), ("grep", {"pattern": "x"})]),  # parallel
            Reply.text("done", input_tokens=12, output_tokens=3),
        )
        chat = AnthropicChat(model="claude-test", api_key="sk-test", base_url=server.base_url)
        first = chat.complete([Message(role="user", text="go")])
        ...
        assert server.requests[0].json["messages"][0]["role"] == "user"

``OpenAIServer`` is used the same way; its ``base_url`` already ends in ``/v1`` as the openai SDK expects.

The API (both servers):

- context managers: ``with AnthropicServer() as server`` starts a threaded server on a free port and stops
  it on exit (``start()`` / ``stop()`` do the same by hand);
- ``base_url``: what to give the SDK (or ``--base-url`` / ``ANTHROPIC_BASE_URL`` / ``QWEN_BASE_URL``);
- ``requests``: every request received, in arrival order, as ``Recorded(method, path, headers, json, body)``
  (``headers`` has lower-case names; ``json`` is the parsed body or None);
- ``enqueue(*replies)``: scripted replies, consumed one per request in order (thread-safe);
- ``responder``: ``Callable[[Recorded], Reply]`` used when the queue is empty (e.g. benchmarks that answer
  every request the same way); with neither, the server answers 400 "no reply scripted" so a missing script
  fails fast instead of being retried;
- ``pending``: how many enqueued replies are still unused;
- ``api_key=`` (constructor): when given, a request carrying another key gets the provider's real 401;
- ``validate=True`` (constructor): requests are checked the way the real APIs check them (roles alternate
  and start with a non-empty user turn, every tool call is answered by a result right after it, a result
  answers a call of the message before, tools have schemas, at most 4 ``cache_control`` breakpoints) and
  rejected with the provider's 400 otherwise, without consuming a reply. That turns a translation bug into a
  failing test.
- ``prompt_cache=True`` (``AnthropicServer`` only): the server plays the Messages API's prompt cache. Each
  request's prefix (tools, system, message blocks) up to each ``cache_control`` breakpoint is remembered;
  a later request whose prefix up to one of ITS breakpoints was remembered reads it. The usage of every
  reply then reports ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` and the uncached rest as
  ``input_tokens`` (about four characters a token), instead of the scripted counts. A prefix that changes
  from one request to the next (a timestamp in the system prompt) shows up as reads of 0.

Replies (``Reply`` class methods):

- ``Reply.text(text, *, input_tokens=10, output_tokens=5, delay_s=0.0, stop_reason=None, model=None,
  cache_read_tokens=0, cache_write_tokens=0)``: Anthropic reports the cache counts apart from
  ``input_tokens``; OpenAI's ``prompt_tokens`` includes them, with ``prompt_tokens_details.cached_tokens``
- ``Reply.tool_calls(calls, *, text="", ids=None, input_tokens=10, output_tokens=5, delay_s=0.0)``: several
  calls in one response are parallel tool calls. A call is ``(name, arguments_dict)`` or a ``Call`` (which
  can carry raw, malformed arguments, a missing id or a missing name).
- ``Reply.raw_tool_call(name, arguments_text, *, id="call_1")``: one malformed call. OpenAI gets
  ``arguments_text`` verbatim as the arguments string; Anthropic (whose API always sends an object) gets it
  as a non-object ``input``, the malformation proxies and translation layers produce in practice.
- ``Reply.error(status, *, message=None, retry_after=None, error_type=None, headers=None)``: the provider's
  real error body (``{"type":"error","error":{"type":"rate_limit_error","message":…}}`` /
  ``{"error":{"message":…,"type":…,"code":…}}``) with a realistic default type and message per status, and
  a ``retry-after`` header when given (seconds or an HTTP date).
- ``Reply.raw(body, *, status=200, content_type="application/json")``: any bytes, e.g. a broken body.
- ``Reply.disconnect()``: close the connection without answering (the SDK sees a connection error).
``stop_reason`` uses Anthropic's words (``end_turn``, ``tool_use``, ``max_tokens``); the OpenAI server sends
the matching ``finish_reason`` (``stop``, ``tool_calls``, ``length``).

Streaming (a request with ``"stream": true``): ``AnthropicServer`` answers with the Messages API's
server-sent events, a tool's input cut into ``input_json_delta`` chunks that are JSON only together;
``ResponsesServer`` (``POST /v1/responses``, OpenAI's Responses API, what the Codex CLI speaks) with the
Responses events, a call's arguments cut into ``response.function_call_arguments.delta`` chunks. Each event
goes out in its own HTTP chunk. ``OpenAIServer`` refuses to stream (400). Scripted errors are not streamed:
they are the provider's JSON error, as the real APIs answer before a stream starts.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from tests.fakes import _llm_wire as wire

__all__ = ["AnthropicServer", "Call", "OpenAIServer", "Recorded", "Reply", "ResponsesServer"]


@dataclass(frozen=True)
class Recorded:
    """One request as the server received it."""

    method: str
    path: str  # without the query string
    headers: dict[str, str]  # lower-case names
    json: Any  # the parsed body, or None when it was not JSON
    body: bytes = b""


@dataclass(frozen=True)
class Call:
    """One tool call in a scripted reply.

    ``arguments`` that are a mapping are a valid call; a ``str`` is sent verbatim as OpenAI's arguments
    string and as a (malformed) non-object ``input`` to Anthropic clients. ``name=None`` leaves the name out;
    ``omit_id=True`` leaves the id out; ``id=None`` lets the server make one up (``toolu_…`` / ``call_…``).
    ``namespace`` (Responses API) names the tool namespace the function is in, as Codex's MCP tools are.
    """

    name: str | None
    arguments: Any = field(default_factory=dict)
    id: str | None = None
    omit_id: bool = False
    namespace: str | None = None  # Responses API only: the tool namespace (Codex's ``mcp__<server>``)


@dataclass(frozen=True)
class Reply:
    """What the fake model answers to one request. Build it with the class methods."""

    kind: str  # "message", "error", "raw" or "disconnect"
    said: str = ""  # the assistant's text (not ``text``: that name is the class method)
    calls: tuple[Call, ...] = ()
    input_tokens: int = 10
    output_tokens: int = 5
    stop_reason: str | None = None
    model: str | None = None
    status: int = 200
    message: str | None = None
    error_type: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    content_type: str = "application/json"
    delay_s: float = 0.0
    cache_read_tokens: int = 0  # input tokens read from the prompt cache (on top of input_tokens)
    cache_write_tokens: int = 0  # input tokens written to it (Anthropic only)

    @classmethod
    def text(
        cls,
        text: str,
        *,
        input_tokens: int = 10,
        output_tokens: int = 5,
        delay_s: float = 0.0,
        stop_reason: str | None = None,
        model: str | None = None,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> Reply:
        return cls(
            "message",
            said=text,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            delay_s=delay_s,
            stop_reason=stop_reason,
            model=model,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
        )

    @classmethod
    def tool_calls(
        cls,
        calls: Sequence[tuple[str, Mapping[str, Any]] | Call],
        *,
        text: str = "",
        ids: Sequence[str] | None = None,
        input_tokens: int = 10,
        output_tokens: int = 5,
        delay_s: float = 0.0,
        stop_reason: str | None = None,
    ) -> Reply:
        built: list[Call] = []
        for index, call in enumerate(calls):
            if not isinstance(call, Call):
                name, arguments = call
                call = Call(name, dict(arguments))
            if ids is not None:
                call = replace(call, id=ids[index])
            built.append(call)
        return cls(
            "message",
            said=text,
            calls=tuple(built),
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            delay_s=delay_s,
            stop_reason=stop_reason,
        )

    @classmethod
    def raw_tool_call(
        cls, name: str, arguments_text: str, *, id: str = "call_1", text: str = "", delay_s: float = 0.0
    ) -> Reply:
        return cls("message", said=text, calls=(Call(name, arguments_text, id),), delay_s=delay_s)

    @classmethod
    def error(
        cls,
        status: int,
        *,
        message: str | None = None,
        retry_after: str | None = None,
        error_type: str | None = None,
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> Reply:
        extra = dict(headers or {})
        if retry_after is not None:
            extra["retry-after"] = retry_after
        return cls(
            "error",
            status=status,
            message=message,
            error_type=error_type,
            headers=tuple(extra.items()),
            delay_s=delay_s,
        )

    @classmethod
    def raw(
        cls,
        body: str | bytes,
        *,
        status: int = 200,
        content_type: str = "application/json",
        headers: Mapping[str, str] | None = None,
        delay_s: float = 0.0,
    ) -> Reply:
        data = body.encode("utf-8") if isinstance(body, str) else body
        return cls(
            "raw",
            status=status,
            body=data,
            content_type=content_type,
            headers=tuple((headers or {}).items()),
            delay_s=delay_s,
        )

    @classmethod
    def disconnect(cls, *, delay_s: float = 0.0) -> Reply:
        return cls("disconnect", delay_s=delay_s)


class _FakeServer:
    """The shared machinery; subclasses fix the path and the wire format."""

    path = ""
    url_suffix = ""
    dialect: wire.Dialect

    def __init__(
        self,
        *,
        validate: bool = True,
        api_key: str | None = None,
        responder: Callable[[Recorded], Reply] | None = None,
        prompt_cache: bool = False,
    ) -> None:
        if prompt_cache and not isinstance(self.dialect, wire.AnthropicDialect):
            raise ValueError("prompt_cache= simulates the Messages API's cache; use an AnthropicServer")
        self.validate = validate
        self.api_key = api_key
        self.responder = responder
        self.prompt_cache = wire.PromptCache() if prompt_cache else None
        self.requests: list[Recorded] = []
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._counter = 0
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle

    def start(self) -> Self:
        handler = type("Handler", (_Handler,), {"server_fake": self})  # a handler class bound to this server
        httpd = _Server(("127.0.0.1", 0), handler)
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"{type(self).__name__}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # cut short any delayed reply so shutdown does not wait for it
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the fake server is not running; use it as a context manager or call start()")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.url_suffix}"

    # -- scripting

    def enqueue(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    # -- answering (called from handler threads)

    def _answer(self, recorded: Recorded) -> tuple[Reply, int]:
        with self._lock:
            self.requests.append(recorded)
            self._counter += 1
            number = self._counter
        problem = self._reject(recorded)
        if problem is not None:
            return problem, number
        with self._lock:
            reply = self._queue.popleft() if self._queue else None
        if reply is None and self.responder is not None:
            reply = self.responder(recorded)
        if reply is None:
            reply = Reply.error(
                400,
                message=f"fake {type(self).__name__}: no reply scripted for request "
                f"#{number}; enqueue one or set responder",
                error_type="invalid_request_error",
            )
        if self.prompt_cache is not None and reply.kind == "message":
            uncached, read, written = self.prompt_cache.account(recorded.json)
            reply = replace(reply, input_tokens=uncached, cache_read_tokens=read, cache_write_tokens=written)
        return reply, number

    def _reject(self, recorded: Recorded) -> Reply | None:
        if recorded.method != "POST" or recorded.path != self.path:
            return Reply.error(
                404,
                message=f"Not found: {recorded.method} {recorded.path} (this fake serves POST {self.path})",
                error_type="not_found_error",
            )
        if self.api_key is not None and self.dialect.presented_key(recorded.headers) != self.api_key:
            return Reply.error(401)
        if not isinstance(recorded.json, dict):
            return Reply.error(400, message="The request body is not a JSON object")
        if recorded.json.get("stream") and not self.dialect.streams:
            return Reply.error(400, message="stream: the fake server does not stream")
        if self.validate:
            problem = self.dialect.validate(recorded.json)
            if problem is not None:
                return Reply.error(400, message=problem)
        return None


class AnthropicServer(_FakeServer):
    """Speaks ``POST /v1/messages`` (the Messages API); ``base_url`` is the bare origin."""

    path = "/v1/messages"
    url_suffix = ""
    dialect = wire.ANTHROPIC


class OpenAIServer(_FakeServer):
    """Speaks ``POST /v1/chat/completions``; ``base_url`` ends in ``/v1`` as the openai SDK expects."""

    path = "/v1/chat/completions"
    url_suffix = "/v1"
    dialect = wire.OPENAI


class ResponsesServer(_FakeServer):
    """Speaks ``POST /v1/responses`` (OpenAI's Responses API, what the Codex CLI uses), streamed or not;
    ``base_url`` ends in ``/v1``."""

    path = "/v1/responses"
    url_suffix = "/v1"
    dialect = wire.RESPONSES


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # benchmarks open 20+ connections at once; the default 5 drops SYNs


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDKs' connection pools expect
    # Headers and body go out in two writes; with Nagle on, the second waits for the client's delayed ACK
    # (~40 ms a request on Linux), which would make every provider test and benchmark crawl.
    disable_nagle_algorithm = True
    server_fake: _FakeServer

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests read stderr
        pass

    def do_POST(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        self._handle()

    def _handle(self) -> None:
        fake = self.server_fake
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(body) if body else None
        except (ValueError, UnicodeDecodeError):
            parsed = None
        recorded = Recorded(
            method=self.command,
            path=self.path.split("?", 1)[0],
            headers={name.lower(): value for name, value in self.headers.items()},
            json=parsed,
            body=body,
        )
        reply, number = fake._answer(recorded)
        if reply.delay_s > 0 and fake._stopping.wait(reply.delay_s):
            self.close_connection = True
            return
        if reply.kind == "disconnect":
            self.close_connection = True
            return
        if reply.kind == "message" and isinstance(recorded.json, dict) and recorded.json.get("stream"):
            self._stream(fake.dialect.render_stream(reply, recorded.json, number), number)
            return
        status, headers, payload = fake.dialect.render(reply, recorded.json, number)
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _stream(self, events: list[bytes], number: int) -> None:
        """Server-sent events, each in its own HTTP chunk and flushed, so the client parses them as they
        come, as it does from the real API."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        for name, value in self.server_fake.dialect.id_headers(number):
            self.send_header(name, value)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for event in events:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(event), event))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
