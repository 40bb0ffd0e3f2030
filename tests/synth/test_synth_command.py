"""`gpucluster synth`: templates on disk and a summary a user can act on."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from gpucluster.bootstrap import bundle
from gpucluster.bootstrap.userdata import USER_DATA_LIMIT
from gpucluster.cli import app
from gpucluster.config import ClusterConfig
from gpucluster.synth.app import rendered
from gpucluster.synth.summary import user_data_sizes
from tests.conftest import REPO


def test_synth_writes_three_templates_and_summarizes(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out = tmp_path / "cdk.out"
    result = CliRunner().invoke(app, ["synth", str(REPO / "examples/default.yaml"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    for stack in ("demo-network", "demo-storage", "demo-cluster"):
        assert (out / f"{stack}.template.json").is_file()
        assert re.search(rf"{stack}\s+│\s+\d+/500\s+│\s+[\d,]+", result.output), result.output
    assert re.search(
        r"gpu\s+│\s+p5\.48xlarge\s+│\s+capacity-block\s+│\s+2\s+│\s+16 x H100\s+│\s+32\s+│\s+no",
        result.output,
    )
    for role in ("head", "login", "compute/gpu"):
        assert re.search(rf"{re.escape(role)}\s+│\s+[\d,]+", result.output)


def test_synth_renders_the_bundle_once_for_the_stacks_and_the_summary(tmp_path, monkeypatch):
    """One way through (issue 26): the summary measures the node files the stacks were built
    from; it used to render the bundle and every user data again to size them."""
    calls = []
    real = bundle.bundle_files
    monkeypatch.setattr(bundle, "bundle_files", lambda resolved: calls.append(1) or real(resolved))
    out = tmp_path / "cdk.out"
    result = CliRunner().invoke(app, ["synth", str(REPO / "examples/default.yaml"), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert len(calls) == 1
    assert re.search(r"compute/gpu\s+│\s+[\d,]+", result.output)


def test_user_data_fits_the_budget_for_every_example(example_configs: dict[str, ClusterConfig]):
    for name, cfg in example_configs.items():
        sizes = user_data_sizes(rendered(cfg)[1], cfg.account, cfg.region)
        assert set(sizes) == {"head", "login", *(f"compute/{g.name}" for g in cfg.compute_groups)}
        for role, size in sizes.items():
            assert 0 < size <= USER_DATA_LIMIT, f"{name} {role}: {size} bytes"


def test_synth_of_invalid_config_exits_2(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: demo\nregion: us-east-2\navailability_zone: us-east-2a\ncompute_groups: []\n")
    result = CliRunner().invoke(app, ["synth", str(bad), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "compute_groups" in result.output
    assert not (tmp_path / "out").exists()


def test_user_data_over_budget_stops_synth_with_a_clear_error(tmp_path, monkeypatch):
    from gpucluster.bootstrap import userdata

    monkeypatch.setattr(userdata, "USER_DATA_LIMIT", 512)
    config = REPO / "examples/default.yaml"
    result = CliRunner().invoke(app, ["synth", str(config), "-o", str(tmp_path)])
    assert result.exit_code == 2
    assert f"error {config}: (user-data): user-data for the head node is" in result.output
    assert "over the 512-byte budget" in result.output
    assert "Traceback" not in result.output


def test_cdk_app_reports_user_data_over_budget_as_the_cli_does(monkeypatch):
    """`cdk synth` builds through build_app too: the same BadInput, naming the config file."""
    from gpucluster.bad_input import BadInput, error_lines
    from gpucluster.bootstrap import userdata
    from gpucluster.config.loader import load_config
    from gpucluster.synth.app import build_app

    monkeypatch.setattr(userdata, "USER_DATA_LIMIT", 512)
    config = REPO / "examples/default.yaml"
    with pytest.raises(BadInput) as caught:
        build_app(load_config(config), source=config)
    [line] = error_lines(caught.value)
    assert line.startswith(f"error {config}: (user-data): user-data for the head node is ")
    assert line.endswith("; shorten what the config puts into user-data")


def test_default_synth_leaves_cdk_nag_out_and_writes_the_same_templates(tmp_path, synthesized):
    """cdk-nag costs about a quarter of a synth and never changes a template: `synth` loads it
    only with --nag, and its templates are byte for byte those of the checked session synth.
    No AWS service module is loaded either."""
    out = tmp_path / "out"
    script = (
        "import sys\n"
        "from gpucluster.cli import main\n"
        f"sys.argv = ['gpucluster', 'synth', {str(REPO / 'examples/default.yaml')!r}, '-o', {str(out)!r}]\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert not exc.code, exc.code\n"
        "print('cdk_nag loaded:', 'cdk_nag' in sys.modules)\n"
        "print('service modules:', sorted(m for m in sys.modules if m.startswith('aws_cdk.aws_')))\n"
    )
    run = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert "cdk_nag loaded: False" in run.stdout
    # gpucluster.constructs_lib.cfn builds every resource as a core CfnResource: a service module (aws_ssm,
    # aws_ec2, ...) costs its Python import and Node require in every synth.
    assert "service modules: []" in run.stdout, run.stdout
    assert not (out / "validation-report.json").exists()
    checked = synthesized["default"]
    for stack in checked.templates:
        assert (out / f"{stack}.template.json").read_bytes() == checked.template_path(stack).read_bytes()


def test_synth_with_nag_runs_the_checks(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    out = tmp_path / "cdk.out"
    result = CliRunner().invoke(app, ["synth", str(REPO / "examples/default.yaml"), "-o", str(out), "--nag"])
    assert result.exit_code == 0, result.output
    assert (out / "validation-report.json").is_file()
