"""Storage (stateful): FSx for Lustre, EFS for /home and Slurm state, the munge key.

Every resource here is retained on delete and on replacement, and the stack has
termination protection: a cluster can be torn down and rebuilt around it.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from gpucluster import names
from gpucluster.config import ClusterConfig
from gpucluster.infra.constructs.cfn import string_parameter
from gpucluster.infra.constructs.fsx_lustre import FsxLustre, FsxLustreProps
from gpucluster.infra.constructs.munge_key import MungeKey, MungeKeyProps
from gpucluster.infra.constructs.shared_home import SharedHome, SharedHomeProps


class StorageStack(cdk.Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        cfg: ClusterConfig,
        subnet_id: str,
        storage_security_group_id: str,
        **kwargs: Any,  # cdk.StackProps keywords (env, description, ...)
    ) -> None:
        super().__init__(scope, id, termination_protection=True, **kwargs)
        self.home = SharedHome(
            self,
            "SharedHome",
            SharedHomeProps(subnet_id=subnet_id, security_group_id=storage_security_group_id),
        )
        # Pinned so a refactor of construct paths can never replace the data.
        self.home.file_system.override_logical_id("HomeFileSystem")
        facts = {"efs_id": self.home.file_system.ref_token}
        if cfg.storage.fsx_lustre is not None:
            self.fsx = FsxLustre(
                self,
                "Lustre",
                FsxLustreProps(
                    settings=cfg.storage.fsx_lustre,
                    subnet_id=subnet_id,
                    security_group_id=storage_security_group_id,
                ),
            )
            self.fsx.file_system.override_logical_id("LustreFileSystem")
            facts["fsx_dns_name"] = self.fsx.file_system.att("DNSName")
            facts["fsx_mount_name"] = self.fsx.file_system.att("LustreMountName")
        self.munge_key = MungeKey(
            self,
            "MungeKey",
            MungeKeyProps(
                secret_name_prefix=names.munge_secret_name_prefix(cfg),
                reader_role_name_prefix=names.role_name_prefix(cfg),
            ),
        )
        self.munge_key.secret.override_logical_id("MungeKeySecret")
        # Ref of a secret is its ARN; nodes read it here instead of guessing the name.
        facts["munge_secret_arn"] = self.munge_key.secret.ref_token
        for fact, value in facts.items():
            string_parameter(
                self,
                f"Fact-{fact}",
                name=names.storage_parameter(cfg, fact),
                value=value,
                description=f"gpucluster {cfg.name}: {fact} for node bootstrap",
            )
