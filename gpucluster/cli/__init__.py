"""The `gpucluster` command: thin wiring, one module per verb; what each verb does lives in
its own package (config, synth, bootstrap, diff, scan, gate, plan, preflight, capacity,
ami, container).

Every verb fails the same way (gpucluster.cli.runner): one line
`error SUBJECT: what; fix` (a file, `gpucluster VERB: --OPTION`, `aws CALL (REGION)`,
a directory or tool), exit 2 for bad input or a bad command line, 1 for a failed check
or a failure outside gpucluster, and no traceback reaches the user.
"""

from __future__ import annotations

# Each verb module registers its command on `app`; this order is `gpucluster -h`'s order.
from gpucluster.cli import validate, synth, render, diff, scan, gate  # noqa: F401  isort: skip
from gpucluster.cli import plan, preflight, capacity, ami, container  # noqa: F401  isort: skip
from gpucluster.cli import nodes  # noqa: F401  isort: skip
from gpucluster.cli import users  # noqa: F401  isort: skip
from gpucluster.cli import top  # noqa: F401  isort: skip
from gpucluster.cli import topology  # noqa: F401  isort: skip
from gpucluster.bad_input import EXIT_BAD_INPUT
from gpucluster.cli.root import app


def main() -> None:
    app()


__all__ = ["EXIT_BAD_INPUT", "app", "main"]
