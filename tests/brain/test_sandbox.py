"""The sandbox's parts: the bwrap argv from a policy (pure), the deny rules resolved to paths (checked against
what the permission rules themselves deny, path by path), where ``bwrap`` is looked for, the config keys.

What a sandboxed command can and cannot do, through the installed ``bhrain`` under real bubblewrap, is in
``test_sandbox_cli.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from routedriver.brain.config import load_config
from routedriver.brain.hooks import ToolEvent
from routedriver.brain.permissions.rules import policy_from_block
from routedriver.brain.sandbox import (
    Mask,
    PathRule,
    Policy,
    ReplaceableLink,
    Sandbox,
    TooManyPaths,
    Unprotectable,
    bwrap_argv,
    find_bwrap,
    path_rules,
    policy_for,
    resolve,
)
from routedriver.errors import Refused


def test_the_argv_mounts_in_order_and_unshares_the_network_unless_allowed() -> None:
    policy = Policy(
        writable=("/w",),
        masked=(Mask("/w/secrets", True), Mask("/home/u/.netrc", False)),
        read_only=("/w/conf/ci.yml",),
        pinned=("/w/conf",),
    )
    argv = bwrap_argv("/usr/bin/bwrap", policy, "echo hi", cwd="/w/sub")
    # The kernel's settings read-only: uid 0 may write them whatever capabilities it dropped.
    sysrq = (
        ["--ro-bind", "/proc/sysrq-trigger", "/proc/sysrq-trigger"]
        if os.path.exists("/proc/sysrq-trigger")
        else []
    )
    head = [
        *("/usr/bin/bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"),
        *("--ro-bind", "/proc/sys", "/proc/sys", *sysrq, "--tmpfs", "/tmp"),
    ]
    assert argv[: len(head)] == head
    mounts = " ".join(argv[len(head) : argv.index("--unshare-pid")])
    assert mounts == (
        "--bind /w /w --bind /w/conf /w/conf --ro-bind /w/conf/ci.yml /w/conf/ci.yml "
        "--tmpfs /w/secrets --remount-ro /w/secrets --ro-bind /dev/null /home/u/.netrc"
    )
    rest = argv[argv.index("--unshare-pid") :]
    assert rest == [
        *("--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--cap-drop", "ALL"),
        *("--die-with-parent", "--new-session"),
        *("--setenv", "TMPDIR", "/tmp", "--chdir", "/w/sub", "--", "bash", "-c", "echo hi"),
    ]
    networked = bwrap_argv("bwrap", policy._replace(network=True), "x", cwd="/w")
    assert "--unshare-net" not in networked and "--die-with-parent" in networked


def test_the_policy_keeps_what_the_sandbox_can_see_once_and_pins_the_parents_of_protected_paths() -> None:
    hidden = {
        "/w/secrets": True,
        "/w/secrets/key.pem": False,  # under a masked directory: already hidden
        "/tmp/elsewhere/key.pem": False,  # the sandbox's /tmp is a fresh tmpfs: nothing to hide
        "/w/a/b/.env": False,
        "/home/u/.ssh": True,
    }
    read_only = ["/w/secrets/x", "/usr/lib/x", "/w/a/b/.env", "/w/ci", "/w/ci/deploy.yml", "/w/a/c.yml"]
    policy = policy_for(["/w"], hidden, read_only, network=False)
    assert policy.masked == (Mask("/home/u/.ssh", True), Mask("/w/a/b/.env", False), Mask("/w/secrets", True))
    assert policy.read_only == ("/w/a/c.yml", "/w/ci")  # outside /w it is read-only anyway
    assert policy.pinned == ("/w/a", "/w/a/b")
    # A workdir under /tmp: what it holds is bound into the sandbox, so it is masked there.
    assert policy_for(["/tmp/w"], {"/tmp/w/.env": False}, [], network=True).masked == (
        Mask("/tmp/w/.env", False),
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A working directory with secrets in the places deny rules name, and symlinks into them."""
    wd = tmp_path / "wd"
    files = [
        ".env",
        "app/.env",
        "app/main.py",
        "app/config/prod.yml",
        "app/config/dev.yml",
        "secrets/a.pem",
        "secrets/deep/b.txt",
        "keys/x.pem",
        "keys/y.txt",
        "notes.md",
        "docs/sub/readme.md",
        ".git/config",
    ]
    for name in files:
        (wd / name).parent.mkdir(parents=True, exist_ok=True)
        (wd / name).write_text(name, encoding="utf-8")
    (wd / "empty").mkdir()
    (wd / "link-to-secrets").symlink_to(wd / "secrets")
    (wd / "key-link").symlink_to(wd / "keys/x.pem")
    (tmp_path / "outside.pem").write_text("outside", encoding="utf-8")
    (wd / "out-link").symlink_to(tmp_path / "outside.pem")
    # A directory linked from elsewhere (a shared key store): what a name through it leads to counts too.
    for name in ("store/server.pem", "store/sub/notes.txt", "store/config/prod.yml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name, encoding="utf-8")
    (wd / "shared").symlink_to(tmp_path / "store")
    (wd / "app" / "store").symlink_to(tmp_path / "store")
    return wd


PATTERNS = [
    ".env",
    "./.env",
    "secrets/**",
    "secrets/",
    "*.pem",
    "keys/*.pem",
    "app/config/*.yml",
    "app/**/prod.yml",
    "**/sub/*",
    "notes.md",
    "link-to-secrets/**",
    "out-link",
    "empty/**",
    "missing/**",
    ".git/config",
    "shared/*.pem",
    "app/**/config/*.yml",
    "**",  # (a bare "*" is the rule "Read": every read, a rule on the tool that the sandbox leaves to it)
]


def every_name(wd: Path) -> list[Path]:
    """Every path in the tree, also through the symlinked directory (as a command could spell it)."""
    names = []
    for current, dirs, files in os.walk(wd, followlinks=True):
        names.extend(Path(current) / name for name in [*dirs, *files])
    return names


def hidden_by(resolved: dict[str, bool], path: Path) -> bool:
    """Whether a command opening ``path`` finds a mask: on what it resolves to, or on a directory on the way
    to the name (a masked directory hides the symlinks in it too, and what they lead to)."""

    def under(real: str) -> bool:
        return any(real == found or real.startswith(found + "/") for found in resolved)

    return any(under(os.path.realpath(step)) for step in (path, *path.parents))


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_read_deny_rule_hides_every_file_the_rules_deny_and_no_other(tree: Path, pattern: str) -> None:
    """The sandbox masks what the read tool refuses: every path in the tree the rule denies, by any name
    (through symlinks too), is masked; and what is masked is a file the rule denies by one of its names (a
    mask works on the file, so a rule naming a symlink hides its target under every name)."""
    policy = policy_from_block({"deny": [f"Read({pattern})"]}, base_dir=tree, workdir=tree, where="test")
    hidden, read_only = path_rules([policy], tree)
    assert read_only == ()
    resolved = resolve(hidden)
    names = [path for path in every_name(tree) if not path.is_dir()]  # a directory is read through its files
    denied = {
        path
        for path in names
        if policy.decide(ToolEvent("c", "read", {"file_path": str(path)}, 1, 0)).action == "deny"
    }
    denied_files = {os.path.realpath(path) for path in denied}
    for path in names:
        where = f"{pattern}: {path.relative_to(tree)}"
        if path in denied:
            assert hidden_by(resolved, path), f"{where} is denied by the rules but not masked"
        elif hidden_by(resolved, path):
            assert os.path.realpath(path) in denied_files, f"{where} is masked but the rules allow it"


def test_a_walk_enters_symlinked_directories_but_never_goes_round_a_loop(tree: Path, tmp_path: Path) -> None:
    (tree / "app" / "again").symlink_to(tree / "app")  # a loop
    (tree / "up").symlink_to(tmp_path)  # a link to a parent: the store and outside.pem, then wd again
    resolved = resolve([PathRule("Read(*.pem)", tree, "*.pem")])
    assert sorted(resolved) == [
        str(tmp_path / "outside.pem"),  # up/outside.pem
        str(tmp_path / "store/server.pem"),  # shared/server.pem, app/store/server.pem, up/store/server.pem
        str(tree / "keys/x.pem"),
        str(tree / "secrets/a.pem"),
    ]
    # A link to / would walk the whole file system: the command is refused, naming the link.
    (tree / "root").symlink_to("/")
    with pytest.raises(TooManyPaths) as caught:
        resolve([PathRule("Read(*.pem)", tree, "*.pem")], limit=2_000)
    assert f"paths under {tree} (through the symlink {tree}/root -> /) before every command" in str(
        caught.value
    )


def test_a_pattern_on_the_last_part_of_a_name_walks_each_directory_once(tmp_path: Path) -> None:
    # A virtualenv's lib64 -> lib: *.pem finds the same under either name, so lib is listed once; a pattern
    # that reads the whole name (lib*/x.pem) walks both names (and runs out of the budget here).
    for index in range(100):
        (tmp_path / "lib" / f"m{index}").mkdir(parents=True)
    (tmp_path / "lib" / "m7" / "x.pem").write_text("x", encoding="utf-8")
    (tmp_path / "lib64").symlink_to("lib")
    limit = 100 + 2 + 1 + 10  # lib's entries, the root's, m7's, and a little
    assert resolve([PathRule("Read(*.pem)", tmp_path, "*.pem")], limit=limit) == {
        str(tmp_path / "lib" / "m7" / "x.pem"): False
    }
    with pytest.raises(TooManyPaths):
        resolve([PathRule("Read(lib*/**/x.pem)", tmp_path, "lib*/**/x.pem")], limit=limit)


def test_a_directory_whose_every_new_name_a_rule_covers_is_protected_whole(tree: Path) -> None:
    resolved = resolve(
        [PathRule("Edit(empty/**)", tree, "empty/**"), PathRule("Read(secrets/)", tree, "secrets/")]
    )
    assert resolved == {str(tree / "empty"): True, str(tree / "secrets"): True}
    # Only existing files for a rule on names: a .pem created later is not covered (documented).
    assert resolve([PathRule("Read(keys/*.pem)", tree, "keys/*.pem")]) == {str(tree / "keys/x.pem"): False}


def test_edit_and_write_deny_rules_become_read_only_paths_and_other_rules_are_left_to_the_tools(
    tree: Path,
) -> None:
    block = {
        "deny": ["Edit(app/config/**)", "Write(notes.md)", "Read", "Bash(rm:*)", "Grep(keys/**)"],
        "ask": ["Read(keys/**)", "Edit(docs/**)"],
        "allow": ["Read(secrets/**)"],
    }
    policy = policy_from_block(block, base_dir=tree, workdir=tree, where="test")
    hidden, read_only = path_rules([policy, lambda event: "allow"], tree)
    assert hidden == ()
    assert [(r.text, r.pattern) for r in read_only] == [
        ("Edit(app/config/**)", "app/config/**"),
        ("Write(notes.md)", "notes.md"),
    ]
    assert sorted(resolve(read_only)) == [str(tree / "app/config"), str(tree / "notes.md")]


# A read-only name reached through a symlink in a directory commands may write cannot be held (a command can
# remove the link and put its own file there: a mount lands on what a link leads to, never on the link); the
# link that breaks it, or "" where the name holds. Names are relative to the working directory ("//" starts
# an absolute one, as in the rules); own: bhrain's own settings files, as named.
LINKED_NAMES = [
    (["Write(key-link)"], [], "key-link"),  # the name itself is the link
    (["Edit(shared/**)"], [], "shared"),  # `rm shared; mkdir shared` makes a new shared/
    (["Edit(app/**/prod.yml)"], [], "app/store"),  # a walk through a symlinked directory
    (["Write(app/store/server.pem)"], [], "app/store"),  # a link on the way
    ([], ["key-link"], "key-link"),  # --permissions perms.json -> settings/perms.json: repointed next run
    ([], ["shared/server.pem"], "shared"),
    (["Edit(app/config/**)", "Write(notes.md)", "Read(key-link)"], ["notes.md"], ""),  # no link: held
    (["Edit(docs/**)", "Write(docs/ci.yml)"], [], ""),  # a link in a read-only directory stays
    (["Write(//TMP/elsewhere-link)"], ["//TMP/elsewhere-link"], ""),  # outside: on the read-only root
]


@pytest.mark.parametrize(("deny", "own", "link"), LINKED_NAMES)
def test_a_read_only_name_reached_through_a_replaceable_symlink_is_refused_naming_the_link(
    tree: Path, tmp_path: Path, deny: list[str], own: list[str], link: str
) -> None:
    (tree / "docs" / "ci.yml").symlink_to(tree / "notes.md")
    (tmp_path / "elsewhere-link").symlink_to(tmp_path / "outside.pem")

    def absolute(name: str) -> str:
        name = name.replace("//TMP", tmp_path.as_posix())
        return name if name.startswith("/") else f"{tree}/{name}"

    rules = [rule.replace("//TMP", "//" + tmp_path.as_posix().lstrip("/")) for rule in deny]
    policy = policy_from_block({"deny": rules}, base_dir=tree, workdir=tree, where="test")
    hidden, read_only = path_rules([policy], tree)
    sandbox = Sandbox("bwrap", str(tree), False, hidden, read_only, tuple(absolute(name) for name in own))
    if not link:
        sandbox.policy()  # no error
        return
    with pytest.raises(ReplaceableLink) as caught:
        sandbox.policy()
    message = str(caught.value)
    assert (
        f": {absolute(link)} is a symlink (to {os.path.realpath(absolute(link))}) in a directory commands "
        in message
    )
    assert message.endswith(
        "give bhrain the file's own path (" + os.path.realpath(absolute(own[0])) + ")"
        if own
        else "replace the link with what it leads to, or make the rule name that instead"
    )


def test_rule_bases_follow_the_permission_rules(tree: Path, tmp_path: Path) -> None:
    home = Path.home()
    block = {
        "deny": [
            f"Read(//{tmp_path.as_posix().lstrip('/')}/outside.pem)",
            "Read(~/.ssh/**)",
            "Read(/conf/x)",
            "Read(./a)",
        ]
    }
    policy = policy_from_block(block, base_dir=tmp_path / "perms", workdir=tree, where="test")
    hidden, _ = path_rules([policy], tree)
    assert [(r.base, r.pattern) for r in hidden] == [
        (Path("/"), f"{tmp_path.as_posix().lstrip('/')}/outside.pem"),
        (home, ".ssh/**"),
        (tmp_path / "perms", "conf/x"),
        (tree, "a"),
    ]
    assert resolve(hidden[:1]) == {str(tmp_path / "outside.pem"): False}


def test_a_rule_that_needs_too_long_a_walk_is_refused_naming_it(tree: Path) -> None:
    with pytest.raises(TooManyPaths) as caught:
        resolve([PathRule("Read(**/*.key)", tree, "**/*.key")], limit=5)
    assert str(caught.value).startswith(
        "the sandbox cannot resolve the deny rule Read(**/*.key): it would check more than 5 paths under "
        f"{tree} before every command; narrow the rule"
    )
    assert resolve([PathRule("Read(keys/x.pem)", tree, "keys/x.pem")], limit=1) == {
        str(tree / "keys/x.pem"): False
    }


def test_bwrap_is_never_taken_from_inside_the_working_directory(tmp_path: Path) -> None:
    wd, tools = tmp_path / "wd", tmp_path / "tools"
    for directory in (wd / "bin", tools):
        directory.mkdir(parents=True)
        fake = directory / "bwrap"
        fake.write_text("#!/bin/sh\n", encoding="utf-8")
        fake.chmod(0o755)
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "bwrap").write_text("not executable", encoding="utf-8")
    path = os.pathsep.join([str(wd / "bin"), ".", str(tmp_path / "plain"), str(tools)])
    old = Path.cwd()
    os.chdir(wd / "bin")  # "." is inside the working directory too
    try:
        assert find_bwrap(path, wd) == str(tools / "bwrap")
        assert find_bwrap(os.pathsep.join([str(wd / "bin"), "."]), wd) is None
    finally:
        os.chdir(old)


@pytest.mark.parametrize(
    ("text", "mode", "network"),
    [
        ("sandbox: on\n", "on", None),  # YAML 1.1 reads a bare on as true
        ("sandbox: off\n", "off", None),
        ("sandbox: auto\n", "auto", None),
        ("sandbox: {mode: 'on', network: true}\n", "on", True),
        ("sandbox: {network: false}\n", None, False),
    ],
)
def test_the_config_takes_a_mode_or_a_block(
    tmp_path: Path, text: str, mode: str | None, network: bool | None
) -> None:
    (tmp_path / "b.yaml").write_text(text, encoding="utf-8")
    settings = load_config(tmp_path / "b.yaml")
    assert (settings.sandbox, settings.sandbox_network) == (mode, network)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("sandbox: always\n", "sandbox must be on, off or auto, not 'always'"),
        ("sandbox: {mode: 2}\n", "sandbox.mode must be on, off or auto, not 2"),
        ("sandbox: {network: 'yes please'}\n", "sandbox.network must be true or false, not 'yes please'"),
        ("sandbox: {net: true}\n", "sandbox.net is not a known key; sandbox takes mode and network"),
    ],
)
def test_a_bad_sandbox_setting_is_refused_naming_the_key(tmp_path: Path, text: str, line: str) -> None:
    (tmp_path / "b.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(Refused) as caught:
        load_config(tmp_path / "b.yaml")
    assert caught.value.line().endswith(line + ("" if "known key" in line else "; fix the value"))


def test_a_protected_file_a_thousand_directories_deep_is_held(tmp_path: Path) -> None:
    """A command can make a/a/…/a/x.lock 1,000 directories deep: the sandbox holds it (its parents pinned)
    without recursing once per directory (which raised RecursionError for every later command)."""
    deep = tmp_path
    for _ in range(1000):  # one at a time: mkdir(parents=True) recurses once per directory too
        deep = deep / "a"
        deep.mkdir()
    (deep / "x.lock").write_text("x", encoding="utf-8")
    policy = policy_from_block({"deny": ["Write(*.lock)"]}, base_dir=tmp_path, workdir=tmp_path, where="test")
    hidden, read_only = path_rules([policy], tmp_path)
    try:
        held = Sandbox("bwrap", str(tmp_path), False, hidden, read_only).policy()
        assert str(deep / "x.lock") in held.read_only
    finally:  # one at a time too: pytest's cleanup (shutil.rmtree) recurses once per directory
        (deep / "x.lock").unlink()
        while deep != tmp_path:
            deep.rmdir()
            deep = deep.parent


def test_a_protected_name_at_the_end_of_a_long_chain_of_links_is_refused_in_one_line(tmp_path: Path) -> None:
    """1,500 links, l1500 -> … -> l0: Python 3.11's realpath recursed once per link (RecursionError)."""
    (tmp_path / "l0").write_text("x", encoding="utf-8")
    for number in range(1, 1501):
        (tmp_path / f"l{number}").symlink_to(f"l{number - 1}")
    os.rename(tmp_path / "l1500", tmp_path / "x.lock")
    for deny in ("Write(*.lock)", "Read(*.lock)"):
        policy = policy_from_block({"deny": [deny]}, base_dir=tmp_path, workdir=tmp_path, where="test")
        sandbox = Sandbox("bwrap", str(tmp_path), False, *path_rules([policy], tmp_path))
        with pytest.raises(Unprotectable, match="symbolic links") as caught:
            sandbox.policy()
        assert "\n" not in str(caught.value)
