"""Assertions on the synthesized CloudFormation of every example."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpucluster import names
from gpucluster.efa import efa_interface_layout
from gpucluster.node_files import BUNDLE_URL_SLOT, LOG_GROUP_SLOT
from tests.conftest import EXAMPLE_NAMES, REPO, resources_of
from tests.stacks.stack_templates import asg_for, launch_template_for, stack

STATEFUL_TYPES = (
    "AWS::FSx::FileSystem",
    "AWS::EFS::FileSystem",
    "AWS::SecretsManager::Secret",
    "AWS::RDS::DBInstance",
)


def test_three_stacks_per_example(synthesized, example_configs):
    for example, result in synthesized.items():
        expected = set(names.stack_names(example_configs[example]).values())
        assert set(result.templates) == expected
        for stack_name in expected:
            assert result.template_path(stack_name).is_file()


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_efa_interfaces_match_catalog_layout(synthesized, example_configs, example):
    cfg = example_configs[example]
    cluster = stack(synthesized, example, "cluster")
    efa_group = cluster_efa_group_import(stack(synthesized, example, "network"))
    for group in cfg.compute_groups:
        data = launch_template_for(cluster, group.name)
        interfaces = data["NetworkInterfaces"]
        expected = efa_interface_layout(group.instance)
        got = [
            (nic["NetworkCardIndex"], nic["DeviceIndex"], nic.get("InterfaceType", "interface"))
            for nic in interfaces
        ]
        assert got == [tuple(slot) for slot in expected]
        for nic in interfaces:
            assert "SubnetId" not in nic, "the Auto Scaling group's subnets place every interface"
            imports = json.dumps(nic["Groups"])
            assert efa_group in imports, "every interface carries the EFA security group"
        assert "SecurityGroupIds" not in data, "NetworkInterfaces and SecurityGroupIds exclude each other"


def cluster_efa_group_import(network_template):
    exports = [
        out["Export"]["Name"]
        for out in network_template.get("Outputs", {}).values()
        if "Export" in out and "EfaSecurityGroup" in json.dumps(out["Value"])
    ]
    assert len(exports) == 1
    return exports[0]


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_capacity_options(synthesized, example_configs, example):
    cfg = example_configs[example]
    cluster = stack(synthesized, example, "cluster")
    for group in cfg.compute_groups:
        data = launch_template_for(cluster, group.name)
        asg = asg_for(cluster, group.name)
        capacity = group.capacity
        target = data.get("CapacityReservationSpecification", {}).get("CapacityReservationTarget", {})
        if capacity.type == "capacity-block":
            assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
            assert target == {"CapacityReservationId": capacity.reservation_id}
            assert asg["MinSize"] == "0"
            assert asg["MaxSize"] == str(group.count)
            assert "DesiredCapacity" not in asg, "the capacity-block controller owns desired capacity"
            assert "Placement" not in data
        elif capacity.type == "odcr":
            assert "InstanceMarketOptions" not in data
            assert target == {"CapacityReservationId": capacity.reservation_id}
            assert asg["DesiredCapacity"] == str(group.count)
        else:
            assert "InstanceMarketOptions" not in data
            assert "CapacityReservationSpecification" not in data
            assert asg["MinSize"] == asg["MaxSize"] == asg["DesiredCapacity"] == str(group.count)
        assert "ScheduledActions" not in json.dumps(cluster)
        hooks = asg["LifecycleHookSpecificationList"]
        assert [h["LifecycleHookName"] for h in hooks] == ["gpucluster-launch"]
        assert hooks[0]["DefaultResult"] == "ABANDON"


def test_no_scheduled_actions_anywhere(synthesized):
    for result in synthesized.values():
        for template in result.templates.values():
            assert not resources_of(template, "AWS::AutoScaling::ScheduledAction")


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_placement_group_rules(synthesized, example_configs, example):
    cfg = example_configs[example]
    cluster = stack(synthesized, example, "cluster")
    groups = resources_of(cluster, "AWS::EC2::PlacementGroup")
    for group in cfg.compute_groups:
        data = launch_template_for(cluster, group.name)
        if group.existing_placement_group is not None:
            assert data["Placement"] == {"GroupName": group.existing_placement_group}
        elif group.creates_placement_group:
            placement = data["Placement"]["GroupName"]
            assert placement["Ref"] in groups
            assert groups[placement["Ref"]]["Properties"]["Strategy"] == "cluster"
        else:
            assert "Placement" not in data
    assert len(groups) == sum(1 for g in cfg.compute_groups if g.creates_placement_group)


def test_odcr_group_never_gets_a_new_placement_group(synthesized, example_configs):
    """mixed.yaml's ODCR group names the reservation's own group; nothing is created for it."""
    cluster = stack(synthesized, "mixed", "cluster")
    created = resources_of(cluster, "AWS::EC2::PlacementGroup")
    assert not any(logical.startswith("Computeeval") for logical in created)
    assert launch_template_for(cluster, "eval")["Placement"] == {"GroupName": "eval-odcr"}
    assert any(logical.startswith("Computedev") for logical in created)


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_nodes_live_in_the_configured_availability_zone(synthesized, example_configs, example):
    cfg = example_configs[example]
    network = stack(synthesized, example, "network")
    subnets = resources_of(network, "AWS::EC2::Subnet")
    if cfg.network.vpc_id is None:
        assert subnets
        # The accounting database's spare subnet is the one in another zone (test_accounting_stacks.py).
        spare = subnets.pop("DatabaseSubnet2", None)
        assert (spare is not None) == (cfg.accounting is not None)
        assert {s["Properties"]["AvailabilityZone"] for s in subnets.values()} == {cfg.availability_zone}
    else:
        assert not subnets
        cluster = stack(synthesized, example, "cluster")
        for group in cfg.compute_groups:
            assert asg_for(cluster, group.name)["VPCZoneIdentifier"] == [cfg.network.subnet_id]


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_stateful_resources_retained_with_pinned_logical_ids(synthesized, example_configs, example):
    cfg = example_configs[example]
    storage = stack(synthesized, example, "storage")
    expected = {"HomeFileSystem": "AWS::EFS::FileSystem", "MungeKeySecret": "AWS::SecretsManager::Secret"}
    if cfg.storage.fsx_lustre is not None:
        expected["LustreFileSystem"] = "AWS::FSx::FileSystem"
    if cfg.accounting is not None and cfg.accounting.database is not None:
        expected["AccountingDatabase"] = "AWS::RDS::DBInstance"
        expected["AccountingDatabaseSecret"] = "AWS::SecretsManager::Secret"
    for logical, kind in expected.items():
        resource = storage["Resources"][logical]
        assert resource["Type"] == kind
    for result in synthesized.values():
        for template in result.templates.values():
            for resource in template["Resources"].values():
                if resource["Type"] in STATEFUL_TYPES:
                    assert resource["DeletionPolicy"] == "Retain"
                    assert resource["UpdateReplacePolicy"] == "Retain"


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_what_the_file_system_depends_on_keeps_its_logical_id(synthesized, example_configs, example):
    network = stack(synthesized, example, "network")["Resources"]
    for logical in ("StorageSecurityGroup", "NodesSecurityGroup", "EfaSecurityGroup"):
        assert network[logical]["Type"] == "AWS::EC2::SecurityGroup"
    if example_configs[example].network.vpc_id is None:
        assert network["NodeSubnet"]["Type"] == "AWS::EC2::Subnet"
        assert network["NodeSubnet"]["Properties"]["MapPublicIpOnLaunch"] is False


def test_storage_stack_has_termination_protection(synthesized):
    for result in synthesized.values():
        manifest = json.loads((result.outdir / "manifest.json").read_text())
        for name, artifact in manifest["artifacts"].items():
            if artifact.get("type") == "aws:cloudformation:stack":
                protected = artifact["properties"].get("terminationProtection", False)
                assert protected == name.endswith("-storage"), name


def test_fsx_settings_follow_config(synthesized, example_configs):
    for example, cfg in example_configs.items():
        fsx = cfg.storage.fsx_lustre
        if fsx is None:
            continue
        props = stack(synthesized, example, "storage")["Resources"]["LustreFileSystem"]["Properties"]
        lustre = props["LustreConfiguration"]
        assert props["StorageCapacity"] == fsx.storage_gib
        assert lustre["DeploymentType"] == fsx.deployment_type
        assert lustre["DataCompressionType"] == fsx.compression
        assert lustre.get("PerUnitStorageThroughput") == fsx.throughput_per_tib
        assert lustre.get("EfaEnabled", False) == fsx.efa
        if fsx.efa:
            assert "MetadataConfiguration" in lustre


def test_imdsv2_and_encrypted_root_volumes_everywhere(synthesized):
    for result in synthesized.values():
        for template in result.templates.values():
            for resource in resources_of(template, "AWS::EC2::LaunchTemplate").values():
                data = resource["Properties"]["LaunchTemplateData"]
                assert data["MetadataOptions"]["HttpTokens"] == "required"
                for mapping in data["BlockDeviceMappings"]:
                    assert mapping["Ebs"]["Encrypted"] is True
                    assert mapping["Ebs"]["VolumeType"] == "gp3"
            for instance in resources_of(template, "AWS::EC2::Instance").values():
                assert "LaunchTemplate" in instance["Properties"], (
                    "instances get IMDSv2 from a launch template"
                )
            for fs in resources_of(template, "AWS::EFS::FileSystem").values():
                assert fs["Properties"]["Encrypted"] is True


def test_munge_key_is_generated_never_written(synthesized):
    for result in synthesized.values():
        for template in result.templates.values():
            for secret in resources_of(template, "AWS::SecretsManager::Secret").values():
                props = secret["Properties"]
                assert "SecretString" not in props
                assert props["GenerateSecretString"]["PasswordLength"] >= 32


def test_controller_srv_record(synthesized, example_configs):
    for example, cfg in example_configs.items():
        records = resources_of(stack(synthesized, example, "cluster"), "AWS::Route53::RecordSet")
        srv = [r["Properties"] for r in records.values() if r["Properties"]["Type"] == "SRV"]
        assert srv == [
            {
                **srv[0],
                "Name": f"_slurmctld._tcp.{names.private_zone(cfg)}.",
                "ResourceRecords": [f"0 0 6817 {names.controller_host(cfg)}."],
            }
        ]


def test_cluster_stack_does_not_import_from_storage(synthesized):
    for result in synthesized.values():
        cluster = next(t for n, t in result.templates.items() if n.endswith("-cluster"))
        assert "-storage:" not in json.dumps(cluster)


def test_efa_security_group_allows_itself_both_ways(synthesized):
    network = stack(synthesized, "default", "network")
    ingress = resources_of(network, "AWS::EC2::SecurityGroupIngress")
    egress = resources_of(network, "AWS::EC2::SecurityGroupEgress")
    efa_in = [r["Properties"] for k, r in ingress.items() if k.startswith("SecurityGroupsEfaIn")]
    efa_out = [r["Properties"] for k, r in egress.items() if k.startswith("SecurityGroupsEfaOut")]
    assert len(efa_in) == len(efa_out) == 1
    assert efa_in[0]["IpProtocol"] == efa_out[0]["IpProtocol"] == "-1"
    assert efa_in[0]["GroupId"] == efa_in[0]["SourceSecurityGroupId"]
    assert efa_out[0]["GroupId"] == efa_out[0]["DestinationSecurityGroupId"]


def test_cfn_lint_is_clean(synthesized):
    """Zero errors and zero warnings; the one ignored check is explained in .cfnlintrc.yaml."""
    templates = [
        str(result.template_path(name)) for result in synthesized.values() for name in result.templates
    ]
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    proc = subprocess.run(
        [str(cfn_lint), "--format", "parseable", *templates],
        capture_output=True,
        text=True,
        check=False,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_synth_is_deterministic(tmp_path, example_configs, synthesized):
    from gpucluster.synth.app import synthesize

    again = synthesize(example_configs["default"], tmp_path / "again")
    first = synthesized["default"]
    for name in first.templates:
        assert again.template_path(name).read_bytes() == first.template_path(name).read_bytes()


@pytest.mark.parametrize("example", EXAMPLE_NAMES)
def test_group_facts_are_what_the_head_node_agents_read(synthesized, example_configs, example):
    """The SSM document the Cluster stack writes parses with the agents' own parser."""
    from gpucluster.agents.compute_groups import groups_path, parse_group

    cfg = example_configs[example]
    cluster = stack(synthesized, example, "cluster")
    facts = {
        res["Properties"]["Name"]: res["Properties"]["Value"]
        for res in resources_of(cluster, "AWS::SSM::Parameter").values()
    }
    for group in cfg.compute_groups:
        name = names.compute_group_parameter(cfg, group.name)
        assert name.rsplit("/", 1)[0] == groups_path(cfg.name)
        asg = asg_for(cluster, group.name)
        parts = facts[name]["Fn::Join"][1]
        asg_ref = next(part for part in parts if isinstance(part, dict))
        assert asg_ref["Ref"] in [
            logical
            for logical, res in resources_of(cluster, "AWS::AutoScaling::AutoScalingGroup").items()
            if res["Properties"] is asg or res["Properties"] == asg
        ]
        document = "".join(part if isinstance(part, str) else "demo-gpu-asg" for part in parts)
        parsed = parse_group(name, document)
        assert (parsed.group, parsed.count, parsed.capacity_type, parsed.instance_type) == (
            group.name,
            group.count,
            group.capacity.type,
            group.instance_type,
        )
        assert parsed.asg_name == "demo-gpu-asg"
        assert parsed.reservation_id == getattr(group.capacity, "reservation_id", None)


def test_no_ssh_ingress_anywhere(synthesized, example_configs):
    """network.ssh_ingress_cidrs is gone: no security group admits port 22 from anywhere. The
    only rules from address ranges are the REST API's, on its port, from the ranges rest_api lists."""
    for example, result in synthesized.items():
        rest_api = example_configs[example].rest_api
        for template in result.templates.values():
            for group in resources_of(template, "AWS::EC2::SecurityGroup").values():
                for rule in group["Properties"].get("SecurityGroupIngress", []):
                    assert not (rule.get("FromPort", -1) <= 22 <= rule.get("ToPort", -1) and "CidrIp" in rule)
            for rule in resources_of(template, "AWS::EC2::SecurityGroupIngress").values():
                props = rule["Properties"]
                if "CidrIp" in props:
                    assert rest_api is not None, example
                    assert props["FromPort"] == props["ToPort"] == rest_api.port
                    assert props["CidrIp"] in [str(network) for network in rest_api.allow_cidrs]


def test_the_head_image_record_goes_with_the_cluster(synthesized, example_configs):
    for example, cfg in example_configs.items():
        template = stack(synthesized, example, "cluster")
        parameters = resources_of(template, "AWS::SSM::Parameter")
        ((record_id, record),) = [
            (logical, res)
            for logical, res in parameters.items()
            if res["Properties"]["Name"] == names.head_image_parameter(cfg)
        ]
        # Created by the stack with the placeholder `ami pin` reads as "not recorded yet", and
        # deleted with it: no retain policy.
        assert record["Properties"]["Value"] == names.HEAD_IMAGE_NOT_RECORDED
        assert "DeletionPolicy" not in record and "UpdateReplacePolicy" not in record
        # It exists before the head boots and before a new bundle reaches a running head.
        heads = [
            res
            for logical, res in resources_of(template, "AWS::EC2::Instance").items()
            if logical.startswith(names.HEAD_NODE_ID)
        ]
        assert heads and all(record_id in res.get("DependsOn", []) for res in heads)
        (pointer,) = [
            res for res in parameters.values() if res["Properties"]["Name"] == names.bundle_parameter(cfg)
        ]
        assert record_id in pointer.get("DependsOn", [])


def test_no_slot_of_the_node_files_is_left_in_a_template(synthesized):
    """The stacks fill the bundle URL's and the log group's slots (gpucluster.node_files)."""
    for result in synthesized.values():
        for name, template in result.templates.items():
            text = json.dumps(template)
            assert BUNDLE_URL_SLOT not in text and LOG_GROUP_SLOT not in text, name
