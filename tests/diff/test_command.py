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
    CLUSTER,
    EXAMPLE,
    FSX,
    REGION,
    STORAGE,
    edited,
    fsx_props,
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
    with pytest.raises(BaselineError, match="not JSON"):
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
    """Stands in for gpucluster.synth.app (the real one: test_real_synth.py); records the
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


def _renamed(tmp_path: Path, name: str) -> Path:
    config = tmp_path / f"{name}.yaml"
    config.write_text(EXAMPLE.read_text().replace("name: demo\n", f"name: {name}\n"))
    return config


def test_a_baseline_of_another_cluster_is_refused_before_synth(tmp_path, fake_synth):
    # Renaming demo to demo2 makes new stacks: compared, every resource would read as
    # deleted and re-added, the head node as replaced.
    baseline = write_cdk_out(tmp_path / "baseline", stacks())
    result = diff(_renamed(tmp_path, "demo2"), "--baseline", baseline)
    assert result.exit_code == 2, result.output
    assert f"error {baseline}: (--baseline): the baseline is cluster demo, the config is demo2; " in (
        result.output
    )
    assert "deleted" not in result.output
    assert fake_synth.configs == []


def test_the_cluster_tag_names_the_baseline_cluster_when_stack_names_do_not(tmp_path, fake_synth):
    renamed = {"Storage": stacks()[STORAGE], "Nodes": stacks()[CLUSTER]}
    renamed["Storage"]["Resources"][FSX]["Properties"]["Tags"].append(
        {"Key": "gpucluster:cluster", "Value": "prod"}
    )
    baseline = write_cdk_out(tmp_path / "baseline", renamed)
    result = diff(EXAMPLE, "--baseline", baseline)
    assert result.exit_code == 2, result.output
    assert "(--baseline): the baseline is cluster prod, the config is demo; " in result.output


def test_a_baseline_mixing_two_clusters_is_refused(tmp_path, fake_synth):
    mixed = {**stacks(), "demo2-storage": copy.deepcopy(stacks()[STORAGE])}
    baseline = write_cdk_out(tmp_path / "baseline", mixed)
    result = diff(EXAMPLE, "--baseline", baseline)
    assert result.exit_code == 2, result.output
    assert (
        "holds the templates of several clusters (demo, demo2); pass a directory with the " in result.output
    )


def test_diff_refuses_a_change_fsx_cannot_make_with_the_setting_and_the_fix(tmp_path, fake_synth):
    baseline = write_cdk_out(tmp_path / "baseline", stacks())
    fake_synth.templates.update(edited(lambda t: fsx_props(t).update(StorageCapacity=2400)))
    result = diff(EXAMPLE, "--baseline", baseline, "--allow-replace", FSX)
    assert result.exit_code == 2, result.output
    assert (
        f"error {EXAMPLE}: storage.fsx_lustre.storage_gib: FSx for Lustre storage only grows, it cannot "
        "shrink from 4800 to 2400 GiB; keep the deployed size" in result.output
    )
    assert "safe" not in result.output


def validate(*args: object):
    return CliRunner().invoke(app, ["validate", *map(str, args)])


def test_validate_with_a_baseline_refuses_what_cannot_deploy_over_it(tmp_path, fake_synth):
    baseline = write_cdk_out(tmp_path / "baseline", stacks())
    fake_synth.templates.update(edited(lambda t: lustre(t).update(EfaEnabled=True)))
    result = validate(EXAMPLE, "--baseline", baseline)
    assert result.exit_code == 2, result.output
    assert f"error {EXAMPLE}: storage.fsx_lustre.efa: LustreConfiguration/EfaEnabled false -> true: " in (
        result.output
    )
    # The same config without a baseline is valid: only the deployed file system rules it out.
    assert validate(EXAMPLE).exit_code == 0


def test_validate_with_a_baseline_passes_an_in_place_change_and_warns_of_data_at_risk(tmp_path, fake_synth):
    baseline = write_cdk_out(tmp_path / "baseline", stacks())
    fake_synth.templates.update(edited(lambda t: fsx_props(t).update(StorageCapacity=9600)))
    result = validate(EXAMPLE, "--baseline", baseline)
    assert result.exit_code == 0, result.output
    assert f"deployable over {baseline}" in result.output
    fake_synth.templates.update(edited(lambda t: t[STORAGE]["Resources"].pop(FSX)))
    result = validate(EXAMPLE, "--baseline", baseline)
    assert result.exit_code == 0, result.output
    assert "1 resource(s) holding data, or the head node, would be replaced or deleted" in result.output
    assert validate(_renamed(tmp_path, "demo2"), "--baseline", baseline).exit_code == 2
