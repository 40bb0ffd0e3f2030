"""nccl-tests' result table: its header and its rows.

Every version prints, per message size, `size count [type redop [root]]` and then
two halves of four values, out-of-place and in-place: `time algbw busbw #wrong`
(nccl-tests >= 2.10) or `time algbw busbw error` (older: a max error, not a count).
The type/redop/root columns vary by collective and version, so a row is read from
both ends: the size first, the eight measurements last.
"""

from __future__ import annotations

import math
import re
from typing import Literal

from gpucluster.gate.model import Measure, SizeRow

HEADER = re.compile(r"^#?\s*size\s+count\s+type\b")
_MEASURES = 8
# A size and an element count, or a lone size where the log was cut: "2 total processes
# killed" (mpirun) starts with a number but is not a row.
_ROW_START = re.compile(r"^\s*\d+(\s+\d+(\s|$)|\s*$)")


def header_wrong_column(line: str) -> Literal["#wrong", "error"] | None:
    """The column name of the header line's wrong-results column; None when not a header."""
    if not HEADER.match(line):
        return None
    return "error" if re.search(r"\berror\b", line) else "#wrong"


def looks_like_row(line: str) -> bool:
    """A line that starts with a size: a row, whole or cut."""
    return bool(_ROW_START.match(line))


def _number(token: str) -> float | None:
    if token.upper() == "N/A":
        return None
    value = float(token)
    # nan or inf cannot be compared against a threshold and cannot go into report.json.
    return value if math.isfinite(value) else None


def _measure(tokens: list[str], wrong_column: str | None) -> Measure:
    time_us, algbw, busbw, wrong = (_number(token) for token in tokens)
    if wrong_column == "error":
        return Measure(time_us=time_us, algbw_gbps=algbw, busbw_gbps=busbw, max_error=wrong)
    if wrong is not None and wrong != int(wrong):
        raise ValueError(f"#wrong '{tokens[3]}' is not a whole number")
    count = None if wrong is None else int(wrong)
    return Measure(time_us=time_us, algbw_gbps=algbw, busbw_gbps=busbw, wrong=count)


def parse_row(line: str, number: int, wrong_column: str | None) -> SizeRow | None:
    """The row on `line`, or None when the line is cut short (the run stopped mid-row).

    Raises ValueError when the line has all its columns but one is not a number.
    """
    tokens = line.split()
    if len(tokens) < 2 + _MEASURES:
        return None
    size = int(tokens[0])
    count = int(tokens[1]) if tokens[1].isdigit() else None
    middle = tokens[2:-_MEASURES]
    return SizeRow(
        size_bytes=size,
        count=count,
        dtype=middle[0] if middle else None,
        redop=middle[1] if len(middle) > 1 else None,
        out_of_place=_measure(tokens[-_MEASURES:-4], wrong_column),
        in_place=_measure(tokens[-4:], wrong_column),
        line=number,
    )
