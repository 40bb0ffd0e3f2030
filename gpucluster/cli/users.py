"""`gpucluster users access`: each person's commands for their own way into the login nodes."""

from __future__ import annotations

from typing import Annotated

import typer

from gpucluster.bad_input import BadInput
from gpucluster.cli.root import ConfigArg, load_checked, out, verb_group
from gpucluster.cli.runner import VerbCommand
from gpucluster.command_lines import print_commands

users_app = verb_group("users", "The people of users: and their way into the cluster.")


@users_app.command("access", cls=VerbCommand)
def access(
    config: ConfigArg,
    role: Annotated[
        list[str] | None,
        typer.Option(
            "--role",
            metavar="NAME=ROLE",
            help="The IAM role a person of users: signs in with; repeat per person.",
        ),
    ] = None,
) -> None:
    """Print each person's commands (calls AWS): the IAM role's tag and policy, then a shell
    as their own account (Session Manager Run As) and ssh through Session Manager."""
    from gpucluster.access.commands import access_blocks
    from gpucluster.access.deployed import deployed_access
    from gpucluster.access.roles import person_roles
    from gpucluster.aws.clients import Clients

    cfg = load_checked(config)
    if cfg.orchestrator != "ec2":
        raise BadInput(
            config,
            "orchestrator",
            f"is {cfg.orchestrator}: its login nodes are pods, which Session Manager does not reach",
            "reach them through kubectl (README: On EKS with Slinky)",
        )
    if not cfg.users:
        raise BadInput(
            config, "users", "lists nobody, so there is no way in to hand out", "add the people and deploy"
        )
    if cfg.login_nodes.count == 0:
        raise BadInput(
            config,
            "login_nodes.count",
            "is 0: there is no login node to let anyone into",
            "set it to 1 and deploy",
        )
    roles = person_roles(cfg, role or [])
    for block in access_blocks(cfg, deployed_access(Clients(), cfg), roles):
        out.print(block.says, soft_wrap=True, markup=False, highlight=False)
        print_commands(out, ["    " + line for line in block.commands])
