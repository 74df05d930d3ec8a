"""The ``websearch`` tool and its backends.

A backend is any object with ``name`` and ``search(query, count) -> Sequence[SearchHit]`` that raises
``SearchError`` (or anything) on failure. Shipped: Brave Search (``BRAVE_API_KEY``) and Tavily
(``TAVILY_API_KEY``), both over plain HTTPS with the stdlib. Choose one with ``BHRAIN_WEBSEARCH`` (or the
config key ``websearch``): ``brave``, ``tavily`` or ``MODULE:OBJ``; by default the first backend whose key is
set. ``BRAVE_SEARCH_URL`` / ``TAVILY_SEARCH_URL`` override the endpoints (proxies, tests).

No results is a successful, empty result; a failure is an error result the model can reason about.
"""

from __future__ import annotations

import json
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from routedriver.brain.hooks import ToolOutcome
from routedriver.brain.plugins import is_import_path, load_object
from routedriver.brain.tools.base import Tool, ToolContext, ToolSettings, fail, ok, schema
from routedriver.errors import Refused

BRAVE_URL = "https://api.search.brave.com/res/v1/web/search"
TAVILY_URL = "https://api.tavily.com/search"
_TAGS = re.compile(r"<[^>]+>")


@dataclass(frozen=True)
class SearchHit:
    title: str
    url: str
    snippet: str


class SearchError(Exception):
    """The search could not be done (network, HTTP status, unreadable answer, no backend)."""


@runtime_checkable
class SearchBackend(Protocol):
    name: str

    def search(self, query: str, count: int) -> Sequence[SearchHit]: ...


def _http_json(request: urllib.request.Request, backend: str, timeout_s: float) -> Any:
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:  # noqa: S310 - https endpoints
            return json.loads(response.read().decode("utf-8"))
    except urllib.error.HTTPError as exc:
        body = exc.read().decode("utf-8", errors="replace")[:200]
        raise SearchError(
            f"{backend} answered HTTP {exc.code}: {' '.join(body.split()) or exc.reason}"
        ) from None
    except urllib.error.URLError as exc:
        raise SearchError(f"network error reaching {backend}: {exc.reason}") from None
    except (TimeoutError, OSError) as exc:
        raise SearchError(f"network error reaching {backend}: {exc}") from None
    except (ValueError, UnicodeDecodeError):
        raise SearchError(f"{backend} answered with something that is not JSON") from None


def _clean(text: Any) -> str:
    return " ".join(_TAGS.sub("", str(text or "")).split())


class BraveSearch:
    name = "brave"

    def __init__(self, api_key: str, *, url: str = BRAVE_URL, timeout_s: float = 15.0) -> None:
        self._key, self.url, self.timeout_s = api_key, url, timeout_s

    def search(self, query: str, count: int) -> Sequence[SearchHit]:
        params = urllib.parse.urlencode({"q": query, "count": count})
        request = urllib.request.Request(  # noqa: S310 - the provider's https URL, or a test server's
            f"{self.url}?{params}", headers={"Accept": "application/json", "X-Subscription-Token": self._key}
        )
        answer = _http_json(request, self.name, self.timeout_s)
        results = ((answer or {}).get("web") or {}).get("results") or []
        return [
            SearchHit(_clean(r.get("title")), str(r.get("url") or ""), _clean(r.get("description")))
            for r in results
            if isinstance(r, dict)
        ]


class TavilySearch:
    name = "tavily"

    def __init__(self, api_key: str, *, url: str = TAVILY_URL, timeout_s: float = 15.0) -> None:
        self._key, self.url, self.timeout_s = api_key, url, timeout_s

    def search(self, query: str, count: int) -> Sequence[SearchHit]:
        body = json.dumps({"query": query, "max_results": count}).encode("utf-8")
        request = urllib.request.Request(  # noqa: S310 - the provider's https URL, or a test server's
            self.url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self._key}"},
        )
        answer = _http_json(request, self.name, self.timeout_s)
        results = (answer or {}).get("results") or []
        return [
            SearchHit(_clean(r.get("title")), str(r.get("url") or ""), _clean(r.get("content")))
            for r in results
            if isinstance(r, dict)
        ]


class UnconfiguredSearch:
    name = "none"

    def __init__(self, why: str) -> None:
        self.why = why

    def search(self, query: str, count: int) -> Sequence[SearchHit]:
        raise SearchError(self.why)


def backend_from_env(spec: str | None = None, environ: Mapping[str, str] | None = None) -> SearchBackend:
    """The backend ``spec`` names (brave, tavily, MODULE:OBJ) or, without one, the first with a key set."""
    env = os.environ if environ is None else environ
    spec = spec or env.get("BHRAIN_WEBSEARCH") or None
    if spec and is_import_path(spec):
        obj = load_object(spec, what="websearch backend")
        backend = obj() if isinstance(obj, type) or not hasattr(obj, "search") else obj
        if not hasattr(backend, "search"):
            raise Refused(
                f"websearch backend {spec!r} has no search(query, count) method", "see docs/bhrain.md"
            )
        return backend  # type: ignore[no-any-return]
    brave_key = env.get("BRAVE_API_KEY") or env.get("BRAVE_SEARCH_API_KEY")
    tavily_key = env.get("TAVILY_API_KEY")
    if spec in (None, "brave") and brave_key:
        return BraveSearch(brave_key, url=env.get("BRAVE_SEARCH_URL") or BRAVE_URL)
    if spec in (None, "tavily") and tavily_key:
        return TavilySearch(tavily_key, url=env.get("TAVILY_SEARCH_URL") or TAVILY_URL)
    if spec not in (None, "brave", "tavily"):
        raise Refused(f"unknown websearch backend {spec!r}", "use brave, tavily or MODULE:OBJ")
    wanted = {"brave": "BRAVE_API_KEY", "tavily": "TAVILY_API_KEY"}.get(
        spec or "", "BRAVE_API_KEY or TAVILY_API_KEY"
    )
    return UnconfiguredSearch(f"websearch is not configured: set {wanted} (or BHRAIN_WEBSEARCH=MODULE:OBJ)")


def format_hits(query: str, hits: Sequence[SearchHit]) -> str:
    lines = [f"{len(hits)} result{'s' if len(hits) != 1 else ''} for {query!r}:"]
    for number, hit in enumerate(hits, 1):
        lines.append(f"{number}. {hit.title}\n   {hit.url}\n   {hit.snippet}")
    return "\n".join(lines)


def websearch_tool(settings: ToolSettings) -> Tool:
    def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        query = str(args["query"]).strip()
        if not query:
            return fail("the query is empty; pass what to search for")
        if settings.websearch is None:
            settings.websearch = backend_from_env()
        try:
            hits = list(settings.websearch.search(query, settings.websearch_count))
        except Exception as exc:  # noqa: BLE001 - any backend failure is a result the model can reason about
            reason = str(exc) if isinstance(exc, SearchError) else f"{type(exc).__name__}: {exc}"
            return fail(f"websearch failed: {reason}; retry later, rephrase, or continue without web results")
        if not hits:
            return ok(f"no results for {query!r}; try broader or different words", results=[])
        results = [{"title": h.title, "url": h.url, "snippet": h.snippet} for h in hits]
        return ok(format_hits(query, hits), results=results)

    return Tool(
        "websearch",
        "Search the web; returns titles, URLs and snippets of the top results.",
        schema({"query": {"type": "string", "description": "What to search for."}}, ("query",)),
        run,
        read_only=True,
    )
