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
    # the words after the options are the command; False: they are files (`script`'s log), and getopt lets
    # options follow them (`script LOG -c 'rm x'`)
    command_operands: bool = True
    operand_first: bool = False  # the operand, when given, comes before any option (`setarch [ARCH] -R cmd`)
    pair_flags: frozenset[str] = frozenset()  # options that take the next TWO words (`bwrap --bind SRC DEST`)


def _flags(text: str) -> frozenset[str]:
    return frozenset(text.split())


WRAPPERS: dict[str, Wrapper] = {
    # env -S STRING: read in ``shell._env_split`` (env splits STRING into more of its own arguments)
    "env": Wrapper(_flags("-u --unset -C --chdir -P -a --argv0"), assignments=True),
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
    # /usr/bin/time (`command time`, `sudo time`); bash's reserved word `time` is read in ``shell._resolve``
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
    # util-linux and friends that run a command in other namespaces, limits or personalities
    "unshare": Wrapper(
        _flags(
            "--propagation --setgroups -R --root -w --wd -S --setuid -G --setgid --monotonic --boottime "
            "--map-user --map-group --map-users --map-groups -l --load-interp"
        ),
        privileged=True,
        stdin_shell=True,
    ),
    "nsenter": Wrapper(
        _flags("-t --target -S --setuid -G --setgid -W --wdns"), privileged=True, stdin_shell=True
    ),
    "prlimit": Wrapper(_flags("-p --pid -o --output"), no_command_flags=_flags("-p --pid")),
    "setpriv": Wrapper(
        _flags(
            "--ambient-caps --inh-caps --bounding-set --ruid --euid --rgid --egid --reuid --regid --groups "
            "--securebits --pdeathsig --selinux-label --apparmor-profile --landlock-access --landlock-rule "
            "--seccomp-filter"
        ),
        no_command_flags=_flags("-d --dump"),
        privileged=True,
    ),
    # setarch [ARCH] [options] [program]: no program runs /bin/sh
    "setarch": Wrapper(
        no_command_flags=_flags("--list"), operand=r"^[^-]", operand_first=True, stdin_shell=True
    ),
    "numactl": Wrapper(
        _flags(
            "-i --interleave -m --membind -N --cpunodebind -C --physcpubind -p --preferred -P "
            "--preferred-many -b --balancing -w --weighted-interleave"
        ),
        no_command_flags=_flags("-s --show -H --hardware"),
    ),
    "cgexec": Wrapper(_flags("-g")),
    "runcon": Wrapper(_flags("-u -r -t -l --user --role --type --range"), operand=":", privileged=True),
    "chpst": Wrapper(_flags("-u -U -b -e -/ -C -n -l -L -m -d -o -p -f -c -r -t"), privileged=True),
    "aa-exec": Wrapper(_flags("-p --profile -n --namespace")),
    "firejail": Wrapper(no_command_flags=_flags("--list --tree --top"), stdin_shell=True),
    "bwrap": Wrapper(
        _flags(
            "--args --argv0 --unsetenv --lock-file --sync-fd --userns --userns2 --pidns --uid --gid "
            "--hostname --chdir --remount-ro --exec-label --file-label --proc --dev --tmpfs --mqueue --dir "
            "--seccomp --add-seccomp-fd --block-fd --userns-block-fd --info-fd --json-status-fd --cap-add "
            "--cap-drop --perms --size"
        ),
        pair_flags=_flags(
            "--bind --ro-bind --dev-bind --bind-try --ro-bind-try --dev-bind-try --symlink --file "
            "--bind-data --ro-bind-data --setenv --chmod --overlay-src"
        ),
    ),
    "systemd-run": Wrapper(
        _flags(
            "-u --unit -p --property -E --setenv --uid --gid --nice -D --working-directory --slice "
            "--description -H --host -M --machine --on-active --on-boot --on-startup --on-unit-active "
            "--on-unit-inactive --on-calendar --timer-property --path-property --socket-property "
            "--service-type"
        )
    ),
    "ssh-agent": Wrapper(_flags("-a -E -t -O -P"), no_command_flags=_flags("-k")),
    "dbus-launch": Wrapper(),
    "dbus-run-session": Wrapper(),
    "xvfb-run": Wrapper(
        _flags("-n --server-num -p --xauth-protocol -e --error-file -f --auth-file -s --server-args")
    ),
    "torsocks": Wrapper(_flags("-u --user -p --pass -a --address -P --port"), stdin_shell=True),
    "proxychains": Wrapper(_flags("-f")),
    "proxychains4": Wrapper(_flags("-f")),
    "lckdo": Wrapper(_flags("-w -W"), operand=""),
    "cpulimit": Wrapper(_flags("-l --limit"), no_command_flags=_flags("-p --pid -e --exe -P --path")),
    "trickle": Wrapper(_flags("-u -d -w -t -l -n")),
    "faketime": Wrapper(_flags("-p"), operand=""),
    "eatmydata": Wrapper(),
    "nocache": Wrapper(),
    "catchsegv": Wrapper(),
    "torify": Wrapper(),
    "chronic": Wrapper(),
    "ifne": Wrapper(),
    "nq": Wrapper(),
    # at and batch run the script they read on stdin later (or a file's, with -f: not read here)
    "at": Wrapper(
        _flags("-q -t -f"),
        no_command_flags=_flags("-f -l -d -r -c -V"),
        stdin_shell=True,
        command_operands=False,
    ),
    "batch": Wrapper(
        _flags("-q -f"), no_command_flags=_flags("-f -V"), stdin_shell=True, command_operands=False
    ),
    "screen": Wrapper(_flags("-c -e -h -p -S -T -t -s"), no_command_flags=_flags("-r -R -x -ls -list -wipe")),
}
# setarch's personality names, as commands of their own: `linux64 cmd`
for _personality in ("linux32", "linux64", "i386", "i686", "x86_64", "uname26"):
    WRAPPERS[_personality] = Wrapper(no_command_flags=_flags("--list"), stdin_shell=True)

# Shells whose -c script or stdin is bash syntax, as far as a rule is concerned: bash's restricted mode, the
# POSIX sh family (dash, busybox's ash and hush), the Korn shells and zsh, under the names their Debian
# packages install them by.
SHELLS = _flags(
    "bash rbash bash-static sh dash ash hush zsh rzsh zsh-static ksh rksh ksh93 rksh93 mksh mksh-static lksh "
    "pdksh oksh loksh yash posh bosh"
)
# Shells of another syntax: their -c script or stdin is read as bash's, and the reader is unsure.
FOREIGN_SHELLS = frozenset({"csh", "tcsh", "fish"})

# `su`/`runuser` take their -c script anywhere on the line (`su root -c 'rm x'`); runuser -u runs argv.
SU_LIKE = frozenset({"su", "runuser"})
SU_VALUE_FLAGS = _flags("-g -G -s -w -u --group --supp-group --shell --whitelist-environment --user")
SU_SCRIPT_FLAGS = _flags("-c --command --session-command")

# Variables whose value is a command some program runs (git's pager and editor, ssh, askpass helpers).
COMMAND_VARIABLES = frozenset(
    {
        "PAGER",
        "BROWSER",
        "SUDO_EDITOR",
        "SUDO_ASKPASS",
        "RSYNC_RSH",
        "CVS_RSH",
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
        "GIT_PROXY_COMMAND",  # git runs it as `CMD HOST PORT` for git:// URLs
        "RSYNC_CONNECT_PROG",
        "SVN_EDITOR",
        "SVN_SSH",
        "HGEDITOR",
        "FCEDIT",
        "SYSTEMD_PAGER",
        "SYSTEMD_EDITOR",
        "GH_PAGER",
        "GH_EDITOR",
        "GH_BROWSER",
        "PSQL_PAGER",
        "PSQL_EDITOR",
        "KUBE_EDITOR",
        "BAT_PAGER",
        "DELTA_PAGER",
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
        "VIMINIT",  # Ex commands vim runs at start
        "EXINIT",
        "GVIMINIT",
        "MANOPT",  # options for man (-P PAGER among them)
        "PERL5OPT",
        "NODE_OPTIONS",
        # options a program reads from its environment, some of which run commands: TAR_OPTIONS
        # (--to-command, -I, --checkpoint-action), ZIPOPT (-TT), LESS (+!CMD), PARALLEL (its command)
        "TAR_OPTIONS",
        "ZIPOPT",
        "LESS",
        "PARALLEL",
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
