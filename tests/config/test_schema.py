"""The config's JSON Schema (`gpucluster schema`) against its golden copy.

Editors and users read the schema, so a change to a field, a default or a description
must be a reviewed diff, not a side effect. When the change is meant, regenerate the copy
and commit it with the change:

    make schema-golden        # or: .venv/bin/gpucluster schema > tests/golden/config-schema.json
"""

from __future__ import annotations

import difflib

from typer.testing import CliRunner

from gpucluster.cli import app
from tests.conftest import REPO

GOLDEN = REPO / "tests" / "golden" / "config-schema.json"


def test_schema_matches_the_golden_copy():
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    expected = GOLDEN.read_text()
    if result.output != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True),
                result.output.splitlines(keepends=True),
                fromfile=str(GOLDEN.relative_to(REPO)),
                tofile="gpucluster schema",
            )
        )
        raise AssertionError(
            "`gpucluster schema` differs from its golden copy; if the change is meant, run "
            f"`make schema-golden` and commit the file:\n{diff}"
        )
