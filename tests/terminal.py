"""Runs a command as a user at a terminal sees it: stderr on a pseudo-terminal, stdout to a file.

The progress a verb shows goes to stderr and only when stderr is a terminal; a pty is
that terminal. Variables that would force or forbid terminal output are cleared, so the
test sees what an ordinary terminal sees.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import tempfile
import termios
import time
from dataclasses import dataclass

GPUCLUSTER = [sys.executable, "-m", "gpucluster"]
_FORCING = ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR", "COLUMNS", "LINES")


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str


def _environment() -> dict[str, str]:
    env = {name: value for name, value in os.environ.items() if name not in _FORCING}
    env["TERM"] = "xterm-256color"
    return env


def on_terminal(args: list[str], timeout: float = 300) -> Ran:
    """`args` with stderr on a 120-column pty: `stderr` is what the terminal received."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    with tempfile.TemporaryFile() as stdout:
        child = subprocess.Popen(
            args, stdin=subprocess.DEVNULL, stdout=stdout, stderr=slave, env=_environment()
        )
        os.close(slave)
        received = bytearray()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if child.poll() is not None:
                    break
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not data:
                break
            received += data
        os.close(master)
        code = child.wait(timeout=max(1.0, deadline - time.monotonic()))
        stdout.seek(0)
        return Ran(code, stdout.read().decode(), received.decode(errors="replace"))


def piped(args: list[str], timeout: float = 300) -> Ran:
    """`args` with stdout and stderr both pipes, as in a CI job or `| tee`."""
    done = subprocess.run(args, capture_output=True, text=True, env=_environment(), timeout=timeout)
    return Ran(done.returncode, done.stdout, done.stderr)
