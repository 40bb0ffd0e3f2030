from tests.aws.stubs import aws

__all__ = ["aws"]
