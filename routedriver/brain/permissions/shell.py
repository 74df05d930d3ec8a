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

This is a conservative reader, not a shell. When it cannot be sure what would run (unbalanced quotes, a
command name computed from ``$VAR``, a glob or brace expansion, ``curl … | sh``, ``source <( … )``, ``git -c
alias.x=…``, ``case`` blocks, nesting too deep) it says so with ``confident=False``, and the permission rules
then ask rather than allow.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

from routedriver.brain.permissions import braces
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

MAX_DEPTH = 6
SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "mksh", "ash"})
SKIP_WORDS = frozenset(
    {"!", "{", "}", "then", "else", "elif", "fi", "do", "done", "if", "while", "until", "esac"}
)
NOT_RUN = frozenset({"for", "select"})  # `for x in a b` runs nothing itself
UNSURE = frozenset({"case", "coproc"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_OPERATORS = ("&&", "||", ";;", "|&", ";", "&", "|", "\n", "(", ")")
_TEST_WORDS = frozenset({"[", "[[", "]", "]]"})
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
    _Reader(command, parsed, 0).read()
    return parsed


@dataclass
class _Word:
    text: str = ""
    expanded: bool = False  # holds an unquoted $var, $( ), ` `, glob or <( ): its value is unknown here
    started: bool = False
    braced: bool = False  # made by brace expansion: known, but a command name made so is suspicious
    chars: list[tuple[str, bool]] = field(default_factory=list)  # each character, and whether typed bare


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
                self.add(ch, bare=True)
                self.i += 1
        self.end_command()
        if self.heredocs:
            self.out.unsure("here-document without its body")
        self.flush_line()

    # -- words --------------------------------------------------------------------------------------------
    def add(self, text: str, *, bare: bool = False) -> None:
        """Append to the current word; ``bare`` text was typed unquoted, so braces in it expand."""
        self.word.text += text
        self.word.chars.extend((ch, bare) for ch in text)
        self.word.started = True

    def end_word(self) -> None:
        if not self.word.started:
            return
        if self.word.text in _TEST_WORDS:
            self.word.expanded = False
        if self.skip_next_word:
            self.skip_next_word = False
        else:
            self.words.extend(self.brace_expanded(self.word))
        self.word = _Word()

    def brace_expanded(self, word: _Word) -> list[_Word]:
        if not braces.has_braces(word.chars):
            return [word]
        try:
            texts = braces.expand(word.chars)
        except braces.TooManyWords:
            self.out.unsure(f"brace expansion of {word.text[:40]!r} makes too many words")
            word.expanded = True
            return [word]
        if texts == [word.text]:
            return [word]
        return [_Word(text, word.expanded, True, True) for text in texts]

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
        elif src.startswith("${", i):
            # One word up to the matching brace (`${x:-a b}`), with the commands of its substitutions.
            end = _closing_brace(src, i + 1)
            if end < 0:
                self.out.unsure("unbalanced ${")
                end = len(src)
            self.substitutions_in(src[i + 2 : end])
            self.add(src[i : end + 1])
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
            self.word.expanded = True  # what a reader of that file gets is computed at run time
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
            _resolve(self, simple, simple.words)


def _resolve(reader: _Reader, simple: _Simple, words: list[_Word], *, from_input: bool = False) -> None:
    """Strip reserved words, assignments and wrappers from one simple command, then record what runs.

    ``from_input``: xargs adds words read at run time after these, so a wrapper left with no command of its
    own runs one that is not written here.
    """
    out = reader.out
    while words:
        head = words[0]
        if head.text in SKIP_WORDS:
            words = words[1:]
            continue
        if _ASSIGNMENT.match(head.text):
            _assignment(reader, head)
            words = words[1:]
            continue
        if head.expanded:
            out.unsure(f"the command name {head.text!r} is computed at run time")
            out.commands.append([w.text for w in words])
            return
        if head.braced:
            out.unsure(f"the command name {head.text!r} comes from brace expansion")
        name = os.path.basename(head.text) or head.text
        if name == "function":  # `function NAME { …; }`: the body follows the name in the same command
            words = words[2:]
            continue
        if name in NOT_RUN:
            return
        if name in UNSURE:
            out.unsure(f"{name} blocks are not analysed")
            return
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
        words = unwrapped
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
            if _ASSIGNMENT.match(word.text):
                _assignment(reader, word)


def _script(reader: _Reader, script: str, expanded: bool, what: str) -> None:
    """Read text that something will run as a shell script."""
    if expanded:
        reader.out.unsure(f"{what} computed at run time")
    reader.nested(script)


def _joined_script(reader: _Reader, words: list[_Word], what: str) -> None:
    """Words joined with spaces and run as one script (``eval a b``, ``watch a b``)."""
    _script(reader, " ".join(w.text for w in words), any(w.expanded for w in words), what)


def _assignment(reader: _Reader, word: _Word) -> None:
    """``NAME=value``: harmless, unless NAME is a variable that makes some program run or load code."""
    name, value = word.text.split("=", 1)
    name = name.rstrip("+").split("[", 1)[0]
    if name in COMMAND_VARIABLES:
        _script(reader, value, word.expanded, f"the command in {name}")
    elif name in LOADING_VARIABLES:
        reader.out.unsure(f"{name} makes programs load code that the command line does not show")
    elif name in PROMPT_VARIABLES:
        reader.substitutions_in(value)


def _computed_if(words: list[_Word], placeholders: list[str]) -> list[_Word]:
    """``words`` with the command name marked computed when it holds a placeholder that is replaced at run
    time (find's ``{}``, xargs ``-I NAME``)."""
    if words and any(p and p in words[0].text for p in placeholders):
        return [_Word(words[0].text, True, True), *words[1:]]
    return words


def _unwrap(reader: _Reader, simple: _Simple, name: str, words: list[_Word]) -> list[_Word] | None:
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
    while rest and (rest[0].text.startswith("-") or (spec.assignments and _ASSIGNMENT.match(rest[0].text))):
        if rest[0].text == "--":
            rest = rest[1:]
            break
        if spec.assignments and _ASSIGNMENT.match(rest[0].text):
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


def _script_option(reader: _Reader, flags: frozenset[str], rest: list[_Word], name: str) -> bool:
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


def _su(reader: _Reader, simple: _Simple, name: str, words: list[_Word]) -> list[_Word] | None:
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


def _xargs_placeholders(options: list[_Word]) -> list[str]:
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


def _git(reader: _Reader, simple: _Simple, words: list[_Word], from_input: bool) -> list[str]:
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


def _git_subcommand(reader: _Reader, simple: _Simple, rest: list[_Word]) -> None:
    sub = rest[0].text if rest else ""
    args = rest[1:]
    if sub == "rebase":
        for index, word in enumerate(args):
            if word.text in ("-x", "--exec") and index + 1 < len(args):
                _script(reader, args[index + 1].text, args[index + 1].expanded, "git rebase --exec")
            elif word.text.startswith("--exec="):
                _script(reader, word.text[7:], word.expanded, "git rebase --exec")
    elif sub == "bisect" and args[:1] and args[0].text == "run":
        _resolve(reader, _Simple(args[1:], [], None), args[1:])
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


def _shell(reader: _Reader, simple: _Simple, words: list[_Word]) -> None:
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


def _stdin_script(reader: _Reader, simple: _Simple) -> None:
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


def _source(reader: _Reader, words: list[_Word]) -> None:
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


def _trap(reader: _Reader, words: list[_Word]) -> None:
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


def _find_exec(reader: _Reader, simple: _Simple, words: list[_Word]) -> None:
    """The commands of ``find -exec``/``-execdir``/``-ok``/``-okdir`` and ``fd -x``/``-X``, read like any
    other (``-exec sh -c 'script' _ {} ;`` reads the script)."""
    index = 1
    while index < len(words):
        if words[index].text not in _FIND_EXEC:
            index += 1
            continue
        inner: list[_Word] = []
        index += 1
        while index < len(words):
            text = words[index].text
            if text == ";" or (text == "+" and inner and inner[-1].text == "{}"):
                break
            inner.append(words[index])
            index += 1
        inner = _computed_if(inner, ["{}", "{/}", "{//}", "{.}", "{/.}"])
        if inner:
            _resolve(reader, _Simple(inner, simple.feed, simple.piped_from), inner)


def _closing_brace(src: str, open_index: int) -> int:
    """Index of the ``}`` closing the ``{`` of ``${`` at ``open_index`` (braces nest), skipping quoted text
    and substitutions; -1 if unbalanced."""
    return _closing(src, open_index, "{}", substitutions=True)


def _matching_paren(src: str, open_index: int) -> int:
    """Index of the ``)`` closing the ``(`` at ``open_index``, skipping quoted text; -1 if unbalanced."""
    return _closing(src, open_index, "()", substitutions=False)


def _closing(src: str, open_index: int, pair: str, *, substitutions: bool) -> int:
    """Index of ``pair[1]`` closing the ``pair[0]`` at ``open_index`` (they nest), skipping quoted text and,
    with ``substitutions``, ``$( … )`` and backticks; -1 if unbalanced."""
    opener, closer = pair[0], pair[1]
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
        if substitutions and src.startswith("$(", i):
            end = _matching_paren(src, i + 1)
            if end < 0:
                return -1
            i = end + 1
            continue
        if substitutions and ch == "`":
            i = _closing_backtick(src, i) + 1
            continue
        if ch == opener:
            depth += 1
        elif ch == closer:
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
