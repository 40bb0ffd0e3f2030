"""torch stays the trainer's own: synth and the CLI never import it (make synth stays light)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_cli_and_synth_import_neither_torch_nor_the_trainer():
    probe = (
        "import sys, gpucluster.cli, gpucluster.synth.app, gpucluster.bootstrap.render_files; "
        "print(sorted(m for m in sys.modules"
        " if m.split('.')[0] == 'torch' or m.startswith('gpucluster.train')))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"
