"""Programs whose options or arguments run commands, for the permission reader (``shell``).

A wrapper (``sudo``, ``timeout``: see ``wrappers``) runs the command written after its options. These
programs hide one in an option's value or in a program text instead: ``tar --checkpoint-action=exec=CMD``,
``-I``/``--use-compress-program``, ``--to-command``, ``--info-script``; ``rsync -e``/``--rsync-path``;
``ssh -o ProxyCommand=CMD`` (and its remote command), ``scp``/``sftp -S``; ``awk``'s ``system()`` and pipes;
``sed``'s ``e`` command and ``s///e``; ``vim -c '!CMD'``; ``less +!CMD``; ``man -P``/``-H``; ``zip -TT``;
``wget --use-askpass``; ``tmux`` commands that take shell commands; GNU ``parallel``. Each handler reads
such a command as a script (so a deny rule sees it) and tells the reader it is unsure where it cannot tell
what runs (an awk program that calls ``system()``, a sed ``e`` that runs its pattern space, a vim command).

A handler gets the program's words (``words[0]`` is the program) and a ``Reading``: ``script(text,
expanded, what)`` reads text as a shell script, ``unsure(why)`` says what cannot be told.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Protocol

from routedriver.shellsyntax.words import Word


class Reading(Protocol):
    def script(self, text: str, expanded: bool, what: str) -> None:
        """Read ``text`` as a shell script that the program runs (``expanded``: it holds run-time values)."""

    def unsure(self, reason: str) -> None:
        """What runs cannot be told with confidence."""


Handler = Callable[[Reading, list[Word]], None]


def _long(word: str, names: Sequence[str]) -> tuple[str, str | None] | None:
    """``--name=value`` / ``--name`` as one of ``names`` (a unique start of one counts, as getopt_long reads
    it; a start shared by several counts as each: erring towards reading more); (name, value or None)."""
    if not word.startswith("--") or word == "--":
        return None
    given, eq, value = word[2:].partition("=")
    if len(given) < 2:
        return None
    for name in names:
        if name == given or name.startswith(given):
            return name, (value if eq else None)
    return None


def _value(words: list[Word], index: int, glued: str | None) -> tuple[Word | None, int]:
    """An option's value: ``glued`` to it, or the next word; (the value, the index after it)."""
    if glued is not None:
        return Word(glued, words[index].expanded, True), index + 1
    if index + 1 < len(words):
        return words[index + 1], index + 2
    return None, index + 1


# -- tar ----------------------------------------------------------------------------------------------------
_TAR_SCRIPTS = ("checkpoint-action", "to-command", "use-compress-program", "info-script", "new-volume-script")
_TAR_PROGRAMS = ("rsh-command", "rmt-command")
_TAR_SHORT_VALUES = frozenset("bCfFgHIKLNTVX")  # short options that take a value
_TAR_SHORT_SCRIPTS = frozenset("IF")  # -I PROG, -F SCRIPT


def tar(reading: Reading, words: list[Word]) -> None:
    index, first = 1, True
    while index < len(words):
        text = words[index].text
        if text == "--":
            return
        found = _long(text, (*_TAR_SCRIPTS, *_TAR_PROGRAMS))
        if found is not None:
            name, glued = found
            value, index = _value(words, index, glued)
            if value is None:
                reading.unsure(f"tar --{name} without its value")
            elif name == "checkpoint-action":
                action = value.text
                if action.startswith("exec="):
                    reading.script(action[5:], value.expanded, "tar --checkpoint-action=exec")
            else:
                reading.script(value.text, value.expanded, f"tar --{name}")
            first = False
            continue
        old_style = first and not text.startswith("-") and text.isalpha()
        if text.startswith("-") and not text.startswith("--") or old_style:
            letters = text[1:] if text.startswith("-") else text
            index += 1
            for position, letter in enumerate(letters):
                if letter not in _TAR_SHORT_VALUES:
                    continue
                if not old_style and position < len(letters) - 1:  # -IPROG: the rest of the word
                    if letter in _TAR_SHORT_SCRIPTS:
                        reading.script(letters[position + 1 :], words[index - 1].expanded, f"tar -{letter}")
                    break
                # the next word is its value (old style: each letter in turn takes the next word)
                if index >= len(words):
                    reading.unsure(f"tar -{letter} without its value")
                    return
                if letter in _TAR_SHORT_SCRIPTS:
                    reading.script(words[index].text, words[index].expanded, f"tar -{letter}")
                index += 1
            first = False
            continue
        first = False
        index += 1


# -- rsync --------------------------------------------------------------------------------------------------
def rsync(reading: Reading, words: list[Word]) -> None:
    index = 1
    while index < len(words):
        text = words[index].text
        if text == "--":
            return
        found = _long(text, ("rsh", "rsync-path", "remote-option"))
        if found is not None:
            name, glued = found
            value, index = _value(words, index, glued)
            if value is None:
                reading.unsure(f"rsync --{name} without its value")
            elif name == "remote-option":
                if value.text.startswith("--rsync-path="):
                    reading.script(value.text.split("=", 1)[1], value.expanded, "rsync --rsync-path")
            else:
                reading.script(value.text, value.expanded, f"rsync --{name}")
            continue
        if text.startswith("-") and not text.startswith("--") and "e" in text[1:]:
            # -e CMD, -eCMD, -avze CMD: e takes the rest of the word or the next word
            rest = text[text.index("e", 1) + 1 :]
            value, index = _value(words, index, rest or None)
            if value is None:
                reading.unsure("rsync -e without its value")
            else:
                reading.script(value.text, value.expanded, "rsync -e")
            continue
        index += 1


# -- ssh, scp, sftp -----------------------------------------------------------------------------------------
def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_SSH_VALUES = _set("-B -b -c -D -E -e -F -I -i -J -L -l -m -O -o -p -Q -R -S -W -w -P -s")
_SSH_COMMAND_OPTIONS = frozenset({"proxycommand", "localcommand", "knownhostscommand", "remotecommand"})


def _ssh_option(reading: Reading, value: Word, program: str) -> None:
    """``-o Key=Value`` / ``-o 'Key Value'``: a command-running key's value is a script."""
    parts = re.split(r"\s*=\s*|\s+", value.text.strip(), maxsplit=1)
    key, rest = parts[0].lower(), parts[1] if len(parts) > 1 else ""
    if key in _SSH_COMMAND_OPTIONS:
        reading.script(rest, value.expanded, f"{program} -o {parts[0]}")


def ssh(reading: Reading, words: list[Word]) -> None:
    """ssh/scp/sftp/slogin: ``-o`` keys that run commands, ``-F`` (a config file can), ``scp -S``/``sftp -S
    -D`` (programs), and ssh's remote command (it may be run on this very machine)."""
    program = words[0].text.rsplit("/", 1)[-1]
    index = 1
    while index < len(words):
        text = words[index].text
        if text == "--":
            index += 1
            break
        if not text.startswith("-") or text == "-":
            break
        # a cluster of flags, perhaps with one that takes a value (-o Key=V, -oKey=V, -vo Key=V): the first
        # such flag ends it, its value the rest of the word or the next word
        at = next((i for i, c in enumerate(text[1:], start=1) if f"-{c}" in _SSH_VALUES), None)
        if at is None:
            index += 1
            continue
        flag, glued = f"-{text[at]}", text[at + 1 :] or None
        value, index = _value(words, index, glued)
        if value is None:
            reading.unsure(f"{program} {flag} without its value")
            return
        if flag == "-o":
            _ssh_option(reading, value, program)
        elif flag == "-F":
            reading.unsure(f"{program} -F reads a config file, which can make it run commands")
        elif (flag == "-S" and program in ("scp", "sftp")) or (flag == "-D" and program == "sftp"):
            reading.script(value.text, value.expanded, f"{program} {flag}")
    if program in ("ssh", "slogin") and index + 1 < len(words):
        remote = words[index + 1 :]  # after the host: a command for the remote (maybe this) host's shell
        reading.script(" ".join(w.text for w in remote), any(w.expanded for w in remote), "ssh's command")


# -- awk ----------------------------------------------------------------------------------------------------
_AWK_VALUES = frozenset({"-F", "-v", "-f", "-e", "-E", "-W", "-i", "-l"})
_AWK_RUNS = re.compile(r"\bsystem\s*\(|(?<![|])\|(?![|])")  # system(), and pipes to or from commands
_AWK_STRING = r'"((?:[^"\\]|\\.)*)"'
_AWK_COMMANDS = (
    re.compile(r"\bsystem\s*\(\s*" + _AWK_STRING),
    re.compile(r"(?<![|])\|&?\s*" + _AWK_STRING),
    re.compile(_AWK_STRING + r"\s*\|&?\s*getline"),
)


def awk(reading: Reading, words: list[Word]) -> None:
    programs: list[Word] = []
    from_file = False
    index = 1
    while index < len(words):
        text = words[index].text
        if text == "--":
            index += 1
            break
        found = _long(text, ("source", "file", "exec", "assign", "field-separator", "include", "load"))
        if found is not None:
            name, glued = found
            value, index = _value(words, index, glued)
            if name == "source" and value is not None:
                programs.append(value)
            from_file = from_file or name in ("file", "exec", "include", "load")
            continue
        if text.startswith("-") and len(text) > 1 and not text.startswith("--"):
            flag = text[:2]
            if flag in _AWK_VALUES:
                value, index = _value(words, index, text[2:] or None)
                if flag == "-e" and value is not None:
                    programs.append(value)
                from_file = from_file or flag in ("-f", "-E", "-i", "-l")
            else:
                index += 1
            continue
        break
    if not programs and not from_file and index < len(words):
        programs.append(words[index])
    for program in programs:
        if program.expanded:
            reading.unsure("an awk program made at run time")
        elif _AWK_RUNS.search(program.text):
            reading.unsure("an awk program runs commands (system() or a pipe)")
            for pattern in _AWK_COMMANDS:
                for match in pattern.finditer(program.text):
                    command = re.sub(r"\\(.)", r"\1", match.group(1))
                    reading.script(command, False, "a command an awk program runs")


# -- sed ----------------------------------------------------------------------------------------------------
class _SedError(ValueError):
    pass


def sed_commands(script: str) -> tuple[list[str], bool]:
    """The shell commands a sed script runs: the text of each ``e command``, and whether an ``e`` without one
    or an ``s///e`` runs text known only at run time (the pattern space). Raises ``ValueError`` for a script
    it cannot read."""
    commands: list[str] = []
    runtime = False
    index, end = 0, len(script)

    def skip_blank() -> None:
        nonlocal index
        while index < end and script[index] in " \t":
            index += 1

    def delimited(delim: str) -> str:
        """The text up to an unescaped ``delim`` (moving past it)."""
        nonlocal index
        start = index
        while index < end and script[index] != delim:
            index += 2 if script[index] == "\\" else 1
        if index >= end:
            raise _SedError(f"unterminated {delim!r}")
        index += 1
        return script[start : index - 1]

    def rest_of_line() -> str:
        nonlocal index
        start = index
        newline = script.find("\n", index)
        index = end if newline < 0 else newline
        return script[start:index]

    while index < end:
        while index < end and script[index] in " \t\n;":
            index += 1
        if index >= end:
            break
        # an address: a number (with ~step), $, /regex/ or \cregexc; two of them joined by a comma
        for _ in range(2):
            skip_blank()
            if index < end and script[index] in "0123456789$+~":
                while index < end and script[index] in "0123456789$+~":
                    index += 1
            elif index < end and script[index] == "/":
                index += 1
                delimited("/")
            elif index < end and script[index] == "\\" and index + 1 < end:
                index += 2
                delimited(script[index - 1])
            else:
                break
            while index < end and script[index] in "IM":
                index += 1
            skip_blank()
            if index < end and script[index] == ",":
                index += 1
                continue
            break
        skip_blank()
        while index < end and script[index] in "! \t":
            index += 1
        if index >= end:
            raise _SedError("an address without a command")
        command = script[index]
        index += 1
        if command in "{}=dDgGhHlnNpPxzFqQL":
            while index < end and script[index].isdigit():
                index += 1
        elif command == "#" or command in ":rRwW":  # a comment, a label or a file name: the rest of the line
            rest_of_line()
        elif command in "btTv":
            index = _label(script, index, end)
        elif command in "aic":
            index = _text(script, index, end)
        elif command == "e":
            skip_blank()
            text = rest_of_line().strip()
            if text:
                commands.append(text)
            else:
                runtime = True
        elif command in "sy":
            if index >= end:
                raise _SedError(f"{command} without a delimiter")
            delim = script[index]
            index += 1
            delimited(delim)
            delimited(delim)
            if command == "s":
                start = index
                while index < end and script[index] not in ";\n}":
                    if script[index] == "w":  # w FILE takes the rest of the line
                        rest_of_line()
                        break
                    index += 1
                if "e" in script[start:index]:
                    runtime = True
        else:
            raise _SedError(f"unknown command {command!r}")
    return commands, runtime


def _label(script: str, index: int, end: int) -> int:
    while index < end and script[index] not in ";\n}":
        index += 1
    return index


def _text(script: str, index: int, end: int) -> int:
    """Past the text of ``a``, ``i``, ``c``: to the end of the line, lines ending in a backslash going on."""
    while index < end:
        if script[index] == "\\" and index + 1 < end:
            index += 2
            continue
        if script[index] == "\n":
            return index
        index += 1
    return index


def sed(reading: Reading, words: list[Word]) -> None:
    scripts: list[Word] = []
    from_file = False
    index = 1
    while index < len(words):
        text = words[index].text
        if text == "--":
            index += 1
            break
        if text == "--sandbox":
            return  # e, r and w are refused: nothing runs
        found = _long(text, ("expression", "file", "line-length"))
        if found is not None:
            name, glued = found
            value, index = _value(words, index, glued)
            if name == "expression" and value is not None:
                scripts.append(value)
            from_file = from_file or name == "file"
            continue
        if text.startswith("-") and len(text) > 1 and not text.startswith("--"):
            letters = text[1:]
            taken = next((c for c in letters if c in "efl"), None)
            if taken is None or letters.startswith("i"):  # -i[SUFFIX] takes a glued suffix only
                index += 1
                continue
            glued = letters[letters.index(taken) + 1 :] or None
            value, index = _value(words, index, glued)
            if taken == "e" and value is not None:
                scripts.append(value)
            from_file = from_file or taken == "f"
            continue
        if text.startswith("--"):
            index += 1
            continue
        break
    if not scripts and not from_file and index < len(words):
        scripts.append(words[index])
    for script in scripts:
        if script.expanded:
            reading.unsure("a sed script made at run time")
            continue
        try:
            commands, runtime = sed_commands(script.text)
        except ValueError:
            if re.search(r"(^|[;\n{}])\s*e|/e", script.text):
                reading.unsure("a sed script that may run commands (e) could not be read")
            continue
        for command in commands:
            reading.script(command, False, "sed's e command")
        if runtime:
            reading.unsure("sed runs its pattern space as a command (e, s///e)")


# -- vim, less, man, zip, wget ------------------------------------------------------------------------------
def vim(reading: Reading, words: list[Word]) -> None:
    """Ex commands given to vim (``-c``, ``+``, ``--cmd``) can run anything: the reader is unsure, and reads
    what follows a ``!`` (a shell command) so a deny rule sees it. Scripts from files (``-S``, ``-s``, ``-u``)
    are not read."""
    index = 1
    while index < len(words):
        word = words[index]
        text = word.text
        ex: Word | None = None
        if text in ("-c", "--cmd"):
            ex, index = _value(words, index, None)
        elif text.startswith("-c") and len(text) > 2:
            ex, index = Word(text[2:], word.expanded, True), index + 1
        elif text.startswith("+") and len(text) > 1 and not text[1:].isdigit():
            ex, index = Word(text[1:], word.expanded, True), index + 1
        elif text in ("-S", "-s", "-u") or (text.startswith("-S") and len(text) > 2):
            value, index = _value(words, index, None) if text in ("-S", "-s", "-u") else (None, index + 1)
            if value is None or value.text not in ("NONE", "NORC", "DEFAULTS"):
                reading.unsure(f"vim {text[:2]} runs the commands of a file")
            continue
        else:
            index += 1
            continue
        if ex is None:
            reading.unsure(f"vim {text} without its command")
            return
        reading.unsure("an Ex command given to vim can run programs")
        if "!" in ex.text:
            reading.script(ex.text.split("!", 1)[1], ex.expanded, "a shell command given to vim")


def less(reading: Reading, words: list[Word]) -> None:
    for word in words[1:]:
        if word.text.startswith("+") and "!" in word.text:
            reading.unsure("a less command given on the command line runs a program")
            reading.script(word.text.split("!", 1)[1], word.expanded, "a shell command given to less")


def man(reading: Reading, words: list[Word]) -> None:
    """``-P PAGER``/``--pager``, and ``-H[BROWSER]``/``--html[=BROWSER]`` (its value only glued on)."""
    index = 1
    while index < len(words):
        text = words[index].text
        found = _long(text, ("pager", "html"))
        if found is None and text[:2] in ("-P", "-H"):
            found = ("pager" if text[:2] == "-P" else "html", text[2:] or None)
        if found is None:
            index += 1
            continue
        name, glued = found
        if name == "html" and glued is None:
            index += 1  # the browser comes from $BROWSER
            continue
        value, index = _value(words, index, glued)
        if value is not None:
            reading.script(value.text, value.expanded, f"man's {name}")


def zip_(reading: Reading, words: list[Word]) -> None:
    index = 1
    while index < len(words):
        text = words[index].text
        found = _long(text, ("unzip-command",))
        if text == "-TT" or found is not None:
            value, index = _value(words, index, found[1] if found else None)
            if value is None:
                reading.unsure("zip -TT without its command")
            else:
                reading.script(value.text, value.expanded, "zip -TT")
            continue
        index += 1


def wget(reading: Reading, words: list[Word]) -> None:
    index = 1
    while index < len(words):
        text = words[index].text
        found = _long(text, ("use-askpass", "execute"))
        if found is None and text.startswith("-e"):
            found = ("execute", text[2:] or None)
        if found is None:
            index += 1
            continue
        name, glued = found
        value, index = _value(words, index, glued)
        if value is None:
            continue
        if name == "use-askpass":
            reading.script(value.text, value.expanded, "wget --use-askpass")
        elif "askpass" in value.text.replace("_", "").lower():  # -e use_askpass=CMD (a wgetrc command)
            reading.script(value.text.split("=", 1)[-1], value.expanded, "wget -e use_askpass")


# -- tmux, parallel ------------------------------------------------------------------------------------------
_TMUX_RUNNERS = _set(
    "new new-session new-window neww split-window splitw run-shell run respawn-pane respawnp respawn-window "
    "respawnw if-shell if pipe-pane pipep display-popup popup source-file source set-hook bind-key bind "
    "command-prompt confirm-before send-keys send"
)


_TMUX_VALUES = frozenset("cfLST")  # tmux's own options (before its command) that take a value


def tmux(reading: Reading, words: list[Word]) -> None:
    """tmux starts a server that runs the shell commands it is given, now or later (hooks, key bindings):
    what they are cannot always be told; each word after such a command is read as one, to err on the side
    of refusing. Its own ``-c CMD`` runs CMD with the shell; ``-f FILE`` reads commands from a file."""
    index = 1
    while index < len(words) and words[index].text.startswith("-") and words[index].text != "--":
        text = words[index].text
        letter = next((c for c in text[1:] if c in _TMUX_VALUES), "")
        glued = text[text.index(letter) + 1 :] or None if letter else None
        value, index = _value(words, index, glued) if letter else (None, index + 1)
        if letter == "c" and value is not None:
            reading.script(value.text, value.expanded, "tmux -c")
        elif letter == "f":
            reading.unsure("tmux -f reads commands from a configuration file")
    texts = [w.text for w in words]
    runner = next((i for i, t in enumerate(texts) if t in _TMUX_RUNNERS), None)
    if runner is None:
        return
    reading.unsure(f"tmux {texts[runner]} runs shell commands")
    for word in words[runner + 1 :]:
        if not word.text.startswith("-"):
            reading.script(word.text, word.expanded, f"a command given to tmux {texts[runner]}")


_PARALLEL_VALUES = _set(
    "-j --jobs -S --sshlogin -a --arg-file -d --delimiter -E -I --colsep -C -N -n --max-args -L "
    "--max-lines --tmpdir --results --joblog --timeout --delay --retries -P --max-procs --sshloginfile "
    "--basefile --env --workdir --wd --tag-string --header --memfree --load --nice"
)


def parallel(reading: Reading, words: list[Word]) -> None:
    """GNU parallel runs its command (with ``{}`` replaced) through a shell, once per input."""
    index = 1
    while index < len(words) and words[index].text.startswith("-"):
        text = words[index].text
        index += 2 if text in _PARALLEL_VALUES else 1
    command = []
    while index < len(words) and words[index].text not in (":::", "::::", ":::+", "::::+"):
        command.append(words[index])
        index += 1
    if not command:
        reading.unsure("parallel runs commands read from its input")
        return
    reading.script(" ".join(w.text for w in command), any(w.expanded for w in command), "parallel's command")


HANDLERS: dict[str, Handler] = {
    "tar": tar,
    "gtar": tar,
    "bsdtar": tar,
    "rsync": rsync,
    "ssh": ssh,
    "slogin": ssh,
    "scp": ssh,
    "sftp": ssh,
    "awk": awk,
    "gawk": awk,
    "mawk": awk,
    "nawk": awk,
    "original-awk": awk,
    "sed": sed,
    "gsed": sed,
    "vim": vim,
    "vi": vim,
    "nvim": vim,
    "ex": vim,
    "view": vim,
    "vimdiff": vim,
    "gvim": vim,
    "evim": vim,
    "nvi": vim,
    "less": less,
    "man": man,
    "zip": zip_,
    "wget": wget,
    "tmux": tmux,
    "parallel": parallel,
}
