"""`--role NAME=ROLE`: which IAM role each person of `users:` signs in to AWS with."""

from __future__ import annotations

import re
from collections.abc import Iterable

from gpucluster.bad_input import BadInput
from gpucluster.config import ClusterConfig

# IAM's rule for a role's name (CreateRole, RoleName); `aws iam tag-role` takes the name, not the ARN.
_ROLE_NAME = re.compile(r"[\w+=,.@-]{1,64}", re.ASCII)


def person_roles(cfg: ClusterConfig, values: Iterable[str]) -> dict[str, str]:
    """Person's login name -> IAM role name, from the option's values; bad input names the value."""
    people = [user.name for user in cfg.users]
    roles: dict[str, str] = {}
    for value in values:
        name, equals, role = value.partition("=")
        if not equals or not name or not role:
            raise BadInput.option(
                "--role", f"{value!r} is not NAME=ROLE", "pass a person and a role, e.g. alice=AliceRole"
            )
        if name not in people:
            raise BadInput.option(
                "--role", f"{name!r} is not under users:", f"pass one of: {', '.join(people)}"
            )
        if name in roles:
            raise BadInput.option("--role", f"{name} is given twice", "pass one role per person")
        if not _ROLE_NAME.fullmatch(role):
            raise BadInput.option(
                "--role",
                f"{role!r} is not an IAM role name",
                "pass the role's name (1-64 of letters, digits and +=,.@_-), not its ARN",
            )
        roles[name] = role
    return roles
