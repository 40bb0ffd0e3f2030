"""SIGUSR1 means: checkpoint at the next step boundary, then exit for Slurm's requeue.

Slurm sends it ahead of the time limit (`--signal=USR1@N`) and the sbatch launcher
forwards it to the training processes. The handler only sets a flag: saving inside
a signal handler could interrupt an optimizer step or a collective halfway.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any


class StopRequest:
    """Context manager that turns SIGUSR1 into `requested`, restoring the old handler on exit."""

    def __init__(self, signum: signal.Signals = signal.SIGUSR1) -> None:
        self.signum = signum
        self.requested = False
        self._previous: Any = None
        self._installed = False

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.requested = True

    def __enter__(self) -> StopRequest:
        # signal.signal works only in the main thread; elsewhere (a test harness) the flag stays off.
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(self.signum, self._handle)
            self._installed = True
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._installed:
            signal.signal(self.signum, self._previous)
            self._installed = False
