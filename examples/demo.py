"""`make demo`: drive an example route end to end, as a robot, a human and CI would, with no API key.

It makes a fresh git repository in a temporary directory, copies `examples/demo/route` into it as
`routes/launch`, and plays the three parts, printing every command and its answer:

- the robot asks `route.stone.get` what to do, writes artifacts and asks `route.stone.set --as passed`;
  a bhrain review (scripted, offline) blocks a TODO, a behaviorci judge rejects a weak prompt;
- the human approves the vision at a terminal (`--as approved` refuses anyone else) and git records it;
- CI runs `route.verify --base <the commit the route came from>`, which re-checks every pass from the
  files and git history without running a single review, catches an artifact changed after its approval,
  and catches a guard changed without a human's policy approval (`route.policy.approve`);
- the robot forges a pass with a fake `behaviorci` first on its PATH: the records are consistent, so plain
  `route.verify` passes it; `route.verify --recheck` runs the judge in CI itself and rejects it (the other
  passes, held by the base, are not run again);
- `route.status` shows the board after each part.

Every step checks the exit code it expects, so the demo also fails loudly if the driver regresses.
Usage: python3 examples/demo.py [--keep DIR]   (the route.* commands on PATH, or this checkout's .venv)
"""

from __future__ import annotations

import argparse
import os
import pty
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROUTE = "routes/launch"
HUMAN = ("Dana Human", "dana@example.com")
ROBOT = ("Robo Coder", "robot@example.com")
COLOUR = sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def paint(text: str, code: str) -> str:
    return f"\033[{code}m{text}\033[0m" if COLOUR else text


class DemoFailed(Exception):
    pass


class Demo:
    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.base = ""
        self.env = {
            **os.environ,
            "GIT_CONFIG_GLOBAL": str(repo.parent / "gitconfig"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "NO_COLOR": "1",
        }
        self.env.pop("GITHUB_ACTIONS", None)  # the CI part below is a local run of the same gate

    # -- narration -----------------------------------------------------------------------------------
    def part(self, title: str) -> None:
        print()
        print(paint(f"━━ {title}", "1;36"))

    def note(self, text: str) -> None:
        print(paint(textwrap.fill(text, 100, initial_indent="   ", subsequent_indent="   "), "2"))

    def run(self, who: str, argv: list[str], expect: int, *, tty: bool = False, show: int = 40) -> str:
        print(paint(f"{who} $ ", "1;33") + shlex.join(argv))
        code, out, err = (self._run_tty if tty else self._run)(argv)
        for line in cut((out + err).rstrip("\n").splitlines(), show):
            if isinstance(line, int):
                print(paint(f"   … {line} more lines", "2"))
            else:
                print(f"   {line}")
        print(paint(f"   [exit {code}]", "32" if code == expect else "1;31"))
        if code != expect:
            raise DemoFailed(f"{shlex.join(argv)} exited {code}, expected {expect}")
        return out

    def _run(self, argv: list[str]) -> tuple[int, str, str]:
        done = subprocess.run(
            argv,
            cwd=self.repo,
            env=self.env,
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        return done.returncode, done.stdout, done.stderr

    def _run_tty(self, argv: list[str]) -> tuple[int, str, str]:
        """Run with a pseudo-terminal as stdin: this is what a person at a terminal looks like."""
        leader, follower = pty.openpty()
        try:
            done = subprocess.run(
                argv, cwd=self.repo, env=self.env, stdin=follower, capture_output=True, text=True, check=False
            )
        finally:
            os.close(follower)
            os.close(leader)
        return done.returncode, done.stdout, done.stderr

    def write(self, who: str, relpath: str, text: str, why: str) -> None:
        path = self.repo / relpath
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
        print(paint(f"{who} writes ", "1;33") + f"{relpath}  " + paint(f"({why})", "2"))

    def git(self, *args: str, who: tuple[str, str] | None = None) -> str:
        identity = ["-c", f"user.name={who[0]}", "-c", f"user.email={who[1]}"] if who else []
        done = subprocess.run(
            ["git", *identity, *args],
            cwd=self.repo,
            env=self.env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise DemoFailed(f"git {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def board(self) -> None:
        """The board after each part: every stone's state, as route.verify and route.drive see it."""
        self.run("anyone", ["route.status", "--route", ROUTE], 0)

    # -- the story -------------------------------------------------------------------------------------
    def setup(self) -> None:
        (self.repo.parent / "gitconfig").write_text(
            f"[user]\n\tname = {HUMAN[0]}\n\temail = {HUMAN[1]}\n[init]\n\tdefaultBranch = main\n"
            "[commit]\n\tgpgsign = false\n",
            encoding="utf-8",
        )
        self.repo.mkdir()
        shutil.copytree(HERE / "demo" / "route", self.repo / ROUTE)
        (self.repo / "tools").mkdir()
        shutil.copy(HERE / "bhrain" / "review.script.yaml", self.repo / "tools" / "review.script.yaml")
        (self.repo / ".route-approvers").write_text(
            f"# who may approve gated stones\n{HUMAN[1]}\n", encoding="utf-8"
        )
        self.git("init", "-q")
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "A route to launch the product", who=HUMAN)
        self.base = self.git("rev-parse", "HEAD").strip()  # the base a pull request would be checked against
        self.part(f"A fresh repository at {self.repo}, with the route {ROUTE}")
        for stone in sorted((self.repo / ROUTE).glob("*.stone")):
            guard = stone.with_suffix(".guard")
            print(f"   {stone.name:<18} {'guarded by ' + guard.name if guard.exists() else 'no guard'}")
        self.board()

    def vision(self) -> None:
        get = ["route.stone.get", "--route", ROUTE, "--stone", "@next-one"]
        set_passed = ["route.stone.set", "--route", ROUTE, "--stone", "1.vision", "--as", "passed"]
        self.part("The robot asks what to do next")
        self.run("robot", [*get, "--say"], 0, show=10)

        self.part("The robot writes the vision, leaving a TODO; the review blocks it")
        self.write(
            "robot",
            f"{ROUTE}/1.vision.md",
            VISION.replace("{success}", "TODO: decide the metric"),
            "with a TODO left in",
        )
        self.run("robot", set_passed, 2, show=14)
        self.note(
            "The guard ran the bhrain review (its output is a file under .route/), then the judges. "
            "reviewed? found 1 blocker; approved? waits for a person. The robot reads the feedback."
        )

        self.part("The robot fixes the blocker; the review passes, the human has not approved yet")
        self.write("robot", f"{ROUTE}/1.vision.md", VISION.replace("{success}", SUCCESS), "TODO resolved")
        self.run("robot", set_passed, 2, show=14)

        self.part("The robot cannot approve on its own")
        approve = ["route.stone.set", "--route", ROUTE, "--stone", "1.vision", "--as", "approved"]
        self.run("robot", approve, 2)

        self.part("A human approves at a terminal; git records who approved which content")
        self.run("human", approve, 0, tty=True)
        print("   " + self.git("log", "-1", "--format=%h %an <%ae> %s").strip())

        self.part("The robot retries: same reviews (reused), fresh judges, the stone passes")
        self.run("robot", set_passed, 0, show=12)
        self.board()

    def parallel(self) -> None:
        self.part("The next tier has two stones the robot can do in parallel")
        self.run("robot", ["route.stone.get", "--route", ROUTE, "--stone", "@next-all"], 0)
        self.write("robot", f"{ROUTE}/2.1.api.md", API, "the API sketch")
        self.write("robot", f"{ROUTE}/2.1.cli.md", CLI, "the CLI sketch")
        for stone in ("2.1.api", "2.1.cli"):
            self.run("robot", ["route.stone.set", "--route", ROUTE, "--stone", stone, "--as", "passed"], 0)
        self.board()

    def prompt(self) -> None:
        set_passed = ["route.stone.set", "--route", ROUTE, "--stone", "3.prompt", "--as", "passed"]
        self.part("The robot writes a prompt that forgets the refund rule; behaviorci rejects it")
        self.write("robot", f"{ROUTE}/3.prompt.md", PROMPT.replace("{refund}", ""), "no refund rule")
        self.run("robot", set_passed, 2, show=24)
        self.part("The robot adds the rule; behaviorci passes the stone")
        self.write("robot", f"{ROUTE}/3.prompt.md", PROMPT.replace("{refund}", REFUND), "refund rule added")
        self.run("robot", set_passed, 0, show=8)
        self.run("robot", ["route.stone.get", "--route", ROUTE, "--stone", "@next-one"], 0)
        self.board()

    def ci(self) -> None:
        verify = ["route.verify", "--route", ROUTE, "--base", self.base]
        self.part("The robot commits its work; CI re-checks every pass without running a review")
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "Launch route: vision, API, CLI, prompt", who=ROBOT)
        self.run("ci", verify, 0, show=12)

        self.part("Someone edits the approved vision afterwards; CI catches it")
        vision = self.repo / ROUTE / "1.vision.md"
        vision.write_text(
            vision.read_text(encoding="utf-8") + "\nAlso: we will ship a mobile app.\n", encoding="utf-8"
        )
        self.git("commit", "-q", "-am", "Sneak a change into the vision", who=ROBOT)
        self.run("ci", verify, 2, show=12)
        self.git("revert", "--no-edit", "HEAD", who=ROBOT)
        self.note("Reverted; the gate is green again.")
        self.run("ci", verify, 0, show=3)

    def recheck(self) -> None:
        merged = self.git("rev-parse", "HEAD").strip()  # main, once the route's pull request merged
        set_prompt = ["route.stone.set", "--route", ROUTE, "--stone", "3.prompt", "--as", "passed"]
        self.part("The robot drops the refund rule and fakes the judge: a behaviorci of its own on its PATH")
        self.write("robot", f"{ROUTE}/3.prompt.md", PROMPT.replace("{refund}", ""), "no refund rule again")
        fake = self.repo.parent / "robot-bin"
        fake.mkdir(exist_ok=True)
        (fake / "behaviorci").write_text("#!/bin/sh\necho 'passed: true'\n", encoding="utf-8")
        (fake / "behaviorci").chmod(0o755)
        print(
            paint("robot writes ", "1;33")
            + f"{fake / 'behaviorci'}  "
            + paint("(says passed, runs nothing)", "2")
        )
        honest_path = self.env["PATH"]
        self.env["PATH"] = f"{fake}{os.pathsep}{honest_path}"
        try:
            self.run("robot", set_prompt, 0, show=8)
        finally:
            self.env["PATH"] = honest_path
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "Shorter prompt", who=ROBOT)
        verify = ["route.verify", "--route", ROUTE, "--base", merged]
        self.part("CI checks the records: consistent, fresh, made under the base's guard; the forgery passes")
        self.run("ci", verify, 0, show=6)
        self.note(
            "route.verify proves what the records say, not what the judge would say: the judge file is "
            "exactly what a judge that says 'passed: true' writes."
        )
        self.part("CI rechecks: it runs each new claim's judges itself, with the base's guard")
        self.run("ci", [*verify, "--recheck"], 2, show=8)
        self.note(
            "Only 3.prompt's pass is new since the base; the other passes the base holds are not run again. "
            "Recheck needs the reviewers' credentials in CI (none here: behaviorci runs offline)."
        )
        self.git("revert", "--no-edit", "HEAD", who=ROBOT)
        self.run("ci", [*verify, "--recheck"], 0, show=3)

    def policy(self) -> None:
        verify = ["route.verify", "--route", ROUTE, "--base", self.base]
        set_passed = ["route.stone.set", "--route", ROUTE, "--stone", "1.vision", "--as", "passed"]
        self.part("The team allows the vision two nitpicks; the robot edits the guard and passes again")
        guard = self.repo / ROUTE / "1.vision.guard"
        guard.write_text(
            guard.read_text(encoding="utf-8").replace("--allow-nitpicks 1", "--allow-nitpicks 2"),
            encoding="utf-8",
        )
        print(
            paint("robot edits ", "1;33") + f"{ROUTE}/1.vision.guard  " + paint("(--allow-nitpicks 2)", "2")
        )
        self.run("robot", set_passed, 0, show=6)
        # Everything: the new pass record and judge files too (CI's checkout holds only what is committed).
        self.git("add", "-A")
        self.git("commit", "-q", "-m", "Allow the vision two nitpicks", who=ROBOT)
        self.part("CI compares the route's definitions with the base: a changed guard is a policy change")
        self.run("ci", verify, 2, show=8)
        self.note(
            "Guards and stones are policy: a pass under a weaker guard counts only once a human approves the "
            "change. The robot cannot: the command wants a person at a terminal, and CI checks who committed."
        )
        approve = ["route.policy.approve", "--route", ROUTE]
        self.run("robot", approve, 2)
        self.run("human", approve, 0, tty=True)
        self.run("ci", verify, 0, show=8)
        self.board()


def cut(lines: list[str], show: int) -> list[str | int]:
    """About ``show`` lines of a command's output, cut at whole blocks (the runs of lines between blank
    lines), never inside one, so a list is shown whole or not at all. The first block (what happened) and the
    last (the files used, the error line) are always shown; the blocks between them are kept in order while
    they fit. An int in the result stands where that many lines were left out."""
    if len(lines) <= show:
        return list(lines)
    blocks: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            blocks[-1].append(line)
        elif blocks[-1]:
            blocks.append([])
    blocks = [block for block in blocks if block]
    keep = [index in (0, len(blocks) - 1) for index in range(len(blocks))]
    used = sum(len(block) + 1 for index, block in enumerate(blocks) if keep[index]) - 1
    for index in range(1, len(blocks) - 1):
        if used + len(blocks[index]) + 1 > show:
            break
        keep[index] = True
        used += len(blocks[index]) + 1
    shown: list[str | int] = []
    for index, block in enumerate(blocks):
        if keep[index]:
            if index and not isinstance(shown[-1], int):
                shown.append("")
            shown.extend(block)
        elif isinstance(shown[-1], int):
            shown[-1] += len(block) + 1
        else:
            shown.append(len(block) + 1)
    return shown


COMMANDS = (
    "route.stone.get",
    "route.stone.set",
    "route.verify",
    "route.status",
    "route.policy.approve",
    "bhrain",
    "behaviorci",
)
UNFINISHED = ".demo-unfinished"  # in the --keep directory while a demo is being built there


def command_path() -> str | None:
    """A PATH on which the route.* commands are found: the current one, else the current one with this
    checkout's .venv/bin first (so `python3 examples/demo.py` works outside the venv), else None."""
    current = os.environ.get("PATH", "")
    if all(shutil.which(command, path=current) for command in COMMANDS):
        return current
    own = HERE.parent / ".venv" / "bin"
    with_own = f"{own}{os.pathsep}{current}"
    if all(shutil.which(command, path=with_own) for command in COMMANDS):
        return with_own
    return None


def prepare(base: Path) -> str | None:
    """Make ``base`` ready for a kept demo; a problem as one line, or None. A repository left unfinished
    by an earlier run (it failed or was interrupted) is the demo's own and is replaced; a finished one is
    kept, and the run refused."""
    repo = base / "repo"
    if base.exists() and not base.is_dir():
        return f"{base} exists and is not a directory; pick another --keep directory"
    if repo.exists() or (base / "gitconfig").exists():
        if not (base / UNFINISHED).exists():
            return f"{repo} holds a finished demo; pick another --keep directory or remove it"
        print(f"notice: replacing the unfinished demo in {base} left by an earlier run", file=sys.stderr)
        shutil.rmtree(repo, ignore_errors=True)
        (base / "gitconfig").unlink(missing_ok=True)
    base.mkdir(parents=True, exist_ok=True)
    (base / UNFINISHED).write_text("a demo is being built here; the next run replaces it\n", encoding="utf-8")
    return None


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", metavar="DIR", help="build the demo repository in DIR/repo and keep it")
    args = parser.parse_args(argv)
    path = command_path()
    if path is None:  # before anything is written
        print(
            f"error: the route.* commands are not installed; run make demo in {HERE.parent} (it installs "
            "them into .venv), or pip install it and run this again",
            file=sys.stderr,
        )
        return 2
    base = Path(args.keep).resolve() if args.keep else Path(tempfile.mkdtemp(prefix="routedriver-demo-"))
    problem = prepare(base) if args.keep else None
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    demo = Demo(base / "repo")
    demo.env["PATH"] = path
    try:
        demo.setup()
        demo.vision()
        demo.parallel()
        demo.prompt()
        demo.ci()
        demo.recheck()
        demo.policy()
    except (DemoFailed, OSError) as exc:
        print(paint(f"\ndemo failed: {exc}", "1;31"), file=sys.stderr)
        print(f"the repository is kept for a look: {demo.repo} (a rerun replaces it)", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(
            "\ndemo interrupted" + (f"; a rerun with --keep {args.keep} replaces it" if args.keep else ""),
            file=sys.stderr,
        )
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
        return 130
    print()
    print(
        paint(
            "━━ Done: every stone passed, a human approved the gated one and the policy change, CI verified "
            "it all.",
            "1;32",
        )
    )
    if args.keep:
        (base / UNFINISHED).unlink(missing_ok=True)
        print(f"   The repository is at {demo.repo}; look in {ROUTE}/.route/ for the review and judge files.")
    else:
        shutil.rmtree(base, ignore_errors=True)
    return 0


VISION = """
# Vision: Acme Notes

## Users
Small teams who keep meeting notes in scattered documents.

## Problem
Decisions get lost; nobody can find what was agreed or by whom.

## Non-goals
No real-time co-editing, no mobile app in the first release.

## Success
{success}
"""
SUCCESS = "Half of the pilot teams find a past decision in under a minute, measured in week four."
API = """
# API
| method | path | does |
|---|---|---|
| POST | /notes | create a note |
| GET | /notes?q= | search notes and decisions |
| GET | /decisions/{id} | one decision with who and when |
"""
CLI = """
# CLI
- `notes add "text"`: add a note (`notes add "We ship on Friday"`)
- `notes find QUERY`: search (`notes find friday`)
- `notes decision ID`: show a decision (`notes decision 42`)
"""
PROMPT = """
You are the support assistant for {{ product }}.
Customer question: {{ question }}
Answer briefly and kindly.{refund}
Reply in JSON with the fields "answer" (text) and "escalate" (true when a human must take over).
"""
REFUND = " Never promise a refund; a human decides refunds."

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
