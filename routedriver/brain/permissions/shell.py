"""Split a bash command line into every simple command it would run, for permission rules.

``split_command("FOO=1 sudo bash -c 'cd x && rm -rf y' | tee log").commands`` →
``[["cd", "x"], ["rm", "-rf", "y"], ["tee", "log"]]``. Looked through: separators (``; && || | &``, newlines),
groups (``{ …; }``, ``( … )``), substitutions (``$( … )``, backticks, ``<( … )``), scripts given to a shell
(``bash -c``, ``sh -c``, ``eval``, here-strings, here-documents, ``echo … | sh``), wrappers (``VAR=x``,
``env``, ``sudo``, ``command``, ``exec``, ``nohup``, ``time``, ``nice``, ``timeout``, ``xargs`` …) and
``find -exec``.

This is a conservative reader, not a shell. When it cannot be sure what would run (unbalanced quotes, a
command name computed from ``$VAR`` or a glob, ``curl … | sh``, ``case`` blocks, nesting too deep) it says so
with ``confident=False``, and the permission rules treat deny/ask rules conservatively.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

MAX_DEPTH = 6
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash"})
SKIP_WORDS = frozenset(
    {"!", "{", "}", "then", "else", "elif", "fi", "do", "done", "if", "while", "until", "esac"}
)
NOT_RUN = frozenset({"for", "select", "function"})  # `for x in a b` runs nothing itself
UNSURE = frozenset({"case", "coproc"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_OPERATORS = ("&&", "||", ";;", "|&", ";", "&", "|", "\n", "(", ")")
_TEST_WORDS = frozenset({"[", "[[", "]", "]]"})


@dataclass
class ParsedCommand:
    commands: list[list[str]] = field(default_factory=list)
    confident: bool = True
    reasons: list[str] = field(default_factory=list)

    def unsure(self, why: str) -> None:
        self.confident = False
        self.reasons.append(why)


def split_command(command: str) -> ParsedCommand:
    parsed = ParsedCommand()
    _Reader(command, parsed, 0).read()
    return parsed


@dataclass
class _Word:
    text: str = ""
    expanded: bool = False  # holds an unquoted $var, $( ), ` ` or glob: its value is unknown here
    started: bool = False


@dataclass
class _Simple:
    words: list[_Word]
    feed: list[str]  # here-strings and here-document bodies given to it on stdin
    piped_from: list[_Word] | None  # the words of the command whose output it reads (after `|`)


class _Reader:
    """Reads one script; nested scripts (substitutions, bash -c …) get their own reader."""

    def __init__(self, src: str, out: ParsedCommand, depth: int) -> None:
        self.src, self.out, self.depth = src, out, depth
        self.i = 0
        self.words: list[_Word] = []
        self.word = _Word()
        self.feed: list[str] = []
        self.skip_next_word = False  # the word after a redirection is a file name, not an argument
        self.heredocs: list[tuple[str, bool, bool, list[str]]] = []  # delimiter, quoted, strip tabs, feed
        self.line: list[_Simple] = []  # commands are resolved at the end of each line, after heredoc bodies
        self.piped = False

    def nested(self, script: str) -> None:
        if self.depth >= MAX_DEPTH:
            self.out.unsure("commands nested too deeply")
            return
        _Reader(script, self.out, self.depth + 1).read()

    def parenthesized(self, open_index: int, unbalanced: str) -> int:
        """Read the script between the ``(`` at ``open_index`` and its ``)`` (the end of the source when
        there is none: ``unbalanced`` says so); returns the index of the ``)``."""
        end = _matching_paren(self.src, open_index)
        if end < 0:
            self.out.unsure(unbalanced)
            end = len(self.src)
        self.nested(self.src[open_index + 1 : end])
        return end

    def read(self) -> None:
        src = self.src
        while self.i < len(src):
            ch = src[self.i]
            if ch in " \t":
                self.end_word()
                self.i += 1
            elif ch == "\\":
                if not src.startswith("\\\n", self.i):
                    self.add(src[self.i + 1 : self.i + 2])
                self.i += 2
            elif ch == "#" and not self.word.started:
                end = src.find("\n", self.i)
                self.i = len(src) if end < 0 else end
            elif ch == "'":
                end = src.find("'", self.i + 1)
                if end < 0:
                    self.out.unsure("unterminated single quote")
                    end = len(src)
                self.add(src[self.i + 1 : end])
                self.i = end + 1
            elif ch == '"':
                self.double_quoted()
            elif src.startswith("$'", self.i):
                self.ansi_c_quoted()
            elif ch == "$":
                self.dollar()
            elif ch == "`":
                self.backtick()
            elif ch in "<>":
                self.redirection()
            elif src.startswith(_OPERATORS, self.i):
                op = next(op for op in _OPERATORS if src.startswith(op, self.i))
                self.end_command()
                self.piped = op in ("|", "|&")
                self.i += len(op)
                if op == "\n":
                    self.read_heredoc_bodies()
                    self.flush_line()
            else:
                if ch in "*?[":
                    self.word.expanded = True
                self.add(ch)
                self.i += 1
        self.end_command()
        if self.heredocs:
            self.out.unsure("here-document without its body")
        self.flush_line()

    # -- words --------------------------------------------------------------------------------------------
    def add(self, text: str) -> None:
        self.word.text += text
        self.word.started = True

    def end_word(self) -> None:
        if not self.word.started:
            return
        if self.word.text in _TEST_WORDS:
            self.word.expanded = False
        if self.skip_next_word:
            self.skip_next_word = False
        else:
            self.words.append(self.word)
        self.word = _Word()

    def double_quoted(self) -> None:
        src, i, text = self.src, self.i + 1, ""
        while i < len(src) and src[i] != '"':
            if src[i] == "\\" and i + 1 < len(src) and src[i + 1] in '$`"\\\n':
                text += src[i + 1] if src[i + 1] != "\n" else ""
                i += 2
            elif src.startswith("$(", i) and not src.startswith("$((", i):
                end = self.parenthesized(i + 1, "unbalanced $( in double quotes")
                text += "$(…)"
                self.word.expanded = True
                i = end + 1
            elif src[i] == "`":
                end = _closing_backtick(src, i)
                self.nested(src[i + 1 : end].replace("\\`", "`"))
                text += "`…`"
                self.word.expanded = True
                i = end + 1
            else:
                if src[i] == "$":
                    self.word.expanded = True
                text += src[i]
                i += 1
        if i >= len(src):
            self.out.unsure("unterminated double quote")
        self.add(text)
        self.i = i + 1

    def ansi_c_quoted(self) -> None:
        src, i, text = self.src, self.i + 2, ""
        while i < len(src) and src[i] != "'":
            if src[i] == "\\" and i + 1 < len(src):
                text += {"n": "\n", "t": "\t"}.get(src[i + 1], src[i + 1])
                i += 2
            else:
                text += src[i]
                i += 1
        if i >= len(src):
            self.out.unsure("unterminated $' quote")
        self.add(text)
        self.i = i + 1

    def dollar(self) -> None:
        src, i = self.src, self.i
        self.word.expanded = True
        if src.startswith("$((", i):
            end = src.find("))", i)
            end = len(src) if end < 0 else end
            self.substitutions_in(src[i + 3 : end])
            self.add(src[i : end + 2])
            self.i = end + 2
        elif src.startswith("$(", i):
            end = self.parenthesized(i + 1, "unbalanced $(")
            self.add("$(…)")
            self.i = end + 1
        else:
            self.add("$")
            self.i += 1

    def backtick(self) -> None:
        end = _closing_backtick(self.src, self.i)
        if end >= len(self.src):
            self.out.unsure("unterminated backtick")
        self.nested(self.src[self.i + 1 : end].replace("\\`", "`"))
        self.add("`…`")
        self.word.expanded = True
        self.i = end + 1

    def redirection(self) -> None:
        src, i = self.src, self.i
        if src.startswith(("<(", ">("), i):  # process substitution: a command whose output is a file
            end = self.parenthesized(i + 1, "unbalanced process substitution")
            self.add("/dev/fd/63")
            self.i = end + 1
            return
        if self.word.started and self.word.text.isdigit():
            self.word = _Word()  # in "2>" the fd number belongs to the redirection
        else:
            self.end_word()
        if src.startswith("<<<", i):
            self.i = i + 3
            self.here_string()
        elif src.startswith("<<", i):
            self.i = i + 2
            self.heredoc_start()
        else:
            j = i + 1
            while j < len(src) and src[j] in "<>&|":
                j += 1
            if src[j - 1] == "&" and j < len(src) and (src[j].isdigit() or src[j] == "-"):
                self.i = j + 1  # 2>&1, >&-: no file name follows
            else:
                self.i = j
                self.skip_next_word = True

    def here_string(self) -> None:
        while self.i < len(self.src) and self.src[self.i] in " \t":
            self.i += 1
        saved_words, saved_word = self.words, self.word
        self.words, self.word = [], _Word()
        while self.i < len(self.src) and self.src[self.i] not in " \t\n;&|()<>":
            ch = self.src[self.i]
            if ch == "'":
                end = self.src.find("'", self.i + 1)
                end = len(self.src) if end < 0 else end
                self.add(self.src[self.i + 1 : end])
                self.i = end + 1
            elif ch == '"':
                self.double_quoted()
            elif ch == "$":
                self.dollar()
            else:
                self.add(ch)
                self.i += 1
        self.feed.append(self.word.text)
        self.words, self.word = saved_words, saved_word

    def heredoc_start(self) -> None:
        strip = self.src.startswith("-", self.i)
        self.i += 1 if strip else 0
        while self.i < len(self.src) and self.src[self.i] in " \t":
            self.i += 1
        match = re.match(r"""(['"]?)([^\s;&|<>()'"]+)\1""", self.src[self.i :])
        if not match:
            self.out.unsure("here-document without a delimiter")
            return
        self.heredocs.append((match.group(2), bool(match.group(1)), strip, self.feed))
        self.i += match.end()

    def read_heredoc_bodies(self) -> None:
        pending, self.heredocs = self.heredocs, []
        for delimiter, quoted, strip, feed in pending:
            lines, closed = [], False
            while self.i < len(self.src) and not closed:
                end = self.src.find("\n", self.i)
                end = len(self.src) if end < 0 else end
                line = self.src[self.i : end]
                self.i = end + 1
                closed = (line.lstrip("\t") if strip else line) == delimiter
                if not closed:
                    lines.append(line)
            if not closed:
                self.out.unsure("here-document not terminated")
            body = "\n".join(lines)
            if not quoted:
                self.substitutions_in(body)
            feed.append(body)

    def substitutions_in(self, text: str) -> None:
        """Commands inside $( ) or backticks of text that is otherwise data (arithmetic, heredoc bodies)."""
        i = 0
        while i < len(text):
            if text.startswith("$(", i) and not text.startswith("$((", i):
                end = _matching_paren(text, i + 1)
                end = len(text) if end < 0 else end
                self.nested(text[i + 2 : end])
                i = end + 1
            elif text[i] == "`":
                end = _closing_backtick(text, i)
                self.nested(text[i + 1 : end])
                i = end + 1
            else:
                i += 2 if text[i] == "\\" else 1

    # -- commands -----------------------------------------------------------------------------------------
    def end_command(self) -> None:
        self.end_word()
        self.skip_next_word = False
        words, self.words = self.words, []
        feed, self.feed = self.feed, []
        previous = self.line[-1].words if self.piped and self.line else None
        if words or feed:
            self.line.append(_Simple(words, feed, previous))

    def flush_line(self) -> None:
        line, self.line = self.line, []
        for simple in line:
            _resolve(self, simple)


def _resolve(reader: _Reader, simple: _Simple) -> None:
    """Strip reserved words, assignments and wrappers from one simple command, then record what runs."""
    out, words = reader.out, simple.words
    while words:
        head = words[0]
        if head.text in SKIP_WORDS or _ASSIGNMENT.match(head.text):
            words = words[1:]
            continue
        if head.expanded:
            out.unsure(f"the command name {head.text!r} is computed at run time")
            out.commands.append([w.text for w in words])
            return
        name = os.path.basename(head.text) or head.text
        if name in NOT_RUN:
            return
        if name in UNSURE:
            out.unsure(f"{name} blocks are not analysed")
            return
        unwrapped = _unwrap(reader, name, words)
        if unwrapped is None:
            return
        if unwrapped is words:
            break
        words = unwrapped
    if not words:
        return
    argv = [w.text for w in words]
    argv[0] = os.path.basename(argv[0]) or argv[0]
    if argv[0] == "git":
        argv = _git_without_global_options(argv)
    out.commands.append(argv)
    if argv[0] in SHELLS:
        _shell(reader, simple, words)
    elif argv[0] in ("find", "fd"):
        _find_exec(out, argv)
    elif argv[0] in ("source", ".") and argv[1:2] in (["/dev/stdin"], ["-"]):
        out.unsure("a script read from stdin")


_FLAGS_WITH_VALUE = {
    "env": {"-u", "--unset", "-C", "--chdir"},
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"},
    "doas": {"-u", "-C"},
    "exec": {"-a"},
    "time": {"-f", "-o", "--format", "--output"},
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "-n", "-p"},
    "stdbuf": {"-i", "-o", "-e"},
    "timeout": {"-s", "-k", "--signal", "--kill-after"},
    "xargs": {
        "-I",
        "-n",
        "-P",
        "-L",
        "-s",
        "-d",
        "-E",
        "-a",
        "--max-args",
        "--max-procs",
        "--delimiter",
        "--arg-file",
    },
    "builtin": set(),
    "busybox": set(),  # multiplexers: `busybox rm x` runs the applet `rm`
    "toybox": set(),
    "nohup": set(),
    "setsid": set(),
    "unbuffer": set(),
    "command": set(),
}


def _unwrap(reader: _Reader, name: str, words: list[_Word]) -> list[_Word] | None:
    """The words after a wrapper (``words`` itself if ``name`` is none); None when nothing else runs."""
    if name == "eval":
        reader.nested(" ".join(w.text for w in words[1:]))
        if any(w.expanded for w in words[1:]):
            reader.out.unsure("eval of text computed at run time")
        return None
    if name not in _FLAGS_WITH_VALUE:
        return words
    if name == "command" and words[1:2] and words[1].text in ("-v", "-V"):
        return None  # `command -v x` only looks x up
    rest = words[1:]
    takes_value = _FLAGS_WITH_VALUE[name]
    while rest and (rest[0].text.startswith("-") or (name == "env" and _ASSIGNMENT.match(rest[0].text))):
        flag = rest[0].text
        if flag == "--":
            rest = rest[1:]
            break
        if name == "env" and flag in ("-S", "--split-string") and len(rest) > 1:
            reader.nested(rest[1].text)
            return None
        rest = rest[2:] if flag in takes_value else rest[1:]
    if name == "timeout":
        rest = rest[1:]  # the duration
    return rest


# git's global options (written before the subcommand) that take the next word as their value.
_GIT_GLOBAL_WITH_VALUE = frozenset(
    {
        "-C",
        "-c",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "--exec-path",
        "--config-env",
        "--super-prefix",
        "--attr-source",
    }
)


def _git_without_global_options(argv: list[str]) -> list[str]:
    """``git -C repo -c k=v --no-pager push`` → ``git push``: rules name subcommands (``Bash(git push:*)``),
    and global options in front of the subcommand must not hide it."""
    rest = argv[1:]
    while rest and rest[0].startswith("-") and rest[0] != "--":
        rest = rest[2:] if rest[0] in _GIT_GLOBAL_WITH_VALUE else rest[1:]
    return ["git", *rest]


def _shell(reader: _Reader, simple: _Simple, words: list[_Word]) -> None:
    args = [w.text for w in words[1:]]
    for index, arg in enumerate(args):
        if arg.startswith("-") and not arg.startswith("--") and "c" in arg[1:]:
            script_word = words[index + 2] if index + 2 < len(words) else None
            if script_word is None:
                return
            if script_word.expanded:
                reader.out.unsure("a shell script computed at run time")
            reader.nested(script_word.text)
            return
        if not arg.startswith(("-", "+")):
            return  # runs a script file: its contents are not visible here
    # No -c and no file: the shell reads its script from stdin.
    for body in simple.feed:
        reader.nested(body)
    if simple.piped_from is not None:
        upstream = simple.piped_from
        head = os.path.basename(upstream[0].text) if upstream else ""
        if head in ("echo", "printf") and not any(w.expanded for w in upstream):
            reader.nested("\n".join(w.text for w in upstream[1:] if not w.text.startswith("-")))
        else:
            reader.out.unsure("a shell reading a script from another command's output")


def _find_exec(out: ParsedCommand, argv: list[str]) -> None:
    for index, arg in enumerate(argv):
        if arg in ("-exec", "-execdir", "-ok", "-okdir", "-x", "--exec", "-X", "--exec-batch"):
            inner = []
            for part in argv[index + 1 :]:
                if part in (";", "+"):
                    break
                inner.append(part)
            if inner:
                inner[0] = os.path.basename(inner[0]) or inner[0]
                out.commands.append(inner)


def _matching_paren(src: str, open_index: int) -> int:
    """Index of the ``)`` closing the ``(`` at ``open_index``, skipping quoted text; -1 if unbalanced."""
    depth, i = 0, open_index
    while i < len(src):
        ch = src[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "'":
            end = src.find("'", i + 1)
            if end < 0:
                return -1
            i = end + 1
            continue
        if ch == '"':
            j = i + 1
            while j < len(src) and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            i = j + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def _closing_backtick(src: str, open_index: int) -> int:
    i = open_index + 1
    while i < len(src):
        if src[i] == "\\":
            i += 2
            continue
        if src[i] == "`":
            return i
        i += 1
    return len(src)
