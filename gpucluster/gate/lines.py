"""A log file's text as lines without the launcher's prefixes.

`srun -l` puts `0: ` before each line and Open MPI's `--tag-output` puts
`[1,0]<stdout>:`; the lines behind them are what nccl-tests printed. Line numbers
stay those of the file so every message can name the line a user opens.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

from gpucluster.bad_input import BadInput
from gpucluster.command_lines import command_line

# Open MPI --tag-output: [jobid,rank]<stdout>: or <stderr>:; srun -l: "12: " (task id).
_MPIRUN_PREFIX = re.compile(r"^\[\d+,\d+\]<(?:stdout|stderr)>:")
_SRUN_PREFIX = re.compile(r"^\s{0,8}\d{1,6}: ")


# Compressed logs by their first bytes (each format's magic number) -> the command that unpacks them.
_COMPRESSED = {
    b"\x1f\x8b": "gunzip",
    b"BZh": "bunzip2",
    b"\xfd7zXZ\x00": "unxz",
    b"\x28\xb5\x2f\xfd": "unzstd",
}


def strip_prefix(line: str) -> str:
    found = _MPIRUN_PREFIX.match(line)
    if found:
        return line[found.end() :]
    found = _SRUN_PREFIX.match(line)
    if found:
        return line[found.end() :]
    return line


def read_text(path: Path) -> str:
    """The file's text; binary data or an unreadable file is bad input naming the line."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise BadInput(
            path, "(file)", "does not exist", "pass an nccl-tests log or its -J JSON file"
        ) from None
    except IsADirectoryError:
        raise BadInput(path, "(file)", "is a directory", "pass the log files inside it") from None
    except OSError as exc:
        raise BadInput(path, "(file)", f"cannot be read ({exc.strerror})", "check its permissions") from None
    unpack = next((tool for magic, tool in _COMPRESSED.items() if data.startswith(magic)), None)
    if unpack is not None:
        raise BadInput(
            path,
            "(file)",
            f"is compressed ({unpack} unpacks it), not nccl-tests output",
            f"{unpack} it first (`{command_line(unpack, '-k', str(path))}`) and pass the log it writes",
        )
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise BadInput(
            path,
            f"line {line}",
            "holds binary data (a NUL byte), not nccl-tests output",
            "pass the text log nccl-tests printed or its -J JSON file",
        )
    # A stray non-UTF-8 byte (a host name, a terminal escape) does not make a log unreadable.
    return data.decode("utf-8", errors="replace")


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, text without launcher prefix and trailing blanks) for each line."""
    # split("\n"), not splitlines(): form feeds and other separators are not new lines to
    # an editor, and the numbers must match the user's.
    for number, raw in enumerate(text.split("\n"), start=1):
        yield number, strip_prefix(raw.rstrip("\r")).rstrip()
