"""How the real-Slurm suite reacts to a machine that cannot run it: skip with one reason
locally, fail in CI (CI=true), where a silently skipped suite would prove nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpucluster.slurm_release import PINNED_SHA256
from tests.integration import installs, prerequisites, slurm_build, vendor_builds


def test_without_root_the_reason_is_root(monkeypatch):
    monkeypatch.setattr(prerequisites.os, "geteuid", lambda: 1000)
    assert prerequisites.missing_prerequisites() == "needs root (network namespaces, slurmd, munged)"


def test_a_missing_host_tool_is_named_with_its_package(monkeypatch):
    monkeypatch.setattr(prerequisites.os, "geteuid", lambda: 0)
    installed = {"munge", "ip", "nsenter"}
    monkeypatch.setattr(
        prerequisites.shutil, "which", lambda tool: f"/usr/bin/{tool}" if tool in installed else None
    )
    assert prerequisites.missing_prerequisites() == "munged is not installed (apt-get install munge)"


def test_a_missing_build_dependency_is_named_with_its_package(monkeypatch):
    monkeypatch.setattr(slurm_build, "has_header", lambda root, header: header != "/usr/include/jwt.h")
    assert installs.PINNED.missing() == "/usr/include/jwt.h is missing (libjwt-dev; run: sudo make system)"


def test_every_build_dependency_is_one_make_system_installs():
    """What the suite asks for is what .ci/system installs on a fresh machine."""
    listed = (Path(__file__).resolve().parents[2] / ".ci" / "debian-packages").read_text().split()
    assert set(slurm_build.BUILD_HEADERS) <= set(listed)


def test_the_build_is_keyed_by_source_flags_and_c_library(monkeypatch):
    prefix = installs.PINNED.prefix
    assert prefix.parent.name.startswith(PINNED_SHA256[:16] + "-")
    assert prefix.parent.name.endswith("-" + vendor_builds.libc_version())
    monkeypatch.setattr(slurm_build, "CONFIGURE_FLAGS", (*slurm_build.CONFIGURE_FLAGS, "--without-lua"))
    assert slurm_build.slurm_prefix() != prefix


def test_the_vendored_tarball_is_the_pinned_source():
    assert vendor_builds.expected_sha256(slurm_build.SLURM_TARBALL) == PINNED_SHA256


def test_test_ids_name_the_slurm_release():
    assert installs.PINNED.test_id == "slurm25.11.7-pinned"


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
