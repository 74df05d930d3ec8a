"""The bash tool's sandbox played by an adversary: the installed ``bhrain`` with the scripted atom, real bash
under real bubblewrap (``.ci/run`` installs it; without it these tests fail, they never skip).

The permission files here have no Bash rules at all, so the lexical rules let every command through and
whatever holds is the sandbox's doing; a command spelled to dodge a rule (``cat $(printf '%s' secr)et.txt``)
is then just another command.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.brain.helpers import BHRAIN, bhrain, call, scripted_run, write_script
from tests.conftest import Ran

SECRET = "TOPSECRET"
# The interpreter a sandboxed command runs: the one the test's virtualenv was made from (the standard library
# is all the probes need). Not the virtualenv's own: a checkout under /tmp (a CI's fresh clone) puts it where
# the sandbox's private /tmp hides it, and every probe would fail for that reason alone.
PYTHON = os.path.realpath(sys.executable)
assert not PYTHON.startswith("/tmp/"), f"the interpreter {PYTHON} lies under /tmp, which the sandbox hides"


def run_commands(
    tmp_path: Path,
    commands: Sequence[str | Mapping[str, Any]],
    *,
    deny: Sequence[str] = (),
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    skill: str = "act",
    wrapper: Sequence[str] = (),
) -> tuple[Ran, list[str]]:
    """Run each command as its own bash call (in order) in ``tmp_path/wd``; the run and the tool outputs.
    A command may be a mapping of bash arguments (``{"command": …, "timeout": 1}``)."""
    turns: list[Any] = [
        {"tool_calls": [call("bash", **({"command": c} if isinstance(c, str) else dict(c)))]}
        for c in commands
    ]
    turns.append({"text": "done\nblockers: 0\nnitpicks: 0"})
    script = write_script(tmp_path / "script.json", turns)
    argv = [
        *scripted_run(script, skill=skill),
        "--input",
        "go",
        "--trace",
        str(tmp_path / "trace.json"),
        *args,
    ]
    if skill == "review":
        argv += ["--tools", "files,bash"]
    if deny:
        (tmp_path / "perms.json").write_text(
            json.dumps({"permissions": {"deny": list(deny)}}), encoding="utf-8"
        )
        argv += ["--permissions", str(tmp_path / "perms.json")]
    ran = bhrain(argv, tmp_path / "wd", env=env, wrapper=wrapper)
    outputs: list[str] = []
    if (tmp_path / "trace.json").exists():
        trace = json.loads((tmp_path / "trace.json").read_text(encoding="utf-8"))
        outputs = [c["output"] for it in trace["iterations"] for c in it["tool_calls"]]
    return ran, outputs


@pytest.fixture
def wd(tmp_path: Path) -> Path:
    workdir = tmp_path / "wd"
    workdir.mkdir()
    return workdir


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def no_bwrap_path(tmp_path: Path) -> str:
    """A PATH with bash and nothing else (no bwrap)."""
    tools = tmp_path / "bin-without-bwrap"
    if not tools.exists():
        tools.mkdir()
        (tools / "bash").symlink_to(shutil.which("bash") or "/bin/bash")
    return str(tools)


# -- reading -------------------------------------------------------------------------------------------------
def test_a_read_denied_file_cannot_be_read_however_the_command_is_spelled(tmp_path: Path, wd: Path) -> None:
    write(wd / "secret.txt", f"{SECRET}-file\n")
    write(wd / "keys" / "id.pem", f"{SECRET}-pem\n")
    write(wd / "app" / ".env", f"{SECRET}-env\n")
    write(wd / "vault" / "token", f"{SECRET}-vault\n")
    write(wd / "notes.md", "NOTES-OK\n")
    commands = [
        "cat $(printf '%s' secr)et.txt",
        f"{PYTHON} -c \"print(open('secret.txt').read())\"",
        "cp secret.txt copy.txt; cat copy.txt",
        "ln -s secret.txt alias; cat alias; ln secret.txt hard; cat hard",
        "tar cf - secret.txt keys app vault | strings",
        "grep -r TOPSECRET . ; cat keys/*.pem app/.env vault/token; ls vault",
        "cat /proc/1/root$PWD/secret.txt /proc/self/root$PWD/keys/id.pem",
        "mv vault v2; cat v2/token; umount vault; cat vault/token",
        "cat notes.md",
    ]
    deny = ["Read(secret.txt)", "Read(**/*.pem)", "Read(.env)", "Read(vault/**)"]
    ran, outputs = run_commands(tmp_path, commands, deny=deny)
    assert (ran.code, ran.err) == (0, ""), ran.err
    assert len(outputs) == len(commands)
    leaked = [out for out in outputs if SECRET in out]
    assert not leaked, leaked
    # The python probe ran and was refused the file (a missing interpreter would prove nothing).
    assert "PermissionError" in outputs[1] or "Errno" in outputs[1], outputs[1]
    assert "exit code: 127" not in outputs[1], outputs[1]
    assert "NOTES-OK" in outputs[-1]  # what no rule names stays readable
    assert (wd / "secret.txt").read_text(encoding="utf-8") == f"{SECRET}-file\n"
    trace = json.loads((tmp_path / "trace.json").read_text(encoding="utf-8"))
    bash = next(line for line in trace["system"].splitlines() if line.strip().startswith("- bash:"))
    assert "It runs in a sandbox" in bash and "there is no network" in bash  # the model is told


def test_a_read_deny_rule_at_any_depth_covers_what_a_symlinked_directory_leads_to(
    tmp_path: Path, wd: Path
) -> None:
    # A shared key store linked into the working directory (outside /tmp, which the sandbox hides anyway).
    store = Path(tempfile.mkdtemp(prefix="routedriver-sandbox-keys-", dir="/var/tmp"))
    try:
        write(store / "server.pem", f"{SECRET}-store\n")
        write(store / "deep" / "ca.pem", f"{SECRET}-deep\n")
        write(store / "README", "STORE-README\n")
        (wd / "keys").symlink_to(store)
        (wd / "loop").symlink_to(".")  # a loop: the walk does not go round it
        commands = ["cat keys/server.pem keys/deep/ca.pem loop/loop/keys/server.pem; cat keys/README"]
        ran, outputs = run_commands(tmp_path, commands, deny=["Read(*.pem)"])
        assert ran.code == 0, ran.err
        assert SECRET not in outputs[0] and "STORE-README" in outputs[0], outputs[0]
    finally:
        shutil.rmtree(store)


def test_a_directory_the_walk_cannot_list_is_masked_whole(tmp_path: Path, wd: Path) -> None:
    # `chmod 300 config` leaves config/.env openable by name but not listable: as any user but root (here
    # root without the capabilities that override file permissions), the walk cannot see .env in it.
    write(wd / "config" / ".env", f"{SECRET}-env\n")
    write(wd / "notes.md", "NOTES-OK\n")
    wrapper = (
        ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--"] if os.geteuid() == 0 else []
    )
    commands = ["chmod 300 config && echo chmodded", "cat config/.env; ls -A config; cat notes.md"]
    try:
        ran, outputs = run_commands(tmp_path, commands, deny=["Read(**/.env)"], wrapper=wrapper)
    finally:
        (wd / "config").chmod(0o755)
    assert ran.code == 0, ran.err
    assert "chmodded" in outputs[0]
    assert SECRET not in outputs[1] and "NOTES-OK" in outputs[1], outputs[1]
    assert "config/.env: No such file or directory" in outputs[1]  # an empty read-only tmpfs over config


def test_a_read_denied_directory_hides_files_created_in_it_later(tmp_path: Path, wd: Path) -> None:
    (wd / "vault").mkdir()
    ran, outputs = run_commands(tmp_path, ["echo late > vault/new; ls -A vault"], deny=["Read(vault/**)"])
    assert ran.code == 0
    assert "stdout:\n(empty)" in outputs[0]
    assert not (wd / "vault" / "new").exists()


# -- writing -------------------------------------------------------------------------------------------------
def test_edit_and_write_denied_paths_are_read_only_inside_the_working_directory(
    tmp_path: Path, wd: Path
) -> None:
    write(wd / "ci.yml", "original ci\n")
    write(wd / "conf" / "deploy.yml", "original deploy\n")
    (wd / "locked").mkdir()
    commands = [
        f"{PYTHON} -c \"open('locked/x', 'w').write('evil')\"",
        "echo evil > ci.yml; sed -i s/original/evil/ ci.yml; rm -f ci.yml; mv ci.yml moved.yml",
        "mv conf c2 && mkdir conf && echo evil > conf/deploy.yml",  # move the parent away, make a new one
        "rm -rf conf locked; mv locked l2",
        "echo fine > ok.txt && mkdir -p build && echo fine > build/out",
    ]
    deny = ["Edit(locked/**)", "Write(ci.yml)", "Edit(conf/deploy.yml)"]
    ran, outputs = run_commands(tmp_path, commands, deny=deny)
    assert ran.code == 0, ran.err
    assert (wd / "ci.yml").read_text(encoding="utf-8") == "original ci\n"
    assert (wd / "conf" / "deploy.yml").read_text(encoding="utf-8") == "original deploy\n"
    assert sorted(p.name for p in wd.iterdir()) == ["build", "ci.yml", "conf", "locked", "ok.txt"]
    assert list((wd / "locked").iterdir()) == []
    assert (wd / "ok.txt").read_text(encoding="utf-8") == "fine\n"
    assert (wd / "build" / "out").read_text(encoding="utf-8") == "fine\n"
    assert "Read-only file system" in outputs[0]


def test_the_runs_own_config_and_permissions_files_stay_read_only(tmp_path: Path, wd: Path) -> None:
    # In the working directory, where a command could rewrite the rules the next run reads.
    perms = write(wd / "perms.json", json.dumps({"permissions": {"deny": ["Read(nothing-here)"]}}))
    config = write(wd / "bhrain.yaml", "sandbox: auto\n")
    command = "echo '{}' > perms.json; rm -f bhrain.yaml; echo x > other.txt"
    ran, outputs = run_commands(
        tmp_path, [command], args=["--permissions", "perms.json", "--config", "bhrain.yaml"]
    )
    assert ran.code == 0, ran.err
    assert json.loads(perms.read_text(encoding="utf-8")) == {"permissions": {"deny": ["Read(nothing-here)"]}}
    assert config.read_text(encoding="utf-8") == "sandbox: auto\n"
    assert (wd / "other.txt").exists() and "Read-only file system" in outputs[0]


def test_every_file_that_decides_the_next_run_stays_read_only(tmp_path: Path, wd: Path) -> None:
    # The MCP config (its servers start on the host), the behavior profile folder (a new strict.yaml would
    # stand before the strict.yml loaded), the rubric: what a command rewrote here, the next run would obey.
    mcp = write(wd / ".mcp.json", '{"mcpServers": {}}')
    write(wd / "bhrain.yaml", 'security:\n  behavior:\n    profile: "{{behavior.strict}}"\n')
    profile = "name: strict\ncustom:\n  - {id: no_rm, trigger: bash, action: block, message: no rm,\n"
    profile += "     condition: {command_matches: {param: command, pattern: '^rm'}}}\n"
    write(wd / "behavior" / "strict.yml", profile)
    rubric = write(wd / "rubric.md", "Check everything.\n")
    evil_server = '{"mcpServers": {"x": {"command": "sh", "args": ["-c", "echo pwned > /var/tmp/pwned"]}}}'
    commands = [
        f"echo '{evil_server}' > .mcp.json",
        "echo 'name: strict' > behavior/strict.yml",
        "echo 'name: strict' > behavior/strict.yaml",
        "mv behavior b2",
        "echo 'Approve.' > rubric.md",
        "echo fine > other.txt",
    ]
    args = ["--config", "bhrain.yaml", "--mcp-config", ".mcp.json", "--rubric", "rubric.md"]
    ran, outputs = run_commands(tmp_path, commands, args=args)
    assert ran.code == 0, ran.err
    assert mcp.read_text(encoding="utf-8") == '{"mcpServers": {}}'
    assert sorted(os.listdir(wd / "behavior")) == ["strict.yml"]
    assert (wd / "behavior" / "strict.yml").read_text(encoding="utf-8") == profile
    assert rubric.read_text(encoding="utf-8") == "Check everything.\n"
    assert all("Read-only file system" in out or "busy" in out for out in outputs[:-1]), outputs
    assert (wd / "other.txt").read_text(encoding="utf-8") == "fine\n"


@pytest.mark.parametrize("protected", ["rule", "permissions"])
def test_a_protected_name_that_is_a_symlink_is_refused_before_the_run(
    tmp_path: Path, wd: Path, protected: str
) -> None:
    # A bind mount holds what a link leads to, not the link: `rm ci.yml; echo evil > ci.yml` (or
    # `ln -sfn evil.json perms.json`) would replace the name the next run reads. So the run is refused.
    write(wd / "config" / "ci.yml", "run: safe\n")
    (wd / "ci.yml").symlink_to("config/ci.yml")
    write(wd / "settings" / "perms.json", json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}}))
    (wd / "perms.json").symlink_to("settings/perms.json")
    if protected == "rule":
        name, remedy = "ci.yml", "replace the link with what it leads to, or make the rule name that instead"
        ran, outputs = run_commands(tmp_path, ["rm ci.yml; echo evil > ci.yml"], deny=["Write(ci.yml)"])
    else:
        name, remedy = "perms.json", f"give bhrain the file's own path ({wd}/settings/perms.json)"
        ran, outputs = run_commands(
            tmp_path, ["ln -sfn evil.json perms.json"], args=["--permissions", "perms.json"]
        )
    assert (ran.code, ran.out, outputs) == (2, "", [])
    assert ran.err.startswith("error: the sandbox cannot keep ") and ran.err.count("\n") == 1, ran.err
    assert ran.err.endswith(
        f"in place: {wd}/{name} is a symlink (to {os.path.realpath(wd / name)}) in a directory commands may "
        f"write, and a command could replace it; {remedy}\n"
    )
    assert (
        os.readlink(wd / "ci.yml") == "config/ci.yml"
        and os.readlink(wd / "perms.json") == "settings/perms.json"
    )
    # Named by its own path, it is protected as usual.
    if protected == "rule":
        ran, outputs = run_commands(tmp_path, ["echo evil > config/ci.yml"], deny=["Write(config/ci.yml)"])
    else:
        ran, outputs = run_commands(
            tmp_path, ["echo x >> settings/perms.json"], args=["--permissions", "settings/perms.json"]
        )
    assert ran.code == 0 and "Read-only file system" in outputs[0], (ran.err, outputs)
    assert (wd / "config" / "ci.yml").read_text(encoding="utf-8") == "run: safe\n"
    assert json.loads((wd / "settings" / "perms.json").read_text(encoding="utf-8"))["permissions"]


def test_writes_outside_the_working_directory_never_reach_the_host(tmp_path: Path, wd: Path) -> None:
    outside = Path(tempfile.mkdtemp(prefix="routedriver-sandbox-", dir="/var/tmp"))
    try:
        write(outside / "existing.txt", "as it was\n")
        commands = [
            f"echo x > {outside}/new.txt; echo x >> {outside}/existing.txt; rm -f {outside}/existing.txt",
            "echo x > ../sibling.txt; ls ..",
        ]
        ran, outputs = run_commands(tmp_path, commands)
        assert ran.code == 0, ran.err
        assert sorted(p.name for p in outside.iterdir()) == ["existing.txt"]
        assert (outside / "existing.txt").read_text(encoding="utf-8") == "as it was\n"
        assert "Read-only file system" in outputs[0]
        assert not (tmp_path / "sibling.txt").exists()  # the parent it saw is the sandbox's private /tmp
    finally:
        shutil.rmtree(outside)


def test_tmp_is_private_to_each_command(tmp_path: Path) -> None:
    (tmp_path / "wd").mkdir()
    host_file = Path(tempfile.mkstemp(prefix="routedriver-sandbox-", dir="/tmp")[1])
    host_file.write_text(f"{SECRET}-tmp\n", encoding="utf-8")
    inner = Path("/tmp") / f"routedriver-sandbox-inner-{os.getpid()}"
    try:
        commands = [
            f"cat {host_file}; echo mine > {inner}; cat {inner}; echo $TMPDIR",
            f"cat {inner}",
        ]
        ran, outputs = run_commands(tmp_path, commands)
        assert ran.code == 0
        assert SECRET not in "".join(outputs)
        assert "mine\n/tmp" in outputs[0]
        assert "No such file or directory" in outputs[1]
        assert not inner.exists()
    finally:
        host_file.unlink()
        inner.unlink(missing_ok=True)


# -- network -------------------------------------------------------------------------------------------------
@contextlib.contextmanager
def listening() -> Iterator[int]:
    """A TCP server on 127.0.0.1 that accepts connections; yields its port."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError):
                connection, _ = server.accept()
                connection.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()


def test_no_network_not_even_loopback_unless_the_config_allows_it(tmp_path: Path, wd: Path) -> None:
    with listening() as port:
        connect = (
            f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('CONNECTED')"
        )
        probe = f'{PYTHON} -c "{connect}"'
        ran, outputs = run_commands(tmp_path, [probe])
        assert ran.code == 0
        assert "CONNECTED" not in outputs[0] and "exit code: 1" in outputs[0]
        write(tmp_path / "net.yaml", "sandbox: {network: true}\n")
        ran, outputs = run_commands(tmp_path, [probe], args=["--config", str(tmp_path / "net.yaml")])
        assert ran.code == 0
        assert "CONNECTED" in outputs[0]


# -- the process tree ----------------------------------------------------------------------------------------
def sleepers(tag: str) -> list[int]:
    """Live processes running ``sleep <tag>``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text()
        except OSError:
            continue
        if argv[:2] == [b"sleep", tag.encode()] and state[state.rindex(")") + 2] != "Z":
            found.append(int(entry.name))
    return found


@contextlib.contextmanager
def no_sleepers_left(*tags: str) -> Iterator[None]:
    """Fails if a ``sleep <tag>`` outlives the block; kills (by pid) any that did: a failure leaves none."""
    try:
        yield
        deadline = time.monotonic() + 5
        while any(sleepers(tag) for tag in tags) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for tag in tags for pid in sleepers(tag)], (
            "a command's process outlived the tool call"
        )
    finally:
        for tag in tags:
            for pid in sleepers(tag):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def test_what_a_command_starts_dies_with_the_tool_call_even_with_no_session_and_no_mark(
    tmp_path: Path, wd: Path
) -> None:
    # env -i drops the mark and setsid leaves the group: out of reach of the cleanup without a sandbox.
    tags = (f"4321.{os.getpid()}", f"4322.{os.getpid()}")
    with no_sleepers_left(*tags):
        commands = [
            f"env -i setsid sleep {tags[0]} >/dev/null 2>&1 & echo started",
            {"command": f"env -i setsid sleep {tags[1]} >/dev/null 2>&1 & sleep 30", "timeout": 1},
        ]
        ran, outputs = run_commands(tmp_path, commands)
        assert ran.code == 0
        assert "started" in outputs[0] and "timed out after 1 s" in outputs[1]


def test_ctrl_c_kills_everything_inside_the_sandbox(tmp_path: Path, wd: Path) -> None:
    tag = f"4323.{os.getpid()}"
    command = f"env -i setsid sleep {tag} >/dev/null 2>&1 & echo up > started; sleep 30"
    script = write_script(
        tmp_path / "s.json", [{"tool_calls": [call("bash", command=command)]}, {"text": "x"}]
    )
    with no_sleepers_left(tag):
        victim = subprocess.Popen(
            [BHRAIN, *scripted_run(script), "--input", "go", "--sandbox", "on"],
            cwd=wd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        deadline = time.monotonic() + 20
        while not (wd / "started").exists() or not sleepers(tag):
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.02)
        victim.send_signal(signal.SIGINT)
        out, err = victim.communicate(timeout=30)
        assert (victim.returncode, out, err) == (130, "", "error: interrupted\n")


# -- without bubblewrap --------------------------------------------------------------------------------------
NOT_ON_PATH = (
    "needs bubblewrap for the bash tool's sandbox, but bwrap is not on PATH; install bubblewrap "
    "(Debian/Ubuntu: apt-get install bubblewrap), or pass --sandbox auto to run the bash tool unsandboxed\n"
)


def test_sandbox_on_without_bubblewrap_is_refused_in_one_line(tmp_path: Path, wd: Path) -> None:
    ran, outputs = run_commands(
        tmp_path, ["echo ran > ran.txt"], args=["--sandbox", "on"], env={"PATH": no_bwrap_path(tmp_path)}
    )
    assert (ran.code, ran.out, ran.err) == (2, "", "error: --sandbox on " + NOT_ON_PATH)
    assert not (wd / "ran.txt").exists() and outputs == []


def test_the_review_skill_runs_bash_sandboxed_by_default(tmp_path: Path, wd: Path) -> None:
    write(wd / "secret.txt", f"{SECRET}-review\n")
    env = {"PATH": no_bwrap_path(tmp_path)}
    ran, _ = run_commands(tmp_path, ["cat secret.txt"], skill="review", deny=["Read(secret.txt)"], env=env)
    assert (ran.code, ran.out, ran.err) == (
        2,
        "",
        "error: --skill review (whose default is --sandbox on) " + NOT_ON_PATH,
    )
    ran, outputs = run_commands(tmp_path, ["cat secret.txt"], skill="review", deny=["Read(secret.txt)"])
    assert ran.code == 0 and ran.out.endswith("blockers: 0\nnitpicks: 0\n")
    assert SECRET not in outputs[0] and "Permission denied" in outputs[0]
    # A review without the bash tool needs no sandbox: it runs where there is no bubblewrap (macOS).
    write_script(tmp_path / "r.json", ["Fine.\nblockers: 0\nnitpicks: 0"])
    ran = bhrain([*scripted_run(tmp_path / "r.json", skill="review"), "--input", "go"], wd, env=env)
    assert (ran.code, ran.err) == (0, "")


def test_auto_without_bubblewrap_runs_unsandboxed_and_says_so_once(tmp_path: Path, wd: Path) -> None:
    ran, outputs = run_commands(
        tmp_path, ["echo one > one.txt", "echo two > two.txt"], env={"PATH": no_bwrap_path(tmp_path)}
    )
    assert ran.code == 0
    assert ran.err == (
        "bhrain: the bash tool runs without a sandbox: bwrap is not on PATH (--sandbox auto); install "
        "bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or pass --sandbox off to silence this\n"
    )
    assert (wd / "one.txt").exists() and (wd / "two.txt").exists()
    ran, _ = run_commands(
        tmp_path, ["true"], args=["--sandbox", "off"], env={"PATH": no_bwrap_path(tmp_path)}
    )
    assert (ran.code, ran.err) == (0, "")


def test_a_bubblewrap_that_cannot_create_namespaces_counts_as_none(tmp_path: Path, wd: Path) -> None:
    # What bwrap says where user namespaces are off (a container, a hardened kernel).
    tools = Path(no_bwrap_path(tmp_path))
    complaint = (
        "bwrap: No permissions to create new namespace, likely because the kernel does not allow "
        "non-privileged user namespaces."
    )
    (tools / "bwrap").write_text(f"#!/bin/bash\necho '{complaint}' >&2\nexit 1\n", encoding="utf-8")
    (tools / "bwrap").chmod(0o755)
    env = {"PATH": str(tools)}
    ran, _ = run_commands(tmp_path, ["echo ran > ran.txt"], args=["--sandbox", "on"], env=env)
    assert ran.code == 2 and ran.out == ""
    assert ran.err.startswith(
        f"error: --sandbox on needs bubblewrap for the bash tool's sandbox, but {tools}/bwrap cannot "
        f"create a sandbox here ({complaint}); allow unprivileged user namespaces"
    )
    assert ran.err.count("\n") == 1 and not (wd / "ran.txt").exists()
    ran, _ = run_commands(tmp_path, ["echo ran > ran.txt"], env=env)
    assert ran.code == 0 and (wd / "ran.txt").exists()
    assert ran.err.startswith(f"bhrain: the bash tool runs without a sandbox: {tools}/bwrap cannot create")
    assert ran.err.count("\n") == 1


def test_the_route_templates_run_their_reviews_sandboxed() -> None:
    root = Path(__file__).resolve().parents[2] / "templates" / "routes"
    import yaml

    reviews = [
        review
        for guard in sorted(root.glob("*/*.guard"))
        for review in (yaml.safe_load(guard.read_text(encoding="utf-8")) or {}).get("reviews", [])
        if review.startswith("bhrain ")
    ]
    assert len(reviews) >= 8
    assert all(" --sandbox on " in review for review in reviews), reviews
