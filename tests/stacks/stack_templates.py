"""Finding one stack's template of a synthesized example, and a compute group's resources in it."""

from __future__ import annotations

from tests.conftest import resources_of


def stack(synthesized, example, role):
    cfg_name = synthesized[example].templates
    return next(t for name, t in cfg_name.items() if name.endswith(f"-{role}"))


def compute_launch_templates(template):
    return {
        logical: res
        for logical, res in resources_of(template, "AWS::EC2::LaunchTemplate").items()
        if "NetworkInterfaces" in res["Properties"]["LaunchTemplateData"]
    }


def launch_template_for(template, group_name):
    prefix = f"Compute{group_name}LaunchTemplate"
    matches = [
        res for logical, res in compute_launch_templates(template).items() if logical.startswith(prefix)
    ]
    assert len(matches) == 1, f"expected one launch template for {group_name}"
    return matches[0]["Properties"]["LaunchTemplateData"]


def asg_for(template, group_name):
    prefix = f"Compute{group_name}Group"
    matches = [
        res["Properties"]
        for logical, res in resources_of(template, "AWS::AutoScaling::AutoScalingGroup").items()
        if logical.startswith(prefix)
    ]
    assert len(matches) == 1
    return matches[0]
