"""Read a YAML file into a `ClusterConfig`, turning every failure into `BadInput`.

Users see one line per problem: the field path, what is wrong, how to fix it.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import get_args

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from gpucluster.bad_input import BadInput
from gpucluster.config import CapacityBlockCapacity, ClusterConfig, OdcrCapacity, OnDemandCapacity
from gpucluster.config.type_errors import describe_type_error
from gpucluster.config.yaml_input import MAX_BYTES, YamlInputError, bounded, decode, printable, read_yaml
from gpucluster.plain_messages import plain

# Pydantic puts the discriminator tag of `capacity` into error locations.
CAPACITY_TYPES = tuple(
    get_args(kind.model_fields["type"].annotation)[0]
    for kind in (OnDemandCapacity, OdcrCapacity, CapacityBlockCapacity)
)


def _field_path(loc: tuple[int | str, ...], at: str | None) -> str:
    # Discriminated unions add the tag ('capacity-block') to the location;
    # users wrote `capacity.reservation_id`, so drop tags and model names.
    parts = [
        _printable(str(p))
        for p in loc
        if not (isinstance(p, str) and (p in CAPACITY_TYPES or p[:1].isupper()))
    ]
    if at:
        parts.extend(at.split("."))
    return ".".join(parts) or "(top level)"


def _describe(error: ErrorDetails) -> str:
    kind = error["type"]
    message = error["msg"]
    if kind == "missing":
        return "is required but missing; add it"
    typed = describe_type_error(error)
    if typed:
        return typed
    if kind == "extra_forbidden":
        return "is not a known setting; check the spelling (see `gpucluster schema`)"
    if kind == "union_tag_invalid":
        tag = (error.get("ctx") or {}).get("tag", "")
        return f"type '{tag}' is not a capacity type; use one of {', '.join(CAPACITY_TYPES)}"
    if kind == "union_tag_not_found":
        return f"needs a `type`: one of {', '.join(CAPACITY_TYPES)}"
    if kind.startswith("literal_"):
        return message.replace("Input should be", "must be")
    words = plain(error)
    if words is not None:
        return "; ".join(words)
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    return message.replace("Input should be", "must be")


_printable = printable


def problems_from(exc: ValidationError) -> list[str]:
    return bounded(
        [
            f"{_field_path(err['loc'], (err.get('ctx') or {}).get('at'))}: {_printable(_describe(err))}"
            for err in exc.errors()
        ]
    )


def parse_config(text: str, source: str = "<config>", now: datetime | None = None) -> ClusterConfig:
    """`now` judges whether a Capacity Block is still usable (default: GPUCLUSTER_NOW or the clock)."""
    try:
        data = read_yaml(text)
    except YamlInputError as exc:
        raise BadInput.from_problems(source, exc.problems) from None
    if not isinstance(data, dict):
        raise BadInput.from_problems(
            source,
            ["(top level): must be a mapping of settings (name:, region:, ...); see examples/default.yaml"],
        )
    try:
        return ClusterConfig.model_validate(data, context={"now": now})
    except ValidationError as exc:
        raise BadInput.from_problems(source, problems_from(exc)) from None


def load_config(path: str | Path, now: datetime | None = None) -> ClusterConfig:
    if str(path) == "-":
        # One rule for every verb: those that pin or buy write the file back, so none reads stdin.
        raise BadInput(
            "-",
            "(file)",
            "a config is read from a file, not from standard input",
            "save it to a file and pass that file's path",
        )
    path = Path(path)
    try:
        with path.open("rb") as stream:
            # Read one byte past the limit: enough to refuse a huge file without loading it.
            raw = stream.read(MAX_BYTES + 1)
            size = os.fstat(stream.fileno()).st_size
    except FileNotFoundError:
        raise BadInput(path, "(file)", "does not exist", "check the path") from None
    except IsADirectoryError:
        raise BadInput(path, "(file)", "is a directory", "pass the YAML file itself") from None
    except PermissionError as exc:
        raise BadInput(
            path,
            "(file)",
            f"cannot be read ({exc.strerror})",
            "make it readable to you (chmod u+r), or pass a copy",
        ) from None
    except OSError as exc:
        raise BadInput(path, "(file)", f"cannot be read ({exc.strerror})", "check the path") from None
    try:
        text = decode(raw, size)
    except YamlInputError as exc:
        raise BadInput.from_problems(str(path), exc.problems) from None
    return parse_config(text, str(path), now)
