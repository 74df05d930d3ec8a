"""``behaviorci init``: a bundle that passes under the mock provider as generated; no silent overwrite."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli


def test_init_scaffold_validates_and_passes_under_mock(tmp_path: Path) -> None:
    ran = run_cli(["behaviorci", "init"], tmp_path)
    assert ran.code == 0, ran.err
    folder = tmp_path / "bundles" / "example"
    assert sorted(p.name for p in folder.iterdir()) == [
        "bundle.yaml",
        "dataset.jsonl",
        "prompt.md",
        "schema.json",
    ]
    assert ran.out.splitlines() == [
        f"bundles/example/{name}" for name in ("bundle.yaml", "prompt.md", "dataset.jsonl", "schema.json")
    ]
    assert "next: behaviorci validate" in ran.err
    assert run_cli(["behaviorci", "validate", "bundles/example/bundle.yaml"], tmp_path).code == 0
    done = run_cli(["behaviorci", "run", "bundles/example/bundle.yaml", "--format", "json"], tmp_path)
    assert done.code == 0, done.err
    report = json.loads(done.out)
    assert (
        report["passed"] is True
        and report["summary"]["passed_cases"] == report["summary"]["total_cases"] == 3
    )
    assert report["bundle"] == "example"
    console = run_cli(["behaviorci", "run", "bundles/example"], tmp_path)
    assert console.out.splitlines()[-2] == "passed: true"


def test_init_refuses_to_overwrite_without_force(tmp_path: Path) -> None:
    target = tmp_path / "mine"
    assert run_cli(["behaviorci", "init", "mine"], tmp_path).code == 0
    (target / "prompt.md").write_text("my own prompt {{ question }}\n", encoding="utf-8")
    ran = run_cli(["behaviorci", "init", "mine"], tmp_path)
    assert ran.code == 2
    assert "already exist" in ran.err and "--force" in ran.err and ran.err.count("\n") == 1
    assert (target / "prompt.md").read_text(encoding="utf-8") == "my own prompt {{ question }}\n"
    forced = run_cli(["behaviorci", "init", "mine", "--force"], tmp_path)
    assert forced.code == 0
    assert "my own prompt" not in (target / "prompt.md").read_text(encoding="utf-8")


def test_init_into_a_directory_with_other_files(tmp_path: Path) -> None:
    target = tmp_path / "existing"
    target.mkdir()
    (target / "notes.txt").write_text("keep me", encoding="utf-8")
    assert run_cli(["behaviorci", "init", "existing"], tmp_path).code == 0
    assert (target / "notes.txt").read_text(encoding="utf-8") == "keep me"
    assert (target / "bundle.yaml").is_file()


def test_init_over_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    ran = run_cli(["behaviorci", "init", "afile"], tmp_path)
    assert ran.code == 2
    assert ran.err.startswith("error: ")


def test_init_force_writes_through_symlinked_files(tmp_path: Path) -> None:
    target = tmp_path / "linked"
    target.mkdir()
    (tmp_path / "my-prompt.md").write_text("mine {{ question }}\n", encoding="utf-8")
    (target / "prompt.md").symlink_to(tmp_path / "my-prompt.md")
    refused = run_cli(["behaviorci", "init", "linked"], tmp_path)
    assert refused.code == 2 and "already exists" in refused.err
    forced = run_cli(["behaviorci", "init", "linked", "--force"], tmp_path)
    assert forced.code == 0, forced.err
    assert (target / "prompt.md").is_symlink()
    assert "{{ question }}" in (tmp_path / "my-prompt.md").read_text(encoding="utf-8")
    assert "mine" not in (tmp_path / "my-prompt.md").read_text(encoding="utf-8")


def test_init_under_a_file_or_with_a_non_utf8_name_is_one_line(tmp_path: Path) -> None:
    import os
    import subprocess

    (tmp_path / "afile").write_text("x", encoding="utf-8")
    ran = run_cli(["behaviorci", "init", "afile/sub"], tmp_path)
    assert ran.code == 2, ran.err
    assert ran.err.startswith("error: cannot create afile/sub/bundle.yaml") and ran.err.count("\n") == 1
    done = subprocess.run(
        [b"behaviorci", b"init", b"bad\xffname"],
        cwd=tmp_path,
        capture_output=True,
        check=False,
        env=os.environ,
    )
    assert done.returncode == 2, done.stderr
    err = done.stderr.decode("utf-8", "replace")
    assert err.startswith("error: the directory name 'bad\\xffname' is not UTF-8") and err.count("\n") == 1
    assert not os.path.exists(os.path.join(os.fsencode(tmp_path), b"bad\xffname"))  # nothing written
