"""Acknowledging a cdk-nag finding on one construct, with the reason next to it."""

from __future__ import annotations

import aws_cdk as cdk
from constructs import IConstruct


def acknowledge(scope: IConstruct, rule: str, reason: str, findings: tuple[str, ...] = ()) -> None:
    """Accept one AwsSolutions rule on `scope` and its children.

    cdk-nag 3 matches acknowledgements exactly: a rule that reports findings
    (IAM4's policy, IAM5's resource or action) must be acknowledged per
    finding, so a new wildcard is never waved through by an old reason.
    """
    ids = [f"AwsSolutions-{rule}[{finding}]" for finding in findings] or [f"AwsSolutions-{rule}"]
    cdk.Validations.of(scope).acknowledge(*(cdk.Acknowledgment(id=i, reason=reason) for i in ids))
