"""The guard fast path reads exactly what PyYAML reads, or declines (None) and leaves the text to PyYAML."""

from __future__ import annotations

import random

import pytest

from routedriver import userfile
from routedriver.errors import Refused
from routedriver.route import guardyaml

CASES = [
    "",
    "\n\n# only a comment\n",
    "artifacts: ['$route/1.vision*.md']\n",
    "artifacts: []\njudges:\n  - approved?\n",
    "reviews:\n  - python3 tools/review.py $route/1.vision.md\njudges:\n  - reviewed? --allow-blockers 0\n",
    "reviews: [\"printf 'blockers: 0\\\\n'\"]\n",
    "reviews: ['it''s quoted', \"double, with comma\", plain]\n",
    "timeout: 600\n",
    "timeout: 1.5\n",
    "timeout: 0\n",
    "timeout: 1_000\n",
    "timeout: yes\n",
    "judges: [reviewed?, approved?]\n",
    "judges: ['reviewed?', 'approved?']\n",
    "judges:\n- approved?\n",
    "judges:\n  - approved?\n   - pytest\n",
    "judges:\n  - approved?  # a comment\n",
    "judges:\n  - 'a: b'\n  - a: b\n",
    "judges:\n  - yes\n  - no\n  - null\n  - ~\n  - 1.5\n  - 0x10\n",
    'judges:\n  - "a\\"b"\n',
    "judges:\n  - 'unterminated\n",
    "judges:\n",
    "judges: [a, b,]\n",
    "judges: [a, [b]]\n",
    "judges: {a: b}\n",
    "reviews: [a]\nreviews: [b]\n",
    "  reviews: [a]\n",
    "---\nreviews: [a]\n",
    "reviews: [a] # comment\n",
    "reviews:\n  - &anchor a\n  - *anchor\n",
    "reviews:\n  - !!str 5\n",
    "reviews:\n  - |\n    block\n",
    "reviews:\n  - a\n    continued\n",
    "protect: ['src/**', \"docs/*.md\"]\n",
    "reviews:\n  - bhrain run --skill review --input $route/$stone.md\n  - 'x \"q\" y'\n",
    "reviews:\n  - ünïcode ✓ review\n",
    "reviews:\n\n  - a\n\n  - b\n\njudges: [c]\n",
    "unknown: [x]\n",
    "reviews:\n  - -x\n",
    "reviews:\n  - '%x'\n  - '@x'\n",
    "reviews: a\n",
]

_WORDS = [
    "a",
    "b c",
    "x?",
    "y:z",
    "p: q",
    "#h",
    "a #c",
    "'",
    "''",
    '"',
    "\\",
    ",",
    "[",
    "]",
    "{",
    "}",
    "yes",
    "No",
    "null",
    "~",
    "1",
    "1.5",
    "-",
    "- x",
    "?",
    ":",
    "&a",
    "*a",
    "!t",
    "|",
    ">",
    "%",
    "@",
    "`",
    "=",
    "<<",
    "$route/$stone.md",
    "ü",
    "tab\tin",
    " lead",
    "trail ",
    ".5",
    "+1",
    "\\n",
    "\\t",
    '\\"',
    "\\\\",
    "\\x41",
    "\\q",
    "\\/",
    "\\0",
]


def _loaded(text: str) -> object:
    return userfile.parse_yaml(text, shown="g.guard")  # what a guard means when the fast path declines


def _check(text: str) -> bool:
    """True when the fast path answered; then it must equal PyYAML."""
    fast = guardyaml.load(text)
    if fast is None:
        return False
    expected = _loaded(text)
    assert fast == ({} if expected is None else expected), text
    return True


@pytest.mark.parametrize("text", CASES)
def test_fast_path_agrees_with_pyyaml_or_declines(text: str) -> None:
    try:
        _loaded(text)
    except Refused:
        assert guardyaml.load(text) is None, text  # anything PyYAML refuses must reach PyYAML's error
        return
    _check(text)


def test_the_ordinary_shapes_take_the_fast_path() -> None:
    ordinary = [
        text for index, text in enumerate(CASES) if index in (0, 1, 2, 3, 4, 6, 7, 8, 13, 33, 34, 35, 36)
    ]
    for text in ordinary:
        assert guardyaml.load(text) is not None, text


def _item(rng: random.Random) -> str:
    word = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))
    style = rng.randint(0, 2)
    if style == 0:
        return word
    if style == 1:
        return "'" + word.replace("'", "''") + "'"
    return '"' + word + '"'


def test_random_guards_never_disagree_with_pyyaml() -> None:
    rng = random.Random(3)
    answered = 0
    for _ in range(3000):
        lines = []
        for key in rng.sample(["artifacts", "reviews", "judges", "protect", "timeout"], rng.randint(1, 4)):
            if key == "timeout":
                lines.append(f"timeout: {rng.choice(['5', '1.5', '0', 'x', '10'])}")
            elif rng.random() < 0.5:
                lines.append(f"{key}: [{', '.join(_item(rng) for _ in range(rng.randint(0, 3)))}]")
            else:
                lines.append(f"{key}:")
                lines += [f"  - {_item(rng)}" for _ in range(rng.randint(1, 3))]
        text = "\n".join(lines) + "\n"
        try:
            _loaded(text)
        except Refused:
            assert guardyaml.load(text) is None, text
            continue
        answered += _check(text)
    assert answered > 500  # the fast path is really exercised
