"""ECR repositories the nodes may pull from (`software.ecr_repositories`): what one entry may
say, and the registry host an image reference names, which the import job also checks."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated

from pydantic import AfterValidator

from gpucluster.config.fields import fail
from gpucluster.config.image_reference import NO_LOGIN

# The repository part: ECR's name characters, with IAM's `*` wildcard anywhere.
_NAME = r"[a-z0-9*][a-z0-9._/*-]{0,255}"
_ARN = re.compile(rf"^arn:(aws|aws-cn|aws-us-gov):ecr:([a-z0-9-]+):(\d{{12}}):repository/({_NAME})$")
# What `docker push` and Enroot name: ACCOUNT.dkr.ecr[-fips].REGION.amazonaws.com[.cn], then
# `/` (Docker) or `#` (Enroot) and the repository, without a tag.
# POSIX ERE as well as Python: the import job matches registry hosts with it in bash.
_HOST = r"([0-9]{12})\.dkr\.ecr(-fips)?\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?"
_URI = re.compile(rf"^{_HOST}[/#]({_NAME})$")
ECR_HOST = re.compile(rf"^{_HOST}$")
EXAMPLES = (
    "123456789012.dkr.ecr.us-east-2.amazonaws.com/train, "
    "123456789012.dkr.ecr.us-east-2.amazonaws.com/team/*, "
    "or arn:aws:ecr:us-east-2:123456789012:repository/*"
)


def partition_of(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


@dataclass(frozen=True)
class EcrRepository:
    """Repositories of one registry (account and region) whose name matches `name` (`*` wildcards)."""

    account: str
    region: str
    name: str

    @property
    def arn(self) -> str:
        return f"arn:{partition_of(self.region)}:ecr:{self.region}:{self.account}:repository/{self.name}"


def parse_repository(value: str) -> EcrRepository:
    """One `software.ecr_repositories` entry: a repository ARN or a repository URI."""
    arn = _ARN.match(value)
    if arn:
        partition, region, account, name = arn.groups()
        if partition != partition_of(region):
            raise fail(
                "ecr_repository",
                f"'{value}' names region {region}, which is in partition "
                f"{partition_of(region)}, not {partition}",
            )
        return EcrRepository(account=account, region=region, name=name)
    uri = _URI.match(value)
    if uri:
        account, _, region, china, name = uri.groups()
        if bool(china) != (partition_of(region) == "aws-cn"):
            raise fail("ecr_repository", f"'{value}': region {region} is not served at that domain")
        return EcrRepository(account=account, region=region, name=name)
    tagged = re.search(r"[/#][^:]*:[^/]*$", value)
    hint = " (a repository, not an image: leave the tag out)" if tagged else ""
    raise fail("ecr_repository", f"'{value}' is not an ECR repository{hint}; write e.g. {EXAMPLES}")


def _checked(value: str) -> str:
    parse_repository(value)
    return value


EcrRepositoryRef = Annotated[str, NO_LOGIN, AfterValidator(_checked)]
