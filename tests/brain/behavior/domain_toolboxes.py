"""Small toolboxes for the seed's domain examples: a sqlite ``database``, a canned ``web`` and a ``memory``.

Importable as ``MODULE:OBJ`` (``tests.brain.behavior.domain_toolboxes:database``) for ``bhrain run
--toolbox``; everything lives in the run's working directory so tests can look at the effects.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from routedriver.brain.hooks import ToolOutcome
from routedriver.brain.toolbox import Toolbox
from routedriver.brain.tools.base import ToolContext, schema

DB_NAME = "shop.db"
PAGES = {
    "https://example.org/a": "Source A: the bridge opened in 1932.",
    "https://example.org/b": "Source B: the bridge opened in 1932 after six years of work.",
    "https://example.org/c": "Source C: some say 1931.",
    "https://example.org/d": "Source D: opening ceremony, March 1932.",
    "https://example.org/e": "Source E: 1932.",
}


def create_shop(directory: Path) -> None:
    with sqlite3.connect(directory / DB_NAME) as db:
        db.execute("CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, price REAL)")
        db.executemany(
            "INSERT INTO products (name, price) VALUES (?, ?)", [("pen", 1.0), ("book", 10.0), ("lamp", 25.0)]
        )


def prices(directory: Path) -> list[float]:
    """The products' prices in id order, read straight from the shop's database."""
    with sqlite3.connect(directory / DB_NAME) as db:
        return [row[0] for row in db.execute("SELECT price FROM products ORDER BY id")]


def _db(ctx: ToolContext) -> sqlite3.Connection:
    return sqlite3.connect(ctx.workdir / DB_NAME)


database = Toolbox("database", description="The shop's sqlite database")


@database.tool(
    "database.query",
    "Run a read-only SQL query",
    schema({"query": {"type": "string"}, "table": {"type": "string"}}, ("query",)),
    read_only=True,
)
def _query(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    with _db(ctx) as db:
        rows = db.execute(args["query"]).fetchall()
    return ToolOutcome(True, json.dumps(rows), {"rows": len(rows)})


@database.tool(
    "database.execute",
    "Run a SQL statement that changes data",
    schema({"query": {"type": "string"}, "table": {"type": "string"}}, ("query",)),
)
def _execute(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    with _db(ctx) as db:
        changed = db.execute(args["query"]).rowcount
    return ToolOutcome(True, f"{changed} rows affected", {"rows_affected": changed})


@database.tool("database.backup", "Back up the database", schema({}))
def _backup(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    shutil.copyfile(ctx.workdir / DB_NAME, ctx.workdir / f"{DB_NAME}.bak")
    return ToolOutcome(True, f"backed up to {DB_NAME}.bak")


@database.tool(
    "database.schema", "Show a table's schema", schema({"table": {"type": "string"}}), read_only=True
)
def _schema(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    with _db(ctx) as db:
        rows = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table'").fetchall()
    return ToolOutcome(True, "\n".join(row[0] for row in rows))


web = Toolbox("web", description="Canned web pages")


@web.tool("web.search", "Search the web", schema({"query": {"type": "string"}}, ("query",)), read_only=True)
def _search(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    return ToolOutcome(True, "\n".join(PAGES))


@web.tool("web.fetch", "Fetch a page", schema({"url": {"type": "string"}}, ("url",)), read_only=True)
def _fetch(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    page = PAGES.get(args["url"])
    return ToolOutcome(page is not None, page or f"404: {args['url']}")


memory = Toolbox("memory", description="Long-term notes")


@memory.tool("memory.remember", "Remember a finding", schema({"text": {"type": "string"}}, ("text",)))
def _remember(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    with (ctx.workdir / "notes.md").open("a", encoding="utf-8") as handle:
        handle.write(args["text"] + "\n")
    return ToolOutcome(True, "remembered")
