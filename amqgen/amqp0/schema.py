"""The model as JSON (``amqgen inspect --json``) and the JSON Schema that describes it.

The schema is derived from the model's own type annotations, so the two cannot drift.
Tools consume the JSON the way protoc plugins consume descriptors; ``SCHEMA_VERSION``
changes whenever a field is removed or changes meaning (adding fields keeps it). Version 2 removed
``Method.segments``: the codecs' runs are the codec plan's (amqgen.plan), not the model's. The grammar's
productions (``Class.productions``) and the behaviour plan (``behaviour``, amqgen.behaviour) were added in
version 2.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import PurePath
from typing import Any, Literal, Union

from .. import __version__
from ..errors import Diagnostic, Location
from .behaviour import BehaviourPlan, behaviour_plan
from .model import Spec

SCHEMA_VERSION = 2
FORMAT = "amqgen-model"


def _value(v: Any) -> Any:
    if isinstance(v, Location):
        # The file's name only: the same spec gives the same JSON on every machine.
        return {"file": PurePath(v.file).name, "line": v.line, "path": v.path}
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _value(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, (tuple, list)):
        return [_value(x) for x in v]
    return v


def to_document(spec: Spec) -> dict[str, Any]:
    return {"format": FORMAT, "schema_version": SCHEMA_VERSION, "generator": f"amqgen {__version__}",
            "spec": _value(spec), "behaviour": _value(behaviour_plan(spec))}


def to_json(spec: Spec) -> str:
    return json.dumps(to_document(spec), indent=2, ensure_ascii=False) + "\n"


def _type_schema(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    origin = typing.get_origin(tp)
    if tp is type(None):
        return {"type": "null"}
    if tp is int:
        return {"type": "integer"}
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if origin is Literal:
        return {"enum": list(typing.get_args(tp))}
    if origin in (Union, types.UnionType):
        return {"anyOf": [_type_schema(a, defs) for a in typing.get_args(tp)]}
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _type_schema(args[0], defs)}
        return {"type": "array", "prefixItems": [_type_schema(a, defs) for a in args], "items": False}
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder first: recursive types terminate
            if tp is Location:
                props = {
                    "file": {"type": "string"},
                    "line": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
                    "path": {"type": "string"},
                }
            else:
                hints = typing.get_type_hints(tp)
                props = {f.name: _type_schema(hints[f.name], defs) for f in dataclasses.fields(tp)}
            defs[name] = {
                "type": "object",
                "properties": props,
                "required": sorted(props),
                "additionalProperties": False,
            }
        return {"$ref": f"#/$defs/{name}"}
    raise TypeError(f"no JSON schema mapping for {tp!r}")


def json_schema() -> dict[str, Any]:
    defs: dict[str, Any] = {}
    spec_ref = _type_schema(Spec, defs)
    behaviour_ref = _type_schema(BehaviourPlan, defs)
    _type_schema(Diagnostic, defs)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": f"{FORMAT} v{SCHEMA_VERSION}",
        "type": "object",
        "properties": {
            "format": {"const": FORMAT},
            "schema_version": {"const": SCHEMA_VERSION},
            "generator": {"type": "string"},
            "spec": spec_ref,
            "behaviour": behaviour_ref,
        },
        "required": ["format", "schema_version", "generator", "spec", "behaviour"],
        "additionalProperties": False,
        "$defs": dict(sorted(defs.items())),
    }
