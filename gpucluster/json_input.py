"""The one reader of JSON a person hands gpucluster (a saved AWS or kubectl answer, a
baseline's templates, a head node's report): every way such a file can be wrong is a
JsonProblem with its line where there is one, never a crash.

Python's json module recurses per level and raises RecursionError near 1,000 levels; what
reads the document afterwards recurses too. No file gpucluster reads nests near
MAX_DEPTH (a CloudFormation template nests about 15 levels), so deeper input is refused
before anything walks it.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 100


class JsonProblem(ValueError):
    def __init__(self, what: str, line: int | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.line = line


def _depth(document: Any) -> int:
    deepest, stack = 0, [(document, 1)]
    while stack:
        value, level = stack.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, level)
            if level <= MAX_DEPTH:
                children = value.values() if isinstance(value, dict) else value
                stack.extend((child, level + 1) for child in children)
    return deepest


def parse_json(text: str) -> Any:
    try:
        document = json.loads(text)
    except json.JSONDecodeError as err:
        raise JsonProblem(f"not JSON ({err.msg})", err.lineno) from None
    except ValueError as err:  # an integer past Python's digit limit
        raise JsonProblem(f"not JSON ({err})") from None
    except RecursionError:
        raise JsonProblem(f"nested deeper than the {MAX_DEPTH} levels gpucluster reads") from None
    if _depth(document) > MAX_DEPTH:
        raise JsonProblem(f"nested deeper than the {MAX_DEPTH} levels gpucluster reads")
    return document
