"""What the user does about an AWS login or config problem, by botocore's exception.

botocore raises these before any request leaves the machine (a profile not in the
config file, a config file it cannot parse, a failing `credential_process`, an SSO
session that expired or never started, no credentials at all), so the fix is always
on the workstation: which profile, which file, which command.
"""

from __future__ import annotations

import os
from pathlib import Path

from botocore import exceptions as boto
from botocore.exceptions import BotoCoreError

from gpucluster.command_lines import command_line

LOGIN_ERRORS = (
    boto.ConfigNotFound,
    boto.ConfigParseError,
    boto.CredentialRetrievalError,
    boto.InvalidConfigError,
    boto.InvalidRegionError,
    boto.NoCredentialsError,
    boto.NoRegionError,
    boto.PartialCredentialsError,
    boto.ProfileNotFound,
    boto.RefreshWithMFAUnsupportedError,
    boto.SSOError,
    boto.TokenRetrievalError,
)


def profile() -> str:
    """The profile botocore reads, as the AWS CLI documents the order of its variables."""
    return os.environ.get("AWS_PROFILE") or os.environ.get("AWS_DEFAULT_PROFILE") or "default"


def config_file() -> str:
    return os.environ.get("AWS_CONFIG_FILE") or str(Path("~/.aws/config"))


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _known_profiles() -> str:
    """`; profiles there: a, b` for the fix, or nothing when the file cannot be read."""
    try:
        import botocore.session

        names = sorted(botocore.session.Session(profile=None).full_config.get("profiles", {}))
    except (BotoCoreError, OSError):
        return ""
    return f" (profiles there: {', '.join(names)})" if names else " (it defines no profile)"


def sso_login() -> str:
    """The command that renews the profile's SSO session."""
    return command_line("aws", "sso", "login", "--profile", profile())


def _sso_login_fix() -> str:
    return f"run `{sso_login()}`, then re-run"


def login_problem(exc: BotoCoreError) -> tuple[str, str]:
    """(what went wrong, how to fix it) for one of LOGIN_ERRORS."""
    kwargs = getattr(exc, "kwargs", {})
    if isinstance(exc, boto.ProfileNotFound):
        name = kwargs.get("profile", profile())
        return (
            f"profile {name} is not in {config_file()}{_known_profiles()}",
            f"add it (`{command_line('aws', 'configure', '--profile', name)}` or "
            f"`{command_line('aws', 'configure', 'sso', '--profile', name)}`), "
            "or set AWS_PROFILE to a profile that exists",
        )
    if isinstance(exc, boto.ConfigParseError):
        detail = _one_line(kwargs.get("error", "")).split(" file: ", 1)[-1]
        return (
            f"the AWS config file {kwargs.get('path', config_file())} cannot be parsed ({detail})",
            "fix that line (each section starts with [default], [profile NAME] or [sso-session NAME])",
        )
    if isinstance(exc, boto.ConfigNotFound):
        return (
            f"the AWS config file {kwargs.get('path', config_file())} does not exist",
            "point AWS_CONFIG_FILE at your config, or unset it to use ~/.aws/config",
        )
    if isinstance(exc, boto.SSOError | boto.TokenRetrievalError) or (
        isinstance(exc, boto.CredentialRetrievalError) and kwargs.get("provider") == "sso"
    ):
        return f"the SSO session of profile {profile()} has expired or was never started", _sso_login_fix()
    if isinstance(exc, boto.CredentialRetrievalError):
        provider = kwargs.get("provider", "?")
        said = _one_line(kwargs.get("error_msg", "")) or "no message"
        fix = (
            "run the profile's credential_process by hand to see why it fails, then re-run"
            if provider == "custom-process"
            else f"check the {provider} settings of profile {profile()} in {config_file()}"
        )
        return f"profile {profile()}'s credentials could not be retrieved from {provider} ({said})", fix
    if isinstance(exc, boto.PartialCredentialsError):
        missing = kwargs.get("cred_var", "?")
        return (
            f"the credentials in {kwargs.get('provider', '?')} are incomplete: {missing} is missing",
            f"set {missing} as well, or remove the others and use a profile",
        )
    if isinstance(exc, boto.InvalidConfigError):
        return (
            f"profile {profile()} in {config_file()} is not usable: {_one_line(exc)}",
            "fix the profile (`aws configure list` shows what the AWS CLI reads)",
        )
    if isinstance(exc, boto.RefreshWithMFAUnsupportedError):
        return (
            f"profile {profile()} needs an MFA code to refresh its credentials",
            "get temporary credentials first (`aws sts get-session-token --serial-number ... "
            "--token-code ...`) and export them, then re-run",
        )
    if isinstance(exc, boto.InvalidRegionError):
        return (
            f"'{kwargs.get('region_name', '')}' is not a region name",
            "use a region like us-east-2 (`aws ec2 describe-regions`)",
        )
    if isinstance(exc, boto.NoRegionError):
        return "no region was given", "set the config's region, or pass --region"
    return (
        f"no AWS credentials found for profile {profile()}",
        "run `aws configure` (or `aws sso login --profile NAME`), or set AWS_PROFILE to a profile "
        "with credentials, then re-run",
    )
