"""``behaviorci init``: copy the example bundle of templates/behaviorci/ (it passes under the mock)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

from routedriver.behaviorci.errors import BundleError
from routedriver.fsutil import atomic_write

FILES = ("bundle.yaml", "prompt.md", "dataset.jsonl", "schema.json")
_TEMPLATE_NAME = "name: example-bundle"


def scaffold(directory: Path, *, force: bool = False) -> list[Path]:
    """Write the example bundle into ``directory``; refuses to replace existing files unless ``force``."""
    if directory.exists() and not directory.is_dir():
        raise BundleError(f"{directory} exists and is not a directory", "choose another path")
    targets = [directory / name for name in FILES]
    existing = [path for path in targets if path.exists()]
    if existing and not force:
        names = ", ".join(str(path) for path in existing)
        raise BundleError(
            f"{names} already exist{'s' if len(existing) == 1 else ''}",
            "pass --force to overwrite, or choose another path",
        )
    source = resources.files("routedriver.templates") / "behaviorci"
    for target in targets:
        text = (source / target.name).read_text(encoding="utf-8")
        if target.name == "bundle.yaml":
            text = text.replace(_TEMPLATE_NAME, f"name: {_bundle_name(directory)}", 1)
        atomic_write(target, text)
    return targets


def _bundle_name(directory: Path) -> str:
    # Quoted: a JSON string is a YAML string whatever the name is (`true`, `1.0`, `a: b`).
    return json.dumps(directory.resolve().name or "example-bundle", ensure_ascii=False)
