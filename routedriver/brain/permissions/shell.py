"""Split a bash command line into every simple command it would run, for permission rules.

``split_command("FOO=1 sudo bash -c 'cd x && rm -rf y' | tee log").commands`` →
``[["sudo", "bash", "-c", "cd x && rm -rf y"], ["bash", "-c", "cd x && rm -rf y"], ["cd", "x"],
["rm", "-rf", "y"], ["tee", "log"]]``. Looked through: separators (``; && || | &``, newlines), groups
(``{ …; }``, ``( … )``), function bodies (``f() { …; }``, ``function f { …; }``), substitutions (``$( … )``,
backticks, ``<( … )``, inside ``${ … }`` too), brace expansion (``{rm,-rf,x}`` is ``rm -rf x``), scripts given
to a shell (``bash -c``, ``eval``, here-strings, here-documents, ``echo … | sh``, ``trap``, ``alias``),
wrappers (``VAR=x``, ``env``, ``sudo``, ``timeout``, ``xargs``, ``flock``, ``watch``, ``script -c`` … see
``wrappers``), ``find -exec`` and git's global options (``git -C x -c k=v push`` is ``git push``) and its
command-running subcommands.

The words come from the one bash reader (``shellsyntax.words``: quotes, ``$'…'`` and continuations decoded as
bash decodes them); this module is the resolver that knows what programs do with them. It is conservative,
not a shell: when it cannot be sure what would run (unbalanced quotes, a command name computed from ``$VAR``,
a glob or brace expansion, a ``$'…'`` the locale decides, ``curl … | sh``, ``source <( … )``, ``git -c
alias.x=…``, ``case`` blocks, nesting too deep) it says so with ``confident=False``, and the permission rules
then ask rather than allow.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import NamedTuple

from routedriver.brain.permissions.wrappers import (
    COMMAND_VARIABLES,
    DECLARING,
    GIT_CONFIG_VALUE_FLAGS,
    GIT_GLOBAL_WITH_VALUE,
    LOADING_VARIABLES,
    PROMPT_VARIABLES,
    SU_LIKE,
    SU_SCRIPT_FLAGS,
    SU_VALUE_FLAGS,
    WRAPPERS,
    git_config_is_safe,
)
from routedriver.shellsyntax import words as shell_words
from routedriver.shellsyntax.words import ASSIGNMENT, SimpleCommand, Word, is_assignment, is_bare

MAX_DEPTH = 6
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash"})
SKIP_WORDS = frozenset(
    {"!", "{", "}", "then", "else", "elif", "fi", "do", "done", "if", "while", "until", "esac"}
)
NOT_RUN = frozenset({"for", "select"})  # `for x in a b` runs nothing itself
UNSURE = frozenset({"case", "coproc"})
_STDIN_FILES = ("/dev/stdin", "-")
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-x", "--exec", "-X", "--exec-batch"})


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
    _Reader(parsed, 0).read(command)
    return parsed


class ReadCommand(NamedTuple):
    """What the reader found in a command line: every simple command it would run (words joined by single
    spaces), and why it cannot be sure that is all (empty when it is sure)."""

    commands: tuple[str, ...]
    unsure: tuple[str, ...]


@functools.lru_cache(maxsize=64)
def read_command(command: str) -> ReadCommand:
    """``split_command`` as the behavior engine's ``command_matches`` reads it (cached, as several rules look
    at one call)."""
    parsed = split_command(command)
    return ReadCommand(tuple(" ".join(argv) for argv in parsed.commands), tuple(parsed.reasons))


def simple_commands(command: str) -> tuple[str, ...]:
    """Every simple command ``command`` would run, its words joined by single spaces (see ``read_command``,
    which also says when that may not be all)."""
    return read_command(command).commands


class _Reader:
    """Reads one script with the word reader (``shellsyntax.words``) and resolves each simple command; the
    scripts it meets inside (substitutions, ``bash -c`` …) get a reader one level deeper."""

    def __init__(self, out: ParsedCommand, depth: int) -> None:
        self.out, self.depth = out, depth

    def read(self, script: str) -> None:
        shell_words.read(script, self)

    def nested(self, script: str) -> None:
        if self.depth >= MAX_DEPTH:
            self.out.unsure("commands nested too deeply")
            return
        _Reader(self.out, self.depth + 1).read(script)

    def unsure(self, reason: str) -> None:
        self.out.unsure(reason)

    def line(self, commands: list[SimpleCommand]) -> None:
        for simple in commands:
            _resolve(self, simple, simple.words)

    def substitutions_in(self, text: str) -> None:
        """The commands in ``$( … )`` and backticks of text bash expands later (a prompt string)."""
        shell_words.substitutions(text, self)


def _resolve(reader: _Reader, simple: SimpleCommand, words: list[Word], *, from_input: bool = False) -> None:
    """Strip reserved words, assignments and wrappers from one simple command, then record what runs.

    ``from_input``: xargs adds words read at run time after these, so a wrapper left with no command of its
    own runs one that is not written here.
    """
    out = reader.out
    # Bash knows reserved words (if, {, for …) only when typed bare first (before any NAME=value or
    # redirection), and NAME=value only when its name is typed bare; the words after a wrapper are its
    # arguments (`sudo A=1 cmd`).
    reserved, shell_level = simple.keywords, True
    while words:
        head = words[0]
        keyword = head.text if reserved and is_bare(head) else ""
        if keyword in SKIP_WORDS:
            words = words[1:]
            continue
        if is_assignment(head) if shell_level else ASSIGNMENT.match(head.text):
            _assignment(reader, head)
            words, reserved = words[1:], False
            continue
        if head.expanded:
            out.unsure(f"the command name {head.text[:40]!r} is computed at run time")
            out.commands.append([w.text for w in words])
            return
        if head.braced:
            out.unsure(f"the command name {head.text[:40]!r} comes from brace expansion")
        if keyword == "function":  # `function NAME { …; }`: the body follows the name in the same command
            words = words[2:]
            continue
        if keyword in NOT_RUN:
            return
        if keyword in UNSURE:
            out.unsure(f"{keyword} blocks are not analysed")
            return
        name = os.path.basename(head.text) or head.text
        spec = WRAPPERS.get(name)
        if name in SU_LIKE or (spec is not None and spec.privileged):
            out.commands.append([name, *(w.text for w in words[1:])])  # `Bash(sudo:*)` must see it
        unwrapped = _unwrap(reader, simple, name, words)
        if unwrapped is None:
            return
        if unwrapped is words:
            break
        if not unwrapped and (from_input or name == "xargs"):
            if from_input:
                out.unsure(f"{name} runs a command that xargs reads at run time")
            return
        if name == "xargs":
            from_input = True
            options = words[1 : len(words) - len(unwrapped)]
            unwrapped = _computed_if(unwrapped, _xargs_placeholders(options))
        words, reserved, shell_level = unwrapped, False, False
    if not words:
        return
    argv = [w.text for w in words]
    argv[0] = os.path.basename(argv[0]) or argv[0]
    if argv[0] == "git":
        argv = _git(reader, simple, words, from_input)
    out.commands.append(argv)
    if argv[0] in SHELLS:
        _shell(reader, simple, words)
    elif argv[0] in ("find", "fd"):
        _find_exec(reader, simple, words)
    elif argv[0] in ("source", "."):
        _source(reader, words)
    elif argv[0] == "alias":
        for word in words[1:]:
            if "=" in word.text:
                _script(reader, word.text.split("=", 1)[1], word.expanded, "an alias")
    elif argv[0] == "trap":
        _trap(reader, words)
    elif argv[0] in DECLARING:
        for word in words[1:]:
            if ASSIGNMENT.match(word.text):
                _assignment(reader, word)


def _script(reader: _Reader, script: str, expanded: bool, what: str) -> None:
    """Read text that something will run as a shell script."""
    if expanded:
        reader.out.unsure(f"{what} computed at run time")
    reader.nested(script)


def _joined_script(reader: _Reader, words: list[Word], what: str) -> None:
    """Words joined with spaces and run as one script (``eval a b``, ``watch a b``)."""
    _script(reader, " ".join(w.text for w in words), any(w.expanded for w in words), what)


def _assignment(reader: _Reader, word: Word) -> None:
    """``NAME=value``: harmless, unless NAME is a variable that makes some program run or load code."""
    name, value = word.text.split("=", 1)
    name = name.rstrip("+").split("[", 1)[0]
    if name in COMMAND_VARIABLES:
        _script(reader, value, word.expanded, f"the command in {name}")
    elif name in LOADING_VARIABLES:
        reader.out.unsure(f"{name} makes programs load code that the command line does not show")
    elif name in PROMPT_VARIABLES:
        reader.substitutions_in(value)


def _computed_if(words: list[Word], placeholders: list[str]) -> list[Word]:
    """``words`` with the command name marked computed when it holds a placeholder that is replaced at run
    time (find's ``{}``, xargs ``-I NAME``)."""
    if words and any(p and p in words[0].text for p in placeholders):
        return [Word(words[0].text, True, True), *words[1:]]
    return words


def _unwrap(reader: _Reader, simple: SimpleCommand, name: str, words: list[Word]) -> list[Word] | None:
    """The words after a wrapper (``words`` itself if ``name`` is none); None when nothing else runs."""
    if name == "eval":
        _joined_script(reader, words[1:], "eval of text")
        return None
    if name in SU_LIKE:
        return _su(reader, simple, name, words)
    spec = WRAPPERS.get(name)
    if spec is None:
        return words
    rest = words[1:]
    exec_mode = False
    while rest and (rest[0].text.startswith("-") or (spec.assignments and ASSIGNMENT.match(rest[0].text))):
        if rest[0].text == "--":
            rest = rest[1:]
            break
        if spec.assignments and ASSIGNMENT.match(rest[0].text):
            _assignment(reader, rest[0])
            rest = rest[1:]
            continue
        if _script_option(reader, spec.script_flags, rest, name):
            return None
        flags, takes_next = _options(rest[0].text, spec.value_flags)
        if any(flag in spec.no_command_flags for flag in flags):
            return None
        exec_mode = exec_mode or any(flag in spec.exec_flags for flag in flags)
        rest = rest[2:] if takes_next else rest[1:]
    if spec.operand is not None and rest and re.match(spec.operand, rest[0].text):
        rest = rest[1:]
        if _script_option(reader, spec.script_flags, rest, name):  # `flock FILE -c 'script'`
            return None
    if spec.joined and not exec_mode:
        if rest:
            _joined_script(reader, rest, f"the {name} command")
        return None
    if not spec.command_operands:
        rest = []
    if not rest and spec.stdin_shell:
        _stdin_script(reader, simple)
        return None
    return rest


def _options(word: str, value_flags: frozenset[str]) -> tuple[list[str], bool]:
    """The options one word holds and whether the next word is the value of the last: ``--user=x`` →
    ``--user``; a short cluster ``-fo`` → ``-f``, ``-o`` (getopt: the first option taking a value ends the
    cluster, its value glued on or in the next word)."""
    if word.startswith("--"):
        name, has_value, _ = word.partition("=")
        return [name], name in value_flags and not has_value
    flags: list[str] = []
    for index, letter in enumerate(word[1:], start=1):
        flags.append("-" + letter)
        if flags[-1] in value_flags:
            return flags, index == len(word) - 1
    return flags, False


def _script_option(reader: _Reader, flags: frozenset[str], rest: list[Word], name: str) -> bool:
    """If ``rest`` starts with an option carrying a shell script (``-c S``, ``-qcS``, ``--command=S``), read
    the script (with ``env -S``, the words after it are its arguments) and say so."""
    if not rest or not flags or not rest[0].text.startswith("-"):
        return False
    word, tail = rest[0], rest[1:]
    found, takes_next = _options(word.text, flags)
    if found[-1:] == [] or found[-1] not in flags:
        return False
    if takes_next:
        if not tail:
            reader.out.unsure(f"{name} {found[-1]} without its command")
            return True
        script, expanded, tail = tail[0].text, tail[0].expanded, tail[1:]
    elif word.text.startswith("--"):
        script, expanded = word.text.partition("=")[2], word.expanded
    else:
        script, expanded = word.text[len(found) + 1 :], word.expanded  # glued: -cSCRIPT
    if name == "env" and tail:
        script += " " + " ".join(shlex.quote(w.text) for w in tail)
    _script(reader, script, expanded or any(w.expanded for w in tail), f"the script given to {name}")
    return True


def _su(reader: _Reader, simple: SimpleCommand, name: str, words: list[Word]) -> list[Word] | None:
    """``su [opts] [-] [user] [-c script]`` (options anywhere); ``runuser -u user cmd`` runs ``cmd``."""
    for index in range(1, len(words)):
        if _script_option(reader, SU_SCRIPT_FLAGS, words[index:], name):
            return None
    rest, as_user = words[1:], False
    while rest and rest[0].text.startswith("-") and rest[0].text != "-":
        if rest[0].text == "--":
            rest = rest[1:]
            break
        as_user = as_user or rest[0].text in ("-u", "--user")
        rest = rest[2:] if rest[0].text in SU_VALUE_FLAGS else rest[1:]
    if name == "runuser" and as_user and rest:
        return rest
    _stdin_script(reader, simple)  # a shell, reading its script from stdin
    return None


def _xargs_placeholders(options: list[Word]) -> list[str]:
    """The strings xargs replaces with its input (``-I R``, ``-iR``, ``--replace[=R]``)."""
    found: list[str] = []
    for index, word in enumerate(options):
        text = word.text
        if text == "-I" and index + 1 < len(options):
            found.append(options[index + 1].text)
        elif text.startswith("-I") or text.startswith("-i"):
            found.append(text[2:] or "{}")
        elif text.startswith("--replace"):
            found.append(text.partition("=")[2] or "{}")
    return found


def _git(reader: _Reader, simple: SimpleCommand, words: list[Word], from_input: bool) -> list[str]:
    """``git -C repo -c k=v --no-pager push`` → ``git push``: rules name subcommands (``Bash(git push:*)``),
    and global options in front of the subcommand must not hide it. Options that could make git run
    something unseen (``-c alias.p=…``, ``-c core.pager=…``, ``--exec-path=DIR``) make the reader unsure;
    subcommands that run commands (``rebase --exec``, ``bisect run``, ``submodule foreach``) are read."""
    index = 1
    while index < len(words) and words[index].text.startswith("-") and words[index].text != "--":
        flag = words[index].text
        value = words[index + 1].text if index + 1 < len(words) else ""
        if flag in ("-c", "--config-env"):
            _git_config(reader, value.split("=", 1)[0])
        elif flag.startswith(("--config-env=", "--exec-path=")):
            _git_config(reader, flag.split("=", 2)[1] if flag.startswith("--config") else "--exec-path")
        index += 2 if flag in GIT_GLOBAL_WITH_VALUE else 1
    rest = words[index:]
    if not rest and from_input:
        reader.out.unsure("git runs a subcommand that xargs reads at run time")
    _git_subcommand(reader, simple, rest)
    return ["git", *(w.text for w in rest)]


def _git_config(reader: _Reader, key: str) -> None:
    if key.lower().startswith("alias."):
        reader.out.unsure(f"git alias {key[6:]!r} is defined on the command line")
    elif not git_config_is_safe(key):
        reader.out.unsure(f"git setting {key} could make git run other programs")


def _git_subcommand(reader: _Reader, simple: SimpleCommand, rest: list[Word]) -> None:
    sub = rest[0].text if rest else ""
    args = rest[1:]
    if sub == "rebase":
        for index, word in enumerate(args):
            if word.text in ("-x", "--exec") and index + 1 < len(args):
                _script(reader, args[index + 1].text, args[index + 1].expanded, "git rebase --exec")
            elif word.text.startswith("--exec="):
                _script(reader, word.text[7:], word.expanded, "git rebase --exec")
    elif sub == "bisect" and args[:1] and args[0].text == "run":
        _resolve(reader, SimpleCommand(args[1:], [], None, keywords=False), args[1:])
    elif sub == "submodule" and any(w.text == "foreach" for w in args):
        after = args[[w.text for w in args].index("foreach") + 1 :]
        after = [w for w in after if w.text not in ("--recursive", "-q", "--quiet")]
        _joined_script(reader, after, "git submodule foreach")
    elif sub == "filter-branch":
        for index, word in enumerate(args[:-1]):
            if word.text.startswith("--") and word.text.endswith("-filter"):
                _script(reader, args[index + 1].text, args[index + 1].expanded, "git filter-branch")
    elif sub == "config":
        # Setting an alias or a program-running key now makes a later `git x` run what it names.
        operands, index = [], 0
        while index < len(args):
            text = args[index].text
            if text in GIT_CONFIG_VALUE_FLAGS:
                index += 2
                continue
            if not text.startswith("-"):
                operands.append(text)
            index += 1
        if operands[:1] == ["set"]:
            operands = operands[1:]
        if len(operands) >= 2:
            _git_config(reader, operands[0])


def _shell(reader: _Reader, simple: SimpleCommand, words: list[Word]) -> None:
    """``bash -c SCRIPT``, ``bash FILE``, or a shell reading its script from stdin."""
    args, index, has_c, reads_stdin = words[1:], 0, False, False
    while index < len(args):
        text = args[index].text
        if text in ("--", "-"):
            index += 1
            break
        if text.startswith("--"):
            index += 2 if text in ("--rcfile", "--init-file") else 1
        elif text[:1] in "-+" and len(text) > 1:
            has_c = has_c or "c" in text[1:]
            reads_stdin = reads_stdin or "s" in text[1:]
            index += 1 + sum(letter in "oO" for letter in text[1:])  # -o NAME, -O NAME take a value
        else:
            break
    operands = args[index:]
    if has_c:
        if not operands:
            reader.out.unsure(f"{words[0].text} -c without its script")
            return
        _script(reader, operands[0].text, operands[0].expanded, "a shell script")
        return
    if operands and not reads_stdin:
        script = operands[0]
        if script.expanded:
            reader.out.unsure("a shell runs a script computed at run time or read from a command")
        elif _is_stream(script.text):
            _stdin_script(reader, simple)
        return  # otherwise it runs a script file: its contents are not visible here
    _stdin_script(reader, simple)


def _stdin_script(reader: _Reader, simple: SimpleCommand) -> None:
    """A shell reading its script from stdin: here-strings, here-documents, or what is piped into it."""
    for body in simple.feed:
        reader.nested(body)
    if simple.piped_from is not None:
        upstream = simple.piped_from
        head = os.path.basename(upstream[0].text) if upstream else ""
        if head in ("echo", "printf") and not any(w.expanded for w in upstream):
            reader.nested("\n".join(w.text for w in upstream[1:] if not w.text.startswith("-")))
        else:
            reader.out.unsure("a shell reading a script from another command's output")


def _is_stream(path: str) -> bool:
    """Does ``path`` name stdin or another process's output (``-``, ``/dev/stdin``, ``/dev/fd/N``)?"""
    return path in _STDIN_FILES or path.startswith(("/dev/fd/", "/proc/"))


def _source(reader: _Reader, words: list[Word]) -> None:
    """``source FILE`` runs a file (not visible here, like ``bash FILE``); anything but a plain path, such as
    ``source <(…)``, ``. /dev/stdin`` or ``source "$F"``, runs a script made at run time."""
    args = words[1:]
    if args[:1] and args[0].text == "--":
        args = args[1:]
    if not args:
        return
    target = args[0]
    if target.expanded or target.braced:
        reader.out.unsure("source of a script computed at run time")
    elif _is_stream(target.text):
        reader.out.unsure("source of a script read from stdin or another command")


def _trap(reader: _Reader, words: list[Word]) -> None:
    """``trap 'script' SIGNAL…`` runs the script later (at exit, on a signal)."""
    args = words[1:]
    while args and args[0].text.startswith("-") and args[0].text != "-":
        flag, args = args[0].text, args[1:]
        if flag == "--":
            break
        if flag in ("-l", "-p", "-P"):
            return  # lists signals or traps
    if len(args) >= 2 and args[0].text not in ("", "-"):
        _script(reader, args[0].text, args[0].expanded, "a trap")


def _find_exec(reader: _Reader, simple: SimpleCommand, words: list[Word]) -> None:
    """The commands of ``find -exec``/``-execdir``/``-ok``/``-okdir`` and ``fd -x``/``-X``, read like any
    other (``-exec sh -c 'script' _ {} ;`` reads the script)."""
    index = 1
    while index < len(words):
        if words[index].text not in _FIND_EXEC:
            index += 1
            continue
        inner: list[Word] = []
        index += 1
        while index < len(words):
            text = words[index].text
            if text == ";" or (text == "+" and inner and inner[-1].text == "{}"):
                break
            inner.append(words[index])
            index += 1
        inner = _computed_if(inner, ["{}", "{/}", "{//}", "{.}", "{/.}"])
        if inner:
            _resolve(reader, SimpleCommand(inner, simple.feed, simple.piped_from, keywords=False), inner)
