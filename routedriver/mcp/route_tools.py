"""The tools ``route.mcp`` serves, as one table: name, description, JSON schema of the arguments, handler.

Each tool answers what the matching command prints and means: its text is the command's stdout (for
``route_next``, ``route_drive`` and ``route_set_passed`` the guidance a robot follows: the next stone, its
instructions, the exact commands, the judges' feedback), and ``error`` says what the command's exit code
would: ``None`` (exit 0), ``"refused"`` (exit 2: the caller can fix it, a judge said no) or
``"malfunction"`` (exit 1: something broke). An answer with an error starts with ``<meaning>: <the
command's one-line error>``. No tool approves: approval is a human's act at a terminal, and an answer that
waits for one starts by saying so.

Only ``route_status`` has a ``document`` (structured content): its text is that same JSON. The others answer
in text alone, because a client that finds structured content gives its model that instead of the text
(Claude Code and Codex do): a JSON document where the model needs the guidance.

Nothing here imports the MCP SDK: ``server`` puts these answers on the wire.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple

from routedriver import crashlog
from routedriver.errors import ExitCode, Malfunction, Refused, UserError
from routedriver.route import builtin_judges

Meaning = Literal["refused", "malfunction"]


class Answer(NamedTuple):
    text: str
    document: dict[str, Any] | None = None  # the structured content: route_status's board, the same as text
    error: Meaning | None = None  # None: the command would exit 0


class RouteTool(NamedTuple):
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    run: Callable[[str | None, Mapping[str, Any]], Answer]  # (the route option, the arguments)
    runs_commands: bool = False  # runs review/judge commands: reports progress and can be cancelled


def failed(exc: UserError) -> Answer:
    """A refusal or malfunction, in the words of the command's one line on stderr."""
    meaning: Meaning = "refused" if exc.exit_code == ExitCode.REFUSED else "malfunction"
    return Answer(f"{meaning}: {exc.line()}", None, meaning)


def _with_error(answer: Answer, line: str | None, meaning: Meaning) -> Answer:
    if line is None:
        return answer
    return Answer(f"{meaning}: {line}\n\n{answer.text}", None, meaning)


def _human_gate(route_option: str | None, stone: str) -> str:
    """What a robot is told when only a human can move the stone on."""
    # route.mcp answers the handshake from this module before the driver loads
    # (tests/mcp/test_lazy_imports.py): each tool imports the driver's modules when it is called
    from routedriver.route.drive import commands
    from routedriver.route.inputs import find_stone
    from routedriver.route.load import open_route

    route = open_route(route_option)
    approve = commands(route, find_stone(route, stone))[2]
    return (
        f"needs a human: {stone} waits for a human's approval, and no tool can approve (robots cannot). "
        f"A human runs, in a terminal: {approve}"
    )


# ---------------------------------------------------------------- the tools


def _next(route_option: str | None, arguments: Mapping[str, Any]) -> Answer:
    # the driver, when the tool is called (see _human_gate)
    from routedriver.route import api
    from routedriver.route.stone_report import get_text

    result = api.get(route_option, arguments.get("selector", "@next-one"))
    names = [item.stone.name for item in result.selection.stones if item.status != "passed"]
    after = "".join(
        f"\nwhen {name}'s artifact is written: call route_set_passed with stone {name!r}" for name in names
    )
    return Answer(get_text(result, True) + (after[1:] + "\n" if after else ""))


def status_document(route_option: str | None) -> dict[str, Any]:
    """The board of the route: the same document ``route.status --json`` prints (its one route)."""
    # the driver, when the tool is called (see _human_gate)
    from routedriver.route import status, status_report
    from routedriver.route.load import open_route

    board = status.board(open_route(route_option))
    routes = status_report.to_json([board])["routes"]
    assert isinstance(routes, list) and len(routes) == 1
    return dict(routes[0])


def _status(route_option: str | None, arguments: Mapping[str, Any]) -> Answer:
    document = status_document(route_option)
    return Answer(json.dumps(document, ensure_ascii=False, indent=2), document)


def _drive(route_option: str | None, arguments: Mapping[str, Any]) -> Answer:
    # the driver, when the tool is called (see _human_gate)
    from routedriver.route.drive import guidance, render

    return Answer(render(guidance(route_option)))


def _set_passed(route_option: str | None, arguments: Mapping[str, Any]) -> Answer:
    # the driver, when the tool is called (see _human_gate)
    from routedriver.route import api
    from routedriver.route.stone_report import set_error_line, set_text

    result = api.set_passed(route_option, arguments["stone"])
    evaluation = result.evaluation
    answer = Answer(set_text(result))
    if evaluation.outcome == "waiting":  # only approved? said no: a human must act, and no tool ever will
        answer = Answer(f"{_human_gate(route_option, evaluation.stone)}\n\n{answer.text}")
    meaning: Meaning = "malfunction" if evaluation.outcome == "malfunction" else "refused"
    return _with_error(answer, set_error_line(result), meaning)


def _judge(route_option: str | None, arguments: Mapping[str, Any]) -> Answer:
    # the driver, when the tool is called (see _human_gate)
    from routedriver.route import api
    from routedriver.route.stone_report import verdict_error_line

    stone, mechanism = arguments["stone"], arguments["mechanism"]
    flags = {
        flag.keyword: arguments.get(flag.keyword) for judge in builtin_judges.BUILTINS for flag in judge.flags
    }
    verdict = api.judge(route_option, stone, mechanism, flags)
    text = verdict.output
    asked = builtin_judges.named(mechanism)
    if asked is not None and asked.needs_human and verdict.status == "failed":
        text = f"{_human_gate(route_option, stone)}\n\n{text}"
    meaning: Meaning = "refused" if verdict.status == "failed" else "malfunction"
    return _with_error(Answer(text), verdict_error_line(stone, mechanism, verdict), meaning)


# ---------------------------------------------------------------- the table

_ROUTE = {
    "type": "string",
    "minLength": 1,
    "description": "The route directory (default: route.mcp's --route, else the route bound to the branch).",
}
_STONE = {"type": "string", "minLength": 1, "description": "The stone's name, e.g. 1.vision."}
_COUNT = {"type": "integer", "minimum": 0}


def _schema(properties: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {**properties, "route": _ROUTE},
        "required": list(required),
        "additionalProperties": False,
    }


def judge_tool() -> RouteTool:
    """``route_judge``: the built-in judges (``route.builtin_judges``), each with its flags as arguments."""
    said = "; ".join(f"{judge.name} {judge.summary}" for judge in builtin_judges.BUILTINS)
    flags = {
        flag.keyword: {**_COUNT, "description": f"{judge.name}: {flag.help}"}
        for judge in builtin_judges.BUILTINS
        for flag in judge.flags
    }
    return RouteTool(
        "route_judge",
        "Run a built-in judge",
        f"A built-in judge on the stone as it is now (route.stone.judge): {said}.",
        _schema(
            {
                "stone": _STONE,
                "mechanism": {"type": "string", "enum": [judge.name for judge in builtin_judges.BUILTINS]},
                **flags,
            },
            ("stone", "mechanism"),
        ),
        _judge,
    )


TOOLS: tuple[RouteTool, ...] = (
    RouteTool(
        "route_next",
        "Next stones",
        "The stone(s) to work on next, each with its instructions (route.stone.get --say). @next-one: the "
        "first incomplete stone; @next-all: every incomplete stone of its tier (they can be done in any "
        "order).",
        _schema({"selector": {"type": "string", "enum": ["@next-one", "@next-all"], "default": "@next-one"}}),
        _next,
    ),
    RouteTool(
        "route_status",
        "Route status",
        "The board: every stone by tier with its state (passed, stale and why, blocked by an earlier "
        "stone, or for the active tier needs-artifact, ready, rejected with the judges' reasons, "
        "waiting-for-approval, malfunction), its latest review's counts and who approved it "
        "(route.status --json).",
        _schema({}),
        _status,
    ),
    RouteTool(
        "route_drive",
        "What to do next",
        "Where the route stands and what to do next, with the instructions and the exact commands "
        "(what route.drive prints).",
        _schema({}),
        _drive,
    ),
    RouteTool(
        "route_set_passed",
        "Run a stone's guard",
        "Mark a stone passed through its guard, exactly like route.stone.set --as passed: runs (or reuses) "
        "its reviews, then its judges, and records the outcome. Returns the verdict, the judges' feedback "
        "and the record files. Reviews may take minutes: progress is reported, and cancelling the call "
        "stops them (nothing is recorded). There is no approve tool: approval is a human's act at a "
        "terminal.",
        _schema({"stone": _STONE}, ("stone",)),
        _set_passed,
        runs_commands=True,
    ),
    judge_tool(),
)
BY_NAME = {tool.name: tool for tool in TOOLS}


def argument_problem(tool: RouteTool, arguments: Mapping[str, Any]) -> str | None:
    """Why ``arguments`` do not fit the tool's JSON schema (the most relevant error), or None. A string that
    holds a NUL fits a schema but names no route, stone or file (argv never carries one; JSON can)."""
    for key, value in arguments.items():
        if isinstance(value, str) and "\0" in value:
            return f"{key}: {value!r} holds a NUL byte, which no route, stone or path holds"
    # jsonschema (~0.1 s): only when a tool is called
    import jsonschema

    validator = jsonschema.Draft202012Validator(tool.input_schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(dict(arguments)))
    if error is None:
        return None
    where = "/".join(str(part) for part in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message


def call(name: str, arguments: Mapping[str, Any] | None, default_route: str | None) -> Answer:
    """Run one tool call to its answer; never raises (short of BaseException: an interrupt unwinds)."""
    tool = BY_NAME.get(name)
    if tool is None:
        return failed(Refused(f"unknown tool {name!r}", f"tools: {', '.join(BY_NAME)}"))
    arguments = arguments or {}
    problem = argument_problem(tool, arguments)
    if problem is not None:
        return failed(
            Refused(
                f"invalid arguments for {name}: {problem}",
                f"call {name} with arguments that match its input schema",
            )
        )
    route_option = arguments.get("route") or default_route
    try:
        return tool.run(route_option, arguments)
    except UserError as exc:
        return failed(exc)
    except Exception as exc:  # noqa: BLE001 - a tool call never takes the server down
        where = crashlog.write("route.mcp", exc)
        detail = f"details in {where}" if where else "run it again with route.* commands to see more"
        return failed(
            Malfunction(f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())}", detail)
        )
