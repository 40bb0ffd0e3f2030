"""Every table the CLI prints, with every value whole, for a file and for a terminal.

Piped into a file or a CI log (stdout is not a terminal), a table is printed at the
width of its widest row: no column wraps or truncates (rich would fit 80 columns and
cut `p5.48xlar…`), so every instance type, logical id and size stays on one line,
whole and greppable, however wide the table.

On a terminal that width would wrap each line into noise, so a table fits the
terminal instead: when its rows are too wide, cells wrap between words (a column of
long paths folds them); when even that cannot fit, each row is printed as a block of
`column  value` lines, a value wrapped at the terminal's edge. Nothing is cut short
either way. Cells are rich markup; a multi-line cell is written with explicit newlines.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

# Wide enough for any table we print; rich clamps a measurement to the width it is given.
UNBOUNDED = 100_000
RIGHT_ALIGNED = frozenset({"bytes", "resources", "template bytes", "nodes", "line", "EFA/node"})
# What rich's default table adds to its cells: a space either side of each and a rule
# after each, plus the left edge.
_FRAME_PER_COLUMN = 3
_FRAME = 1


@dataclass(frozen=True)
class CliTable:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    show_lines: bool = False


def table(
    title: str, columns: Sequence[str], rows: Iterable[Sequence[str]], *, show_lines: bool = False
) -> CliTable:
    return CliTable(title, tuple(columns), tuple(tuple(row) for row in rows), show_lines)


def print_table(console: Console, shown: CliTable) -> None:
    """Print `shown` whole: at its own width into a file, at the terminal's on a terminal."""
    if not on_terminal(console):
        _print_at_own_width(console, shown)
        return
    widths = fitted_widths(console, shown)
    if widths is None:
        _print_row_blocks(console, shown)
    else:
        console.print(_rich_table(shown, widths, min(len(shown.title), console.width)))


def on_terminal(console: Console) -> bool:
    """Whether a person reads `console` on a terminal (TTY_COMPATIBLE=1 says so too).

    rich also says yes for FORCE_COLOR alone, which CI runners set for colored logs; a
    log still gets whole rows."""
    if not console.is_terminal:
        return False
    if os.environ.get("FORCE_COLOR") is None or os.environ.get("TTY_COMPATIBLE") == "1":
        return True
    isatty = getattr(console.file, "isatty", None)
    return bool(isatty is not None and isatty())


def fitted_widths(console: Console, shown: CliTable) -> list[int] | None:
    """Each column's width on `console`, or None for a block per row.

    As wide as its widest cell while the table fits; then with headers wrapped between
    words; then each column its longest word plus a share of the room left, in proportion
    to what its values would still take. When the longest words do not fit side by side,
    the column of the longest ones (file paths) folds them at its edge if that leaves it
    half the room: narrower, it would read worse than a block per row."""
    headers = [_measure(console, [column]) for column in shown.columns]
    cells = [_measure(console, [row[i] for row in shown.rows] or [""]) for i in range(len(shown.columns))]
    room = console.width - _FRAME - _FRAME_PER_COLUMN * len(shown.columns)
    values = [max(h.minimum, c.maximum) for h, c in zip(headers, cells, strict=True)]
    for widths in ([max(h.maximum, c.maximum) for h, c in zip(headers, cells, strict=True)], values):
        if sum(widths) <= room:
            return widths
    widths = [max(h.minimum, c.minimum) for h, c in zip(headers, cells, strict=True)]
    if sum(widths) > room:
        widest = max(range(len(widths)), key=lambda i: widths[i])
        left = room - (sum(widths) - widths[widest])
        if left < room // 2:
            return None
        widths[widest] = left
        return widths
    wanted = [value - width for value, width in zip(values, widths, strict=True)]
    spare = room - sum(widths)
    widths = [width + spare * want // sum(wanted) for width, want in zip(widths, wanted, strict=True)]
    for _ in range(room - sum(widths)):  # what the rounding down left: one each to the neediest
        neediest = max(range(len(widths)), key=lambda i: values[i] - widths[i])
        widths[neediest] += 1
    return widths


def _measure(console: Console, cells: Sequence[str]) -> Measurement:
    """(longest word, longest line) over `cells`, as rich renders their markup."""
    options = console.options.update(width=UNBOUNDED, max_width=UNBOUNDED)
    sizes = [Measurement.get(console, options, console.render_str(cell)) for cell in cells]
    return Measurement(max(size.minimum for size in sizes), max(size.maximum for size in sizes))


def _rich_table(shown: CliTable, widths: Sequence[int] | None, min_width: int) -> Table:
    # min_width: a title is not wrapped inside a table narrower than itself.
    result = Table(title=shown.title, title_justify="left", show_lines=shown.show_lines, min_width=min_width)
    for index, column in enumerate(shown.columns):
        result.add_column(
            column,
            no_wrap=widths is None,
            width=None if widths is None else widths[index],
            overflow="fold",
            justify="right" if column in RIGHT_ALIGNED else "left",
        )
    for row in shown.rows:
        result.add_row(*row)
    return result


def _print_at_own_width(console: Console, shown: CliTable) -> None:
    rendered = _rich_table(shown, None, len(shown.title))
    unbounded = console.options.update(width=UNBOUNDED, max_width=UNBOUNDED)
    needed = console.measure(rendered, options=unbounded).maximum
    if needed <= console.width:
        console.print(rendered)
        return
    width = console.width
    console.width = needed
    try:
        console.print(rendered)
    finally:
        console.width = width


def _print_row_blocks(console: Console, shown: CliTable) -> None:
    """One block per row, a rule between them: each non-empty cell after its column's name,
    wrapped at the terminal's edge under where it began."""
    console.print(Text.from_markup(shown.title, style="table.title"))
    indent = max(map(cell_len, shown.columns)) + 2
    for row in shown.rows:
        console.print(Rule(style="table.border"))
        for column, cell in zip(shown.columns, row, strict=True):
            if not cell:
                continue
            lines = console.render_str(cell, highlight=False).wrap(
                console, max(console.width - indent, 1), overflow="fold"
            )
            for index, line in enumerate(lines):
                label = Text(column.ljust(indent), style="table.header") if index == 0 else " " * indent
                console.print(Text.assemble(label, line), soft_wrap=True)
