"""Skills: what the brain is asked to be (act, ask, review), its system prompt and its default tools.

The review skill renders a Jinja2 rubric with the artifacts and must end its output with the two lines the
route driver's ``reviewed?`` judge reads: ``blockers: N`` and ``nitpicks: M``.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from routedriver import userfile
from routedriver.errors import Refused

COMMON = (
    "You are bhrain, a careful agent working in a software repository through tools. Ground every claim in "
    "what you observed: look before you change, check after you change. A tool result may be an error or a "
    "refusal; read it and adapt instead of repeating the same call. When you are done, answer without "
    "calling tools; that answer is what the user receives."
)


@dataclass(frozen=True)
class Skill:
    name: str
    prompt: str
    tool_sets: tuple[str, ...]
    read_only: bool  # default tools are the read-only ones (read, glob, grep, websearch)
    # The answer IS the result (ask, review): an empty one is a malfunction. act's result is its changes; an
    # empty closing report only gets a warning.
    needs_answer: bool = True
    # The bash tool's sandbox when neither --sandbox nor the config says: a review reads what the robot it
    # judges wrote, instructions aimed at the reviewer included, so its commands never run unsandboxed.
    sandbox: Literal["on", "auto"] = "auto"


SKILLS = {
    "act": Skill(
        "act",
        COMMON + "\n\nSkill: act. Carry out the task: make the changes it asks for, run what "
        "proves they work, then report briefly what you did and what is left.",
        ("files", "bash", "websearch"),
        False,
        needs_answer=False,
    ),
    "ask": Skill(
        "ask",
        COMMON + "\n\nSkill: ask. Answer the question. Investigate with read-only tools; do "
        "not modify anything. Give a direct answer first, then the evidence.",
        ("files", "websearch"),
        True,
    ),
    "review": Skill(
        "review",
        COMMON + "\n\nSkill: review. You review work against a rubric. Do not modify "
        "anything. Every finding is a blocker (must be fixed before acceptance) or a nitpick "
        "(worth improving, not a reason to reject). Your final answer MUST end with exactly two "
        "lines: 'blockers: N' and 'nitpicks: M', with the numbers of findings.",
        ("files", "websearch"),
        True,
        sandbox="on",
    ),
}


def get_skill(name: str) -> Skill:
    """The skill called ``name``; a mistyped name (flag or config file) is refused naming the skills."""
    skill = SKILLS.get(name)
    if skill is None:
        close = difflib.get_close_matches(name, SKILLS, n=1)
        guess = f" (did you mean {close[0]}?)" if close else ""
        raise Refused(
            f"unknown skill {name!r}{guess}", f"the skills are {', '.join(SKILLS)}; see bhrain run --help"
        )
    return skill


# -- review --------------------------------------------------------------------------------------------------
_KINDS = ("blocker", "nitpick")
# Markdown emphasis and blanks around a count, on the SAME line as the word: "in step 3\n   blocker because…"
# (a number ending one line, the word opening the next) and "Blockers:\n1. the TODO" (a heading over a list)
# are not counts.
_NOISE = r"[*_` \t]*"
_PATTERNS = {
    kind: (
        re.compile(rf"\b{kind}s?\b{_NOISE}[:=]{_NOISE}(\d+)", re.IGNORECASE),
        re.compile(rf"\b(\d+){_NOISE}{kind}s?\b", re.IGNORECASE),
    )
    for kind in _KINDS
}
_COUNT_LINE = re.compile(rf"^{_NOISE}(blockers?|nitpicks?){_NOISE}[:=]{_NOISE}\d+{_NOISE}$", re.IGNORECASE)

CORRECTION = (
    "Your review does not end with readable counts. Reply with the complete review again, "
    "ending with exactly these two lines (numbers of findings):\nblockers: <number>\nnitpicks: <number>"
)


def read_counts(text: str) -> tuple[int, int] | None:
    """(blockers, nitpicks) from ``blockers: N`` / ``N blockers``, the last mention of each; else None."""
    counts = []
    for kind in _KINDS:
        found = [(m.start(), int(m.group(1))) for pattern in _PATTERNS[kind] for m in pattern.finditer(text)]
        if not found:
            return None
        counts.append(max(found)[1])
    return counts[0], counts[1]


def with_counts(text: str, blockers: int, nitpicks: int) -> str:
    """The review ending with the canonical two count lines (replacing count lines already at its end)."""
    lines = text.rstrip().splitlines()
    while lines and (_COUNT_LINE.match(lines[-1]) or not lines[-1].strip()):
        lines.pop()
    body = "\n".join(lines).rstrip()
    return (
        f"{body}\n\nblockers: {blockers}\nnitpicks: {nitpicks}"
        if body
        else f"blockers: {blockers}\nnitpicks: {nitpicks}"
    )


@dataclass(frozen=True)
class Artifact:
    path: str
    content: str


def render_rubric(rubric: Path | None, artifacts: Sequence[Artifact], input_text: str) -> str:
    """The review request: the rubric template rendered with ``artifacts`` and ``input`` (StrictUndefined)."""
    # jinja2 (~25 ms) and importlib.resources: only a review's rubric
    import jinja2

    from routedriver.jinjasandbox import BoundedImmutableSandbox, render

    if rubric is None:
        from importlib.resources import files

        source = files("routedriver.templates").joinpath("review/default.md.j2").read_text(encoding="utf-8")
        name = "default review rubric"
    else:
        if not os.path.exists(rubric):  # what is there but is no file (a FIFO, a device), userfile names
            raise Refused(f"rubric {rubric} not found", "check the path given to --rubric")
        source, name = userfile.read_text(rubric, what="rubric"), str(rubric)
    # An empty loader: a rubric is one file, so {% include %} / {% import %} / {% extends %} fail as
    # "template not found" (a TemplateError) instead of jinja2's TypeError about a missing loader. Sandboxed:
    # a rubric is text in a repository, which a pull request can change, and an unsandboxed template reaches
    # Python itself ({{ input.__class__.__mro__ }} …), runs unbounded loops ({% for i in range(10**9) %}) and
    # builds text of any size ({{ 'x' * 10**9 }}).
    env = BoundedImmutableSandbox(
        loader=jinja2.DictLoader({}),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,  # a rubric for a model, not HTML: escaping would corrupt it
    )
    try:
        template = env.from_string(source)
        return render(
            template, artifacts=[{"path": a.path, "content": a.content} for a in artifacts], input=input_text
        )
    except jinja2.UndefinedError as exc:
        raise Refused(
            f"rubric {name} uses an undefined variable: {exc.message}",
            "the rubric can use artifacts (a list of {path, content}) and input",
        ) from None
    except jinja2.TemplateSyntaxError as exc:
        raise Refused(
            f"rubric {name} has a template error on line {exc.lineno}: {exc.message}", "fix the Jinja2 syntax"
        ) from None
    except jinja2.TemplateNotFound as exc:
        raise Refused(
            f"rubric {name} includes, imports or extends {exc.name!r}, which a rubric cannot do",
            "write the rubric as one self-contained file",
        ) from None
    except Exception as exc:  # noqa: BLE001 - an expression of the rubric failed: {{ 1/0 }}, a bad filter…
        raise Refused(
            f"rubric {name} failed to render: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}",
            "fix the expression in the rubric",
        ) from None
