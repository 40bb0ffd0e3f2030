"""Command lines a verb prints for a person to paste into a shell or pipe to `sh`.

The names in them come from files and AWS answers (a node list, a log, an SSM command id),
which whoever writes those controls. So every word is quoted as a POSIX shell reads it
(shlex.quote): whatever a name holds, sh hands it to the command as one argument and runs
nothing else. And a line is written as it is, not through rich, which would turn `:name:`
into an emoji, expand tabs and drop carriage returns: the names sh reads are the names the
verb found.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Mapping

from rich.console import Console

# A `key=value` word keeps its key bare (`reason='two words'`, as people write it): the key
# holds nothing sh reads specially, so sh still joins the two into the same one argument.
_KEY = re.compile(r"[A-Za-z0-9_./:-]+=")


def _quoted(word: str) -> str:
    key = _KEY.match(word)
    if key is None:
        return shlex.quote(word)
    return key.group() + shlex.quote(word[key.end() :])


def command_line(*words: str, env: Mapping[str, str] | None = None) -> str:
    """`words` as one shell command; `env`: variables set for that command alone."""
    assignments = [f"{name}={value}" for name, value in (env or {}).items()]
    return " ".join(_quoted(word) for word in (*assignments, *words))


def print_commands(console: Console, lines: Iterable[str]) -> None:
    """Each command line on its own line of the console's stream, byte for byte."""
    for line in lines:
        console.file.write(line + "\n")
