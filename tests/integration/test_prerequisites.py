"""How the real-Slurm suite reacts to a machine that cannot run it: skip with one reason
locally, fail in CI (CI=true), where a silently skipped suite would prove nothing."""

from __future__ import annotations

import pytest

from tests.integration import conftest, harness


def test_without_root_the_reason_is_root(monkeypatch):
    monkeypatch.setattr(harness.os, "geteuid", lambda: 1000)
    assert harness.missing_prerequisites() == "needs root (network namespaces, slurmd, munged)"


def test_a_missing_daemon_is_named_with_its_package(monkeypatch):
    monkeypatch.setattr(harness.os, "geteuid", lambda: 0)
    installed = {"slurmd", "munged", "munge", "scontrol", "sbatch", "ip", "nsenter"}
    monkeypatch.setattr(
        harness.shutil, "which", lambda tool: f"/usr/bin/{tool}" if tool in installed else None
    )
    reason = harness.missing_prerequisites()
    assert reason is not None and reason.startswith("slurmctld is not installed (apt-get install slurm-wlm")


def test_locally_the_suite_skips(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    with pytest.raises(pytest.skip.Exception, match="real-Slurm suite skipped: needs root"):
        conftest._unavailable("needs root")


def test_in_ci_the_suite_fails(monkeypatch):
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="real-Slurm suite cannot run in CI: needs root"):
        conftest._unavailable("needs root")
