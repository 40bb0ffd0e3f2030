"""Reading what gpucluster.tables printed, in both its modes: piped into a file (each row
on one line, as wide as it needs) and on an 80-column terminal (fitted, nothing cut)."""

from __future__ import annotations

import re

WIDTH = 80
# The terminal flag rich reads (TTY_COMPATIBLE=1) and the terminal's width (COLUMNS).
TERMINAL = {"COLUMNS": str(WIDTH), "TTY_COMPATIBLE": "1", "FORCE_COLOR": None}
PIPED = {"COLUMNS": str(WIDTH), "TTY_COMPATIBLE": None, "FORCE_COLOR": None}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_BORDERS = "│┃"


def plain(output: str) -> str:
    return _ANSI.sub("", output)


def cells(piped: str) -> list[str]:
    """Every cell of every table row in piped output: one line per row, nothing wrapped."""
    found = []
    for line in plain(piped).splitlines():
        if line.startswith("│"):
            found += [cell.strip() for cell in line.strip("│").split("│") if cell.strip()]
    return found


def assert_piped_whole(piped: str, values: list[str], *, wide: bool = True) -> None:
    """Each value whole on one line, and a `wide` table as wide as its widest row."""
    text = plain(piped)
    assert "…" not in text
    lines = text.splitlines()
    for value in values:
        assert any(value in line for line in lines), value
    if wide:
        assert max(map(len, lines)) > WIDTH, "a table this wide is printed at its own width into a file"


def assert_fits_terminal(terminal: str, piped: str, values: list[str] | None = None) -> None:
    """No table line past the terminal's edge, and every word of every value (each cell of
    the piped tables, by default) there: whole on a line, or folded at a column's or the
    terminal's edge and continued on the next line. Lines a verb prints outside its tables
    the same either way (one finding a line, for grep) are the terminal's to wrap."""
    text = plain(terminal)
    lines = text.splitlines()
    assert "…" not in text
    messages = {line for line in plain(piped).splitlines() if line[:1] not in "┏┃┡│├└"}
    too_wide = [line for line in lines if len(line) > WIDTH and line not in messages]
    assert not too_wide, "\n".join(too_wide)
    # A folded word continues at the start of its column on the next line.
    columns: dict[int, list[str]] = {}
    for line in lines:
        if line[:1] in _BORDERS:
            for index, fragment in enumerate(re.split(f"[{_BORDERS}]", line.strip(_BORDERS))):
                columns.setdefault(index, []).append(fragment.strip())
    joined = ["".join(fragments) for fragments in columns.values()]
    joined.append("".join(line.strip() for line in lines))
    for value in cells(piped) if values is None else values:
        for word in value.split():
            assert word in text or any(word in column for column in joined), (word, text)
