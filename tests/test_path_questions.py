"""A user's path never crashes a command: the package asks about paths only in ways that cannot raise.

On Python 3.11, ``Path.exists()``, ``is_dir()``, ``is_file()`` and ``is_symlink()`` raise ``OSError`` for a
name too long for the system or a directory the user may not search (they swallow only "no such file"),
``Path.resolve()`` raises ``RuntimeError`` for a loop of links, and ``os.path.realpath`` ``RecursionError``
for a chain of links too long to follow: each came out of a command as an internal error.
``os.path.exists``/``isdir``/``isfile``/``islink`` answer False instead, ``fsutil.realpath``/``real_path``
resolve without either error (and ``fsutil.entry_is_file``/``entry_is_dir`` ask a listing's entries); what
then reads the path says, in one line, why it cannot. The package is read with ``ast``; ``EXCEPTIONS`` names
the calls that may stay, with why.
"""

from __future__ import annotations

import ast
from pathlib import Path

import routedriver

PACKAGE = Path(routedriver.__file__).parent
PREDICATES = frozenset({"exists", "is_dir", "is_file", "is_symlink"})
# An os.DirEntry (named ``entry`` throughout) may say whether it is a link: that is the listing's answer, or
# an lstat of a name the directory just listed. Its is_file() and is_dir() follow a link and raise like
# pathlib's: fsutil.entry_is_file / entry_is_dir answer False instead.
DIR_ENTRIES = frozenset({"entry"})
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("fsutil.py", "os.path.realpath"): "realpath itself, which turns its RecursionError into an answer",
    ("fsutil.py", "entry.is_file"): "entry_is_file itself, which turns its OSError into False",
    ("userfile.py", "os.path.realpath"): "a link os.stat just followed (the kernel stops at 40 links)",
    ("fsutil.py", "entry.is_dir"): "entry_is_dir itself, which turns its OSError into False",
    ("route/init.py", "entry.is_dir"): "a template folder shipped in the package (importlib.resources)",
    ("route/init.py", "summary_file.is_file"): "a template shipped in the package (importlib.resources)",
}


def _calls(tree: ast.Module) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if ast.unparse(node.func) == "os.path.realpath":
            found.append((node.lineno, "os.path.realpath"))
            continue
        if node.args or node.keywords:
            continue
        method, receiver = node.func.attr, node.func.value
        name = ast.unparse(receiver)
        if not isinstance(receiver, ast.Name | ast.Attribute | ast.Call):
            name = f"({name})"  # (a / b).is_dir, as written
        if method == "resolve" or (
            method in PREDICATES and not (name in DIR_ENTRIES and method == "is_symlink")
        ):
            found.append((node.lineno, f"{name}.{method}"))
    return found


def package_calls() -> list[tuple[str, int, str]]:
    """(module, line, call) of every call ``_calls`` finds in the package."""
    return [
        (path.relative_to(PACKAGE).as_posix(), line, call)
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, call in _calls(ast.parse(path.read_text(encoding="utf-8")))
    ]


def findings() -> list[str]:
    fix = "use os.path's, fsutil.realpath / real_path or fsutil.entry_is_*"
    return [
        f"routedriver/{module}:{line}: {call}() ({fix})"
        for module, line, call in package_calls()
        if (module, call) not in EXCEPTIONS
    ]


def test_paths_are_asked_about_only_in_ways_that_cannot_raise() -> None:
    assert findings() == []


def test_every_exception_is_needed() -> None:
    used = {(module, call) for module, _line, call in package_calls()}
    assert set(EXCEPTIONS) <= used, set(EXCEPTIONS) - used


def test_the_scanner_finds_each_form() -> None:
    source = (
        "p.exists()\nPath(x).resolve()\n(a / b).is_dir()\nq.parent.is_symlink()\nentry.is_file()\n"
        "entry.is_symlink()\nentry.is_dir(follow_symlinks=False)\nos.path.realpath(x)\n"
    )
    assert [call for _line, call in _calls(ast.parse(source))] == [
        "p.exists",
        "Path(x).resolve",
        "(a / b).is_dir",
        "q.parent.is_symlink",
        "entry.is_file",
        "os.path.realpath",
    ]
