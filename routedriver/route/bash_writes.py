"""What a Bash command writes, as far as the one shell reader (``shellsyntax``) can see: for ``route.bounce``.

``read_writes("cd routes/a && sed -i s/x/y/ 1.spec.guard > log")`` → a ``Reading`` whose ``targets`` are
``1.spec.guard`` (``sed -i``) and ``log`` (a redirection), whose ``chdirs`` are ``["routes/a"]``, with every
word it saw in ``words``. The caller (``route.bounce``) resolves the targets against the event's ``cwd``
and every ``cd`` of the command, and decides what is protected; this module only knows programs.

What counts as a write:

- output redirections (``>``, ``>>``, ``>|``, ``&>``, ``&>>``, ``<>``, ``>&FILE``, with or without a
  descriptor number in front);
- the files programs are given to change (the table ``WRITERS``): ``tee``, ``sed -i``, ``perl -i``/``ruby
  -i``, ``cp``/``mv``/``install``/``ln`` (their destination; a link's or a moved file's source too),
  ``rm``/``rmdir``/``unlink``/``shred``/``truncate``/``touch``/``mkdir``, ``chmod``/``chown``/``chgrp``,
  ``dd of=``, ``sort -o``, ``uniq IN OUT``, ``tar -x`` (into ``-C DIR``), ``find -delete`` / ``-exec`` of a
  writer (everything below its start paths), ``route.init --force``;
- git commands that rewrite working-tree files: ``checkout``/``restore``/``rm``/``mv`` of paths, and
  ``reset --hard``/``--merge``/``--keep``, ``stash`` (push, pop, apply), ``clean``, ``apply`` and
  ``checkout``/``restore``/``stash`` of ``.`` (the whole tree).

Commands are followed where they run: through separators and groups, function bodies (``f() { …; }``,
``function f { …; }``: read where written), ``coproc``, substitutions, ``bash -c``/``sh -c``
and shells fed a script on stdin, ``eval``, wrappers (``env``, ``sudo``, ``timeout``, ``xargs`` … the table
``brain.permissions.wrappers.WRAPPERS``) and ``find -exec``. ``cd``, ``pushd``, ``git -C`` and ``env -C``
give directories relative paths may be relative to (``chdirs``).

A program it does not know (an interpreter, a build tool, a script) is ``opaque``: the caller decides what
its words may name. Whatever makes the reading uncertain (a command name or a written path computed at run
time, unbalanced quotes, ``xargs`` feeding a writer files read at run time …) is in ``unsure``. A Reading is
conservative: a word that may be a path to be written is taken as one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field

from routedriver import globs
from routedriver.brain.permissions.wrappers import GIT_GLOBAL_WITH_VALUE, SHELLS, SU_LIKE, WRAPPERS, Wrapper
from routedriver.shellsyntax import words as shell_words
from routedriver.shellsyntax.words import Redirection, SimpleCommand, Word, is_assignment, is_bare

MAX_DEPTH = 6
WRITING_REDIRECTIONS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_RESERVED = frozenset(
    {"!", "{", "}", "then", "else", "elif", "fi", "do", "done", "if", "while", "until", "esac", "time"}
)
# Reserved words a command that runs may follow: `function NAME` and `coproc [NAME]` are stripped with them,
# so a function's or a coprocess's body is read like any command (`function f { rm x; }` ran unread).
_LEADING = _RESERVED | {"function", "coproc"}
# What starts a compound command: after `coproc NAME` only one may stand (else NAME is the command's name).
_COMPOUND = frozenset({"{", "if", "while", "until", "for", "select", "case", "[[", "function"})
# Programs that read their arguments and write nothing a route holds (their output goes where the command
# line redirects it, which is read apart). Anything else is a writer below, a wrapper, or opaque.
_READER_NAMES = """
    cat less more head tail grep egrep fgrep rg ag ack ls tree wc diff cmp stat file echo printf true false
    test [ [[ pwd which type whoami id date cut tr basename dirname realpath readlink md5sum sha1sum
    sha256sum sha512sum b2sum cksum od hexdump column nl fold fmt paste join comm expand unexpand tac rev seq
    sleep export set unset declare local readonly read wait ps du df free uname hostname printenv jq nproc
    getconf locale tput clear history exit return shift break continue : cd pushd popd dirs hash ulimit umask
    route.stone.get route.stone.set route.stone.judge route.stone.del route.drive route.status route.verify
    route.lint route.bind route.bounce route.mcp route.policy.approve bhrain behaviorci
"""
READERS = frozenset(_READER_NAMES.split())
CD = frozenset({"cd", "pushd"})


@dataclass(frozen=True)
class Target:
    path: str  # as written (quotes removed); may hold glob characters when ``glob``
    how: str  # what writes it, for a message: "a > redirection", "sed -i", "git checkout"
    recursive: bool = False  # the path and everything below it
    glob: bool = False  # a bash pattern the shell expands to the files it matches
    whole_tree: bool = False  # the whole working tree of the repository (``path`` is where git runs)


@dataclass
class Reading:
    targets: list[Target] = field(default_factory=list)
    chdirs: list[str] = field(default_factory=list)  # cd/pushd/git -C/env -C directories, in order
    unsure: list[str] = field(default_factory=list)  # why what runs, or what it writes, is not certain
    words: list[str] = field(default_factory=list)  # every word seen, nested scripts' included
    opaque: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)  # (program, its arguments)


def read_writes(command: str) -> Reading:
    reading = Reading()
    _Reader(reading, 0).read(command)
    return reading


class _Reader:
    """One script's reader (``shellsyntax.words`` calls it back); scripts it meets inside get a deeper one."""

    def __init__(self, out: Reading, depth: int) -> None:
        self.out, self.depth = out, depth

    def read(self, script: str) -> None:
        shell_words.read_with_redirections(script, self)

    def nested(self, script: str) -> None:
        if self.depth >= MAX_DEPTH:
            self.out.unsure.append("commands nested too deeply to read")
            self.out.words.append(script)
            return
        _Reader(self.out, self.depth + 1).read(script)

    def script(self, text: str, computed: bool, what: str) -> None:
        if computed:
            self.out.unsure.append(f"{what} is computed at run time")
        self.out.words.append(text)
        self.nested(text)

    def unsure(self, reason: str) -> None:
        self.out.unsure.append(reason)

    def redirection(self, redirection: Redirection) -> None:
        word = redirection.target
        self.out.words.append(word.text)
        if redirection.operator not in WRITING_REDIRECTIONS:
            return
        if redirection.operator == ">&" and (word.text.isdigit() or word.text == "-"):
            return  # 2>&1, >&-: a descriptor, not a file
        self.write(word, f"a {redirection.operator} redirection")

    def line(self, commands: list[SimpleCommand]) -> None:
        for simple in commands:
            for body in simple.feed:
                self.out.words.append(body)
            self.command(simple, simple.words)

    # -- one simple command ----------------------------------------------------------------------------------
    def write(self, word: Word, how: str, *, recursive: bool = False) -> None:
        """``word`` names a path the command writes."""
        if word.expanded and not _only_globbed(word):
            self.out.unsure.append(f"{how} writes to {word.text[:60]!r}, a path computed at run time")
            return
        # A process substitution's /dev/fd/63 is what its command reads: that command is read on its own.
        globbed = word.expanded and globs.has_magic(word.text)
        self.out.targets.append(Target(word.text, how, recursive, glob=globbed))

    def whole_tree(self, how: str) -> None:
        self.out.targets.append(Target(".", how, recursive=True, whole_tree=True))

    def command(self, simple: SimpleCommand, words: list[Word], *, from_input: bool = False) -> None:
        out = self.out
        out.words.extend(word.text for word in words)
        reserved = simple.keywords
        while words and reserved and is_bare(words[0]) and words[0].text in _LEADING:
            keyword = words[0].text
            if keyword == "time":
                words = shell_words.after_time(words)
            elif keyword == "function":  # `function NAME { …; }`: the body's first command follows the name
                words = words[2:]
            elif keyword == "coproc":  # `coproc CMD …`, or `coproc NAME COMPOUND` (`coproc N { …; }`)
                named = len(words) > 2 and is_bare(words[2]) and words[2].text in _COMPOUND
                words = words[2:] if named else words[1:]
            else:
                words = words[1:]
        while words and is_assignment(words[0]):
            words = words[1:]
        if not words:
            return
        head = words[0]
        if head.expanded:
            out.unsure.append(f"the command name {head.text[:40]!r} is computed at run time")
            out.opaque.append((head.text, tuple(w.text for w in words[1:])))
            return
        if is_bare(head) and head.text in ("for", "select"):
            return  # `for x in …` runs nothing itself; the body's commands are read on their own
        if is_bare(head) and head.text == "case":
            out.unsure.append("case blocks are not read")
            return
        name = os.path.basename(head.text) or head.text
        args = words[1:]
        if name == "eval":
            self.script(" ".join(w.text for w in args), any(w.expanded for w in args), "the text eval runs")
            return
        if name in SU_LIKE:
            out.unsure.append(f"{name} runs a command this hook does not read")
            out.opaque.append((name, tuple(w.text for w in args)))
            return
        spec = WRAPPERS.get(name)
        if spec is not None:
            self.wrapped(simple, name, spec, args, from_input)
            return
        if from_input and name in WRITERS:
            out.unsure.append(f"xargs gives {name} arguments it reads at run time")
        if name in SHELLS:
            self.shell(simple, args)
        elif name in CD:
            if args and args[0].text not in ("-", "--"):
                self.chdir(args[0])
            elif args[-1:] and args[-1].text == "-":
                out.unsure.append(f"{name} - goes back to a directory this hook cannot see")
        elif name == "git":
            self.git(args)
        elif name == "find":
            self.find(simple, args)
        elif name in WRITERS:
            WRITERS[name](self, name, args)
            if name in ("perl", "ruby") and not any(t.how == f"{name} -i" for t in out.targets):
                out.opaque.append((name, tuple(w.text for w in args)))  # a program, not only an editor
        elif name not in READERS:  # ``source FILE`` too: what FILE runs is not on this line
            # what it is fed on stdin is its input too (``python3 - <<EOF … EOF``)
            out.opaque.append((name, (*(w.text for w in args), *simple.feed)))

    def chdir(self, word: Word) -> None:
        if word.expanded:
            self.out.unsure.append(f"the directory {word.text[:60]!r} is computed at run time")
        else:
            self.out.chdirs.append(word.text)

    def wrapped(
        self, simple: SimpleCommand, name: str, spec: Wrapper, rest: list[Word], from_input: bool
    ) -> None:
        """A wrapper: read its options (a script given to one is read; ``env -C DIR`` moves), then the
        command it runs."""
        while rest and (rest[0].text.startswith("-") or (spec.assignments and is_assignment(rest[0]))):
            word = rest[0]
            if word.text == "--":
                rest = rest[1:]
                break
            if spec.assignments and is_assignment(word):
                rest = rest[1:]
                continue
            long = word.text.startswith("--")
            flag, equals, glued = word.text.partition("=") if long else (word.text[:2], "", word.text[2:])
            if flag in spec.script_flags:
                script = glued if (glued or equals) else (rest[1].text if len(rest) > 1 else "")
                computed = word.expanded if (glued or equals) else len(rest) > 1 and rest[1].expanded
                tail = rest[1:] if (glued or equals) else rest[2:]
                if name == "env":  # env -S 'cmd args' ARGS…: the split string, then the words after it
                    script = " ".join([script, *(w.text for w in tail)])
                self.script(script, computed, f"the script given to {name}")
                return
            if flag in spec.no_command_flags:
                return
            takes_value = flag in spec.value_flags and not glued and not equals
            if name == "env" and flag in ("-C", "--chdir"):
                value = rest[1] if takes_value and len(rest) > 1 else Word(glued, word.expanded)
                self.chdir(value)
            rest = rest[2:] if takes_value else rest[1:]
        if spec.operand is not None and rest:
            rest = rest[1:]
        if spec.joined:
            if rest:
                text = " ".join(w.text for w in rest)
                self.script(text, any(w.expanded for w in rest), f"the {name} command")
            return
        if not rest:
            if spec.stdin_shell:
                self.stdin_script(simple)
            return
        inner = SimpleCommand(rest, simple.feed, simple.piped_from, keywords=False)
        self.command(inner, rest, from_input=from_input or name == "xargs")

    def shell(self, simple: SimpleCommand, args: list[Word]) -> None:
        """``bash -c SCRIPT``, ``bash FILE`` (its contents are not visible: opaque), or a shell reading its
        script from stdin."""
        operands, has_c, reads_stdin = shell_words.shell_options(args)
        if has_c:
            if operands:
                self.script(operands[0].text, operands[0].expanded, "the script given to a shell")
            return
        if operands and not reads_stdin:
            self.out.opaque.append(("bash", tuple(w.text for w in operands)))
            return
        self.stdin_script(simple)

    def stdin_script(self, simple: SimpleCommand) -> None:
        for body in simple.feed:
            self.nested(body)
        upstream = simple.piped_from
        if upstream is None:
            return
        head = os.path.basename(upstream[0].text) if upstream else ""
        if head in ("echo", "printf") and not any(w.expanded for w in upstream):
            self.nested("\n".join(w.text for w in upstream[1:] if not w.text.startswith("-")))
        else:
            self.out.unsure.append("a shell runs a script another command writes")

    # -- git -------------------------------------------------------------------------------------------------
    def git(self, args: list[Word]) -> None:
        index = 0
        while index < len(args) and args[index].text.startswith("-") and args[index].text != "--":
            flag = args[index].text
            if flag == "-C" and index + 1 < len(args):
                self.chdir(args[index + 1])
            elif flag.startswith(("--work-tree", "--git-dir")):
                self.out.unsure.append(f"git {flag.split('=')[0]} points git at another working tree")
            index += 2 if flag in GIT_GLOBAL_WITH_VALUE else 1
        rest = args[index:]
        if not rest:
            return
        sub, options, paths = rest[0].text, _options(rest[1:]), _operands(rest[1:], _GIT_VALUE_FLAGS)
        how = f"git {sub}"
        if sub == "checkout":
            after = _after_dashes(rest[1:])
            for word in after if after is not None else paths:
                self.write(word, how, recursive=True)
        elif sub == "restore":
            if "--staged" in options and not ({"--worktree", "-W"} & options):
                return  # the index only
            for word in paths:
                self.write(word, how, recursive=True)
        elif sub in ("rm", "mv"):
            if sub == "rm" and "--cached" in options:
                return
            for word in paths:
                self.write(word, how, recursive=True)
        elif sub == "reset":
            if {"--hard", "--merge", "--keep"} & options:
                self.whole_tree(f"git reset {sorted({'--hard', '--merge', '--keep'} & options)[0]}")
        elif sub == "stash":
            action = paths[0].text if paths else "push"
            if action in ("list", "show", "drop", "clear", "create", "store"):
                return
            pathspec = _after_dashes(rest[1:]) or (paths[1:] if action in ("push", "save") and paths else [])
            if action in ("push", "save") and pathspec:
                for word in pathspec:
                    self.write(word, how, recursive=True)
            else:
                self.whole_tree(f"git stash {action}")
        elif sub == "clean":
            if {"-n", "--dry-run"} & options:
                return
            after = _after_dashes(rest[1:]) or paths
            if after:
                for word in after:
                    self.write(word, how, recursive=True)
            else:
                self.whole_tree(how)
        elif sub == "apply" and not ({"--cached", "--check", "--stat", "--numstat", "--summary"} & options):
            self.whole_tree(how)

    # -- find ------------------------------------------------------------------------------------------------
    def find(self, simple: SimpleCommand, args: list[Word]) -> None:
        """``find START… EXPRESSION``: ``-delete`` or ``-exec`` of a command that writes or that this hook
        cannot read writes below the start paths; ``-fprint FILE`` writes FILE."""
        starts: list[Word] = []
        index = 0
        while index < len(args) and args[index].text in ("-H", "-L", "-P", "-O", "-D"):
            index += 2 if args[index].text in ("-D",) else 1
        while index < len(args) and not args[index].text.startswith(("-", "(", "!", ")")):
            starts.append(args[index])
            index += 1
        expression = args[index:]
        writes = False
        position = 0
        while position < len(expression):
            text = expression[position].text
            if text == "-delete":
                writes = True
            elif text in ("-fprint", "-fprint0", "-fprintf", "-fls") and position + 1 < len(expression):
                self.write(expression[position + 1], f"find {text}")
            elif text in ("-exec", "-execdir", "-ok", "-okdir"):
                inner: list[Word] = []
                position += 1
                while position < len(expression) and expression[position].text not in (";", "+"):
                    inner.append(expression[position])
                    position += 1
                before = (len(self.out.targets), len(self.out.opaque), len(self.out.unsure))
                if inner:
                    self.command(SimpleCommand(inner, [], None, keywords=False), inner)
                after = (len(self.out.targets), len(self.out.opaque), len(self.out.unsure))
                writes = writes or after != before
            position += 1
        if writes:
            for word in starts or [Word(".")]:
                self.write(word, "find", recursive=True)


# -- the writers ---------------------------------------------------------------------------------------------

_GIT_VALUE_FLAGS = frozenset(
    {"-s", "--source", "-m", "--message", "-b", "-B", "--orphan", "--conflict", "-C"}
)


def _options(words: list[Word]) -> set[str]:
    """The option words (before a ``--``), long ones without their ``=value``."""
    found: set[str] = set()
    for word in words:
        if word.text == "--":
            break
        if word.text.startswith("-") and word.text != "-":
            found.add(word.text.split("=", 1)[0])
    return found


def _operands(words: list[Word], value_flags: frozenset[str] = frozenset()) -> list[Word]:
    """The words that are not options (``--`` ends the options; a flag in ``value_flags`` takes the next
    word as its value)."""
    found: list[Word] = []
    index = 0
    while index < len(words):
        text = words[index].text
        if text == "--":
            return found + words[index + 1 :]
        if text.startswith("-") and text != "-":
            index += 2 if text in value_flags else 1
            continue
        found.append(words[index])
        index += 1
    return found


def _after_dashes(words: list[Word]) -> list[Word] | None:
    texts = [word.text for word in words]
    return words[texts.index("--") + 1 :] if "--" in texts else None


def _only_globbed(word: Word) -> bool:
    """An expanded word whose only expansion is a file-name pattern (no ``$``, no substitution)."""
    return "$" not in word.text and "`" not in word.text and "…" not in word.text


Writer = Callable[["_Reader", str, list[Word]], None]


def _every(value_flags: str = "") -> Writer:
    """Every operand is written (``rm``: and everything below it; without ``-r`` rm refuses a directory,
    but reading the flag is no safer than assuming it)."""
    flags = frozenset(value_flags.split())

    def write_all(reader: _Reader, name: str, args: list[Word]) -> None:
        for word in _operands(args, flags):
            reader.write(word, name, recursive=name in ("rm", "rmdir"))

    return write_all


def _modes(value_flags: str = "") -> Writer:
    """chmod/chown/chgrp: the first operand is the mode or owner (unless --reference=FILE)."""
    flags = frozenset(value_flags.split())

    def write_files(reader: _Reader, name: str, args: list[Word]) -> None:
        operands = _operands(args, flags)
        if not any(w.text.startswith("--reference") for w in args):
            operands = operands[1:]
        recursive = bool({"-R", "--recursive"} & _options(args))
        for word in operands:
            reader.write(word, name, recursive=recursive)

    return write_files


def _copy(moves: bool, links: bool = False) -> Writer:
    """cp/mv/install/ln: the destination (a directory receives each source by its name); a move removes its
    sources; a link made to a path is a second way to write it."""

    def write_copy(reader: _Reader, name: str, args: list[Word]) -> None:
        options = _options(args)
        value_flags = frozenset(
            {"-t", "--target-directory", "-S", "--suffix", "-m", "--mode", "-o", "--owner", "-g", "--group"}
        )
        operands = _operands(args, value_flags)
        target_dir = next(
            (args[i + 1] for i, w in enumerate(args[:-1]) if w.text in ("-t", "--target-directory")), None
        ) or next(
            (
                Word(w.text.split("=", 1)[1], w.expanded)
                for w in args
                if w.text.startswith("--target-directory=")
            ),
            None,
        )
        if name == "install" and {"-d", "--directory"} & options:
            for word in operands:
                reader.write(word, name)
            return
        linking = links or bool({"-l", "--link", "-s", "--symbolic-link"} & options)
        if target_dir is not None:
            sources, destination = operands, target_dir
        elif len(operands) >= 2:
            sources, destination = operands[:-1], operands[-1]
        elif operands and name == "ln":
            sources, destination = operands, Word(".")
        else:
            return
        for source in sources:
            if moves or linking:
                reader.write(source, f"{name} (its source)", recursive=moves)
            reader.write(
                Word(
                    os.path.join(destination.text, os.path.basename(source.text.rstrip("/"))),
                    destination.expanded or source.expanded,
                ),
                name,
                recursive=True,
            )
        reader.write(destination, name, recursive=len(sources) > 1 or target_dir is not None)

    return write_copy


def _tee(reader: _Reader, name: str, args: list[Word]) -> None:
    for word in _operands(args):
        reader.write(word, name)


def _in_place(reader: _Reader, name: str, args: list[Word]) -> None:
    """sed -i / perl -i / ruby -i: every file operand is rewritten; the script is ``-e``'s value, or the
    first operand when there is no ``-e``/``-f``."""
    in_place, scripted, files = False, False, []
    index = 0
    while index < len(args):
        text = args[index].text
        if text == "--":
            files.extend(args[index + 1 :])
            break
        if text.startswith("--"):
            in_place = in_place or text.startswith("--in-place")
            if text in ("--expression", "--file") and index + 1 < len(args):
                scripted = True
                index += 1
            scripted = scripted or text.startswith(("--expression=", "--file="))
        elif text.startswith("-") and len(text) > 1:
            letters = text[1:]
            for position, letter in enumerate(letters):
                if letter == "i":
                    in_place = True
                    break  # sed/perl: what follows -i is its backup suffix
                if letter in "ef":
                    scripted = True
                    if position == len(letters) - 1:
                        index += 1  # the script (or script file) is the next word
                    break
                if name != "sed" and letter in "IMmdx":  # perl's -I DIR / -M MODULE take a value
                    break
        else:
            files.append(args[index])
        index += 1
    if not in_place:
        return
    if not scripted and files:
        files = files[1:]
    for word in files:
        reader.write(word, f"{name} -i")


def _dd(reader: _Reader, name: str, args: list[Word]) -> None:
    for word in args:
        if word.text.startswith("of="):
            reader.write(Word(word.text[3:], word.expanded), "dd of=")


def _sort(reader: _Reader, name: str, args: list[Word]) -> None:
    for index, word in enumerate(args):
        if word.text in ("-o", "--output") and index + 1 < len(args):
            reader.write(args[index + 1], f"{name} -o")
        elif word.text.startswith("--output="):
            reader.write(Word(word.text.split("=", 1)[1], word.expanded), f"{name} -o")
        elif word.text.startswith("-o") and len(word.text) > 2:
            reader.write(Word(word.text[2:], word.expanded), f"{name} -o")


def _uniq(reader: _Reader, name: str, args: list[Word]) -> None:
    operands = _operands(
        args, frozenset({"-f", "-s", "-w", "--skip-fields", "--skip-chars", "--check-chars"})
    )
    if len(operands) >= 2:
        reader.write(operands[1], name)


def _tar(reader: _Reader, name: str, args: list[Word]) -> None:
    first = args[0].text if args else ""
    extracting = any(w.text in ("-x", "--extract", "--get") for w in args) or (
        not first.startswith("--") and "x" in first.lstrip("-")
    )
    if not extracting:
        return
    where = next((args[i + 1] for i, w in enumerate(args[:-1]) if w.text in ("-C", "--directory")), None)
    reader.write(where or Word("."), "tar -x", recursive=True)


def _route_init(reader: _Reader, name: str, args: list[Word]) -> None:
    if "--force" in _options(args):
        for word in _operands(args, frozenset({"-t", "--template"})) or [Word(".")]:
            reader.write(word, "route.init --force", recursive=True)


WRITERS: dict[str, Writer] = {
    "tee": _tee,
    "sed": _in_place,
    "perl": _in_place,
    "ruby": _in_place,
    "cp": _copy(moves=False),
    "mv": _copy(moves=True),
    "install": _copy(moves=False),
    "ln": _copy(moves=False, links=True),
    "rm": _every(),
    "rmdir": _every(),
    "unlink": _every(),
    "shred": _every("-n -s --iterations --size --random-source"),
    "truncate": _every("-s -r --size --reference"),
    "touch": _every("-r -d -t --reference --date"),
    "mkdir": _every("-m --mode"),
    "chmod": _modes(),
    "chown": _modes(),
    "chgrp": _modes(),
    "dd": _dd,
    "sort": _sort,
    "uniq": _uniq,
    "tar": _tar,
    "route.init": _route_init,
}
