"""The turn classifier: a small model reads the user's message before the agent acts and the engine turns
its verdict into a ``[BEHAVIOR DIRECTIVE …]`` block.

The model answers one JSON object, ``{complexity, approach, risk, directives[], skip_reason?}`` (a fenced
```json block is tolerated); the values must come from the configured vocabularies. Everything about the
classifier is best effort: a timeout, a provider error or an unreadable answer is logged as a warning and
the agent proceeds without a directive. It never blocks the agent.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from routedriver.brain.behavior.state import SessionState, Tracker
from routedriver.later import Later
from routedriver.llm.types import ChatModel, Completion, Message

log = logging.getLogger("routedriver.brain.behavior")
FOLLOWUPS = frozenset(
    {
        "ok",
        "okay",
        "k",
        "kk",
        "yes",
        "y",
        "yep",
        "yeah",
        "yup",
        "sure",
        "continue",
        "go",
        "go on",
        "go ahead",
        "proceed",
        "next",
        "do it",
        "done",
        "thanks",
        "thank you",
        "thx",
        "ty",
        "great",
        "good",
        "perfect",
        "fine",
        "right",
        "correct",
        "agreed",
        "lgtm",
        "sounds good",
        "ok thanks",
        "ok continue",
        "yes please",
        "oui",
        "ouais",
        "d'accord",
        "daccord",
        "vas-y",
        "vas y",
        "continue stp",
        "valide",
        "validé",
        "merci",
        "parfait",
        "c'est bon",
        "ok merci",
        "si",
        "sí",
        "vale",
        "ja",
        "weiter",
        "da",
    }
)
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL | re.IGNORECASE)
_FORMAT_FIELD = re.compile(r"\{(complexity|approach|risk|approach_label)\}")


class ClassifierError(Exception):
    pass


def is_followup(message: str) -> bool:
    normalized = re.sub(r"[\s!.?,;:…]+", " ", message.strip().lower()).strip()
    return normalized in FOLLOWUPS


class Classifier:
    def __init__(
        self,
        config: Mapping[str, Any],
        model: ChatModel | Callable[[], ChatModel],
        *,
        profile: Mapping[str, Any] | None = None,
        max_tokens: int = 800,
        temperature: float | None = 0.0,
    ) -> None:
        self.config = config
        self.max_tokens = max_tokens
        self.temperature = temperature
        self._model = model
        self.profile = profile or {}
        self.vocab = {
            kind: list(config[key])
            for kind, key in (
                ("complexity", "complexity_levels"),
                ("approach", "approaches"),
                ("risk", "risk_levels"),
            )
        }

    @property
    def model(self) -> ChatModel:
        if callable(self._model) and not isinstance(self._model, ChatModel):
            self._model = self._model()  # built on first use: a provider SDK is imported only when needed
        return self._model

    # -- when ----------------------------------------------------------------------------------------
    def skip_reason(self, state: SessionState, message: str) -> str | None:
        """Why this turn is not classified, or None when it should be (``state.turn`` is the new turn)."""
        if not message.strip():
            return "empty message"
        frequency = self.config.get("frequency", "every_turn")
        if frequency == "first_turn" and state.turn != 1:
            return "frequency first_turn"
        if frequency == "every_n_turns" and (state.turn - 1) % int(self.config.get("frequency_n", 3)) != 0:
            return "frequency every_n_turns"
        if frequency == "on_new_message" and message.strip() == state.last_classified_message:
            return "not a new message"
        if self.config.get("skip_followups", True) and is_followup(message):
            return "follow-up acknowledgement"
        return None

    def plan(
        self, state: SessionState, message: str, tracker: Tracker, cwd: str
    ) -> tuple[str, list[list[str]]] | None:
        """Whether this turn is classified, decided under the caller's lock. When it is, the turn is marked
        in ``state`` and (snapshot, history) come back for ``classify``, which the caller runs after
        releasing the lock (it may take seconds)."""
        reason = self.skip_reason(state, message)
        if reason is not None:
            log.info("behavior: no classification this turn (%s)", reason)
            return None
        state.last_classified_message = message.strip()
        state.classified_turns.append(state.turn)
        return snapshot(state, tracker, cwd), [list(item) for item in state.history]

    # -- what ----------------------------------------------------------------------------------------
    def prompts(
        self, message: str, snapshot: str, *, tools: Sequence[str], cwd: str, history: Sequence[Sequence[str]]
    ) -> tuple[str, str]:
        """(system prompt, user prompt) for one classification."""
        context = self.config.get("context", {})
        parts: list[str] = []
        if self.profile.get("name"):
            parts.append(
                f"Agent profile: {self.profile.get('title') or self.profile['name']}"
                + (f" - {self.profile['description']}" if self.profile.get("description") else "")
            )
        if context.get("tool_inventory", True) and tools:
            parts.append(f"Tools the agent has used or is watched on: {', '.join(tools)}")
        if context.get("workspace_info", True):
            kind = " (git repository)" if os.path.isdir(os.path.join(cwd, ".git")) else ""
            parts.append(f"Workspace: {cwd}{kind}")
        state_lines = [snapshot] if context.get("session_state", True) and snapshot else []
        depth = int(context.get("history_depth", 8))
        if context.get("recent_history", True) and history and depth:
            state_lines.append("Recent actions: " + ", ".join(_action(item) for item in history[-depth:]))
        if state_lines:
            parts.append("Session state:\n" + "\n".join(state_lines))
        allowed = "; ".join(
            f"{kind}: {', '.join(entry['name'] for entry in entries)}" for kind, entries in self.vocab.items()
        )
        parts.append(f"Allowed values - {allowed}")
        parts.append(f"User message:\n<<<\n{message.strip()}\n>>>")
        system = self.config.get("system_prompt") or self._default_system_prompt()
        return system, "\n\n".join(parts)

    def _default_system_prompt(self) -> str:
        lines = [
            "You classify a user's request to an AI agent before the agent acts, so that it approaches "
            "the request the right way. Do not answer or perform the request.",
            "",
        ]
        for kind, entries in self.vocab.items():
            lines.append(f"{kind} (pick one):")
            for entry in entries:
                hint = entry.get("when") or entry.get("label") or ""
                lines.append(f"- {entry['name']}" + (f": {hint}" if hint else ""))
            lines.append("")
        limit = int(self.config.get("max_directives", 5))
        lines += [
            "Answer with ONE JSON object and nothing else:",
            '{"complexity": "<name>", "approach": "<name>", "risk": "<name>", '
            '"directives": ["<short imperative instruction>"], "skip_reason": null}',
            f"Give at most {limit} directives, specific to this request and this session's state. If the "
            "message needs no guidance (a greeting, an acknowledgement), set skip_reason to a short reason.",
        ]
        return "\n".join(lines)

    def classify(
        self,
        message: str,
        snapshot: str,
        *,
        tools: Sequence[str] = (),
        cwd: str = ".",
        history: Sequence[Sequence[str]] = (),
    ) -> str | None:
        """The directive block for ``message``, or None (skipped by the model, or any failure: logged)."""
        try:
            system, prompt = self.prompts(message, snapshot, tools=tools, cwd=cwd, history=history)
            completion = self._complete(system, prompt)
            verdict = parse_verdict(completion.text, self.vocab)
            if verdict.get("skip_reason"):
                log.info("behavior: classifier skipped the turn: %s", verdict["skip_reason"])
                return None
            return self.render(verdict)
        except Exception as exc:  # noqa: BLE001 - a classifier failure must never stop the agent
            log.warning(
                "behavior: classifier failed (%s: %s); the agent proceeds without a directive",
                type(exc).__name__,
                " ".join(str(exc).split())[:300],
            )
            return None

    def _complete(self, system: str, prompt: str) -> Completion:
        timeout = float(self.config.get("timeout", 15))
        model = self.model
        answer = Later(
            lambda: model.complete(
                [Message(role="user", text=prompt)],
                system=system,
                max_tokens=self.max_tokens,
                temperature=self.temperature,
            )
        )
        # A deadline: a slow provider costs at most `timeout` seconds of the user's turn (the call goes on
        # in its daemon thread, and its answer is dropped).
        if not answer.wait(timeout):
            raise ClassifierError(f"no answer within {timeout:g} s")
        return answer.get()  # its exception, if it raised one

    def render(self, verdict: Mapping[str, Any]) -> str:
        entries = {kind: self._entry(kind, verdict[kind]) for kind in self.vocab}
        values = {
            "complexity": entries["complexity"]["name"],
            "approach": entries["approach"]["name"],
            "risk": entries["risk"]["name"],
            "approach_label": entries["approach"].get("label") or entries["approach"]["name"],
        }

        def fill(template: str) -> str:
            return _FORMAT_FIELD.sub(lambda match: values[match.group(1)], template)

        lines = [fill(self.config["directive_prefix"])]
        risk_names = [entry["name"] for entry in self.vocab["risk"]]
        threshold = self.config.get("high_risk_threshold", "medium")
        if threshold in risk_names and risk_names.index(values["risk"]) >= risk_names.index(threshold):
            lines.append(fill(self.config["high_risk_warning"]))
        lines.append(f"- Approach: {values['approach_label']}")
        for kind in ("approach", "complexity", "risk"):
            if entries[kind].get("behavior"):
                lines.append(f"- {entries[kind]['behavior']}")
        lines += [f"- {item}" for item in verdict["directives"][: int(self.config.get("max_directives", 5))]]
        if self.config.get("directive_footer"):
            lines.append(fill(self.config["directive_footer"]))
        return "\n".join(lines)

    def _entry(self, kind: str, name: str) -> Mapping[str, Any]:
        return next(entry for entry in self.vocab[kind] if entry["name"] == name)


def parse_verdict(text: str, vocab: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, Any]:
    """The model's JSON, checked against the vocabularies (names matched case-insensitively)."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        data = json.loads(body)
    except ValueError:
        start, end = body.find("{"), body.rfind("}")
        if start < 0 or end <= start:
            raise ClassifierError("the answer is not JSON") from None
        try:
            data = json.loads(body[start : end + 1])
        except ValueError:
            raise ClassifierError("the answer is not JSON") from None
    if not isinstance(data, dict):
        raise ClassifierError("the answer is not a JSON object")
    verdict: dict[str, Any] = {"skip_reason": data.get("skip_reason") or None}
    if verdict["skip_reason"]:
        return verdict
    for kind, entries in vocab.items():
        value = data.get(kind)
        names = {str(entry["name"]).lower(): entry["name"] for entry in entries}
        if not isinstance(value, str) or value.strip().lower() not in names:
            raise ClassifierError(f"{kind} {value!r} is not one of {', '.join(names.values())}")
        verdict[kind] = names[value.strip().lower()]
    directives = data.get("directives") or []
    if not isinstance(directives, list):
        raise ClassifierError("directives is not a list")
    verdict["directives"] = [" ".join(str(item).split()) for item in directives if str(item).strip()]
    return verdict


def snapshot(state: SessionState, tracker: Tracker, cwd: str) -> str:
    """The session as the classifier sees it, built from the configured state tracking (the recent actions
    are added by ``Classifier.prompts`` under ``context.recent_history``)."""
    lines = [f"Turn: {state.turn}", f"Total tool calls: {state.total_tool_calls}"]
    for name, *_ in tracker.sets:
        members = list(state.sets.get(name, ()))
        recent = ", ".join(_relative(item, cwd) for item in members[-3:][::-1])
        lines.append(f"{tracker.labels[name]}: {len(members)}" + (f" (recent: {recent})" if recent else ""))
    for name, *_ in tracker.counters:
        lines.append(f"{tracker.labels[name]}: {state.counters.get(name, 0)}")
    if tracker.flags:
        active = [name for name, *_ in tracker.flags if state.flags.get(name)]
        lines.append(f"Active flags: {', '.join(active) if active else 'none'}")
    return "\n".join(lines)


def _relative(path: str, cwd: str) -> str:
    return path[len(cwd) + 1 :] if path.startswith(cwd + os.sep) else path


def _action(item: Sequence[str]) -> str:
    tool, target = (list(item) + ["", ""])[:2]
    return f"{tool}({target})" if target else tool
