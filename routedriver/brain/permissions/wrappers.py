"""What the permission reader (``shell``) knows about programs that run other commands.

A wrapper (``sudo``, ``timeout 5``, ``flock FILE``, ``watch`` …) runs the command written after its options,
so a rule must see that command, not the wrapper. Each entry says which options take a value (so the value
is not mistaken for the command), which options carry a shell script, and what else stands between the
options and the command. An option missing here would hide the command behind its value, so the lists
follow the programs' manuals.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Wrapper:
    value_flags: frozenset[str] = frozenset()  # options that take the next word as their value
    script_flags: frozenset[str] = frozenset()  # options whose value is a shell script (`script -c 'rm x'`)
    no_command_flags: frozenset[str] = frozenset()  # options after which no command runs (`command -v x`)
    operand: str | None = None  # a regex for one word between the options and the command ("" = any word)
    joined: bool = False  # the words after the options are joined into one shell script (`watch`)
    exec_flags: frozenset[str] = frozenset()  # options that turn `joined` off (`watch -x`)
    assignments: bool = False  # NAME=value words may stand among the options (`env`)
    privileged: bool = False  # runs the command as another user: rules see `sudo …` as well as the command
    stdin_shell: bool = False  # with no command it starts a shell that reads its script from stdin
    command_operands: bool = True  # the words after the options are the command (`script`'s is a log file)


def _flags(text: str) -> frozenset[str]:
    return frozenset(text.split())


WRAPPERS: dict[str, Wrapper] = {
    "env": Wrapper(_flags("-u --unset -C --chdir -P"), _flags("-S --split-string"), assignments=True),
    "sudo": Wrapper(
        _flags(
            "-u -g -C -D -h -p -r -t -U -T -R --user --group --close-from --chdir --host --prompt --role "
            "--type --other-user --command-timeout --chroot"
        ),
        no_command_flags=_flags("-l --list -v --validate -e --edit -K --remove-timestamp -V --version"),
        privileged=True,
        stdin_shell=True,
    ),
    "doas": Wrapper(_flags("-u -C"), privileged=True, stdin_shell=True),
    "pkexec": Wrapper(_flags("--user"), privileged=True, stdin_shell=True),
    "chroot": Wrapper(_flags("--userspec --groups"), operand="", privileged=True, stdin_shell=True),
    "exec": Wrapper(_flags("-a")),
    "time": Wrapper(_flags("-f -o --format --output")),
    "nice": Wrapper(_flags("-n --adjustment")),
    "ionice": Wrapper(_flags("-c -n -p -P -u --class --classdata --pid --pgid --uid")),
    "stdbuf": Wrapper(_flags("-i -o -e --input --output --error")),
    "timeout": Wrapper(_flags("-s -k --signal --kill-after"), operand=""),
    "flock": Wrapper(
        _flags("-w --wait --timeout -E --conflict-exit-code"), _flags("-c --command"), operand=""
    ),
    "strace": Wrapper(
        _flags("-a -b -e -E -I -o -O -p -P -s -S -u -X --output --signal --env --user --attach --path")
    ),
    "ltrace": Wrapper(_flags("-a -A -b -D -e -F -l -n -o -p -s -u -w -x -X --output --library --indent")),
    "watch": Wrapper(_flags("-n --interval -q --equexit"), joined=True, exec_flags=_flags("-x --exec")),
    "script": Wrapper(
        _flags(
            "-E --echo -I --log-in -O --log-out -B --log-io -T --log-timing -m --logging-format "
            "-o --output-limit"
        ),
        _flags("-c --command"),
        stdin_shell=True,
        command_operands=False,
    ),
    "taskset": Wrapper(no_command_flags=_flags("-p --pid"), operand=""),
    "chrt": Wrapper(
        _flags("-T -P -D --sched-runtime --sched-period --sched-deadline"),
        no_command_flags=_flags("-p --pid -m --max"),
        operand=r"^\d+$",
    ),
    "fakeroot": Wrapper(_flags("-l --lib --faked -s -i -b")),
    "xargs": Wrapper(
        _flags(
            "-I -n -P -L -s -d -E -a --max-args --max-procs --max-lines --max-chars --delimiter --arg-file "
            "--process-slot-var"
        )
    ),
    "command": Wrapper(no_command_flags=_flags("-v -V")),
    "builtin": Wrapper(),
    "busybox": Wrapper(),  # multiplexers: `busybox rm x` runs the applet `rm`
    "toybox": Wrapper(),
    "nohup": Wrapper(),
    "setsid": Wrapper(),
    "unbuffer": Wrapper(),
    "valgrind": Wrapper(),  # its options are all --name=value
}

# `su`/`runuser` take their -c script anywhere on the line (`su root -c 'rm x'`); runuser -u runs argv.
SU_LIKE = frozenset({"su", "runuser"})
SU_VALUE_FLAGS = _flags("-g -G -s -w -u --group --supp-group --shell --whitelist-environment --user")
SU_SCRIPT_FLAGS = _flags("-c --command")

# Variables whose value is a command some program runs (git's pager and editor, ssh, askpass helpers).
COMMAND_VARIABLES = frozenset(
    {
        "PAGER",
        "MANPAGER",
        "GIT_PAGER",
        "EDITOR",
        "VISUAL",
        "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_EXTERNAL_DIFF",
        "GIT_ASKPASS",
        "SSH_ASKPASS",
        "PROMPT_COMMAND",
        "LESSOPEN",
        "LESSCLOSE",
    }
)
# Variables that make a program load code from somewhere the command line does not show.
LOADING_VARIABLES = frozenset(
    {
        "BASH_ENV",
        "ENV",
        "LD_PRELOAD",
        "LD_AUDIT",
        "GIT_EXEC_PATH",
        "GIT_CONFIG",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_SYSTEM",
        "GIT_CONFIG_PARAMETERS",
        "GIT_CONFIG_COUNT",
        "GIT_TEMPLATE_DIR",
    }
)
# Prompt strings are expanded (with command substitution) when bash shows them, e.g. PS4 under `set -x`.
PROMPT_VARIABLES = frozenset({"PS0", "PS1", "PS2", "PS3", "PS4"})
DECLARING = frozenset({"export", "declare", "typeset", "local", "readonly"})

# git's global options (written before the subcommand) that take the next word as their value.
# (`--exec-path` takes one only as `--exec-path=DIR`; alone it prints the path.)
GIT_GLOBAL_WITH_VALUE = frozenset(
    {"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix", "--attr-source"}
)
# `git -c KEY=VALUE` keys known not to make git run a program; any other key (core.pager, alias.*,
# core.sshCommand, credential.helper, diff.*.textconv …) could, so the command is asked about.
GIT_SAFE_CONFIG_SECTIONS = ("user.", "author.", "committer.", "color.", "advice.", "i18n.", "column.")
GIT_SAFE_CONFIG_KEYS = frozenset(
    {
        "core.quotepath",
        "core.autocrlf",
        "core.safecrlf",
        "core.filemode",
        "core.abbrev",
        "core.ignorecase",
        "core.longpaths",
        "core.precomposeunicode",
        "core.eol",
        "core.symlinks",
        "core.logallrefupdates",
        "init.defaultbranch",
        "commit.gpgsign",
        "tag.gpgsign",
        "safe.directory",
        "pull.rebase",
        "pull.ff",
        "merge.ff",
        "push.default",
        "push.autosetupremote",
        "fetch.prune",
        "gc.auto",
        "maintenance.auto",
        "merge.conflictstyle",
        "rebase.autosquash",
        "rebase.autostash",
        "rerere.enabled",
        "status.showuntrackedfiles",
        "log.decorate",
        "log.date",
        "diff.noprefix",
        "diff.renames",
        "diff.algorithm",
        "protocol.file.allow",
        "http.sslverify",
        "checkout.defaultremote",
        "branch.autosetupmerge",
        "submodule.recurse",
        "commit.verbose",
        "pack.threads",
        "index.threads",
    }
)
# `git config` options that take a value before the key (`git config --file x alias.p push`).
GIT_CONFIG_VALUE_FLAGS = frozenset({"-f", "--file", "--blob", "--type", "--default", "--comment"})


def git_config_is_safe(key: str) -> bool:
    key = key.lower()
    return key in GIT_SAFE_CONFIG_KEYS or key.startswith(GIT_SAFE_CONFIG_SECTIONS)
