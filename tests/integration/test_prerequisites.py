"""How the real-Slurm suite reacts to a machine that cannot run it: skip with one reason
locally, fail in CI (CI=true), where a silently skipped suite would prove nothing."""

from __future__ import annotations

import pytest

from tests.integration import prerequisites


def test_without_root_the_reason_is_root(monkeypatch):
    monkeypatch.setattr(prerequisites.os, "geteuid", lambda: 1000)
    assert prerequisites.missing_prerequisites() == "needs root (network namespaces, slurmd, munged)"


def test_a_missing_daemon_is_named_with_its_package(monkeypatch):
    monkeypatch.setattr(prerequisites.os, "geteuid", lambda: 0)
    installed = {"slurmd", "munged", "munge", "scontrol", "sbatch", "ip", "nsenter"}
    monkeypatch.setattr(
        prerequisites.shutil, "which", lambda tool: f"/usr/bin/{tool}" if tool in installed else None
    )
    reason = prerequisites.missing_prerequisites()
    assert reason is not None and reason.startswith("slurmctld is not installed (apt-get install slurm-wlm")


def test_locally_the_suite_skips(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="cannot run the real-Slurm suite: needs root"):
        prerequisites.unavailable("run the real-Slurm suite", "needs root")


def test_in_ci_the_suite_fails(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="cannot run the real-Slurm suite in CI: needs root"):
        prerequisites.unavailable("run the real-Slurm suite", "needs root")


HYBRID = "tmpfs /sys/fs/cgroup tmpfs rw 0 0\ncgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"
UNIFIED = "cgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n"


def test_cgroup_v1_hosts_run_production_plugins():
    tracking = prerequisites.process_tracking(HYBRID)
    assert (tracking.proctrack_type, tracking.task_plugin, tracking.why) == (
        "proctrack/cgroup",
        "task/cgroup,task/affinity",
        None,
    )


@pytest.mark.parametrize(("bus", "proctrack"), [(True, "proctrack/cgroup"), (False, "proctrack/linuxproc")])
def test_cgroup_v2_hosts_need_systemd_for_production_plugins(monkeypatch, bus, proctrack):
    real_exists = prerequisites.Path.exists
    monkeypatch.setattr(
        prerequisites.Path,
        "exists",
        lambda self: bus if str(self) == "/run/dbus/system_bus_socket" else real_exists(self),
    )
    assert prerequisites.process_tracking(UNIFIED).proctrack_type == proctrack
