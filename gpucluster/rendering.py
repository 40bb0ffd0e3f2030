"""The Jinja environment every template renders through.

StrictUndefined: a template that names a value the renderer did not pass is a
bug, and must fail at synth rather than produce an empty string in a script.
Every template sees gpucluster.names as `names`, so a shared name is rendered from its
one definition instead of being typed again.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import jinja2

from gpucluster import names

TEMPLATE_ROOT = Path(__file__).resolve().parent.parent / "templates"


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_ROOT)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )
    env.globals["names"] = names
    return env


def render(template: str, **values: object) -> str:
    return environment().get_template(template).render(**values)
