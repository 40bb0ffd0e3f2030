"""Storage (stateful): FSx for Lustre, EFS for /home and Slurm state, the munge key, the REST
API's JWT key when it is on, and Slurm accounting's database when the cluster creates one.

Every resource here is retained on delete and on replacement, and the stack has
termination protection: a cluster can be torn down and rebuilt around it.
"""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from gpucluster.constructs_lib.accounting_database import AccountingDatabase, AccountingDatabaseProps
from gpucluster.constructs_lib.cfn import string_parameter
from gpucluster.constructs_lib.fsx_lustre import FsxLustre, FsxLustreProps
from gpucluster.constructs_lib.jwt_key import JwtKey, JwtKeyProps
from gpucluster.constructs_lib.munge_key import MungeKey, MungeKeyProps
from gpucluster.constructs_lib.shared_home import SharedHome, SharedHomeProps
from gpucluster.resolved import ResolvedCluster


class StorageStack(cdk.Stack):
    def __init__(
        self,
        scope: Construct,
        id: str,
        *,
        resolved: ResolvedCluster,
        subnet_id: str,
        storage_security_group_id: str,
        database_subnet_ids: tuple[str, ...] = (),
        database_security_group_id: str | None = None,
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
        fsx = resolved.fsx_lustre
        if fsx is not None:
            self.fsx = FsxLustre(
                self,
                "Lustre",
                FsxLustreProps(
                    storage_gib=fsx.storage_gib,
                    deployment_type=fsx.deployment_type,
                    throughput_per_tib=fsx.throughput_per_tib,
                    compression=fsx.compression,
                    efa=fsx.efa,
                    metadata_iops=fsx.metadata_iops,
                    subnet_id=subnet_id,
                    security_group_id=storage_security_group_id,
                ),
            )
            self.fsx.file_system.override_logical_id("LustreFileSystem")
            facts["fsx_dns_name"] = self.fsx.file_system.att("DNSName")
            facts["fsx_mount_name"] = self.fsx.file_system.att("LustreMountName")
            facts["fsx_id"] = self.fsx.file_system.ref_token
        shared_key = resolved.accounting.munge_key_secret_arn if resolved.accounting is not None else None
        self.munge_key: MungeKey | None = None
        if shared_key is not None:
            # Clusters that share one slurmdbd share the munge key it checks; the nodes read the
            # given secret through the same parameter, so nothing else on them changes.
            facts["munge_secret_arn"] = shared_key
        else:
            self.munge_key = MungeKey(
                self,
                "MungeKey",
                MungeKeyProps(
                    secret_name_prefix=resolved.names.munge_secret_name_prefix,
                    reader_role_name_prefix=resolved.names.role_name_prefix,
                ),
            )
            self.munge_key.secret.override_logical_id("MungeKeySecret")
            # Ref of a secret is its ARN; nodes read it here instead of guessing the name.
            facts["munge_secret_arn"] = self.munge_key.secret.ref_token
        if resolved.rest_api is not None:
            self.jwt_key = JwtKey(
                self,
                "RestApiJwtKey",
                JwtKeyProps(
                    secret_name_prefix=resolved.rest_api.jwt_secret_name_prefix,
                    reader_role_name=resolved.rest_api.reader_role_name,
                ),
            )
            # Pinned like the munge key's: a new logical ID would make a new key.
            self.jwt_key.secret.override_logical_id("RestApiJwtKeySecret")
            facts["rest_api_jwt_secret_arn"] = self.jwt_key.secret.ref_token
        database = resolved.accounting.database if resolved.accounting is not None else None
        if database is not None and database_security_group_id is not None:
            self.database = AccountingDatabase(
                self,
                "AccountingDatabase",
                AccountingDatabaseProps(
                    identifier_prefix=database.identifier_prefix,
                    secret_name_prefix=database.secret_name_prefix,
                    user=database.user,
                    database_name=database.database_name,
                    port=database.port,
                    engine=database.engine,
                    engine_version=database.engine_version,
                    parameter_family=database.parameter_family,
                    instance_class=database.instance_class,
                    storage_gib=database.storage_gib,
                    backup_retention_days=database.backup_retention_days,
                    availability_zone=database.availability_zone,
                    subnet_ids=database_subnet_ids,
                    security_group_id=database_security_group_id,
                ),
            )
            # Pinned like the file systems: a new logical ID would replace the database.
            for part, logical in (
                (self.database.instance, "AccountingDatabase"),
                (self.database.secret, "AccountingDatabaseSecret"),
                (self.database.subnet_group, "AccountingDatabaseSubnets"),
                (self.database.parameter_group, "AccountingDatabaseParameters"),
            ):
                part.override_logical_id(logical)
            facts["accounting_db_host"] = self.database.instance.att("Endpoint.Address")
            facts["accounting_db_port"] = self.database.instance.att("Endpoint.Port")
            facts["accounting_db_secret_arn"] = self.database.secret.ref_token
        for fact, value in facts.items():
            string_parameter(
                self,
                f"Fact-{fact}",
                name=resolved.names.storage_parameters[fact],
                value=value,
                description=f"gpucluster {resolved.name}: {fact} for node bootstrap",
            )
