"""Each person's commands, as blocks of a line that says what they are for and the command
lines themselves, every word quoted for the shell (gpucluster.command_lines)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpucluster import names
from gpucluster.access.deployed import DeployedAccess
from gpucluster.command_lines import command_line
from gpucluster.config import ClusterConfig


@dataclass(frozen=True)
class Block:
    says: str
    commands: tuple[str, ...] = ()


def login_node_lookup(cfg: ClusterConfig) -> str:
    """The running login nodes' ids, for anyone the people policy lets in (it allows the call)."""
    return command_line(
        "aws",
        "ec2",
        "describe-instances",
        "--region",
        cfg.region,
        "--filters",
        f"Name=tag:{names.CLUSTER_TAG},Values={cfg.name}",
        f"Name=tag:{names.ROLE_TAG},Values=login",
        "Name=instance-state-name,Values=running",
        "--query",
        "Reservations[].Instances[].InstanceId",
        "--output",
        "text",
    )


def _start_session(cfg: ClusterConfig, target: str, document: str, *extra: str) -> str:
    return command_line(
        "aws",
        "ssm",
        "start-session",
        "--region",
        cfg.region,
        "--target",
        target,
        "--document-name",
        document,
        *extra,
    )


def _ssh(cfg: ClusterConfig, name: str, node: str) -> str:
    # ssh runs the ProxyCommand through a shell after putting the node (%h) and port (%p) in.
    proxy = _start_session(cfg, "%h", names.SSH_SESSION_DOCUMENT, "--parameters", "portNumber=%p")
    return command_line("ssh", "-o", f"ProxyCommand={proxy}", f"{name}@{node}")


def access_blocks(cfg: ClusterConfig, deployed: DeployedAccess, roles: Mapping[str, str]) -> list[Block]:
    node = deployed.login_nodes[0]
    blocks = [
        Block(
            f"cluster {cfg.name} ({cfg.region}): document {deployed.document}, policy {deployed.policy_arn}"
        ),
        Block(
            f"login nodes running: {', '.join(deployed.login_nodes)}; a replaced one has a new id, "
            "so the current ones are:",
            (login_node_lookup(cfg),),
        ),
    ]
    for user in cfg.users:
        role = roles.get(user.name)
        if role is None:
            blocks.append(
                Block(
                    f"{user.name}: no --role {user.name}=ROLE given; tag the IAM role {user.name} signs in "
                    f"with {names.RUN_AS_TAG}={user.name} and attach the policy to it"
                )
            )
        else:
            blocks.append(
                Block(
                    f"{user.name}: an IAM administrator tags the role {role} and attaches the policy, once:",
                    (
                        command_line(
                            "aws",
                            "iam",
                            "tag-role",
                            "--role-name",
                            role,
                            "--tags",
                            f"Key={names.RUN_AS_TAG},Value={user.name}",
                        ),
                        command_line(
                            "aws",
                            "iam",
                            "attach-role-policy",
                            "--role-name",
                            role,
                            "--policy-arn",
                            deployed.policy_arn,
                        ),
                    ),
                )
            )
        shell = _start_session(cfg, node, deployed.document)
        if user.ssh_keys:
            says = (
                f"{user.name} connects with a shell as {user.name}, or with ssh and a key listed under users:"
            )
            blocks.append(Block(says, (shell, _ssh(cfg, user.name, node))))
        else:
            says = f"{user.name} connects with a shell as {user.name} (no ssh_keys under users:, so no ssh):"
            blocks.append(Block(says, (shell,)))
    return blocks
