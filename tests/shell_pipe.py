"""Printed command lines piped to `sh`, as a person would: stubs in place of the commands
they call record each argv, and a command the line was never meant to run shows as a file.

Each hostile name tries to run `touch pwned-...` in the directory sh runs in; PATH holds
the real `touch`, so a name that breaks out of its quoting leaves that file behind.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Names with the shell's separators, substitutions, quotes and a newline; `:thumbs_up:` and
# `[bold]` are what rich would rewrite (an emoji, markup) on its way to the terminal.
HOSTILE_NAMES = (
    "n1; touch pwned-semicolon",
    "$(touch pwned-dollar)",
    "`touch pwned-backtick`",
    "n1\ntouch pwned-newline",
    "n1' ; touch pwned-quote '",
    'n1" ; touch pwned-double "',
    "n1 && touch pwned-and",
    "n1 | touch pwned-pipe",
    "n1 > pwned-redirect",
    "n1 :thumbs_up: [bold]x[/bold]\\",
)
# The same without white space, for names a parser splits at it (a log's `node=NAME`).
HOSTILE_WORDS = (
    "n1;touch${IFS}pwned-semicolon",
    "$(touch${IFS}pwned-dollar)",
    "`touch${IFS}pwned-backtick`",
    "n1';touch${IFS}pwned-quote;'",
    'n1";touch${IFS}pwned-double;"',
    "n1&&touch${IFS}pwned-and",
    "n1>pwned-redirect",
    "n1:thumbs_up:[bold]x[/bold]\\",
)

_RECORDER = """#!{python}
import json, os, sys
with open(os.environ["SHELL_PIPE_LOG"], "a") as log:
    env = {{name: os.environ.get(name) for name in {watched!r}}}
    call = {{"command": os.path.basename(sys.argv[0]), "argv": sys.argv[1:], "env": env}}
    log.write(json.dumps(call) + "\\n")
"""


@dataclass(frozen=True)
class Call:
    command: str
    argv: list[str]
    env: dict[str, str | None]


@dataclass(frozen=True)
class ShellRun:
    returncode: int
    calls: list[Call]
    # What sh left in its (empty) working directory: nothing, unless a line ran more than it said.
    strays: list[str]
    stderr: str


def pipe_to_sh(
    script: str, stubs: Iterable[str], tmp_path: Path, watched_env: Iterable[str] = ()
) -> ShellRun:
    """Run `script` with `sh -s` (its stdin), each of `stubs` a recorder on PATH before the
    system's directories; `watched_env`: variables each call records."""
    base = tmp_path / "shell-pipe"
    bin_dir, work = base / "bin", base / "work"
    bin_dir.mkdir(parents=True)
    work.mkdir()
    recorder = _RECORDER.format(python=sys.executable, watched=tuple(watched_env))
    for name in stubs:
        stub = bin_dir / name
        stub.write_text(recorder)
        stub.chmod(0o755)
    log = base / "calls.jsonl"
    done = subprocess.run(
        ["/bin/sh", "-s"],
        input=script,
        cwd=work,
        env={"PATH": f"{bin_dir}:/usr/bin:/bin", "SHELL_PIPE_LOG": str(log)},
        capture_output=True,
        text=True,
        check=False,
    )
    calls = [Call(**json.loads(line)) for line in log.read_text().splitlines()] if log.exists() else []
    return ShellRun(done.returncode, calls, sorted(path.name for path in work.iterdir()), done.stderr)
