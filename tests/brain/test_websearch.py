"""websearch against local HTTP servers that answer like Brave Search and Tavily: seed 000 usecase 5."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from routedriver.brain.hooks import ToolOutcome
from routedriver.brain.tools.base import ToolContext, ToolSettings
from routedriver.brain.tools.websearch import (
    BraveSearch,
    SearchHit,
    TavilySearch,
    UnconfiguredSearch,
    backend_from_env,
    websearch_tool,
)
from routedriver.errors import Refused
from tests.brain.helpers import bhrain, call, scripted_run, write_script


class SearchServer:
    """Answers GET (Brave) and POST (Tavily) with scripted JSON; records what it was asked."""

    def __init__(self) -> None:
        self.status = 200
        self.body: Any = {}
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                fake.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": json.loads(self.rfile.read(length)) if length else None,
                    }
                )
                payload = json.dumps(fake.body).encode()
                self.send_response(fake.status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/search"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def server() -> Iterator[SearchServer]:
    fake = SearchServer()
    yield fake
    fake.close()


BRAVE_ANSWER = {
    "web": {
        "results": [
            {
                "title": "Python <strong>3.11</strong>",
                "url": "https://docs.python.org/3.11/",
                "description": "What's new",
            },
            {
                "title": "PEP 654",
                "url": "https://peps.python.org/pep-0654/",
                "description": "Exception groups",
            },
        ]
    }
}


def search(backend: Any, query: str) -> ToolOutcome:
    tool = websearch_tool(ToolSettings(websearch=backend, websearch_count=3))
    result = tool.run({"query": query}, ToolContext(Path.cwd()))
    assert isinstance(result, ToolOutcome)
    return result


def test_brave_results_have_titles_urls_and_snippets(server: SearchServer) -> None:
    server.body = BRAVE_ANSWER
    result = search(BraveSearch("brave-key-123", url=server.url), "python 3.11")
    assert result.ok
    assert result.output == (
        "2 results for 'python 3.11':\n"
        "1. Python 3.11\n   https://docs.python.org/3.11/\n   What's new\n"
        "2. PEP 654\n   https://peps.python.org/pep-0654/\n   Exception groups"
    )
    assert result.data["results"][1] == {
        "title": "PEP 654",
        "url": "https://peps.python.org/pep-0654/",
        "snippet": "Exception groups",
    }
    request = server.requests[0]
    assert parse_qs(urlparse(request["path"]).query) == {"q": ["python 3.11"], "count": ["3"]}
    assert request["headers"]["X-Subscription-Token"] == "brave-key-123"


def test_tavily_posts_the_query_with_a_bearer_key(server: SearchServer) -> None:
    server.body = {"results": [{"title": "T", "url": "https://t.example", "content": "snippet text"}]}
    result = search(TavilySearch("tvly-key", url=server.url), "q")
    assert result.ok and "1. T\n   https://t.example\n   snippet text" in result.output
    assert server.requests[0]["body"] == {"query": "q", "max_results": 3}
    assert server.requests[0]["headers"]["Authorization"] == "Bearer tvly-key"


def test_no_results_is_an_empty_successful_result(server: SearchServer) -> None:
    server.body = {"web": {"results": []}}
    result = search(BraveSearch("k" * 8, url=server.url), "zzqqxx")
    assert result.ok and result.data["results"] == []
    assert result.output == "no results for 'zzqqxx'; try broader or different words"


def test_http_and_network_failures_are_error_results(server: SearchServer) -> None:
    server.status, server.body = 429, {"error": "rate limited"}
    limited = search(BraveSearch("k" * 8, url=server.url), "x")
    assert not limited.ok
    assert limited.output.startswith("websearch failed: brave answered HTTP 429")
    assert "continue without web results" in limited.output
    dead = search(BraveSearch("k" * 8, url="http://127.0.0.1:9/nothing"), "x")
    assert not dead.ok and "network error reaching brave" in dead.output


class Fixed:
    name = "fixed"

    def search(self, query: str, count: int) -> list[SearchHit]:
        return [SearchHit(f"about {query}", "https://example.com", "from a custom backend")][:count]


class Exploding:
    name = "exploding"

    def search(self, query: str, count: int) -> list[SearchHit]:
        raise ConnectionResetError("peer reset")


def test_custom_backends_by_import_path_and_their_failures() -> None:
    backend = backend_from_env("tests.brain.test_websearch:Fixed", environ={})
    assert isinstance(backend, Fixed)
    assert "about cats" in search(backend, "cats").output
    failed = search(Exploding(), "x")
    assert not failed.ok and "ConnectionResetError: peer reset" in failed.output


def test_backend_choice_from_the_environment() -> None:
    assert isinstance(backend_from_env(environ={"BRAVE_API_KEY": "b" * 10}), BraveSearch)
    assert isinstance(backend_from_env(environ={"TAVILY_API_KEY": "t" * 10}), TavilySearch)
    assert isinstance(
        backend_from_env("tavily", environ={"BRAVE_API_KEY": "b" * 10, "TAVILY_API_KEY": "t" * 9}),
        TavilySearch,
    )
    unconfigured = backend_from_env(environ={})
    assert isinstance(unconfigured, UnconfiguredSearch)
    result = search(unconfigured, "x")
    assert not result.ok and "set BRAVE_API_KEY or TAVILY_API_KEY" in result.output
    with pytest.raises(Refused, match="unknown websearch backend 'bing'"):
        backend_from_env("bing", environ={})


def test_the_installed_command_searches_through_the_configured_endpoint(
    server: SearchServer, tmp_path: Path
) -> None:
    server.body = BRAVE_ANSWER
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [call("websearch", query="python 3.11")]},
            {"text": "found it"},
        ],
    )
    ran = bhrain(
        [*scripted_run(script, skill="ask"), "--input", "find", "--trace", "t.json"],
        tmp_path,
        env={"BRAVE_API_KEY": "brave-secret-value", "BRAVE_SEARCH_URL": server.url},
    )
    assert ran.code == 0, ran.err
    trace = json.loads((tmp_path / "t.json").read_text())
    result = next(m for m in trace["messages"] if m["role"] == "tool")
    assert "https://peps.python.org/pep-0654/" in result["text"]
    assert "brave-secret-value" not in (tmp_path / "t.json").read_text()
