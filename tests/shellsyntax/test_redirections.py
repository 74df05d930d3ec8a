"""``words.read_with_redirections``: every redirection's operator and target word, as bash reads them."""

from __future__ import annotations

import pytest

from routedriver.shellsyntax.words import Redirection, SimpleCommand, read_with_redirections


class Collect:
    def __init__(self) -> None:
        self.redirections: list[tuple[str, str, bool]] = []
        self.commands: list[list[str]] = []
        self.scripts: list[str] = []
        self.unsure_reasons: list[str] = []

    def nested(self, script: str) -> None:
        self.scripts.append(script)

    def unsure(self, reason: str) -> None:
        self.unsure_reasons.append(reason)

    def line(self, commands: list[SimpleCommand]) -> None:
        self.commands += [[word.text for word in command.words] for command in commands]

    def redirection(self, redirection: Redirection) -> None:
        target = redirection.target
        self.redirections.append((redirection.operator, target.text, target.expanded))


@pytest.mark.parametrize(
    ("script", "redirections", "commands"),
    [
        ("echo x > a", [(">", "a", False)], [["echo", "x"]]),
        ("echo x 2>&1 >>'b c'", [(">&", "1", False), (">>", "b c", False)], [["echo", "x"]]),
        (
            "cmd >|a &>b &>>c <>d <e 3>f",
            [
                (">|", "a", False),
                ("&>", "b", False),
                ("&>>", "c", False),
                ("<>", "d", False),
                ("<", "e", False),
                (">", "f", False),
            ],
            [["cmd"]],
        ),
        ("echo x>y.\\guard", [(">", "y.guard", False)], [["echo", "x"]]),
        ("> only", [(">", "only", False)], []),
        ("cat > $OUT", [(">", "$OUT", True)], [["cat"]]),
        ("cat > *.log", [(">", "*.log", True)], [["cat"]]),
        ("cat <<EOF > out\nbody\nEOF\n", [(">", "out", False)], [["cat"]]),
        ("echo $'a\\x3e' > \"$(pwd)/x\"", [(">", "$(…)/x", True)], [["echo", "a>"]]),
    ],
)
def test_each_redirection_names_its_operator_and_target(
    script: str, redirections: list[tuple[str, str, bool]], commands: list[list[str]]
) -> None:
    seen = Collect()
    read_with_redirections(script, seen)
    assert seen.redirections == redirections
    assert seen.commands == commands


def test_a_redirection_inside_a_substitution_is_in_the_nested_script() -> None:
    seen = Collect()
    read_with_redirections("echo $(echo q > r) > s", seen)
    assert seen.redirections == [(">", "s", False)]
    assert seen.scripts == ["echo q > r"]
