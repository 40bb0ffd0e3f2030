from tests.aws.stubs import aws, moto_aws

__all__ = ["aws", "moto_aws"]
