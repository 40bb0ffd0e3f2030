"""Create, update, delete and re-create the three stacks in moto's CloudFormation.

moto models the network, the SSM facts, IAM, log groups and, through tests/moto_models.py,
the FSx file system, the munge secret and an instance launched from a launch template. It
does not enforce termination protection, exports in use, or the FSx network interfaces
that keep a subnet busy, and it cannot delete the Network stack at all (its CloudFormation
leaves the NAT gateway, the S3 endpoint and terminated instances' interfaces behind, so
the VPC reports dependencies). So the sequence here deletes and re-creates Cluster and
Storage around a kept Network stack, and the README's full order is checked against the
templates' imports instead.
"""

from __future__ import annotations

import json
import re

import boto3
import pytest
from botocore.exceptions import ClientError
from botocore.parsers import ResponseParserError
from moto import mock_aws

from gpucluster import names
from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.synth.app import synthesize
from tests import moto_models
from tests.conftest import REPO

ACCOUNT = "123456789012"
IMAGE_PARAMETER = "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-24.04/latest/ami-id"
DELETE_ORDER = ("monitoring", "cluster", "storage", "network")


@pytest.fixture(scope="module")
def cfg() -> ClusterConfig:
    return load_config(REPO / "examples" / "default.yaml")


@pytest.fixture(scope="module")
def templates(cfg, tmp_path_factory) -> dict[str, dict[str, dict]]:
    """The default example and the same cluster with one node fewer (an update)."""
    first = synthesize(cfg, tmp_path_factory.mktemp("first")).templates
    group = cfg.compute_groups[0].model_copy(update={"count": 1})
    resized = cfg.model_copy(update={"compute_groups": [group, *cfg.compute_groups[1:]]})
    second = synthesize(resized, tmp_path_factory.mktemp("second")).templates
    return {"first": first, "second": second}


class Account:
    """One moto account/region with the parameters a CDK deploy expects to find."""

    def __init__(self, cfg: ClusterConfig) -> None:
        self.cfg = cfg
        self.region = cfg.region
        self.cf = boto3.client("cloudformation", region_name=self.region)
        ssm = boto3.client("ssm", region_name=self.region)
        ssm.put_parameter(Name="/cdk-bootstrap/hnb659fds/version", Value="21", Type="String")
        ec2 = boto3.client("ec2", region_name=self.region)
        image = ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"]
        moto_models.publish_public_parameter(ACCOUNT, self.region, IMAGE_PARAMETER, image)

    def stack_name(self, role: str) -> str:
        return names.stack_names(self.cfg)[role]

    def create(self, role: str, template: dict) -> str:
        self.cf.create_stack(
            StackName=self.stack_name(role),
            TemplateBody=json.dumps(template),
            Capabilities=["CAPABILITY_NAMED_IAM"],
            EnableTerminationProtection=role == "storage",
        )
        return self.status(role)

    def update(self, role: str, template: dict) -> str:
        self.cf.update_stack(
            StackName=self.stack_name(role),
            TemplateBody=json.dumps(template),
            Capabilities=["CAPABILITY_NAMED_IAM"],
        )
        return self.status(role)

    def delete(self, role: str) -> None:
        self.cf.delete_stack(StackName=self.stack_name(role))

    def status(self, role: str) -> str:
        return self.cf.describe_stacks(StackName=self.stack_name(role))["Stacks"][0]["StackStatus"]

    def physical_id(self, role: str, logical_id: str) -> str:
        resource = self.cf.describe_stack_resource(
            StackName=self.stack_name(role), LogicalResourceId=logical_id
        )
        return resource["StackResourceDetail"]["PhysicalResourceId"]

    def live_stacks(self) -> set[str]:
        return {
            s["StackName"]
            for s in self.cf.list_stacks()["StackSummaries"]
            if s["StackStatus"] != "DELETE_COMPLETE"
        }


def template_of(templates: dict, cfg: ClusterConfig, which: str, role: str) -> dict:
    return templates[which][names.stack_names(cfg)[role]]


@mock_aws
def test_create_update_delete_recreate(cfg, templates) -> None:
    account = Account(cfg)
    for role in ("network", "storage", "cluster"):
        assert account.create(role, template_of(templates, cfg, "first", role)) == "CREATE_COMPLETE"
    first_secret = account.physical_id("storage", "MungeKeySecret")
    first_fsx = account.physical_id("storage", "LustreFileSystem")
    first_logs = account.physical_id("cluster", "NodeLogGroup")
    assert re.fullmatch(
        rf"arn:aws:secretsmanager:{cfg.region}:{ACCOUNT}:secret:gpucluster/demo/munge-key-[0-9a-f]{{12}}-\w{{6}}",
        first_secret,
    )
    ssm = boto3.client("ssm", region_name=cfg.region)
    published = ssm.get_parameter(Name=names.storage_parameter(cfg, "munge_secret_arn"))["Parameter"]["Value"]
    assert published == first_secret
    agent_config = ssm.get_parameter(Name=names.log_agent_config_parameter(cfg))["Parameter"]["Value"]
    shipped = json.loads(agent_config)["logs"]["logs_collected"]["files"]["collect_list"]
    assert {entry["log_group_name"] for entry in shipped} == {first_logs}

    # The head overwrites the stack's placeholder with what it booted (record_head_image).
    record = names.head_image_parameter(cfg)
    assert ssm.get_parameter(Name=record)["Parameter"]["Value"] == names.HEAD_IMAGE_NOT_RECORDED
    head_wrote = '{"ami_id":"ami-0123456789abcdef0","kernel":"6.8.0-1021-aws"}'
    ssm.put_parameter(Name=record, Value=head_wrote, Type="String", Overwrite=True)

    # A resize is an in-place update of the Cluster stack; it keeps the head's record.
    assert account.update("cluster", template_of(templates, cfg, "second", "cluster")) == "UPDATE_COMPLETE"
    assert ssm.get_parameter(Name=record)["Parameter"]["Value"] == head_wrote

    for role in ("cluster", "storage"):
        account.delete(role)
    assert account.live_stacks() == {account.stack_name("network")}
    # The head's record goes with the Cluster stack: nothing of it is left to clean up.
    assert ssm.get_parameters(Names=[record])["InvalidParameters"] == [record]
    # Retained: the data and the logs outlive their stacks.
    secrets = boto3.client("secretsmanager", region_name=cfg.region)
    assert secrets.describe_secret(SecretId=first_secret)["ARN"] == first_secret
    fsx = boto3.client("fsx", region_name=cfg.region)
    assert [f["FileSystemId"] for f in fsx.describe_file_systems()["FileSystems"]] == [first_fsx]
    efs = boto3.client("efs", region_name=cfg.region)
    assert len(efs.describe_file_systems()["FileSystems"]) == 1
    logs = boto3.client("logs", region_name=cfg.region)
    groups = {g["logGroupName"] for g in logs.describe_log_groups()["logGroups"]}
    assert first_logs in groups

    # Re-create next to what was retained: nothing collides.
    for role in ("storage", "cluster"):
        assert account.create(role, template_of(templates, cfg, "first", role)) == "CREATE_COMPLETE"
    second_secret = account.physical_id("storage", "MungeKeySecret")
    assert second_secret != first_secret
    assert account.physical_id("cluster", "NodeLogGroup") != first_logs
    published = ssm.get_parameter(Name=names.storage_parameter(cfg, "munge_secret_arn"))["Parameter"]["Value"]
    assert published == second_secret, "nodes of the new cluster read the new key"


def with_fixed_names(template: dict) -> dict:
    """The templates as they were when the munge secret and the log group had fixed names."""
    fixed = json.loads(json.dumps(template))
    for logical_id, resource in fixed["Resources"].items():
        if logical_id == "MungeKeySecret":
            resource["Properties"]["Name"] = "gpucluster/demo/munge-key"
        if logical_id == "NodeLogGroup":
            resource["Properties"]["LogGroupName"] = "/gpucluster/demo/nodes"
    assert fixed != template
    return fixed


@mock_aws
@pytest.mark.parametrize("role", ["storage", "cluster"])
def test_fixed_names_would_block_the_recreate(cfg, templates, role) -> None:
    """The failure the per-stack names fix, reproduced, so this test can tell them apart."""
    account = Account(cfg)
    account.create("network", template_of(templates, cfg, "first", "network"))
    if role == "cluster":
        account.create("storage", template_of(templates, cfg, "first", "storage"))
    old = with_fixed_names(template_of(templates, cfg, "first", role))
    account.create(role, old)
    account.delete(role)
    # moto answers the Secrets Manager error in JSON where CloudFormation's XML is expected,
    # so botocore reports it as a parser error whose text still names the collision.
    with pytest.raises((ClientError, ResponseParserError), match="already exists|AlreadyExists"):
        account.create(role, old)


def imported_stacks(template: dict, exports: dict[str, str]) -> set[str]:
    text = json.dumps(template)
    return {exports[name] for name in re.findall(r'"Fn::ImportValue": "([^"]+)"', text)}


def test_the_readme_deletes_every_stack_before_the_stacks_it_imports_from(cfg, templates) -> None:
    """moto does not refuse to delete an export in use; the order is checked here instead."""
    stack_names = names.stack_names(cfg)
    first = templates["first"]
    exports = {
        output["Export"]["Name"]: stack
        for stack, template in first.items()
        for output in template.get("Outputs", {}).values()
        if "Export" in output
    }
    readme = (REPO / "README.md").read_text()
    section = readme.split("### Tearing down", 1)[1].split("\n## ", 1)[0]
    order = [m for m in re.findall(r"delete-stack --region \$R --stack-name \$N-(\w+)", section)]
    assert order == list(DELETE_ORDER)
    position = {stack_names[role]: index for index, role in enumerate(order)}
    for stack, template in first.items():
        for exporter in imported_stacks(template, exports):
            assert position[stack] < position[exporter], f"{stack} imports from {exporter}"
    assert imported_stacks(first[stack_names["storage"]], exports) == {stack_names["network"]}
    assert "update-termination-protection" in section.split("$N-storage", 1)[0] + section
    assert section.index("--no-enable-termination-protection") < section.index("--stack-name $N-storage\n")
