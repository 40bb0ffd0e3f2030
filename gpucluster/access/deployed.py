"""What the deployed Cluster stack hands out: its Session document, its people policy (both
read back from the stack's outputs) and the login nodes running now."""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster import names
from gpucluster.aws.clients import Clients
from gpucluster.aws.errors import AwsError, aws_call
from gpucluster.aws.instances import running_instances
from gpucluster.config import ClusterConfig
from gpucluster.env_problem import EnvironmentProblem

DEPLOY = "deploy it with this gpucluster (`cdk deploy`) and re-run"


@dataclass(frozen=True)
class DeployedAccess:
    document: str
    policy_arn: str
    # Running login nodes' instance ids, sorted.
    login_nodes: tuple[str, ...]


def deployed_access(clients: Clients, cfg: ClusterConfig) -> DeployedAccess:
    stack = names.stack_names(cfg)["cluster"]
    try:
        with aws_call("cloudformation:DescribeStacks", cfg.region):
            (found,) = clients.get("cloudformation", cfg.region).describe_stacks(StackName=stack)["Stacks"]
    except AwsError as exc:
        if "does not exist" not in exc.line:
            raise
        raise EnvironmentProblem(f"stack {stack} ({cfg.region})", "does not exist", DEPLOY) from None
    outputs = {o["OutputKey"]: o.get("OutputValue", "") for o in found.get("Outputs", [])}
    wanted = (names.SESSION_DOCUMENT_OUTPUT, names.PEOPLE_POLICY_OUTPUT)
    missing = [key for key in wanted if not outputs.get(key)]
    if missing:
        raise EnvironmentProblem(
            f"stack {stack} ({cfg.region})",
            f"has no output {' or '.join(missing)}: it was deployed before users: listed anyone, "
            "or by an older gpucluster",
            DEPLOY,
        )
    login_nodes = running_instances(clients, cfg, "login")
    if not login_nodes:
        raise EnvironmentProblem(
            f"cluster {cfg.name} ({cfg.region})",
            f"no login node is running (tagged {names.CLUSTER_TAG}={cfg.name}, {names.ROLE_TAG}=login)",
            "wait for its Auto Scaling group to launch one (or deploy the cluster) and re-run",
        )
    return DeployedAccess(outputs[wanted[0]], outputs[wanted[1]], tuple(login_nodes))
