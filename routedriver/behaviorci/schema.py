"""The output contract's JSON schema: read, checked, and every ``$ref`` resolved when the bundle is loaded.

A ``$ref`` is resolved the way JSON Schema says, against the URI of the document it is in: the schema file's
own ``file://`` URI unless an ``$id`` says otherwise, so ``{"$ref": "answer.json"}`` names the file next to
the schema. Only local files are read, never the network: a ``$ref`` to ``https://…`` is refused, and so is
one naming a missing file or a pointer to nowhere, each in one line, before any call is made. The documents
read at load are the only ones a run uses (a file edited mid-run changes nothing).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from routedriver import userfile
from routedriver.behaviorci.errors import BundleError
from routedriver.fsutil import real_path


class _Remote(Exception):
    """A $ref names a document that is not a local file."""


@dataclass(frozen=True)
class ContractSchema:
    contents: dict[str, Any]
    uri: str = ""  # the schema file's file:// URI ("" for a schema given in code)
    registry: Any = None  # referencing.Registry holding the schema and every document its refs reach

    def validator(self) -> Any:
        # jsonschema and referencing (~0.1 s), here and below: only a bundle with a schema loads them
        from jsonschema.validators import Draft7Validator, validator_for

        cls = validator_for(self.contents, default=Draft7Validator)
        if self.registry is None:
            return cls(self.contents)
        # Validate against a $ref to the registered schema, so its refs resolve against its file URI.
        return cls({"$ref": self.uri}, registry=self.registry)


def load_schema(path: Path, shown: str) -> ContractSchema:
    schema = _read(path, shown)
    if not isinstance(schema, (dict, bool)):
        raise BundleError(f"{shown}: a JSON schema must be an object", "fix the schema file")
    contents = schema if isinstance(schema, dict) else {} if schema else {"not": {}}
    _check(contents, shown, shown)
    return _resolve_refs(contents, real_path(path).as_uri(), shown)


def _read(path: Path, shown: str) -> Any:
    if os.path.isdir(path):
        raise BundleError(
            f"schema {shown} is a directory", "point output_contract.schema_path at a JSON schema file"
        )
    if not os.path.exists(path):  # what is there but is no file (a FIFO, a device), userfile names
        raise BundleError(f"schema {shown} not found", "check output_contract.schema_path in bundle.yaml")
    return userfile.load_json(path, what="schema", shown=shown, error=BundleError)


def _check(contents: Any, shown: str, root_shown: str) -> None:
    # jsonschema (~0.1 s with referencing): only a bundle with a schema
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import Draft7Validator, validator_for

    dialect = contents.get("$schema", "") if isinstance(contents, dict) else ""
    if not isinstance(dialect, str):  # jsonschema picks the validator by it before anything checks its type
        raise BundleError(
            f'{shown}: "$schema" must be a string (a JSON Schema draft URI), not {json.dumps(dialect)[:40]}',
            "fix the schema" if shown == root_shown else f"fix the schema {root_shown} refers to",
        )
    try:
        validator_for(contents, default=Draft7Validator).check_schema(contents)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
        raise BundleError(
            f"{shown}: not a valid JSON schema at {where}: {exc.message}",
            "fix the schema" if shown == root_shown else f"fix the schema {root_shown} refers to",
        ) from None


def _resolve_refs(contents: dict[str, Any], uri: str, shown: str) -> ContractSchema:
    # referencing: only a schema with a $ref
    from referencing import Registry, Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT7

    specification = DRAFT7.detect(contents)  # the schema's $schema, else draft 7 (as the validator does)
    root = specification.create_resource(contents)
    documents: dict[str, Resource[Any]] = {uri: root}

    def retrieve(target: str) -> Resource[Any]:
        if target in documents:
            return documents[target]
        parts = urlsplit(target)
        if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
            raise _Remote(target)
        from urllib.request import url2pathname  # here: urllib.request loads http.client and ssl (~10 ms)

        file = Path(url2pathname(parts.path))
        if not os.path.exists(file):  # a FIFO or a device: userfile says what it is
            raise BundleError(f"{_shown(file)} not found", "fix the $ref or add the file it names")
        document = _read(file, _shown(file))
        if not isinstance(document, (dict, bool)):
            raise BundleError(f"{_shown(file)}: a JSON schema must be an object", "fix the schema file")
        _check(document, _shown(file), shown)
        resource = Resource.from_contents(document, default_specification=specification)
        documents[target] = resource
        return resource

    registry: Registry[Any] = Registry(retrieve=retrieve).with_resource(uri, root).crawl()  # type: ignore[call-arg]
    seen: set[int] = set()

    # The walk follows refs the way the validator will (jsonschema 4.18+): a subschema's $id changes the base
    # URI of the refs inside it; a schema reached through a $ref (the root too: see ContractSchema.validator)
    # keeps the base URI of the document it was found in.
    def walk(resource: Resource[Any], resolver: Any, *, via_ref: bool) -> None:
        if id(resource.contents) in seen:
            return
        seen.add(id(resource.contents))
        if not via_ref:
            resolver = resolver.in_subresource(resource)
        ref = resource.contents.get("$ref") if isinstance(resource.contents, dict) else None
        if isinstance(ref, str):
            try:
                resolved = resolver.lookup(ref)
            except Unresolvable as exc:
                raise _ref_error(ref, exc, shown) from None
            target = Resource.from_contents(resolved.contents, default_specification=specification)
            walk(target, resolved.resolver, via_ref=True)
        for sub in resource.subresources():
            walk(sub, resolver, via_ref=False)

    walk(root, registry.resolver(base_uri=uri), via_ref=True)
    # Every document the refs reach was read above; a run resolves against these, never the disk.
    final = registry.with_resources(documents.items()).crawl()
    return ContractSchema(contents, uri, final)


def _ref_error(ref: str, exc: Exception, shown: str) -> BundleError:
    cause = exc.__cause__
    while cause is not None and not isinstance(cause, (BundleError, _Remote)):
        cause = cause.__cause__  # Unresolvable from Unretrievable from what retrieve raised
    if isinstance(cause, BundleError):  # a referenced file that is missing, unreadable or not a schema
        return BundleError(f"{shown}: $ref '{ref}': {cause.what}", cause.fix)
    if isinstance(cause, _Remote):
        return BundleError(
            f"{shown}: $ref '{ref}' resolves to {cause}, and schemas are never fetched over the network",
            "copy that schema next to this one and refer to it by a relative path",
        )
    # referencing: see _resolve_refs
    from referencing.exceptions import PointerToNowhere

    if isinstance(exc, PointerToNowhere):
        return BundleError(
            f"{shown}: $ref '{ref}' points to nowhere ({exc.ref} does not exist)", "fix the $ref"
        )
    return BundleError(f"{shown}: $ref '{ref}' cannot be resolved ({type(exc).__name__})", "fix the $ref")


def _shown(path: Path) -> str:
    try:
        return str(path.relative_to(real_path(Path.cwd())))
    except ValueError:
        return str(path)
