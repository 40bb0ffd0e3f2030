"""`cdk synth -c ...`: an empty config or a misspelt context key is refused, naming the key."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gpucluster.bad_input import BadInput, error_lines
from gpucluster.synth.cdk_context import config_path
from gpucluster.synth.cdk_runtime import cdk_context
from tests.conftest import REPO
from tests.synth.test_cdk_cli import CDK

CDK_JSON_KEYS = tuple(cdk_context())


def refused(context: dict) -> str:
    with pytest.raises(BadInput) as caught:
        config_path(context, CDK_JSON_KEYS)
    (line,) = error_lines(caught.value)
    return line


def test_config_from_context_is_the_path():
    context = {**cdk_context(), "config": "my.yaml", "aws:cdk:enable-path-metadata": True}
    assert config_path(context, CDK_JSON_KEYS) == Path("my.yaml")


@pytest.mark.parametrize("value", ["", "  ", None])
def test_empty_config_is_refused(value):
    context = {**cdk_context(), "config": value}
    if value is None:
        del context["config"]
    line = refused(context)
    assert line.startswith("error cdk context: config: is empty; pass the cluster config file")


def test_misspelt_key_is_refused_with_the_key_and_a_suggestion():
    line = refused({**cdk_context(), "conifg": "prod.yaml"})
    assert line.startswith("error cdk context: conifg: is not a context key gpucluster reads")
    assert "did you mean `-c config=...`?" in line


def test_cdk_own_keys_pass():
    context = {
        **cdk_context(),
        "@aws-cdk/core:newStyleStackSynthesis": True,
        "aws:cdk:bundling-stacks": ["**"],
        "availability-zones:account=123456789012:region=us-east-2": ["us-east-2a"],
        "acknowledged-issue-numbers": [1234],
    }
    assert config_path(context, CDK_JSON_KEYS) == Path("examples/default.yaml")


def test_real_cdk_cli_refuses_a_misspelt_key_and_an_empty_config(tmp_path):
    """Through the pinned CDK CLI (slow: one app run per case, no stacks are built)."""
    if not CDK.exists():
        pytest.skip("CDK CLI not installed; run `make setup`")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["CDK_DISABLE_VERSION_CHECK"] = "1"
    for flag, key in (("conifg=examples/mixed.yaml", "conifg"), ("config=", "config")):
        proc = subprocess.run(
            [str(CDK), "synth", "--quiet", "--no-notices", "-c", flag, "-o", str(tmp_path / key)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        output = proc.stdout + proc.stderr
        assert proc.returncode != 0, output
        assert f"error cdk context: {key}: " in output, output
        assert "Traceback" not in output
        assert not list((tmp_path / key).glob("*.template.json"))
