"""The agents' settings: command-line options, then the env file the head node renders,
then the environment; errors name the key and the fix."""

from __future__ import annotations

import argparse
from datetime import timedelta

import pytest

from gpucluster.agents import capacity_controller as cc
from gpucluster.agents import node_repair, runtime
from gpucluster.agents.repair_decision import Policy
from gpucluster.bootstrap.bundle import agent_settings
from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.rendering import render
from gpucluster.resolved import resolve
from tests.conftest import EXAMPLE_NAMES, REPO


def _settings(argv: list[str], environ: dict[str, str]) -> runtime.Settings:
    parser = argparse.ArgumentParser()
    runtime.add_common_arguments(parser)
    return runtime.Settings(parser.parse_args(argv), environ)


def test_settings_precedence_is_options_then_env_file_then_environment(tmp_path):
    env_file = tmp_path / "agents.env"
    env_file.write_text('# comment\n\nGPUCLUSTER_CLUSTER="fromfile"\nGPUCLUSTER_REGION=eu-west-1\n')
    environ = {"GPUCLUSTER_CLUSTER": "fromenv", "GPUCLUSTER_REGION": "us-west-2"}
    assert _settings([], environ).cluster() == "fromenv"
    assert _settings(["--env-file", str(env_file)], environ).cluster() == "fromfile"
    assert _settings(["--env-file", str(env_file), "--cluster", "fromcli"], environ).cluster() == "fromcli"
    assert _settings(["--env-file", str(env_file)], environ).region() == "eu-west-1"


def test_settings_errors_name_the_key_and_the_fix(tmp_path):
    with pytest.raises(runtime.SettingError, match="GPUCLUSTER_CLUSTER is not set: pass --cluster"):
        _settings([], {}).cluster()
    with pytest.raises(runtime.SettingError, match="'us-east' is not an AWS region"):
        _settings(["--region", "us-east"], {}).region()
    broken = tmp_path / "broken.env"
    broken.write_text("GPUCLUSTER_CLUSTER\n")
    with pytest.raises(runtime.SettingError, match="line 1: expected KEY=VALUE"):
        _settings(["--env-file", str(broken)], {})


def _env_file(cfg: ClusterConfig) -> str:
    resolved = resolve(cfg)
    return render("systemd/agents.env.j2", cluster=resolved, settings=agent_settings(resolved))


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_the_rendered_env_file_configures_every_agent(tmp_path, example):
    cfg = load_config(REPO / "examples" / f"{example}.yaml")
    env_file = tmp_path / "agents.env"
    env_file.write_text(_env_file(cfg))
    settings_ = _settings(["--env-file", str(env_file)], {})
    assert (settings_.cluster(), settings_.region()) == (cfg.name, cfg.region)
    health = cfg.health
    assert node_repair.policy_from(settings_) == Policy(
        health.replace_failed_nodes,
        health.max_replacements_per_hour,
        timedelta(minutes=health.drain_grace_minutes),
    )


def test_the_health_block_reaches_node_repair(tmp_path):
    cfg = load_config(REPO / "examples" / "default.yaml")
    cfg = cfg.model_copy(
        update={
            "health": cfg.health.model_copy(
                update={
                    "replace_failed_nodes": False,
                    "max_replacements_per_hour": 5,
                    "drain_grace_minutes": 0,
                }
            )
        }
    )
    env_file = tmp_path / "agents.env"
    env_file.write_text(_env_file(cfg))
    assert node_repair.policy_from(_settings(["--env-file", str(env_file)], {})) == Policy(
        False, 5, timedelta(0)
    )


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("GPUCLUSTER_REPLACE_FAILED_NODES", "yes", "must be true or false"),
        ("GPUCLUSTER_MAX_REPLACEMENTS_PER_HOUR", "two", "is not a whole number"),
        ("GPUCLUSTER_MAX_REPLACEMENTS_PER_HOUR", "0", "max_per_hour must be at least 1"),
        ("GPUCLUSTER_DRAIN_GRACE_MINUTES", "-1", "grace must not be negative"),
    ],
)
def test_bad_node_repair_settings_name_the_key(key, value, message):
    with pytest.raises(runtime.SettingError, match=message):
        node_repair.policy_from(_settings([], {key: value}))


def test_grace_below_the_scale_in_lead_is_refused():
    with pytest.raises(runtime.SettingError, match="at least 35"):
        cc._grace(_settings([], {"GPUCLUSTER_MAINTENANCE_GRACE_MINUTES": "30"}), None)
    assert cc._grace(_settings([], {}), None) == timedelta(minutes=60)
    assert cc._grace(_settings([], {"GPUCLUSTER_MAINTENANCE_GRACE_MINUTES": "90"}), None) == timedelta(
        minutes=90
    )
