"""The Jinja environment every template renders through.

StrictUndefined: a template that names a value the renderer did not pass is a
bug, and must fail at synth rather than produce an empty string in a script.
Every template sees gpucluster.names as `names`, so a shared name is rendered from its
one definition instead of being typed again.
"""

from __future__ import annotations

import contextlib
import os
from functools import cache
from pathlib import Path

import jinja2
from jinja2.bccache import Bucket

from gpucluster import names
from gpucluster.package_files import TEMPLATES

TEMPLATE_ROOT = TEMPLATES


class _CompiledTemplates(jinja2.FileSystemBytecodeCache):
    """Compiled templates kept between runs: compiling the ~40 templates a synth renders is
    about a tenth of its CPU time (`make bench`). Jinja keys each entry by the template's
    path and source checksum and checks its own version, so an edited template or another
    Jinja compiles again; Jinja writes an entry atomically. A cache that cannot be read or
    written costs only the compile."""

    def load_bytecode(self, bucket: Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except OSError:
            bucket.reset()

    def dump_bytecode(self, bucket: Bucket) -> None:
        with contextlib.suppress(OSError):
            super().dump_bytecode(bucket)


def _compiled_templates() -> jinja2.BytecodeCache | None:
    """The user's own cache directory (XDG), private to them: compiled code is loaded
    from it, so nobody else may write there."""
    try:
        # Path.home() raises RuntimeError with no HOME and no passwd entry for the uid.
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        directory = root / "gpucluster" / "jinja"
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        status = directory.stat()
        if status.st_uid != os.getuid() or status.st_mode & 0o022:
            return None
    except (OSError, RuntimeError):
        return None
    return _CompiledTemplates(str(directory))


@cache
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_ROOT)),
        bytecode_cache=_compiled_templates(),
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
