"""Split a bash command line into every simple command it would run, for permission rules.

``split_command("FOO=1 sudo bash -c 'cd x && rm -rf y' | tee log").commands`` →
``[["sudo", "bash", "-c", "cd x && rm -rf y"], ["bash", "-c", "cd x && rm -rf y"], ["cd", "x"],
["rm", "-rf", "y"], ["tee", "log"]]``. Looked through: separators (``; && || | &``, newlines), groups
(``{ …; }``, ``( … )``), function bodies (``f() { …; }``, ``function f { …; }``), substitutions (``$( … )``,
backticks, ``<( … )``, inside ``${ … }`` too), brace expansion (``{rm,-rf,x}`` is ``rm -rf x``), scripts given
to a shell (``bash -c``, ``eval``, here-strings, here-documents, also given to a group or ``exec`` around the
shell, what ``echo``/``printf`` pipe into it as they print it, ``trap``, ``alias``, ``mapfile -C``, a
``BASH_FUNC_…`` function ``env`` exports), wrappers (``VAR=x``, ``env``, ``sudo``, ``timeout``, ``xargs``,
``flock``, ``watch``, ``script -c``, ``unshare``, ``setarch`` … see ``wrappers``), ``find -exec``, git's
global options (``git -C x -c k=v push`` is ``git push``) and its command-running subcommands and options,
and the options of other programs that run commands (``tar``, ``ssh``, ``awk``, ``sed``, ``vim`` … see
``programs``).

The words come from the one bash reader (``shellsyntax.words``: quotes, ``$'…'`` and continuations decoded as
bash decodes them); this module is the resolver that knows what programs do with them. It is conservative,
not a shell: when it cannot be sure what would run (unbalanced quotes, a command name computed from ``$VAR``,
a glob or brace expansion, a ``$'…'`` the locale decides, ``curl … | sh``, ``source <( … )``, ``git -c
alias.x=…``, ``hash -p``, ``fc`` and history expansion (they re-run the shell's history), ``case`` and
``coproc`` blocks, nesting too deep, a name that may hold an array subscript bash
evaluates with its ``$( … )``: see ``_finish``) it says so with ``confident=False``, and the permission rules
then ask rather than allow.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
from dataclasses import dataclass, field
from typing import NamedTuple

from routedriver.brain.permissions import programs
from routedriver.brain.permissions.wrappers import (
    COMMAND_VARIABLES,
    DECLARING,
    FOREIGN_SHELLS,
    GIT_CONFIG_VALUE_FLAGS,
    GIT_GLOBAL_WITH_VALUE,
    LOADING_VARIABLES,
    PROMPT_VARIABLES,
    SHELLS,
    SU_LIKE,
    SU_SCRIPT_FLAGS,
    SU_VALUE_FLAGS,
    WRAPPERS,
    Wrapper,
    git_config_is_safe,
)
from routedriver.shellsyntax import words as shell_words
from routedriver.shellsyntax.words import ASSIGNMENT, SimpleCommand, Word, is_assignment, is_bare

MAX_DEPTH = 6
SKIP_WORDS = frozenset(
    {"!", "{", "}", "then", "else", "elif", "fi", "do", "done", "if", "while", "until", "esac"}
)
NOT_RUN = frozenset({"for", "select"})  # `for x in a b` runs nothing itself
UNSURE = frozenset({"case", "coproc"})
_STDIN_FILES = ("/dev/stdin", "-")
# NAME=value before a wrapper's command: env (and sudo) take any word with a "=" (env 'BASH_FUNC_x%%=…' cmd).
_ENV_ASSIGNMENT = re.compile(r"^[^=\s-][^=]*=")
_MAPFILE_VALUES = frozenset({"-d", "-n", "-O", "-s", "-u", "-C", "-c"})
_ARITHMETIC_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-v"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-x", "--exec", "-X", "--exec-batch"})


@dataclass
class ParsedCommand:
    commands: list[list[str]] = field(default_factory=list)
    confident: bool = True
    reasons: list[str] = field(default_factory=list)
    # What only matters for the command line as a whole (read at its end, see ``_finish``):
    code: list[str] = field(default_factory=list)  # literal text holding $( … ) or backticks bash did not run
    evaluates: list[str] = field(default_factory=list)  # what evaluates a name as a number (arithmetic …)
    runtime_values: list[str] = field(default_factory=list)  # what gives a variable a run-time value
    prompts: bool = False  # ${x@P}: a value expanded as a prompt, its $( … ) run
    blind_shells: int = 0  # shells reading a script from a stdin the reader has not seen
    orphan_feeds: list[str] = field(default_factory=list)  # text fed to a group, loop or exec, not a command
    orphan_inputs: bool = False  # a group's or exec's stdin redirected from a stream or descriptor
    aliases: dict[str, str] = field(default_factory=dict)  # aliases the command line defines: name → value

    def unsure(self, why: str) -> None:
        self.confident = False
        self.reasons.append(why)


def split_command(command: str) -> ParsedCommand:
    parsed = ParsedCommand()
    _Reader(parsed, 0).read(command)
    _finish(parsed)
    return parsed


# A subscript holding a command substitution: bash runs it whenever it evaluates the name as a number.
_SUBSCRIPT_CODE = re.compile(r"\[[^\]]*(?:\$\(|`)")
_IDENTIFIER = re.compile(r"[A-Za-z_]")


def _finish(parsed: ParsedCommand) -> None:
    """What the command line does as a whole: text that is data where it is written and code where it is used.

    - ``x='a[$(rm y)]'; : $((x))``, ``[ -v 'a[$(rm y)]' ]``, ``printf -v 'a[$(rm y)]'``, ``let …``: bash runs
      a command substitution in an array subscript whenever it evaluates a name as a number (arithmetic,
      ``let``, ``[[ -eq ]]``, ``-v``, subscripts, ``declare -i``). When something evaluates so and a name may
      hold such a subscript (quoted in the command line, or a value read at run time), the reader is unsure,
      and reads the quoted substitutions as commands.
    - ``x='$(rm y)'; echo ${x@P}``: a prompt expansion runs what a value holds: likewise.
    - ``{ bash; } <<< 'rm y'``, ``exec <<< 'rm y'; bash``, ``exec 3<<<…; bash <&3``: text given to a group, a
      loop or ``exec`` reaches a shell inside or after it that reads its script from stdin.
    """
    runs: list[str] = []
    if parsed.evaluates:
        payloads = [text for text in parsed.code if _SUBSCRIPT_CODE.search(text)]
        if payloads or parsed.runtime_values:
            why = (
                f"quoted text holds an array subscript with $( … ) ({payloads[0][:40]!r})"
                if payloads
                else f"a variable gets its value at run time ({parsed.runtime_values[0]})"
            )
            parsed.unsure(
                f"{parsed.evaluates[0]} evaluates names as numbers, and {why}: bash runs the commands of "
                "an array subscript then"
            )
            runs.extend(payloads)
    if parsed.prompts:
        parsed.unsure("${…@P} expands a value as a prompt, running the $( … ) it holds")
        runs.extend(parsed.code)
    reader = _Reader(parsed, 1)
    for text in runs:  # the substitutions bash ran where they were written are read already
        shell_words.substitutions(text.replace("$(…)", "").replace("`…`", ""), reader)
    if parsed.blind_shells and (parsed.orphan_feeds or parsed.orphan_inputs):
        parsed.unsure("a shell reads its script from the stdin of a group, a loop or exec around it")
        for feed in parsed.orphan_feeds:
            reader.nested(feed)


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

    def script(self, text: str, expanded: bool, what: str) -> None:
        """Text a program runs as a shell script (``programs.Reading``)."""
        _script(self, text, expanded, what)

    def expansion(self, kind: str, text: str) -> None:
        """An arithmetic (``$(( … ))``, ``(( … ))``, ``$[ … ]``) or parameter (``${ … }``) expansion."""
        out = self.out
        if kind == "arith":
            if _IDENTIFIER.search(text):
                out.evaluates.append("an arithmetic expansion")
            return
        if re.search(r"@P\s*$", text):
            out.prompts = True
        name = re.match(r"[#!]?(?:[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])", text)
        rest = text[name.end() :] if name else ""
        subscript = re.match(r"\[([^]]*)\]", rest)
        index = subscript.group(1) if subscript else ""
        if subscript and index not in ("@", "*") and re.search(r"[A-Za-z_$`]", index):
            out.evaluates.append("an array subscript")
            rest = rest[subscript.end() :]
        if rest.startswith(":") and rest[1:2] not in ("-", "=", "?", "+") and _IDENTIFIER.search(rest):
            out.evaluates.append("a substring offset")

    def line(self, commands: list[SimpleCommand]) -> None:
        for simple in commands:
            for text in [*(w.text for w in simple.words), *simple.feed]:
                if "$(" in text or "`" in text:
                    self.out.code.append(text)
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
        if is_assignment(head) if shell_level else _ENV_ASSIGNMENT.match(head.text):
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
        if keyword == "time":  # a reserved word, not /usr/bin/time: `{`, `!`, `coproc` … may follow it
            words = shell_words.after_time(words)
            continue
        if keyword in NOT_RUN:  # `for x in WORDS`: x gets each word, known here or only at run time
            if any(w.expanded for w in words[2:]):
                out.runtime_values.append(f"{keyword} over words made at run time")
            return
        if keyword in UNSURE:
            out.unsure(f"{keyword} blocks are not analysed")
            return
        if head.text in out.aliases:
            # An alias defined earlier (`alias e=eval; e 'rm x'`) runs its value with these words after it;
            # read so, but unsure: bash expands it only on later lines, with what its stdin is (`… | e`).
            out.unsure(f"{head.text!r} is an alias defined in the command line")
            value = out.aliases[head.text]
            reader.nested(" ".join([value, *(shlex.quote(w.text) for w in words[1:])]))
            return
        name = os.path.basename(head.text) or head.text
        spec = WRAPPERS.get(name)
        if name in SU_LIKE or name == "sg" or (spec is not None and spec.privileged):
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
        # Only reserved words or `exec` with redirections: what it is fed goes to the group, loop or shell
        # around it (`{ bash; } <<< …`, `exec <<< …; bash`); a shell inside may read it as its script.
        out.orphan_feeds.extend(simple.feed)
        out.orphan_inputs = out.orphan_inputs or any(_streamed(op, w) for op, w in simple.inputs)
        return
    argv = [w.text for w in words]
    argv[0] = os.path.basename(argv[0]) or argv[0]
    if argv[0] == "git":
        argv = _git(reader, simple, words, from_input)
    out.commands.append(argv)
    if argv[0] in SHELLS or argv[0] in FOREIGN_SHELLS:
        if argv[0] in FOREIGN_SHELLS:
            out.unsure(f"{argv[0]} scripts are not bash syntax")
        _shell(reader, simple, words)
    elif argv[0] in ("find", "fd"):
        _find_exec(reader, simple, words)
    elif argv[0] in ("source", "."):
        _source(reader, words)
    elif argv[0] == "alias":
        for word in words[1:]:
            if "=" in word.text:
                name, value = word.text.split("=", 1)
                out.aliases[name] = value
                _script(reader, value, word.expanded, "an alias")
    elif argv[0] == "trap":
        _trap(reader, words)
    elif argv[0] in DECLARING:
        for word in words[1:]:
            if ASSIGNMENT.match(word.text):
                _assignment(reader, word)
            elif word.text.startswith("-") and "i" in word.text[1:]:
                out.evaluates.append(f"{argv[0]} -i")
            elif "[" in word.text:
                out.evaluates.append(f"{argv[0]} of an array element")
    elif argv[0] in programs.HANDLERS:
        programs.HANDLERS[argv[0]](reader, words)
    else:
        _builtin(reader, argv, words)


def _builtin(reader: _Reader, argv: list[str], words: list[Word]) -> None:
    """Builtins that run code given to them, or evaluate and assign names in ways ``_finish`` weighs."""
    out, name, args = reader.out, argv[0], argv[1:]
    if name == "hash":
        path = _option_value(args, "-p")
        if path is not None:  # hash -p PATH NAME: NAME now runs PATH
            out.commands.append([os.path.basename(path) or path])
            out.unsure(f"hash -p makes a name run {path}")
    elif name == "enable" and any(arg.startswith("-") and "f" in arg for arg in args):
        out.unsure("enable -f loads a builtin from a shared object")
    elif name in ("mapfile", "readarray"):
        out.runtime_values.append(name)
        index = 1
        while index < len(words) and words[index].text.startswith("-"):
            flags, takes_next = _options(words[index].text, _MAPFILE_VALUES)
            value = words[index + 1] if takes_next and index + 1 < len(words) else None
            if flags[-1:] == ["-C"]:  # a callback, run with words it reads: bash evaluates it
                glued = words[index].text.split("C", 1)[1]
                callback = value.text if value is not None and not glued else glued
                _script(reader, callback, bool(value and value.expanded), "mapfile's callback")
                out.unsure(f"{name} -C runs its callback with lines read at run time")
            index += 2 if takes_next else 1
        if any("[" in w.text for w in words[index:]):
            out.evaluates.append(f"{name} into an array element")
    elif name in ("read", "getopts") or (name == "wait" and "-p" in args):
        out.runtime_values.append(name)
        if any("[" in arg for arg in args):
            out.evaluates.append(f"{name} into an array element")
    elif name == "printf" and (target := _option_value(args, "-v")) is not None:
        out.runtime_values.append("printf -v")
        if "[" in target:
            out.evaluates.append("printf -v into an array element")
    elif name == "let":
        out.evaluates.append("let")
    elif name == "[[" and any(arg in _ARITHMETIC_TESTS for arg in args):
        out.evaluates.append("[[ … ]] comparing numbers")
    elif name in ("[", "test") and "-v" in args:
        out.evaluates.append(f"{name} -v")
    elif name == "fc" and not _fc_lists(args):
        out.unsure("fc re-runs commands from the shell's history, which the reader does not see")
    elif name == "set" and _expands_history(args, "H"):
        out.unsure("history expansion (!!, !rm) re-runs commands from the shell's history")


def _fc_lists(args: list[str]) -> bool:
    """Does ``fc`` only list its history (``-l``)? Without it, it runs history entries (``-s``), or runs what
    an editor makes of them."""
    index = 0
    while index < len(args) and args[index].startswith("-") and args[index] not in ("-", "--"):
        flags, takes_next = _options(args[index], frozenset({"-e"}))
        if "-l" in flags:
            return True
        index += 2 if takes_next else 1
    return False


def _expands_history(args: list[str], letters: str) -> bool:
    """Do these options (of ``set``, or of a shell: ``bash -i``) turn on history expansion, so that ``!!``
    runs an earlier command (one ``history -s`` added, say)? ``letters``: the options that do besides
    ``-o histexpand`` (``-H``; an interactive shell's ``-i``)."""
    index = 0
    while index < len(args) and args[index][:1] in "-+" and args[index] not in ("-", "--", "+"):
        arg = args[index]
        value = args[index + 1] if index + 1 < len(args) else ""
        if arg.startswith("--"):  # a shell's long option (`--login`, `--rcfile FILE`)
            index += 2 if arg in ("--rcfile", "--init-file") else 1
            continue
        if arg.startswith("-") and (
            any(letter in arg[1:] for letter in letters) or "o" in arg and value == "histexpand"
        ):
            return True
        index += 2 if "o" in arg[1:] or "O" in arg[1:] else 1
    return False


def _option_value(args: list[str], flag: str) -> str | None:
    """The value of a builtin's short option (``-p VALUE``, ``-pVALUE``, ``-rp VALUE``) before operands."""
    for index, arg in enumerate(args):
        if arg == "--" or not arg.startswith("-") or arg == "-":
            return None
        flags, takes_next = _options(arg, frozenset({flag}))
        if flags[-1:] == [flag]:
            if not takes_next:
                return arg[arg.index(flag[1]) + 1 :]
            return args[index + 1] if index + 1 < len(args) else ""
    return None


def _streamed(op: str, word: Word) -> bool:
    """Is this stdin redirection from a descriptor or another command's output (not a plain file)?"""
    return op == "<&" or word.expanded or _is_stream(word.text)


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
    name, _, subscript = name.rstrip("+").partition("[")
    if word.expanded:
        reader.out.runtime_values.append(f"{name}=…")
    if subscript and re.search(r"[A-Za-z_$`]", subscript.rstrip("]")):
        reader.out.evaluates.append("an array subscript")
    if name.startswith("BASH_FUNC_"):  # env 'BASH_FUNC_ls%%=() { …; }' bash: a function bash imports
        body = value.strip()
        _script(reader, body[2:] if body.startswith("()") else body, word.expanded, "an exported function")
        reader.out.unsure(f"{name} defines a function that runs in place of a command of its name")
    elif name in COMMAND_VARIABLES:
        _script(reader, value, word.expanded, f"the command in {name}")
    elif name in LOADING_VARIABLES:
        reader.out.unsure(f"{name} makes programs load code that the command line does not show")
    elif name in PROMPT_VARIABLES:
        if word.expanded:
            reader.out.unsure(f"{name} holds a prompt made at run time, which bash expands with its $( … )")
        reader.substitutions_in(value)


def _computed_if(words: list[Word], placeholders: list[str]) -> list[Word]:
    """``words`` with each word that holds a placeholder replaced at run time (find's ``{}``, xargs ``-I
    NAME``) marked computed: as a command name (``xargs -I{} {} x``) or a script (``xargs -I{} sh -c '{}'``)
    what runs is only known then."""
    return [Word(w.text, True, True) if any(p and p in w.text for p in placeholders) else w for w in words]


def _unwrap(reader: _Reader, simple: SimpleCommand, name: str, words: list[Word]) -> list[Word] | None:
    """The words after a wrapper (``words`` itself if ``name`` is none); None when nothing else runs."""
    if name == "eval":
        args = words[1:]
        if args[:1] and args[0].text == "--":  # eval ends its (no) options at `--`: `eval -- 'rm x'`
            args = args[1:]
        _joined_script(reader, args, "eval of text")
        return None
    if name in SU_LIKE:
        return _su(reader, simple, name, words)
    if name == "sg":
        return _sg(reader, simple, words)
    if name == "capsh":
        return _capsh(words)
    spec = WRAPPERS.get(name)
    if spec is None:
        return words
    rest = words[1:]
    if spec.operand_first and spec.operand is not None and rest and re.match(spec.operand, rest[0].text):
        rest = rest[1:]  # `setarch x86_64 -R cmd`; `setarch -R cmd` has none
    skipped = _skip_options(reader, spec, name, rest)
    if skipped is None:
        return None
    rest, exec_mode = skipped
    if not spec.operand_first and spec.operand is not None and rest and re.match(spec.operand, rest[0].text):
        rest = rest[1:]
        if _script_option(reader, spec.script_flags, rest, name):  # `flock FILE -c 'script'`
            return None
    if spec.joined and not exec_mode:
        if rest:
            _joined_script(reader, rest, f"the {name} command")
        return None
    if not spec.command_operands:
        # its operands are files; getopt lets options follow them: `script LOG -c 'rm x'`
        if any(_script_option(reader, spec.script_flags, rest[index:], name) for index in range(len(rest))):
            return None
        rest = []
    if not rest and spec.stdin_shell:
        _stdin_script(reader, simple)
        return None
    return rest


def _skip_options(
    reader: _Reader, spec: Wrapper, name: str, rest: list[Word]
) -> tuple[list[Word], bool] | None:
    """The words after a wrapper's options, and whether one turned ``joined`` off; None when an option says
    no command runs (or carries the script, read here)."""
    exec_mode = False
    while rest and (rest[0].text.startswith("-") or spec.assignments and _ENV_ASSIGNMENT.match(rest[0].text)):
        if rest[0].text == "--":
            return rest[1:], exec_mode
        if spec.assignments and _ENV_ASSIGNMENT.match(rest[0].text):
            _assignment(reader, rest[0])  # env takes any word with a "=": env 'BASH_FUNC_x%%=…' cmd
            rest = rest[1:]
            continue
        if name == "env" and (split := _env_split(reader, rest)) is not None:
            rest = split
            continue
        if _script_option(reader, spec.script_flags, rest, name):
            return None
        flags, takes_next = _options(rest[0].text, spec.value_flags)
        if any(flag in spec.no_command_flags for flag in flags):
            return None
        exec_mode = exec_mode or any(flag in spec.exec_flags for flag in flags)
        pair = any(flag in spec.pair_flags for flag in flags)
        rest = rest[3:] if pair else rest[2:] if takes_next else rest[1:]
    return rest, exec_mode


def _sg(reader: _Reader, simple: SimpleCommand, words: list[Word]) -> list[Word] | None:
    """``sg [-] GROUP [-c] COMMAND``: the command, one string, is run by ``/bin/sh -c`` (words after it are
    dropped; read joined, erring towards refusing); no command starts a shell reading stdin."""
    rest = words[1:]
    if rest[:1] and rest[0].text == "-":
        rest = rest[1:]
    rest = rest[1:]  # the group
    if rest[:1] and rest[0].text == "-c":
        rest = rest[1:]
    if rest:
        _joined_script(reader, rest, "the sg command")
    else:
        _stdin_script(reader, simple)
    return None


def _capsh(words: list[Word]) -> list[Word] | None:
    """``capsh [options] -- ARGS`` runs ``bash ARGS`` (or ``--shell=PROGRAM ARGS``); without ``--``,
    nothing."""
    texts = [w.text for w in words]
    if "--" not in texts:
        return None
    shell = next((t.split("=", 1)[1] for t in texts if t.startswith("--shell=")), "bash")
    return [Word(shell, False, True), *words[texts.index("--") + 1 :]]


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


def _valued_option(flags: frozenset[str], rest: list[Word]) -> tuple[str, Word | None, list[Word]] | None:
    """If ``rest`` starts with one of ``flags`` (``-c S``, ``-qcS``, ``--command=S``): the option, its value
    (None when missing) and the words after them."""
    if not rest or not flags or not rest[0].text.startswith("-"):
        return None
    word, tail = rest[0], rest[1:]
    found, takes_next = _options(word.text, flags)
    if found[-1:] == [] or found[-1] not in flags:
        return None
    if takes_next:
        return found[-1], (tail[0] if tail else None), tail[1:]
    if word.text.startswith("--"):
        return found[-1], Word(word.text.partition("=")[2], word.expanded, True), tail
    return found[-1], Word(word.text[len(found) + 1 :], word.expanded, True), tail  # glued: -cSCRIPT


def _script_option(reader: _Reader, flags: frozenset[str], rest: list[Word], name: str) -> bool:
    """If ``rest`` starts with an option carrying a shell script (``-c S``, ``-qcS``, ``--command=S``), read
    the script and say so."""
    found = _valued_option(flags, rest)
    if found is None:
        return False
    flag, script, _ = found
    if script is None:
        reader.out.unsure(f"{name} {flag} without its command")
    else:
        _script(reader, script.text, script.expanded, f"the script given to {name}")
    return True


_ENV_SPLIT_FLAGS = frozenset({"-S", "--split-string"})
_ENV_ESCAPES = {"f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _env_split(reader: _Reader, rest: list[Word]) -> list[Word] | None:
    """``env -S STRING ARGS``: env splits STRING into words by its own rules, not bash's, and reads them as
    its arguments in place of the option (options, NAME=value and the command may all come from it): the
    words, followed by ``ARGS``; None when ``rest`` does not start with -S."""
    found = _valued_option(_ENV_SPLIT_FLAGS, rest)
    if found is None:
        return None
    _, value, tail = found
    if value is None:
        reader.out.unsure("env -S without its string")
        return []
    split = _env_words(value.text)
    if split is None:
        reader.out.unsure("env -S with a string env splits otherwise or refuses")
        return []
    if value.expanded:
        reader.out.unsure("env -S with a string computed at run time")
        split = [Word(w.text, True, True) for w in split]
    return [*split, *tail]


def _env_words(text: str) -> list[Word] | None:
    """Split env -S's string as coreutils' env does: blanks and ``\\_`` separate words outside quotes (``\\_``
    is a space inside double quotes), quotes group, ``\\c`` ends the string, ``#`` starting a word starts a
    comment, ``${NAME}`` is a variable's value (the word is marked computed). None where env refuses the
    string (``$NAME``, an unknown escape, an open quote)."""
    words: list[Word] = []
    chars: list[str] | None = None  # the word being made; None between words
    expanded, quote, index = False, "", 0

    def end_word() -> None:
        nonlocal chars, expanded
        if chars is not None:
            words.append(Word("".join(chars), expanded, True))
        chars, expanded = None, False

    while index < len(text):
        char = text[index]
        index += 1
        if char in "'\"" and quote in ("", char):
            quote = "" if quote else char
            chars = chars if chars is not None else []
            continue
        if char in " \t\n\v\f\r" and not quote:
            end_word()
            continue
        if char == "#" and chars is None and not quote:
            break
        if char == "\\" and not (quote == "'" and text[index : index + 1] not in ("\\", "'")):
            escape = text[index : index + 1]
            index += 1
            if escape == "_" and not quote:
                end_word()
                continue
            if escape == "c" and not quote:
                break
            if not escape or escape not in "\"#$'\\_fnrtv":
                return None  # env: "invalid sequence", or \c inside double quotes
            char = " " if escape == "_" else _ENV_ESCAPES.get(escape, escape)
        elif char == "$" and quote != "'":
            close = text.find("}", index)
            if text[index : index + 1] != "{" or close < 0:
                return None
            char, index, expanded = text[index - 1 : close + 1], close + 1, True
        chars = chars if chars is not None else []
        chars.append(char)
    if quote:
        return None
    end_word()
    return words


def _su(reader: _Reader, simple: SimpleCommand, name: str, words: list[Word]) -> list[Word] | None:
    """``su [opts] [-] [user [args]] [-c script]`` (getopt: options anywhere, ``--`` ends them): the user's
    shell, or the program ``-s`` names, runs with ``args``; ``runuser -u user cmd`` runs ``cmd``."""
    for index in range(1, len(words)):
        if _script_option(reader, SU_SCRIPT_FLAGS, words[index:], name):
            return None
    rest, operands, as_user, shell = words[1:], [], False, None
    while rest:
        text = rest[0].text
        if text == "--":
            operands.extend(rest[1:])
            break
        if not text.startswith("-") or text == "-":
            operands.append(rest[0])
            rest = rest[1:]
            continue
        flags, takes_next = _options(text, SU_VALUE_FLAGS)
        as_user = as_user or flags[-1] in ("-u", "--user")
        if flags[-1] in ("-s", "--shell"):  # `-s PROGRAM`, `-sPROGRAM`, `--shell=PROGRAM`
            glued = text.partition("=")[2] if text.startswith("--") else text[len(flags) + 1 :]
            shell = rest[1] if takes_next and rest[1:] else Word(glued, rest[0].expanded, True)
        rest = rest[2:] if takes_next else rest[1:]
    if name == "runuser" and as_user and operands:
        return operands
    if operands[:1] and operands[0].text == "-":
        operands = operands[1:]
    if shell is not None:
        return [shell, *operands[1:]]  # `su -s /bin/rm root -- -rf x` runs `rm -rf x`
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
        if flag == "-c":
            key, _, setting = value.partition("=")
            _git_config(reader, key, setting, index + 1 < len(words) and words[index + 1].expanded)
        elif flag == "--config-env":
            _git_config(reader, value.split("=", 1)[0])
        elif flag.startswith(("--config-env=", "--exec-path=")):
            _git_config(reader, flag.split("=", 2)[1] if flag.startswith("--config") else "--exec-path")
        index += 2 if flag in GIT_GLOBAL_WITH_VALUE else 1
    rest = words[index:]
    if not rest and from_input:
        reader.out.unsure("git runs a subcommand that xargs reads at run time")
    _git_subcommand(reader, simple, rest)
    return ["git", *(w.text for w in rest)]


def _git_config(reader: _Reader, key: str, value: str | None = None, expanded: bool = False) -> None:
    """A setting given to git. One that can make git run a program makes the reader unsure; its value, when
    given, is read as the command it may be (``core.pager=…``, ``core.sshCommand=…``, ``alias.x=!…``), so a
    deny rule sees it."""
    if key.lower().startswith("alias."):
        reader.out.unsure(f"git alias {key[6:]!r} is defined on the command line")
    elif not git_config_is_safe(key):
        reader.out.unsure(f"git setting {key} could make git run other programs")
    else:
        return
    if value:
        _script(reader, value[1:] if value.startswith("!") else value, expanded, f"git's {key}")


def _git_subcommand(reader: _Reader, simple: SimpleCommand, rest: list[Word]) -> None:
    sub = rest[0].text if rest else ""
    args = rest[1:]
    _git_command_options(reader, sub, args)
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
            _git_config(reader, operands[0], operands[1])


# Options of git subcommands whose value is a program git runs (through a shell): (subcommands, options).
_GIT_PROGRAM_OPTIONS = (
    (("clone", "fetch", "pull", "ls-remote", "remote", "submodule"), ("--upload-pack", "-u")),
    (("push", "send-pack"), ("--receive-pack", "--exec")),
    (("archive",), ("--exec",)),
    (("difftool",), ("--extcmd", "-x")),
    (("send-email",), ("--sendmail-cmd", "--smtp-server")),
    (("daemon",), ("--access-hook",)),
)


def _git_command_options(reader: _Reader, sub: str, args: list[Word]) -> None:
    """``git clone --upload-pack=CMD``, ``push --receive-pack=CMD``, ``difftool -x CMD``, ``grep -O[CMD]``:
    a command git runs, read as a script."""
    options = next((names for subs, names in _GIT_PROGRAM_OPTIONS if sub in subs), ())
    if sub == "grep":
        options = ("--open-files-in-pager",)  # -O takes its value glued on only
    for index, word in enumerate(args):
        text = word.text
        if text == "--":
            return
        name, eq, value = text.partition("=")
        if sub == "grep" and text.startswith("-O") and len(text) > 2:
            name, eq, value = "--open-files-in-pager", "=", text[2:]
        if name not in options:
            continue
        if eq:
            _script(reader, value, word.expanded, f"git {sub} {name}")
        elif index + 1 < len(args) and sub != "grep":
            _script(reader, args[index + 1].text, args[index + 1].expanded, f"git {sub} {name}")


def _shell(reader: _Reader, simple: SimpleCommand, words: list[Word]) -> None:
    """``bash -c SCRIPT``, ``bash FILE``, or a shell reading its script from stdin."""
    operands, has_c, reads_stdin = shell_words.shell_options(words[1:])
    if _expands_history([w.text for w in words[1 : len(words) - len(operands)]], "Hi"):
        reader.out.unsure("history expansion (!!, !rm) re-runs commands from the shell's history")
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
    """A shell reading its script from stdin: here-strings, here-documents, what is piped into it (echo's and
    printf's output worked out as they print it), a file it is redirected from (``bash < build.sh``: a
    script file, not read, like ``bash build.sh``), or a stdin the reader has not seen (see ``_finish``)."""
    for body in simple.feed:
        reader.nested(body)
    if simple.piped_from is not None:
        _piped_script(reader, simple.piped_from)
    elif not simple.feed:
        if not simple.inputs or any(_streamed(op, word) for op, word in simple.inputs):
            reader.out.blind_shells += 1  # its stdin: empty, or what a group or exec around it was given
        if any(_streamed(op, word) for op, word in simple.inputs):
            reader.out.unsure("a shell reads its script from a file descriptor or another command's output")


def _piped_script(reader: _Reader, upstream: list[Word]) -> None:
    """``echo … | bash``, ``printf … | bash``: the script is what they print (escapes decoded as echo -e,
    printf and ``shopt -s xpg_echo`` decode them; echo's text is read both ways when it holds a backslash)."""
    # its regexes (~1 ms): only a script piped into a shell, not every Bash call bhrain behave reads
    from routedriver.shellsyntax import builtins

    head = os.path.basename(upstream[0].text) if upstream else ""
    args = [w.text for w in upstream[1:]]
    if head not in ("echo", "printf") or any(w.expanded for w in upstream):
        reader.out.unsure("a shell reading a script from another command's output")
        return
    if head == "printf":
        printed = builtins.printf_output(args)
        if printed is None:
            reader.out.unsure("a shell reads what printf prints, which cannot be worked out here")
            return
        reader.nested(printed)
        return
    printed = builtins.echo_output(args)
    reader.nested(printed)
    decoded = builtins.echo_output(args, escapes=True)
    if decoded != printed:
        reader.nested(decoded)


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
