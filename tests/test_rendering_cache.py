"""The compiled-template cache (rendering._compiled_templates): a warm cache renders the
same bytes as a cold one, and a cache that cannot be used only costs the compile."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpucluster import rendering

TEMPLATE = "slurm/cgroup.conf.j2"


@pytest.fixture
def fresh_environment():
    rendering.environment.cache_clear()
    yield
    rendering.environment.cache_clear()


def _render() -> str:
    rendering.environment.cache_clear()
    return rendering.render(TEMPLATE, cluster=SimpleNamespace(name="demo"))


def test_a_warm_cache_renders_what_a_cold_compile_renders(tmp_path: Path, monkeypatch, fresh_environment):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cold = _render()
    entries = list((tmp_path / "gpucluster" / "jinja").iterdir())
    assert entries, "the compiled template is kept"
    assert oct(os.stat(tmp_path / "gpucluster" / "jinja").st_mode & 0o777) == "0o700"
    assert _render() == cold


def test_an_unusable_cache_directory_only_costs_the_compile(tmp_path: Path, monkeypatch, fresh_environment):
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert rendering._compiled_templates() is None
    assert _render()


def test_a_cache_others_may_write_is_not_used(tmp_path: Path, monkeypatch, fresh_environment):
    directory = tmp_path / "gpucluster" / "jinja"
    directory.mkdir(parents=True)
    directory.chmod(0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert rendering._compiled_templates() is None


def test_no_home_directory_only_costs_the_compile(monkeypatch, fresh_environment):
    def no_home() -> Path:
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(Path, "home", staticmethod(no_home))
    assert rendering._compiled_templates() is None
    assert _render()
