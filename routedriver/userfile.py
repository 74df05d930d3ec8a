"""The one door for files a user writes or commits: guards, bhrain configs, permission files, scripts,
rubrics, behavior profiles and prompts, behaviorci bundles, prompts, datasets and schemas.

Such a file may be anything a pull request can commit, so every reader goes through here:

- ``read_bytes`` / ``read_text`` refuse what is not a regular file before reading a byte (a FIFO would
  hang the reader, a symlink to ``/dev/zero`` would eat memory), refuse a file larger than ``limit``
  (checked before reading, and again while reading: a file may grow), and text that is not UTF-8;
- ``parse_yaml`` refuses a key given twice in one mapping (YAML would keep the last one silently), aliases
  that expand to more than ``MAX_ALIAS_VALUES`` values (a "billion laughs" bomb) or refer to themselves,
  nesting deeper than ``MAX_DEPTH`` and integers longer than ``MAX_INT_DIGITS`` digits;
- ``parse_json`` refuses the same (JSON has no aliases);
- ``load_yaml`` / ``load_json`` read and parse;
- ``read_record`` reads a file the driver wrote itself but anybody with the repository or a shell may have
  replaced (a record under ``.route/``, a hook's state, a cache entry) for a caller that takes an unreadable
  one as absent: the same checks, as an ``OSError`` instead of a refusal.

Every refusal is one ``error`` (a ``Refused`` by default; callers pass their own subclass) whose line names
the file (``shown``, default ``"<what> <path>"``), the line and the key path where there is one, and how to
fix it. YAML is read with PyYAML's pure-Python safe loader on every installation (libyaml reads some texts
PyYAML refuses), imported only when a YAML file is parsed.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from routedriver.errors import Refused

MAX_BYTES = 8 << 20  # a configuration larger than this is not one anybody wrote
MAX_DEPTH = 100  # mappings and lists inside each other
MAX_ALIAS_VALUES = 10_000  # values YAML aliases may add to a document, counted fully expanded
MAX_INT_DIGITS = 32  # an integer a configuration means is never longer (and Python refuses 4,301)

Hint = Callable[[str], "str | None"]  # the text of the line a YAML syntax error is on → a better fix

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),  # where a link is not followed (lstat)
)


def _name(path: Path, what: str, shown: str | None) -> str:
    return shown if shown is not None else f"{what} {path}"


def read_bytes(
    path: Path, *, what: str, shown: str | None = None, limit: int = MAX_BYTES, error: type[Refused] = Refused
) -> bytes:
    """The bytes of the regular file ``path`` (symlinks followed), at most ``limit`` of them, or ``error``.
    ``what`` is the kind of file (``"config file"``), ``shown`` how messages name it."""
    name = _name(path, what, shown)
    try:
        _regular(path, os.stat(path), name, what, error)  # never open a device: opening one may act
        # O_NONBLOCK: should it have become a FIFO since, opening it must not wait for a writer, forever.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise error(f"{name}: not found", "check the path") from None
    except OSError as exc:
        raise error(f"{name}: cannot read it ({exc.strerror or exc})", "make it a readable file") from None
    try:
        info = os.fstat(fd)
        _regular(path, info, name, what, error)  # what was opened, whatever the path names now
        if info.st_size > limit:
            raise error(*_too_big(name, limit, what, found=info.st_size))
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # it grew while we read, or it is a file whose size says nothing (/proc)
                raise error(*_too_big(name, limit, what))
    except OSError as exc:
        raise error(f"{name}: cannot read it ({exc.strerror or exc})", "make it a readable file") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_record(path: str | os.PathLike[str], *, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path`` (symlinks followed), for a reader to whom an unreadable file is
    no file: ``FileNotFoundError`` when there is none, and an ``OSError`` for what ``read_bytes`` refuses (not
    a regular file: never opened, or if it became one since, never waited on; more than ``limit`` bytes)."""
    if not stat.S_ISREG(os.stat(path).st_mode):  # never open a device: opening one may act
        raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"more than {limit:,} bytes", os.fspath(path))
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                raise OSError(errno.EFBIG, f"more than {limit:,} bytes", os.fspath(path))
    finally:
        os.close(fd)
    return b"".join(chunks)


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, in words (``st_mode`` → "a named pipe (FIFO)", …)."""
    return next((label for test, label in _KINDS if test(mode)), "not a file")


def _regular(path: Path, info: os.stat_result, name: str, what: str, error: type[Refused]) -> None:
    if not stat.S_ISREG(info.st_mode):
        kind = file_kind(info.st_mode)
        via = f"a symlink to {os.path.realpath(path)}, " if os.path.islink(path) else ""
        raise error(f"{name}: {via}{kind}, not a regular file", f"make it a regular {what}")


def _too_big(name: str, limit: int, what: str, *, found: int | None = None) -> tuple[str, str]:
    size = f" ({found:,})" if found is not None else ""
    article = "an" if what[:1] in "aeiou" else "a"
    return f"{name}: more than {limit:,} bytes{size}", f"{article} {what} may have at most {limit:,} bytes"


def read_text(
    path: Path,
    *,
    what: str,
    shown: str | None = None,
    limit: int = MAX_BYTES,
    error: type[Refused] = Refused,
    bom: bool = False,
) -> str:
    """``read_bytes`` decoded as UTF-8 (with ``bom``, a leading byte order mark is dropped), or ``error``."""
    data = read_bytes(path, what=what, shown=shown, limit=limit, error=error)
    try:
        return data.decode("utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise error(
            f"{_name(path, what, shown)}: line {line}: not UTF-8 text (byte {exc.start + 1:,})",
            "save it as UTF-8",
        ) from None


def load_yaml(
    path: Path, *, what: str, shown: str | None = None, limit: int = MAX_BYTES, error: type[Refused] = Refused
) -> Any:
    """``read_text`` then ``parse_yaml``: the data, or ``error`` naming the file."""
    text = read_text(path, what=what, shown=shown, limit=limit, error=error, bom=True)
    return parse_yaml(text, shown=_name(path, what, shown), error=error)


def load_json(
    path: Path, *, what: str, shown: str | None = None, limit: int = MAX_BYTES, error: type[Refused] = Refused
) -> Any:
    """``read_text`` then ``parse_json``: the data, or ``error`` naming the file."""
    text = read_text(path, what=what, shown=shown, limit=limit, error=error, bom=True)
    return parse_json(text, shown=_name(path, what, shown), error=error)


# -- YAML --------------------------------------------------------------------------------------------------
class _Refusal(Exception):
    """A limit the text broke, raised inside the loader and turned into ``error`` by ``parse_yaml``."""

    def __init__(self, line: int, problem: str, fix: str) -> None:
        super().__init__(problem)
        self.line, self.problem, self.fix = line, problem, fix


# Characters YAML (and str.splitlines) take for the end of a line that `git show`, `grep` and diffs do not:
# a "comment" with one inside hides a line from whoever reads the file. CRLF is an ordinary line end.
_HIDDEN_LINE_BREAKS = ("\r", "\x85", "\u2028", "\u2029")


def find_hidden_line_break(text: str) -> int | None:
    """Where ``text`` holds a line break a reader does not see as one (a lone CR, NEL, U+2028, U+2029), or
    None."""
    for char in _HIDDEN_LINE_BREAKS:
        start = 0
        while (found := text.find(char, start)) >= 0:
            if not (char == "\r" and text.startswith("\n", found + 1)):
                return found
            start = found + 1
    return None


def parse_yaml(text: str, *, shown: str, error: type[Refused] = Refused, hint: Hint | None = None) -> Any:
    """The data of the YAML document ``text`` (``shown`` names its file), or ``error``: one line with the
    line number and the key. ``hint`` may give a better fix for a syntax error, from its line's text."""
    hidden = find_hidden_line_break(text)
    if hidden is not None:
        line = text.count("\n", 0, hidden) + 1
        raise error(
            f"{shown}: line {line}: a line break git and most editors do not show as one "
            f"(U+{ord(text[hidden]):04X}), which YAML reads as a new line",
            "remove it: the file would mean other than what a reader of it sees",
        )
    # PyYAML (~10 ms), here and in _loader_class: only for a YAML file (route.stone.get mostly reads none)
    import yaml

    loader = None
    try:
        loader = _loader_class()(text)  # its reader refuses characters YAML does not allow, at once
        return loader.get_single_data()
    except _Refusal as exc:
        raise error(f"{shown}: line {exc.line}: {exc.problem}", exc.fix) from None
    except RecursionError:  # a deep stack before us; MAX_DEPTH keeps the document itself well short of it
        raise error(f"{shown}: nested too deeply", f"nest at most {MAX_DEPTH} levels") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = " ".join(str(exc.problem or exc.context or "unreadable").split())
        lines = text.splitlines()
        bad_line = lines[mark.line] if mark is not None and mark.line < len(lines) else ""
        fix = (hint(bad_line) if hint is not None else None) or "fix the YAML syntax"
        raise error(f"{shown}: {where}malformed YAML ({problem})", fix) from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        raise error(
            f"{shown}: line {line}: malformed YAML (character #x{exc.character:04x} is not allowed)",
            "remove it, or write it as an escape in a double-quoted string",
        ) from None
    except yaml.YAMLError as exc:
        raise error(
            f"{shown}: malformed YAML ({' '.join(str(exc).split())})", "fix the YAML syntax"
        ) from None
    finally:
        if loader is not None:
            loader.dispose()


_LOADER: list[Any] = []


def _loader_class() -> Any:
    """yaml.SafeLoader with the limits above, built once per process (it needs yaml, imported late)."""
    if _LOADER:
        return _LOADER[0]
    # yaml (~10 ms): only a command that reads YAML (get reads none unless a guard names files)
    import yaml

    int_tag, merge_tag = "tag:yaml.org,2002:int", "tag:yaml.org,2002:merge"

    class BoundedLoader(yaml.SafeLoader):
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.depth = 0
            self.expanded = 0  # values added by aliases, fully expanded
            self.sizes: dict[int, int] = {}  # id(node) → values it holds, itself included, aliases expanded
            self.keys: list[str] = []  # the key path of the node being composed
            self.paths: dict[int, str] = {}  # id(mapping node) → its key path, for errors found later

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event: Any = self.peek_event()  # type: ignore[no-untyped-call]
                target = self.anchors.get(event.anchor)
                if target is not None:  # else PyYAML says "found undefined alias"
                    line = event.start_mark.line + 1
                    size = self.sizes.get(id(target))
                    if size is None:
                        raise _Refusal(
                            line, f"{self._at()}alias *{event.anchor} refers to itself", "remove the loop"
                        )
                    self.expanded += size
                    if self.expanded > MAX_ALIAS_VALUES:
                        raise _Refusal(
                            line,
                            f"{self._at()}aliases expand to more than {MAX_ALIAS_VALUES:,} values",
                            "write the values out, or use fewer aliases",
                        )
                return super().compose_node(parent, index)
            # A mapping's value comes with its key node, a list's item with its position, a key with None.
            if isinstance(index, int):
                self.keys.append(f"[{index + 1}]")
            else:
                self.keys.append(
                    str(index.value) if isinstance(index, yaml.ScalarNode) else "?" if index else ""
                )
            self.depth += 1
            try:
                if self.depth > MAX_DEPTH:
                    start: Any = self.peek_event()  # type: ignore[no-untyped-call]
                    raise _Refusal(
                        start.start_mark.line + 1, f"nested deeper than {MAX_DEPTH} levels", "flatten it"
                    )
                node = super().compose_node(parent, index)
                self._account(node)
            finally:
                self.depth -= 1
                self.keys.pop()
            return node

        def _path(self) -> str:
            return "".join(key if key.startswith("[") else f".{key}" for key in self.keys if key).lstrip(".")

        def _at(self) -> str:
            path = self._path()
            return f"{path}: " if path else ""

        def _account(self, node: Any) -> None:
            if isinstance(node, yaml.ScalarNode):
                size = 1
                if node.tag == int_tag and len(node.value) > MAX_INT_DIGITS:
                    raise _Refusal(
                        node.start_mark.line + 1,
                        f"{self._at()}an integer of {len(node.value):,} digits",
                        f"write a number of at most {MAX_INT_DIGITS} digits",
                    )
            elif isinstance(node, yaml.SequenceNode):
                size = 1 + sum(self.sizes[id(item)] for item in node.value)
            else:
                size = 1 + sum(self.sizes[id(k)] + self.sizes[id(v)] for k, v in node.value)
                self.paths[id(node)] = self._path()
            self.sizes[id(node)] = size

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: dict[Any, int] = {}
                path = self.paths.get(id(node), "")
                for key_node, _ in node.value:
                    if key_node.tag == merge_tag:
                        continue  # `<<: *defaults` may be overridden: that is what merging is for
                    key = self.construct_object(key_node, deep=True)
                    line = key_node.start_mark.line + 1
                    try:
                        first = seen.get(key)
                    except TypeError:
                        raise _Refusal(
                            line, "malformed YAML (a key that is a list or a mapping)", "use a plain key"
                        ) from None
                    if first is not None:
                        name = f"{path}.{key}" if path else str(key)
                        raise _Refusal(
                            line,
                            f"key '{name}' appears twice (line {first} and line {line})",
                            "keep one of them; YAML would silently use the last",
                        )
                    seen[key] = line
            return super().construct_mapping(node, deep=deep)

    _LOADER.append(BoundedLoader)
    return BoundedLoader


# -- JSON --------------------------------------------------------------------------------------------------
class _Twice(dict[Any, Any]):
    """An object in which a key appeared twice: refused, with its key path, once parsing is done."""

    def __init__(self, pairs: list[tuple[Any, Any]], key: str) -> None:
        super().__init__(pairs)
        self.twice = key


class _BigInt(str):
    """An integer too long to take: refused, with its key path, once parsing is done."""


def _object(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key, _ in pairs:
        if key in seen:
            return _Twice(pairs, key)
        seen.add(key)
    return dict(pairs)


def _int(digits: str) -> int | _BigInt:
    return _BigInt(digits) if len(digits.lstrip("-")) > MAX_INT_DIGITS else int(digits)


def json_problem(exc: Any, *, line: bool = True) -> str:
    """What is wrong with a JSON text, from Python's ``json.JSONDecodeError``, its place said once: some of
    Python's messages end with "at" to be followed by the place ("Unterminated string starting at"), others
    do not ("Expecting value"), so the place is joined with one "at" either way."""
    place = f"line {exc.lineno} column {exc.colno}" if line else f"column {exc.colno}"
    return f"{exc.msg.removesuffix(' at')} at {place}"


def escape_surrogates(json_text: str) -> str:
    """``json_text`` (made with ``ensure_ascii=False``) with each lone surrogate written as its JSON escape.
    ``"\\udcff"`` is valid JSON any model, MCP client or file name (decoded with surrogateescape) may bring,
    but no character: it has no UTF-8 bytes, and writing it would fail. It can only stand inside a JSON
    string, where the escape reads back as the same text."""
    if not any("\ud800" <= char <= "\udfff" for char in json_text):
        return json_text
    return "".join(f"\\u{ord(char):04x}" if "\ud800" <= char <= "\udfff" else char for char in json_text)


def parse_json(text: str, *, shown: str, error: type[Refused] = Refused) -> Any:
    """The data of the JSON document ``text`` (``shown`` names it), or ``error``: one line with the key."""
    try:
        data = json.loads(text, object_pairs_hook=_object, parse_int=_int)
    except json.JSONDecodeError as exc:
        line = f"line {exc.lineno}: " if "\n" in text.strip() else ""
        raise error(
            f"{shown}: {line}malformed JSON ({json_problem(exc, line=False)})", "fix the JSON syntax"
        ) from None
    except RecursionError:
        raise error(f"{shown}: nested deeper than {MAX_DEPTH} levels", "flatten it") from None
    _check_json(data, shown, error)
    return data


def _check_json(data: Any, shown: str, error: type[Refused]) -> None:
    todo: list[tuple[Any, str, int]] = [(data, "", 1)]
    while todo:
        value, path, depth = todo.pop()
        at = f"{path}: " if path else ""
        if depth > MAX_DEPTH:
            raise error(f"{shown}: nested deeper than {MAX_DEPTH} levels", "flatten it")
        if isinstance(value, _BigInt):
            raise error(
                f"{shown}: {at}an integer of {len(value.lstrip('-')):,} digits",
                f"write a number of at most {MAX_INT_DIGITS} digits",
            )
        if isinstance(value, _Twice):
            key = f"{path}.{value.twice}" if path else str(value.twice)
            raise error(f"{shown}: key '{key}' appears twice", "keep one of them; JSON readers keep the last")
        if isinstance(value, dict):
            todo.extend(
                (item, f"{path}.{key}" if path else str(key), depth + 1) for key, item in value.items()
            )
        elif isinstance(value, list):
            todo.extend((item, f"{path}[{n}]", depth + 1) for n, item in enumerate(value, 1))
