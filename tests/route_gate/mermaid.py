"""A small, strict parser for the part of Mermaid's flowchart syntax ``route.status --markdown`` writes.

No Mermaid renderer installs offline without a browser, so the tests check the flowchart against the
grammar Mermaid documents for these statements (https://mermaid.js.org/syntax/flowchart.html):

    flowchart <LR|RL|TB|TD|BT>
    subgraph <id>["<label>"] … end          (nested blocks must close)
    <id>["<label>"]                         (a node; the label may not hold a bare '"')
    <id> --> <id>                           (an edge between nodes or subgraphs that exist)
    classDef <name> <prop>:<value>[,<prop>:<value>…]
    class <id>[,<id>…] <name>               (a class that was defined, on nodes that exist)

Ids are letters, digits and ``_`` (no Mermaid keyword such as ``end``); inside a label, ``#name;`` /
``#123;`` entities are the only way to write a quote. Anything else is an error naming the line.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_ID = r"[A-Za-z_][A-Za-z0-9_]*"
_LABEL = r'"(?P<label>[^"]*)"'
_KEYWORDS = frozenset({"end", "subgraph", "graph", "flowchart", "class", "classDef", "click", "style"})
_ENTITY = re.compile(r"#(?:[a-z]+|\d+);")


class Flowchart(NamedTuple):
    direction: str
    nodes: dict[str, str]  # id → label (entities decoded)
    subgraphs: dict[str, list[str]]  # id → the node ids inside
    edges: list[tuple[str, str]]
    classes: dict[str, list[str]]  # class name → node ids


class MermaidError(ValueError):
    pass


def _label(text: str, line: int) -> str:
    if "#" in _ENTITY.sub("", text):
        raise MermaidError(f"line {line}: a bare '#' in a label: {text!r}")
    entities = {"quot": '"', "lt": "<", "gt": ">", "amp": "&"}

    def decode(match: re.Match[str]) -> str:
        name = match[0][1:-1]
        return chr(int(name)) if name.isdigit() else entities.get(name, match[0])

    return _ENTITY.sub(decode, text)


def _check_id(name: str, line: int) -> str:
    if name in _KEYWORDS:
        raise MermaidError(f"line {line}: {name!r} is a Mermaid keyword, not an id")
    return name


def parse(text: str) -> Flowchart:
    lines = text.splitlines()
    if not lines or not re.fullmatch(r"flowchart (LR|RL|TB|TD|BT)", lines[0].strip()):
        raise MermaidError("line 1: a flowchart starts with 'flowchart <direction>'")
    direction = lines[0].split()[1]
    nodes: dict[str, str] = {}
    subgraphs: dict[str, list[str]] = {}
    edges: list[tuple[str, str]] = []
    defined: set[str] = set()
    classes: dict[str, list[str]] = {}
    open_blocks: list[str] = []
    for number, raw in enumerate(lines[1:], start=2):
        line = raw.strip()
        if not line:
            continue
        if match := re.fullmatch(rf"subgraph ({_ID})\[{_LABEL}\]", line):
            name = _check_id(match[1], number)
            if name in subgraphs or name in nodes:
                raise MermaidError(f"line {number}: {name!r} defined twice")
            _label(match["label"], number)
            subgraphs[name] = []
            open_blocks.append(name)
        elif line == "end":
            if not open_blocks:
                raise MermaidError(f"line {number}: 'end' without a subgraph")
            open_blocks.pop()
        elif match := re.fullmatch(rf"({_ID})\[{_LABEL}\]", line):
            name = _check_id(match[1], number)
            if name in nodes or name in subgraphs:
                raise MermaidError(f"line {number}: {name!r} defined twice")
            nodes[name] = _label(match["label"], number)
            if open_blocks:
                subgraphs[open_blocks[-1]].append(name)
        elif match := re.fullmatch(rf"({_ID}) --> ({_ID})", line):
            for name in (match[1], match[2]):
                if name not in nodes and name not in subgraphs:
                    raise MermaidError(f"line {number}: edge to {name!r}, which is not defined")
            edges.append((match[1], match[2]))
        elif match := re.fullmatch(rf"classDef ({_ID}) ([a-z-]+:[^,\s]+(?:,[a-z-]+:[^,\s]+)*)", line):
            defined.add(match[1])
        elif match := re.fullmatch(rf"class ({_ID}(?:,{_ID})*) ({_ID})", line):
            members = match[1].split(",")
            if match[2] not in defined:
                raise MermaidError(f"line {number}: class {match[2]!r} is not defined")
            for name in members:
                if name not in nodes:
                    raise MermaidError(f"line {number}: class on {name!r}, which is not a node")
            classes.setdefault(match[2], []).extend(members)
        else:
            raise MermaidError(f"line {number}: not a flowchart statement: {line!r}")
    if open_blocks:
        raise MermaidError(f"subgraph {open_blocks[-1]!r} is never closed with 'end'")
    return Flowchart(direction, nodes, subgraphs, edges, classes)


def blocks(markdown: str) -> list[str]:
    """The ```mermaid fenced blocks of a Markdown document."""
    return re.findall(r"^```mermaid\n(.*?)^```$", markdown, re.M | re.S)
