"""Small CloudFormation models moto 5.2.5 lacks, so the gpucluster stacks deploy under moto.

moto's CloudFormation skips resource types it does not model; the Storage stack's
file system and munge secret are the ones the teardown sequence is about, so these
shims create them in moto's own FSx and Secrets Manager backends. They model what the
lifecycle tests check (names, collisions, Ref and GetAtt, delete), nothing more:
no ENIs, no capacity rules, no resource policy evaluation.
"""

from __future__ import annotations

import json
from typing import Any

from moto.cloudformation import parsing
from moto.core.common_models import CloudFormationModel
from moto.ec2.models import ec2_backends
from moto.ec2.models.instances import Instance
from moto.fsx.models import fsx_backends
from moto.secretsmanager.models import secretsmanager_backends
from moto.ssm.models import Parameter


class FsxFileSystemShim(CloudFormationModel):
    def __init__(self, file_system: Any) -> None:
        self.file_system = file_system

    @staticmethod
    def cloudformation_name_type() -> str:
        return ""

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::FSx::FileSystem"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr in ("DNSName", "LustreMountName")

    @property
    def physical_resource_id(self) -> str:
        return self.file_system.file_system_id

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        if attribute_name == "DNSName":
            return self.file_system.dns_name
        if attribute_name == "LustreMountName":
            return self.file_system.file_system_id[3:11]
        raise KeyError(attribute_name)

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> FsxFileSystemShim:
        props = cloudformation_json["Properties"]
        backend = fsx_backends[account_id][region_name]
        file_system = backend.create_file_system(
            client_request_token="",
            file_system_type=props["FileSystemType"],
            storage_capacity=props.get("StorageCapacity", 1200),
            storage_type=props.get("StorageType", "SSD"),
            subnet_ids=props["SubnetIds"],
            security_group_ids=props.get("SecurityGroupIds", []),
            tags=props.get("Tags"),
            kms_key_id=None,
            windows_configuration=None,
            lustre_configuration=props.get("LustreConfiguration"),
            ontap_configuration=None,
            file_system_type_version=props.get("FileSystemTypeVersion"),
            open_zfs_configuration=None,
        )
        return cls(file_system)

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
    ) -> None:
        fsx_backends[account_id][region_name].file_systems.pop(resource_name, None)

    def is_created(self) -> bool:
        return True


class SecretShim(CloudFormationModel):
    """Create fails on a name that exists, as Secrets Manager does (ResourceExistsException)."""

    def __init__(self, arn: str) -> None:
        self.arn = arn

    @staticmethod
    def cloudformation_name_type() -> str:
        return "Name"

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::SecretsManager::Secret"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return attr == "Id"

    @property
    def physical_resource_id(self) -> str:
        return self.arn

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> SecretShim:
        props = cloudformation_json["Properties"]
        backend = secretsmanager_backends[account_id][region_name]
        generate = props["GenerateSecretString"]
        value = backend.get_random_password(
            password_length=int(generate["PasswordLength"]),
            exclude_characters="",
            exclude_numbers=False,
            exclude_punctuation=bool(generate.get("ExcludePunctuation")),
            exclude_uppercase=False,
            exclude_lowercase=False,
            include_space=bool(generate.get("IncludeSpace")),
            require_each_included_type=False,
        )
        created = backend.create_secret(
            name=props.get("Name", resource_name),
            secret_string=value,
            secret_binary=None,
            description=props.get("Description"),
            tags=props.get("Tags"),
            kms_key_id=None,
            client_request_token=None,
            replica_regions=[],
            force_overwrite=False,
        )

        return cls(json.loads(created)["ARN"])

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
    ) -> None:
        secretsmanager_backends[account_id][region_name].delete_secret(resource_name, None, True)

    def is_created(self) -> bool:
        return True


class SecretResourcePolicyShim(CloudFormationModel):
    """Records the policy on the secret; moto does not evaluate resource policies."""

    def __init__(self, secret_id: str) -> None:
        self.secret_id = secret_id

    @staticmethod
    def cloudformation_name_type() -> str:
        return ""

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::SecretsManager::ResourcePolicy"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return False

    @property
    def physical_resource_id(self) -> str:
        return self.secret_id

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> SecretResourcePolicyShim:
        props = cloudformation_json["Properties"]
        policy = props["ResourcePolicy"]
        backend = secretsmanager_backends[account_id][region_name]

        backend.put_resource_policy(
            props["SecretId"], policy if isinstance(policy, str) else json.dumps(policy)
        )
        return cls(props["SecretId"])

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
    ) -> None:
        return None

    def is_created(self) -> bool:
        return True


class SsmParameterShim(CloudFormationModel):
    """moto's own model, except Tags: CloudFormation gives them as a map, moto wants a list."""

    @staticmethod
    def cloudformation_name_type() -> str:
        return Parameter.cloudformation_name_type()

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::SSM::Parameter"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return Parameter.has_cfn_attr(attr)

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> Any:
        return Parameter.create_from_cloudformation_json(
            resource_name, _listed_tags(cloudformation_json), account_id, region_name
        )

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[override]
        cls,
        original_resource: Any,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> Any:
        return Parameter.update_from_cloudformation_json(
            original_resource, new_resource_name, _listed_tags(cloudformation_json), account_id, region_name
        )

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
    ) -> None:
        Parameter.delete_from_cloudformation_json(resource_name, cloudformation_json, account_id, region_name)

    def is_created(self) -> bool:
        return True


def _listed_tags(cloudformation_json: dict[str, Any]) -> dict[str, Any]:
    props = dict(cloudformation_json["Properties"])
    tags = props.get("Tags")
    if isinstance(tags, dict):
        props["Tags"] = [{"Key": key, "Value": value} for key, value in tags.items()]
    return {**cloudformation_json, "Properties": props}


class InstanceFromLaunchTemplateShim(CloudFormationModel):
    """moto's instance model needs ImageId in the resource; the head node takes it from its
    launch template, as CloudFormation does."""

    @staticmethod
    def cloudformation_name_type() -> str:
        return ""

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::EC2::Instance"

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return Instance.has_cfn_attr(attr)

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> Any:
        props = dict(cloudformation_json["Properties"])
        reference = props.get("LaunchTemplate")
        if reference is not None and "ImageId" not in props:
            template = ec2_backends[account_id][region_name].get_launch_template(
                reference["LaunchTemplateId"]
            )
            data = template.get_version(int(reference["Version"])).data
            props.setdefault("ImageId", data["ImageId"])
            props.setdefault("InstanceType", data.get("InstanceType"))
        return Instance.create_from_cloudformation_json(
            resource_name, {**cloudformation_json, "Properties": props}, account_id, region_name, **kwargs
        )

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[override]
        cls,
        original_resource: Any,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> Any:
        return Instance.update_from_cloudformation_json(
            original_resource, new_resource_name, cloudformation_json, account_id, region_name
        )

    @classmethod
    def delete_from_cloudformation_json(  # type: ignore[override]
        cls, resource_name: str, cloudformation_json: dict[str, Any], account_id: str, region_name: str
    ) -> None:
        Instance.delete_from_cloudformation_json(resource_name, cloudformation_json, account_id, region_name)

    def is_created(self) -> bool:
        return True


def publish_public_parameter(account_id: str, region: str, name: str, value: str) -> None:
    """An AWS-owned parameter (/aws/service/...) that put_parameter refuses to write."""
    import datetime

    from moto.ssm.models import ssm_backends

    parameter = Parameter(
        account_id=account_id,
        name=name,
        value=value,
        parameter_type="String",
        description=None,
        allowed_pattern=None,
        keyid=None,
        last_modified_date=datetime.datetime.now(datetime.UTC),
        version=1,
        data_type="text",
    )
    ssm_backends[account_id][region]._parameters[name].append(parameter)


# moto caches its model map on first use; the shims must be in it.
parsing.get_model_list.cache_clear()
parsing.get_model_map.cache_clear()
parsing.get_name_type_map.cache_clear()
