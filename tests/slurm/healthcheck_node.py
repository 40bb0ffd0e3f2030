"""A stand-in node for the rendered health check: its tools are stubs that answer as a
node would, healthy or not, and record every call."""

from __future__ import annotations

import subprocess
from pathlib import Path

from gpucluster.config import ClusterConfig
from gpucluster.slurm.conf import SlurmSite
from gpucluster.slurm.health_probes import ProbeTimeouts
from tests.slurm.conf_text import healthcheck_of

# The node names' refresh, which a healthy node's Prolog runs; a stub that records and fails.
NODE_HOSTS = "gpucluster-node-hosts"


class FakeNode:
    """A temporary root where the health check's tools are stubs that record their calls."""

    def __init__(
        self,
        root: Path,
        gpus: int,
        efa: int,
        mounted: set[str],
        munge_ok: bool = True,
        fabric_manager_active: bool = True,
        timeouts: ProbeTimeouts | None = None,
        dcgm_report: str | None = None,
        dcgm_exit: int = 0,
        dcgm_bound: int | None = None,
        hostengine_running: bool = True,
    ):
        """`dcgm_report`: what `dcgmi diag -j` prints (exiting `dcgm_exit`); None: no DCGM."""
        self.timeouts = timeouts or ProbeTimeouts()
        self.dcgm_bound = dcgm_bound
        self.bin = root / "bin"
        self.bin.mkdir()
        self.calls = root / "calls"
        self.mount_root = str(root / "mnt")
        gpu_lines = "".join(f"GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-{i})\\n" for i in range(gpus))
        efa_lines = "".join(
            f"provider: efa\\n    fabric: {fabric}\\n    domain: rdmap{i}s0-rdm\\n"
            for i in range(efa)
            for fabric in ("efa", "efa-direct")
        )
        mounted_paths = " ".join(f"{self.mount_root}{m}" for m in sorted(mounted))
        self._stub(NODE_HOSTS, "exit 1")
        self._stub("nvidia-smi", f'printf "{gpu_lines}"')
        self._stub("fi_info", f'printf "{efa_lines}"' if efa else "exit 61")
        self._stub(
            "mountpoint",
            f'for m in {mounted_paths}; do [[ "$2" == "$m" ]] && exit 0; done; exit 1',
        )
        self._stub("munge", "echo credential" if munge_ok else "exit 1")
        self._stub("unmunge", "cat >/dev/null")
        self._stub("scontrol", "exit 0")
        if dcgm_report is not None:
            report = root / "dcgm-report.json"
            report.write_text(dcgm_report)
            self._stub("dcgmi", f"cat {report}; exit {dcgm_exit}")
            self._stub("nv-hostengine", "exit 0")
            running = 0 if hostengine_running else 1
            self._stub("pgrep", f'[[ "$*" == "-x nv-hostengine" ]] && exit {running}; exit 1')
        # The health check's PATH ends in /usr/bin: a stub keeps the host's systemd out of it.
        fabric = 0 if fabric_manager_active else 3
        self._stub(
            "systemctl", f'[[ "$*" == "is-active --quiet nvidia-fabricmanager" ]] && exit {fabric}; exit 4'
        )

    def _stub(self, name: str, body: str) -> None:
        path = self.bin / name
        path.write_text(f'#!/bin/bash\necho "{name} $*" >> {self.calls}\n{body}\n')
        path.chmod(0o755)

    def site(self) -> SlurmSite:
        return SlurmSite(
            healthcheck_path=f"{self.bin}:/usr/bin:/bin",
            mount_root=self.mount_root,
            probe_timeouts=self.timeouts,
            dcgm_bound_seconds=self.dcgm_bound,
            node_hosts_program=str(self.bin / NODE_HOSTS),
        )

    def hang(self, name: str, ignore_term: bool = False) -> None:
        """Make `name` hang like a probe of a sick device: it never answers."""
        trap = "trap '' TERM; " if ignore_term else ""
        self._stub(name, f"{trap}sleep 30")

    def recorded(self, tool: str) -> list[str]:
        if not self.calls.exists():
            return []
        return [line for line in self.calls.read_text().splitlines() if line.startswith(tool + " ")]


def run_healthcheck(
    node: FakeNode, cfg: ClusterConfig, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    script = node.bin.parent / "healthcheck.sh"
    script.write_text(healthcheck_of(cfg, cfg.compute_groups[0], node.site()))
    # slurmd gives the program SLURMD_NODENAME and nothing else.
    return subprocess.run(
        ["/bin/bash", str(script), *args],
        env={"SLURMD_NODENAME": "gpu-i-0123456789abcdef0", **(env or {})},
        capture_output=True,
        text=True,
        timeout=30,
    )
