"""Progress for work that takes seconds, on stderr and only when stderr is a terminal.

Piped or redirected (a CI log, `2>file`) nothing extra is written, so the output a
script reads stays the same. On a terminal the bar is erased when the work ends: what
stays on the screen is what a log would hold. `FORCE_COLOR` does not turn it on: a CI
log with colours is still not a screen that redraws a line.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    SpinnerColumn,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)


class Meter:
    """How far the work is; does nothing when no terminal shows it."""

    def __init__(self, bar: Progress | None = None, task: TaskID | None = None) -> None:
        self._bar = bar
        self._task = task

    def update(self, done: int, *, current: str | None = None) -> None:
        """`done` of the total so far; `current`: what is being worked on now (a file name)."""
        if self._bar is None or self._task is None:
            return
        if current is None:
            self._bar.update(self._task, completed=done)
        else:
            self._bar.update(self._task, completed=done, current=current)


def _terminal() -> Console | None:
    console = Console(stderr=True)
    return console if sys.stderr.isatty() and console.is_interactive else None


def _bar(console: Console, *columns: ProgressColumn) -> Progress:
    # The verbs print nothing while a bar is up: stdout and stderr are not redirected. The
    # text columns show file names as they are (markup=False), never as rich markup.
    return Progress(*columns, console=console, transient=True, redirect_stdout=False, redirect_stderr=False)


@contextmanager
def progress(description: str, total: int) -> Iterator[Meter]:
    """A bar for work of a known size (bytes, lines, files): `meter.update(done)`."""
    console = _terminal()
    if console is None:
        yield Meter()
        return
    columns = (
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.fields[current]}", markup=False),
    )
    with _bar(console, *columns) as bar:
        yield Meter(bar, bar.add_task(description, total=max(total, 1), current=""))


@contextmanager
def working(description: str) -> Iterator[None]:
    """A spinner and the time taken, for work whose size is not known beforehand."""
    console = _terminal()
    if console is None:
        yield
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}", markup=False), TimeElapsedColumn())
    with _bar(console, *columns) as bar:
        bar.add_task(description, total=None)
        yield
