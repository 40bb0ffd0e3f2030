"""Every table the CLI prints, with every value whole.

rich fits a table to the console: 80 columns when stdout is not a terminal (a CI
log), so values were cut (`p5.48xlar…`). Here no column wraps or truncates, and a
table wider than the console is printed at its own width instead: a narrow
terminal wraps the lines, but every instance type, logical id and size stays
whole and greppable. Multi-line cells are written with explicit newlines.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.console import Console
from rich.table import Table

# Wide enough for any table we print; rich clamps a measurement to the width it is given.
UNBOUNDED = 100_000
RIGHT_ALIGNED = frozenset({"bytes", "resources", "template bytes", "nodes", "line", "EFA/node"})


def table(
    title: str, columns: Sequence[str], rows: Iterable[Sequence[str]], *, show_lines: bool = False
) -> Table:
    # min_width: a title is not wrapped inside a table narrower than itself.
    result = Table(title=title, title_justify="left", show_lines=show_lines, min_width=len(title))
    for column in columns:
        result.add_column(
            column, no_wrap=True, overflow="fold", justify="right" if column in RIGHT_ALIGNED else "left"
        )
    for row in rows:
        result.add_row(*row)
    return result


def print_table(console: Console, shown: Table) -> None:
    """Print `shown` no narrower than its widest row."""
    unbounded = console.options.update(width=UNBOUNDED, max_width=UNBOUNDED)
    needed = console.measure(shown, options=unbounded).maximum
    if needed <= console.width:
        console.print(shown)
        return
    width = console.width
    console.width = needed
    try:
        console.print(shown)
    finally:
        console.width = width
