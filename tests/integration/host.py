"""Commands on this host, bounded polling, and undo steps for everything the suite makes."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class HarnessError(RuntimeError):
    pass


def run(*args: str, env: dict[str, str] | None = None, check: bool = True, timeout: float = 30):
    result = subprocess.run(list(args), capture_output=True, text=True, env=env, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise HarnessError(
            f"{' '.join(args)} exited {result.returncode}: {result.stderr.strip() or result.stdout.strip()}"
        )
    return result


def wait_for(what: str, probe: Callable[[], T | None], timeout: float, interval: float = 0.25) -> T:
    """Poll `probe` until it returns something truthy; fail after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(interval)
    raise HarnessError(f"timed out after {timeout:.0f}s waiting for {what} (last seen: {last!r})")


class Teardown:
    """Undo steps, run newest first; every step runs even when an earlier one fails."""

    def __init__(self) -> None:
        self._steps: list[tuple[str, Callable[[], None]]] = []

    def push(self, what: str, step: Callable[[], None]) -> None:
        self._steps.append((what, step))

    def run(self) -> list[str]:
        problems = []
        while self._steps:
            what, step = self._steps.pop()
            try:
                step()
            except Exception as error:  # noqa: BLE001 - teardown must go on and report
                problems.append(f"{what}: {error}")
        return problems


def kill_pid(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


def require_free_port(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("0.0.0.0", port))
        except OSError as error:
            raise HarnessError(
                f"TCP port {port} is taken ({error.strerror}); a slurmctld left by an interrupted "
                f"run? Find it with `ss -ltnp sport = :{port}` and stop it"
            ) from error
