"""`gpucluster diff` end to end: the baseline directory, the printed report, the exit
codes, with synth stubbed out."""

from __future__ import annotations

import copy
import sys
import types
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from gpucluster.cli import app
from gpucluster.diff import BaselineError, diff_templates, load_templates, print_report
from tests.diff_stacks import (
    EXAMPLE,
    FSX,
    REGION,
    STORAGE,
    edited,
    lustre,
    stacks,
    write_cdk_out,
)


def test_load_templates_reads_only_stack_templates(tmp_path):
    loaded = load_templates(write_cdk_out(tmp_path / "cdk.out", stacks()))
    assert loaded == stacks()


def test_load_templates_explains_a_wrong_directory(tmp_path):
    with pytest.raises(BaselineError, match="holds no \\*.template.json"):
        load_templates(tmp_path)
    with pytest.raises(BaselineError, match="not a directory"):
        load_templates(tmp_path / "missing")
    (tmp_path / "broken.template.json").write_text("{")
    with pytest.raises(BaselineError, match="not valid JSON"):
        load_templates(tmp_path)


def test_report_names_the_resource_and_the_property():
    current = edited(lambda t: lustre(t).update(DeploymentType="PERSISTENT_1", PerUnitStorageThroughput=200))
    console = Console(record=True, width=200, color_system=None)
    print_report(diff_templates(stacks(), current, region=REGION), console)
    text = console.export_text()
    assert FSX in text
    assert "LustreConfiguration/DeploymentType" in text
    assert "DATA AT RISK" in text
    assert f"--allow-replace {FSX}" in text


@pytest.fixture
def fake_synth(monkeypatch):
    """Stands in for gpucluster.synth.app (the real one: test_diff_real_synth.py); records the
    configs it was given."""
    produced: dict[str, dict] = {}
    configs: list = []
    options_seen: list[dict] = []

    def synthesize(cfg, outdir, **options):  # options: nag=, source= (as the real one)
        configs.append(cfg)
        options_seen.append(options)
        write_cdk_out(Path(outdir), produced)
        return types.SimpleNamespace(templates=copy.deepcopy(produced), outdir=Path(outdir))

    monkeypatch.setitem(sys.modules, "gpucluster.synth.app", types.SimpleNamespace(synthesize=synthesize))
    return types.SimpleNamespace(templates=produced, configs=configs, options=options_seen)


def diff(*args: object):
    return CliRunner().invoke(app, ["diff", *map(str, args)])


def test_diff_verb_exit_codes(tmp_path, fake_synth):
    baseline = write_cdk_out(tmp_path / "baseline", stacks())
    fake_synth.templates.update(edited(lambda t: t[STORAGE]["Resources"].pop(FSX)))
    result = diff(EXAMPLE, "--baseline", baseline)
    assert result.exit_code == 1, result.output
    assert FSX in result.output
    assert diff(EXAMPLE, "--baseline", baseline, "--allow-replace", FSX).exit_code == 0
    assert diff(EXAMPLE, "--baseline", tmp_path / "nowhere").exit_code == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: Demo\n")
    result = diff(bad, "--baseline", baseline)
    assert result.exit_code == 2
    assert f"error {bad}: name: " in result.output


def test_diff_loads_the_config_and_the_baseline_once(tmp_path, fake_synth, monkeypatch):
    import gpucluster.cli.root as cli
    import gpucluster.diff.baseline as baseline_module

    loaded: list = []
    read: list = []

    def load_config(path):
        loaded.append(real_load_config(path))
        return loaded[-1]

    def load_templates(directory):
        read.append(directory)
        return real_load_templates(directory)

    real_load_config, real_load_templates = cli.load_config, baseline_module.load_templates
    monkeypatch.setattr(cli, "load_config", load_config)
    monkeypatch.setattr(baseline_module, "load_templates", load_templates)
    baseline = write_cdk_out(tmp_path / "baseline", stacks())
    fake_synth.templates.update(stacks())
    result = diff(EXAMPLE, "--baseline", baseline)
    assert result.exit_code == 0, result.output
    assert len(loaded) == 1 and len(read) == 1
    # synth is given the config that was validated, not one read again; cdk-nag, which
    # changes no template, is left to `synth`; a user-data overflow names the config.
    assert fake_synth.configs == loaded
    assert fake_synth.options == [{"nag": False, "source": EXAMPLE, "outdir_option": "TMPDIR"}]
