"""AWS allows 50 tags on a resource: the config's tags plus gpucluster's and CDK's are counted
on the templates as written, and an overflow stops synth with exit 2 naming `tags`."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from gpucluster.cli import app
from gpucluster.synth.tag_limit import TAGS_PER_RESOURCE, fullest_resource
from tests.conftest import REPO


def config_with_tags(tmp_path: Path, count: int) -> Path:
    data = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
    data["tags"] = {f"team-{index}": "ml" for index in range(count)}
    path = tmp_path / "tagged.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_count_takes_every_tag_set_and_leaves_aws_keys_out(tmp_path: Path) -> None:
    template = {
        "Resources": {
            "Subnet": {
                "Properties": {"Tags": [{"Key": "a", "Value": "1"}, {"Key": "aws:cdk", "Value": "x"}]}
            },
            "Param": {"Properties": {"Tags": {"a": "1", "b": "2"}}},
            "Template": {
                "Properties": {
                    "LaunchTemplateData": {
                        "TagSpecifications": [
                            {"ResourceType": "instance", "Tags": [{"Key": k} for k in "abc"]}
                        ]
                    }
                }
            },
        }
    }
    (tmp_path / "demo-network.template.json").write_text(json.dumps(template))
    assert fullest_resource(tmp_path) == (3, "Template", "demo-network")


def test_the_default_examples_fullest_resource_leaves_room_for_the_configs_tags(synthesized) -> None:
    count, logical, _ = fullest_resource(synthesized["default"].outdir)
    # Its one tag of the config (examples/default.yaml) beside gpucluster's own.
    assert count < TAGS_PER_RESOURCE, logical


def test_tags_that_overflow_a_resource_stop_synth_naming_tags(tmp_path: Path) -> None:
    config = config_with_tags(tmp_path, TAGS_PER_RESOURCE - 1)
    result = CliRunner().invoke(app, ["synth", str(config), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert f"error {config}: tags: " in result.output
    assert "and AWS allows 50 on a resource; remove " in result.output
    assert "Traceback" not in result.output
    # The verb makes --output before it starts (bad_input.output_dir); nothing lands in it.
    assert not any((tmp_path / "out").iterdir())


def test_tags_that_fit_every_resource_synthesize(tmp_path: Path) -> None:
    out = tmp_path / "out"
    probe = CliRunner().invoke(app, ["synth", str(config_with_tags(tmp_path, 0)), "-o", str(out)])
    assert probe.exit_code == 0, probe.output
    room = TAGS_PER_RESOURCE - fullest_resource(out)[0]
    result = CliRunner().invoke(app, ["synth", str(config_with_tags(tmp_path, room)), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert fullest_resource(out)[0] == TAGS_PER_RESOURCE
