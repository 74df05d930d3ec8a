"""``behaviorci init``: copy the example bundle of templates/behaviorci/ (it passes under the mock)."""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path

from routedriver.behaviorci.destination import Destination, check_writable, destination, write
from routedriver.behaviorci.errors import BundleError
from routedriver.fsutil import real_path
from routedriver.route.hashing import printable_path

FILES = ("bundle.yaml", "prompt.md", "dataset.jsonl", "schema.json")
_TEMPLATE_NAME = "name: example-bundle"


def scaffold(directory: Path, *, force: bool = False) -> list[Path]:
    """Write the example bundle into ``directory``; refuses to replace existing files unless ``force``.

    A bundle file that is a symlink is written through (its target gets the new text, the link stays)."""
    if os.path.lexists(directory) and not os.path.isdir(directory):  # a file, or a link to none (a loop)
        raise BundleError(f"{directory} exists and is not a directory", "choose another path")
    bundle_name = _bundle_name(directory)
    targets = [directory / name for name in FILES]
    existing = [path for path in targets if os.path.lexists(path)]  # lexists: a dangling symlink is there too
    if existing and not force:
        names = ", ".join(str(path) for path in existing)
        raise BundleError(
            f"{names} already exist{'s' if len(existing) == 1 else ''}",
            "pass --force to overwrite, or choose another path",
        )
    destinations = [_destination(target) for target in targets]  # every refusal before the first write
    source = resources.files("routedriver.templates") / "behaviorci"
    for target, dest in zip(targets, destinations, strict=True):
        text = (source / target.name).read_text(encoding="utf-8")
        if target.name == "bundle.yaml":
            text = text.replace(_TEMPLATE_NAME, f"name: {bundle_name}", 1)
        try:
            write(dest, text)
        except OSError as exc:
            raise _cannot_create(target, exc) from None
    return targets


def _destination(target: Path) -> Destination:
    try:
        dest = destination(target)
    except OSError as exc:
        raise _cannot_create(target, exc) from None
    if dest.in_place:  # a FIFO or a device named like a bundle file is not something to overwrite
        raise BundleError(f"{target} exists and is not a regular file", "remove it or choose another path")
    problem = check_writable(dest)
    if problem is not None:
        raise BundleError(f"cannot create {target}: {problem}", "choose another path")
    return dest


def _cannot_create(target: Path, exc: OSError) -> BundleError:
    reason = exc.strerror or str(exc)
    return BundleError(f"cannot create {target}: {reason}", "choose another path")


def _bundle_name(directory: Path) -> str:
    name = real_path(directory).name or "example-bundle"
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # bytes that are not UTF-8 in the path (kept as surrogate escapes)
        shown = printable_path(name)
        raise BundleError(
            f"the directory name '{shown}' is not UTF-8 and becomes the bundle's name in bundle.yaml",
            "choose a UTF-8 directory name",
        ) from None
    # Quoted: a JSON string is a YAML string whatever the name is (`true`, `1.0`, `a: b`).
    return json.dumps(name, ensure_ascii=False)
