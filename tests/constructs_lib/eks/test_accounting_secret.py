"""The accounting database's password Secret on EKS (constructs_lib/eks/accounting_secret.py):
with `accounting.database`, a custom resource whose function reads only the database's secret
and may write only its Kubernetes Secret, ordered after the objects that hold its namespace and
Role and before the `slurm` chart; nothing of it without a database. The example with a
database is synthesized once with cdk-nag (conftest), and cfn-lint judges it here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml

from gpucluster.agent_package import agent_tree, handler_module
from gpucluster.agents.accounting_secret_settings import (
    HANDLER,
    KUBERNETES_GROUP,
    RESOURCE_TYPE,
)
from gpucluster.agents.kube_api import CA_SETTING, ENDPOINT_SETTING
from gpucluster.config.loader import parse_config
from gpucluster.eks import manifests
from gpucluster.eks.storage import placeholder_facts
from gpucluster.resolved import resolve
from gpucluster.synth.app import build_app
from tests.agent_scripts import files_under
from tests.config.test_accounting import SHARED_MUNGE
from tests.conftest import resources_of
from tests.constructs_lib.eks.test_block_scaler import logical_of, of_construct
from tests.eks_examples import eks_example_data, with_database
from tests.stacks.eks_software_values import by_release, slurm_objects

PREFIX = "AccountingPassword"


def secret_arn_parameter(template) -> str:
    """The logical id of the template parameter that reads the secret's ARN from SSM."""
    cfg = parse_config(yaml.safe_dump(eks_example_data(with_database)), "c.yaml")
    name = resolve(cfg).accounting.database.secret_arn_parameter
    [logical] = [logical for logical, p in template["Parameters"].items() if p.get("Default") == name]
    assert template["Parameters"][logical]["Type"] == "AWS::SSM::Parameter::Value<String>"
    return logical


def test_the_custom_resource_names_the_secret_and_the_kubernetes_secret_never_the_value(
    eks_database_template,
):
    template = eks_database_template
    [(logical, resource)] = resources_of(template, RESOURCE_TYPE).items()
    assert logical.startswith(PREFIX)
    function = logical_of(template, "AWS::Lambda::Function", PREFIX)
    assert resource["Properties"] == {
        "ServiceToken": {"Fn::GetAtt": [function, "Arn"]},
        "SecretArn": {"Ref": secret_arn_parameter(template)},
        "SecretField": "password",
        "Namespace": "slurm",
        "Name": "accounting-db",
        "Key": "password",
    }
    assert "resolve:secretsmanager" not in json.dumps(resource)


def test_the_function_is_run_by_cloudformation_only_against_this_clusters_endpoint(eks_database_template):
    template = eks_database_template
    function = of_construct(template, "AWS::Lambda::Function", PREFIX)["Properties"]
    assert function["Handler"] == HANDLER
    assert function["Runtime"] == "python3.14"
    cluster = logical_of(template, "AWS::EKS::Cluster", "Cluster")
    assert function["Environment"]["Variables"] == {
        "GPUCLUSTER_CLUSTER": {"Ref": cluster},
        ENDPOINT_SETTING: {"Fn::GetAtt": [cluster, "Endpoint"]},
        CA_SETTING: {"Fn::GetAtt": [cluster, "CertificateAuthorityData"]},
    }
    assert "VpcConfig" not in function  # the public endpoint and the S3 response URL
    assert not [
        logical for logical in resources_of(template, "AWS::Events::Rule") if logical.startswith(PREFIX)
    ]


def test_in_aws_the_function_may_only_read_the_databases_secret_and_write_its_log(eks_database_template):
    template = eks_database_template
    policy = of_construct(template, "AWS::IAM::Policy", PREFIX)
    log_group = logical_of(template, "AWS::Logs::LogGroup", PREFIX)
    assert policy["Properties"]["PolicyDocument"]["Statement"] == [
        {
            "Action": "secretsmanager:GetSecretValue",
            "Effect": "Allow",
            "Resource": {"Ref": secret_arn_parameter(template)},
            "Sid": "ReadAccountingDatabasePassword",
        },
        {
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Effect": "Allow",
            "Resource": {"Fn::GetAtt": [log_group, "Arn"]},
        },
    ]
    role = of_construct(template, "AWS::IAM::Role", PREFIX)["Properties"]
    assert "ManagedPolicyArns" not in role and "Policies" not in role
    assert role["AssumeRolePolicyDocument"]["Statement"] == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}}
    ]


def test_in_kubernetes_its_role_is_one_group_with_no_access_policy(eks_database_template):
    template = eks_database_template
    entry = of_construct(template, "AWS::EKS::AccessEntry", PREFIX)["Properties"]
    assert entry == {
        "ClusterName": {"Ref": logical_of(template, "AWS::EKS::Cluster", "Cluster")},
        "PrincipalArn": {"Fn::GetAtt": [logical_of(template, "AWS::IAM::Role", PREFIX), "Arn"]},
        "Type": "STANDARD",
        "KubernetesGroups": [KUBERNETES_GROUP],
        "Tags": entry["Tags"],
    }


def test_the_groups_role_may_create_secrets_in_slurm_and_change_only_accounting_db(eks_database_template):
    _, manifest = slurm_objects(eks_database_template)
    text = manifest["Properties"]["Manifest"]
    if isinstance(text, dict):  # the FSx facts' tokens joined in
        text = "".join(p if isinstance(p, str) else "TOKEN" for p in text["Fn::Join"][1])
    docs = json.loads(text)
    group = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": KUBERNETES_GROUP}
    [binding] = [d for d in docs if "Binding" in d["kind"] and group in d["subjects"]]
    assert binding["kind"] == "RoleBinding" and binding["metadata"]["namespace"] == "slurm"
    assert binding["subjects"] == [group]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": binding["metadata"]["name"],
    }
    [role] = [d for d in docs if d["kind"] == "Role" and d["metadata"]["name"] == binding["roleRef"]["name"]]
    assert role["metadata"]["namespace"] == "slurm"
    assert role["rules"] == [
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
        {
            "apiGroups": [""],
            "resources": ["secrets"],
            "resourceNames": ["accounting-db"],
            "verbs": ["patch", "update"],
        },
    ]
    # The namespace the Role lives in comes first in the same manifest.
    assert docs.index(next(d for d in docs if d["kind"] == "Namespace")) < docs.index(role)


def test_it_runs_after_the_objects_and_its_access_entry_and_before_the_slurm_chart(eks_database_template):
    template = eks_database_template
    [(custom, resource)] = resources_of(template, RESOURCE_TYPE).items()
    objects, _ = slurm_objects(template)
    assert objects in resource["DependsOn"]
    assert logical_of(template, "AWS::EKS::AccessEntry", PREFIX) in resource["DependsOn"]
    _, slurm = by_release(template)["slurm"]
    assert custom in slurm["DependsOn"]
    assert objects not in slurm["DependsOn"]  # through the custom resource, one chain


def test_the_package_is_the_tree_of_what_the_handler_imports(eks_database_synthesized, eks_database_template):
    function = of_construct(eks_database_template, "AWS::Lambda::Function", PREFIX)
    assert function["Properties"]["Handler"] == HANDLER == "gpucluster.agents.accounting_secret.handler"
    asset = function["Properties"]["Code"]["S3Key"].removesuffix(".zip")
    packaged = files_under(eks_database_synthesized.outdir / f"asset.{asset}")
    assert packaged == agent_tree((handler_module(HANDLER),))


def test_k8s_objects_show_the_same_role(eks_database_synthesized):
    cfg = parse_config(yaml.safe_dump(eks_example_data(with_database)), "c.yaml")
    resolved = resolve(cfg)
    written = (eks_database_synthesized.outdir / "k8s" / "objects.yaml").read_text()
    docs = [doc for doc in yaml.safe_load_all(written) if doc]
    assert docs == manifests.objects(resolved, placeholder_facts(resolved))
    assert [
        d["kind"] for d in docs if d["metadata"].get("name") == "gpucluster-accounting-password-writer"
    ] == [
        "Role",
        "RoleBinding",
    ]


def test_cfn_lint_is_clean(eks_database_synthesized):
    cfn_lint = Path(sys.executable).parent / "cfn-lint"
    files = [str(eks_database_synthesized.template_path(name)) for name in eks_database_synthesized.templates]
    run = subprocess.run([str(cfn_lint), "--format", "parseable", *files], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_without_a_database_nothing_is_added(eks_template, tmp_path):
    """The example has no accounting; an external slurmdbd needs no password here either."""

    def external(data):
        data["accounting"] = {"external": "slurmdbd.example.internal:6819", "munge_key_secret": SHARED_MUNGE}

    cfg = parse_config(yaml.safe_dump(eks_example_data(external)), "c.yaml")
    external_eks = build_app(cfg, outdir=str(tmp_path)).synth().get_stack_by_name(f"{cfg.name}-eks").template
    for template in (eks_template, external_eks):
        assert not resources_of(template, RESOURCE_TYPE)
        assert not [logical for logical in template["Resources"] if logical.startswith(PREFIX)]
        _, manifest = slurm_objects(template)
        assert KUBERNETES_GROUP not in json.dumps(manifest)
