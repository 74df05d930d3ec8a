"""route.bounce on Bash calls, as a data table: a robot's command → blocked (with why) or allowed.

The robot has the repository and a shell. Each BLOCKED row is a way it could write a stone, a guard, a
route's ``.route/``, the approvers file or a path a ``protect:`` glob keeps until its stone passes; each
ALLOWED row is something a robot working on its route does every day and must be able to do. The route is
``route`` (1.vision, 2.plan with ``protect: ['src/**']``, 3.ship), bound to the branch, nothing passed yet.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from routedriver.cli.route_session import bounce_command
from tests.conftest import Ran, git
from tests.route.routes import run_route, write
from tests.route_gate.gate import denied, gated_route, hook_event

STONE = "stones (*.stone) are read-only templates"
GUARD = "guards (*.guard) are read-only templates"
DRIVER = "files under a route's .route/ are written by the driver only"
APPROVERS = "the approvers file says who may approve"
SETTINGS = "Claude Code's settings wire the hooks"
PROTECTED = "protected by stone 2.plan of route route (protect: src/**)"
UNREAD = "route.bounce cannot read all of it"
OPAQUE = "which route.bounce cannot read to tell what it does with it"

# (command, the event's cwd relative to the repository, a fragment of the reason it is blocked with)
BLOCKED: list[tuple[str, str, str]] = [
    # a shell told -s reads its script from stdin, whatever its operands
    ("echo 'rm route/1.vision.stone' | bash -s anything", ".", STONE),
    ("bash -s x <<< 'echo y > route/1.vision.guard'", ".", GUARD),
    # redirections, every operator
    ("echo x > route/1.vision.guard", ".", GUARD),
    ("echo x >> route/1.vision.stone", ".", STONE),
    ("echo x >| route/2.plan.guard", ".", GUARD),
    ("echo x &> route/1.vision.stone", ".", STONE),
    ("echo x &>> route/1.vision.stone", ".", STONE),
    ("echo x 2> route/1.vision.stone", ".", STONE),
    ("echo x 1>route/1.vision.stone", ".", STONE),
    ("echo x 3>>route/.route/1.vision.passed", ".", DRIVER),
    ("cat <> route/1.vision.stone", ".", STONE),
    ("echo x >& route/1.vision.stone", ".", STONE),
    ("cat > route/.route/approvers <<'EOF'\nrobot@example.com\nEOF", ".", DRIVER),
    ("echo robot@example.com >> .route-approvers", ".", APPROVERS),
    # the hooks themselves: switched off, they hold nothing
    ("""echo '{"disableAllHooks": true}' > .claude/settings.local.json""", ".", SETTINGS),
    ("sed -i /route.bounce/d .claude/settings.json", ".", SETTINGS),
    ("cd .claude && rm settings.json", ".", SETTINGS),
    # quoting does not hide a name
    ('echo x > "route/1.vision.guard"', ".", GUARD),
    ("echo x > route/1.vision.gu''ard", ".", GUARD),
    ("echo x > $'route/1.vision.\\x67uard'", ".", GUARD),
    ("echo x > route/1.Vision.STONE", ".", STONE),
    # programs that write the files they are given
    ("echo x | tee route/1.vision.guard", ".", GUARD),
    ("echo x | tee -a /dev/null route/.route/1.vision.passed", ".", DRIVER),
    ("sed -i s/a/b/ route/1.vision.guard", ".", GUARD),
    ("sed -i.bak -e s/a/b/ route/1.vision.guard", ".", GUARD),
    ("sed --in-place=.orig 's/a/b/' route/1.vision.guard", ".", GUARD),
    ("sed -ie s/a/b/ route/2.plan.guard", ".", GUARD),
    ("perl -pi -e 's/a/b/' route/1.vision.guard", ".", GUARD),
    ("perl -i.bak -pe 's/a/b/' route/1.vision.guard", ".", GUARD),
    ("cp /etc/hostname route/1.vision.stone", ".", STONE),
    ("cp README.md route/.route/", ".", DRIVER),
    ("cp -t route/.route README.md", ".", DRIVER),
    ("mv route/1.vision.guard /tmp/g", ".", GUARD),
    ("mv README.md route/1.vision.stone", ".", STONE),
    ("rm route/1.vision.guard", ".", GUARD),
    ("rm -f route/.route/1.vision.passed", ".", DRIVER),
    ("rm -rf route", ".", STONE),
    ("rm -rf .", ".", STONE),
    ("rm -rf route/.route", ".", DRIVER),
    ("truncate -s 0 route/1.vision.guard", ".", GUARD),
    ("ln -sf /tmp/x route/1.vision.guard", ".", GUARD),
    ("ln route/1.vision.guard second-name", ".", GUARD),
    ("install -m 644 README.md route/2.plan.guard", ".", GUARD),
    ("dd if=/dev/zero of=route/1.vision.guard count=0", ".", GUARD),
    ("chmod 000 route/1.vision.guard", ".", GUARD),
    ("chmod -R a+w route", ".", STONE),
    ("touch route/.route/1.vision.approved", ".", DRIVER),
    ("sort -o route/1.vision.guard route/1.vision.guard", ".", GUARD),
    ("route.init --force route", ".", STONE),
    # git rewriting working-tree files
    ("git checkout -- route/1.vision.guard", ".", GUARD),
    ("git checkout HEAD~1 route/1.vision.guard", ".", GUARD),
    ("git checkout .", ".", STONE),
    ("git restore route/1.vision.stone", ".", STONE),
    ("git restore --source=HEAD~1 --worktree route/2.plan.guard", ".", GUARD),
    ("git rm route/1.vision.guard", ".", GUARD),
    ("git mv route/1.vision.guard route/x.guard", ".", GUARD),
    ("git reset --hard HEAD~1", ".", STONE),
    ("git stash", ".", STONE),
    ("git stash pop", ".", STONE),
    ("git stash push -- route/1.vision.guard", ".", GUARD),
    ("git clean -fdx", ".", STONE),
    ("git -C route checkout -- 1.vision.guard", ".", GUARD),
    # through shells, eval, wrappers, xargs, find
    ("bash -c 'echo x > route/1.vision.guard'", ".", GUARD),
    ('sh -c "rm route/1.vision.stone"', ".", STONE),
    ('eval "echo x > route/1.vision.guard"', ".", GUARD),
    ("echo 'echo x > route/1.vision.guard' | bash", ".", GUARD),
    ("bash <<'EOF'\nrm route/1.vision.guard\nEOF", ".", GUARD),
    ("env X=1 sed -i s/a/b/ route/1.vision.guard", ".", GUARD),
    ("env -C route rm 1.vision.guard", ".", GUARD),
    ("sudo tee route/1.vision.guard < /dev/null", ".", GUARD),
    ("timeout 5 rm route/1.vision.guard", ".", GUARD),
    ("nohup rm -f route/2.plan.guard", ".", GUARD),
    ("xargs rm route/1.vision.guard < /dev/null", ".", GUARD),
    ("ls route/*.guard | xargs rm", ".", UNREAD),
    ("find route -name '*.guard' -delete", ".", STONE),
    ("find . -type f -exec sed -i s/a/b/ {} +", ".", STONE),
    ("echo x > $(echo route/1.vision.guard)", ".", UNREAD),
    ('F=route/1.vision.guard; echo x > "$F"', ".", UNREAD),
    # relative to the event's cwd, and to a cd in the same command
    ("cd route && echo x > 1.vision.guard", ".", GUARD),
    ("cd route; rm -f .route/1.vision.passed", ".", DRIVER),
    ("pushd route && truncate -s0 1.vision.stone", ".", STONE),
    ("(cd route && echo > 2.plan.guard)", ".", GUARD),
    ("echo x > 1.vision.guard", "route", GUARD),
    ("cd .. && rm route/1.vision.stone", "docs", STONE),
    ("echo x > link-to-guard", ".", GUARD),  # a symlink is judged where it lands
    # programs route.bounce cannot read, given a driver file
    ("python3 -c \"open('route/1.vision.guard','w').write('')\"", ".", OPAQUE),
    ("node -e \"require('fs').writeFileSync('route/1.vision.stone', '')\"", ".", OPAQUE),
    ("awk '{print > \"route/1.vision.guard\"}' /dev/null", ".", OPAQUE),
    ("python3 tools/edit.py route/.route/1.vision.passed", ".", OPAQUE),
    ("python3 - <<'EOF'\nopen('route/1.vision.guard', 'w').write('')\nEOF", ".", OPAQUE),
    ("vim -c ':%d|wq' route/1.vision.guard", ".", OPAQUE),
    # more ways around
    ("exec 3>route/1.vision.guard; echo x >&3", ".", GUARD),
    ("echo x | tee >(cat > route/1.vision.guard)", ".", GUARD),
    ("printf x | dd of=route/1.vision.stone", ".", STONE),
    ("git show HEAD:route/1.vision.guard > route/1.vision.guard", ".", GUARD),
    ("mv route route.old", ".", STONE),
    ('cat x > "route/$(echo 1).vision.guard"', ".", UNREAD),
    ("cd /tmp && cp x $OLDPWD/route/1.vision.guard", ".", UNREAD),
    # function bodies and coprocesses are code that may run: read where they are written (the first command
    # of `function f { …; }` and all of `coproc …` were dropped, so calling f wrote unseen)
    ("function f { rm route/1.vision.stone; }; f", ".", STONE),
    ("function f { tee route/1.vision.guard < /dev/null; }; f", ".", GUARD),
    ("function f { cp /dev/null route/.route/forged; }; f", ".", DRIVER),
    ("function f { echo x > route/.route/forged; }; f", ".", DRIVER),
    ("function f() { rm route/1.vision.guard; }; f", ".", GUARD),
    ("function f() ( sed -i s/a/b/ src/app.py ); f", ".", PROTECTED),
    ("f() ( rm route/1.vision.stone ); f", ".", STONE),
    ("f() { echo x > route/.route/forged; }; f", ".", DRIVER),
    ("function f { function g { truncate -s0 route/1.vision.guard; }; g; }; f", ".", GUARD),
    ("f() { g() ( touch route/.route/forged ); g; }; f", ".", DRIVER),
    ("time function f { rm route/1.vision.stone; }", ".", STONE),
    ("coproc rm route/1.vision.guard", ".", GUARD),
    ("coproc W { sed -i s/a/b/ src/app.py; }", ".", PROTECTED),
    ("coproc W while :; do rm route/1.vision.stone; done", ".", STONE),
    # other compound commands and expansions whose commands run
    ("select x in a; do rm route/1.vision.guard; done", ".", GUARD),
    ("case x in x) rm route/1.vision.stone;; esac", ".", STONE),
    ("[[ -n $(rm route/1.vision.guard) ]]", ".", GUARD),
    ("echo $(( $(rm route/1.vision.guard) ))", ".", GUARD),
    ("(( x = `rm route/1.vision.guard` ))", ".", GUARD),
    ("cat <(rm route/1.vision.guard)", ".", GUARD),
    ("cat <<EOF\n$(rm route/1.vision.guard)\nEOF", ".", GUARD),
    # protect: globs, until the stone passes
    ("echo x > src/app.py", ".", PROTECTED),
    ("sed -i s/a/b/ src/app.py", ".", PROTECTED),
    ("cp -r /tmp/lib src/", ".", PROTECTED),
    ("rm -rf src", ".", "protect: glob (src/**)"),
    ("git checkout HEAD -- src/app.py", ".", PROTECTED),
]

# (command, the event's cwd relative to the repository)
ALLOWED: list[tuple[str, str]] = [
    ("cat route/1.vision.guard", "."),
    ("grep -n judges route/1.vision.guard", "."),
    ("head -5 route/1.vision.stone && wc -l route/*.stone", "."),
    ("sed -n 1,5p route/1.vision.guard", "."),
    ("ls -la route/.route", "."),
    ("cd route && cat 1.vision.stone", "."),
    ("cat route/1.vision.stone > /tmp/stone-copy.md", "."),
    ("cp route/1.vision.guard /tmp/guard-copy", "."),
    ("echo '# Vision' > route/1.vision.md", "."),
    ("cat > route/2.plan.md <<'EOF'\n# Plan\nroute/2.plan.guard says what checks it\nEOF", "."),
    ("function show { cat route/1.vision.guard; }; show", "."),
    ("coproc cat route/1.vision.stone", "."),
    ("echo '# Vision' > 1.vision.md", "route"),
    ("route.stone.get --stone @next-one --say", "."),
    ("route.stone.set --stone 1.vision --as passed", "."),
    ("route.drive && route.status", "."),
    ("git status && git diff", "."),
    ("git add -A && git commit -m 'vision: first draft'", "."),
    ("git add route/.route && git commit -m 'update route/1.vision.stone notes'", "."),
    ("git log -p route/1.vision.guard", "."),
    ("git -C route log --oneline", "."),
    ("git checkout -b feature/next", "."),
    ("git stash list", "."),
    ("git restore --staged route/1.vision.md", "."),
    ("echo x > docs/notes.md", "."),
    ("echo $HOME > notes.txt", "."),
    ("echo 'see route/1.vision.stone' > notes.txt", "."),
    ('x=$(cat route/1.vision.guard); echo "$x" > /tmp/g', "."),
    ("python3 -m pytest -q", "."),
    ("pytest tests/", "."),
    ("python3 tools/judge.py", "."),
    ("make test 2>&1 | tee build.log", "."),
    ("find . -name '*.md'", "."),
    ("find build -name '*.o' -delete", "."),
    ("rm -rf build", "."),
    ("echo x > /tmp/out.txt", "."),
    ("mkdir -p docs/new && chmod +x tools/judge.py", "."),
    ("echo x > ../README.md.bak", "docs"),
]


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bash") / "repo"
    root.mkdir()
    git(root, "init", "-q")
    write(root / "README.md", "test repo\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "initial")
    route = gated_route(root)
    write(route / "2.plan.guard", (route / "2.plan.guard").read_text() + "protect: ['src/**']\n")
    write(root / "src" / "app.py", "print('hi')\n")
    write(root / "docs" / "readme.md", "docs\n")
    write(root / ".route-approvers", "human@example.com\n")
    (root / "link-to-guard").symlink_to(route / "1.vision.guard")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "route")
    git(root, "switch", "-q", "-c", "work")
    assert run_route(["route.bind", "--set", "route"], root).code == 0
    return root


def bounce(repo: Path, command: str, cwd: str, monkeypatch: pytest.MonkeyPatch) -> Ran:
    """The hook, in process, run where Claude Code runs it (the project's directory), fed a Bash call."""
    monkeypatch.chdir(repo)
    event = hook_event(
        "PreToolUse",
        (repo / cwd).resolve(),
        tool_name="Bash",
        tool_input={"command": command, "description": "a robot's command"},
        tool_use_id="toolu_01ABC",
    )
    done = CliRunner().invoke(bounce_command, [], input=event, catch_exceptions=False)
    return Ran(done.exit_code, done.stdout, done.stderr)


@pytest.mark.parametrize(("command", "cwd", "why"), BLOCKED, ids=[row[0][:60] for row in BLOCKED])
def test_bash_writes_to_protected_paths_are_refused_with_the_reason(
    repo: Path, command: str, cwd: str, why: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = bounce(repo, command, cwd, monkeypatch)
    reason = denied(done)
    assert reason.startswith("route.bounce: blocked "), (command, done)
    assert why in reason, (command, reason)
    assert "\n" not in reason


@pytest.mark.parametrize(("command", "cwd"), ALLOWED, ids=[row[0][:60] for row in ALLOWED])
def test_what_a_robot_does_on_its_route_is_allowed(
    repo: Path, command: str, cwd: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    done = bounce(repo, command, cwd, monkeypatch)
    assert (done.code, done.out, done.err) == (0, "", ""), (command, done)


def test_a_protect_glob_stops_at_its_stones_pass(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same Bash write is refused while 2.plan has not passed and allowed once it has (and the table
    rows above all ran before: nothing here passes a stone for them)."""
    blocked = bounce(repo, "echo x > src/app.py", ".", monkeypatch)
    assert PROTECTED in denied(blocked)
    other = repo.parent / "passed"
    git(repo.parent, "clone", "-q", str(repo), str(other))
    git(other, "switch", "-q", "work")
    from tests.route_gate.gate import pass_all

    pass_all(other, other / "route")
    allowed = bounce(other, "echo x > src/app.py && sed -i s/hi/ho/ src/app.py", ".", monkeypatch)
    assert (allowed.code, allowed.out) == (0, ""), allowed


def test_an_unreadable_bash_event_is_blocked_the_blunt_way(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What bounce cannot read at all it still blocks with exit 2 (the reason on stderr), never allows."""
    monkeypatch.chdir(repo)
    event = json.dumps({"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": 7}})
    done = CliRunner().invoke(bounce_command, [], input=event, catch_exceptions=False)
    assert done.exit_code == 2 and done.stdout == ""
    assert "tool_input.command is a number, not a command line" in done.stderr


def test_odd_commands_are_judged_without_a_crash(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeded random commands from shell pieces (quotes left open, redirections without a word, nesting):
    each is judged (allowed or refused) and never ends in 'checking it failed'; followed by a line that
    writes a guard, it is refused whatever came before (read, or named where the reader lost track)."""
    import random

    pieces = [
        "echo", "x", ">", ">>", "2>&1", "|", "&&", ";", "'", '"', "$(", ")", "`", "{", "}", "(", "<<EOF\n",
        "EOF", "bash -c", "eval", "cd route", "rm", "-rf", "*.guard", "route/1.vision.guard", "$X", "~",
        "tee", "sed -i", "git checkout", "--", ".", "\\", "\n", "xargs", "find . -delete", ">&", "<>",
    ]  # fmt: skip
    rng = random.Random(20261129)
    for _ in range(150):
        command = " ".join(rng.choice(pieces) for _ in range(rng.randint(1, 9)))
        done = bounce(repo, command, ".", monkeypatch)
        assert done.code == 0 and "checking it failed" not in done.out + done.err, (command, done)
        plain = bounce(repo, f"{command}\necho x > route/1.vision.guard", ".", monkeypatch)
        assert denied(plain).startswith("route.bounce: blocked "), (command, plain)
