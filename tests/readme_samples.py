"""README's sample outputs, made by the code (tests/test_readme_samples.py compares them).

A sample is an indented block of README.md whose first lines are commands: any number of
`$ cd DIR` (from the repository root), then one `$ [COLUMNS=N] gpucluster ARGS`. The rest
of the block is that command's stdout: piped into a file, or with `COLUMNS=N` on a
terminal N columns wide. After changing what a verb prints, rewrite them all and review
the diff:

    python -m tests.readme_samples
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
INDENT = "    "
PROMPT = INDENT + "$ "
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=\S*")


@dataclass(frozen=True)
class Sample:
    first: int  # README line index of the block's first output line
    end: int  # README line index just past the block
    cwd: Path
    env: dict[str, str]
    args: list[str]
    shown: list[str]  # the output as README shows it, without the indent

    @property
    def command(self) -> str:
        prefix = "".join(f"{key}={value} " for key, value in self.env.items())
        return prefix + shlex.join(["gpucluster", *self.args])


def samples(text: str) -> list[Sample]:
    lines = text.splitlines()
    found = []
    index = 0
    while index < len(lines):
        starts_block = index == 0 or not lines[index - 1].startswith(INDENT)
        if not (starts_block and lines[index].startswith(PROMPT)):
            index += 1
            continue
        cwd = REPO
        while lines[index].startswith(PROMPT + "cd "):
            cwd = cwd / lines[index].removeprefix(PROMPT + "cd ").strip()
            index += 1
        words = shlex.split(lines[index].removeprefix(PROMPT))
        env: dict[str, str] = {}
        while words[len(env) :] and _ASSIGNMENT.fullmatch(words[len(env)]):
            key, value = words[len(env)].split("=", 1)
            env[key] = value
        if words[len(env) : len(env) + 1] != ["gpucluster"]:  # another program's prompt
            index += 1
            continue
        first = end = index + 1
        while end < len(lines) and lines[end].startswith(INDENT):
            end += 1
        shown = [line.removeprefix(INDENT).rstrip() for line in lines[first:end]]
        found.append(Sample(first, end, cwd, env, words[len(env) + 1 :], shown))
        index = end
    return found


@contextmanager
def _inside(directory: Path) -> Iterator[None]:
    before = Path.cwd()
    os.chdir(directory)
    try:
        yield
    finally:
        os.chdir(before)


def printed(sample: Sample) -> list[str]:
    """What the sample's command writes to stdout today, as README would show it."""
    from typer.testing import CliRunner

    from gpucluster.cli import app

    env: dict[str, str | None] = {"COLUMNS": None, "TTY_COMPATIBLE": None, "FORCE_COLOR": None}
    if "COLUMNS" in sample.env:
        env.update(COLUMNS=sample.env["COLUMNS"], TTY_COMPATIBLE="1")
    with _inside(sample.cwd):
        result = CliRunner().invoke(app, sample.args, env=env)
    assert result.exit_code in (0, 1), f"{sample.command}: exit {result.exit_code}: {result.output}"
    lines = [_ANSI.sub("", line).rstrip() for line in result.stdout.splitlines()]
    # An empty line would end the indented block in Markdown.
    assert all(lines), f"{sample.command} prints an empty line; README cannot show it in one block"
    return lines


def rewrite(readme: Path = README) -> int:
    """README's samples as the code prints them now; the number of samples changed."""
    lines = readme.read_text().splitlines()
    found = samples("\n".join(lines))
    changed = 0
    for sample in reversed(found):
        now = printed(sample)
        if now != sample.shown:
            lines[sample.first : sample.end] = [INDENT + line for line in now]
            changed += 1
    readme.write_text("\n".join(lines) + "\n")
    return changed


if __name__ == "__main__":
    print(f"{rewrite()} sample(s) of README.md rewritten")
