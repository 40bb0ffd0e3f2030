"""The secret scan finds key material and literal passwords, and stays quiet on look-alikes.

Every secret below is made at run time (fresh keys, concatenated example ids), so the
repository itself never holds one.
"""

from __future__ import annotations

import base64
import io
import json
import os
import secrets
import string
import tarfile
import zipfile

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519

from gpucluster.munge_key import MUNGE_KEY_LENGTH
from gpucluster.scan.files import Scan, scan_bytes, scan_path
from gpucluster.scan.rules import FindingKind
from gpucluster.scan.secrets import run_scan
from gpucluster.slurm_release import SOURCE_TARBALL

ACCESS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"
SESSION_KEY_ID = "ASIA" + "Q3EGUMAXXEXAMPLE"
SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
SHA256 = "5955c51e88df0c5ed538d87abb5264609d4bad55fa8570745ed5d4ec66c8ab91"


def pem_private_key(kind: str) -> str:
    if kind == "ec":
        key = ec.generate_private_key(ec.SECP256R1())
        form = serialization.PrivateFormat.TraditionalOpenSSL
    else:
        key = ed25519.Ed25519PrivateKey.generate()
        form = serialization.PrivateFormat.OpenSSH
    return key.private_bytes(serialization.Encoding.PEM, form, serialization.NoEncryption()).decode()


def letters_and_digits(count: int) -> str:
    """Random letters and digits, as Secrets Manager generates the munge key."""
    alphabet = string.ascii_letters + string.digits
    return "".join(secrets.choice(alphabet) for _ in range(count))


def kinds(findings) -> list[FindingKind]:
    return [f.kind for f in findings]


def template(resources: dict, parameters: dict | None = None) -> bytes:
    body = {"Resources": resources}
    if parameters:
        body["Parameters"] = parameters
    return json.dumps(body, indent=1).encode()


# --- positives ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["ec", "openssh"])
def test_pem_private_keys_are_found(kind):
    text = "#!/bin/bash\ncat > /root/.ssh/id <<'EOF'\n" + pem_private_key(kind) + "EOF\n"
    findings = scan_bytes("userdata.sh", text.encode()).findings
    assert kinds(findings) == [FindingKind.PRIVATE_KEY]
    assert findings[0].line == 3
    assert "PRIVATE KEY" in findings[0].detail


def test_aws_credentials_are_found_without_echoing_them():
    text = (
        "[default]\n"
        f"aws_access_key_id = {ACCESS_KEY_ID}\n"
        f"aws_secret_access_key = {SECRET_ACCESS_KEY}\n"
        f"export AWS_ACCESS_KEY_ID={SESSION_KEY_ID}\n"
    )
    findings = scan_bytes("credentials", text.encode()).findings
    assert sorted((f.line, f.kind) for f in findings) == [
        (2, FindingKind.AWS_ACCESS_KEY_ID),
        (3, FindingKind.AWS_SECRET_ACCESS_KEY),
        (4, FindingKind.AWS_ACCESS_KEY_ID),
    ]
    shown = " ".join(f.detail for f in findings)
    assert ACCESS_KEY_ID not in shown and SECRET_ACCESS_KEY not in shown


# The README's shared key (head -c 768 /dev/urandom | base64 -w0), and munge's own 1024 bytes.
@pytest.mark.parametrize("size", [768, 1024])
def test_base64_munge_key_is_found(size):
    blob = base64.b64encode(os.urandom(size)).decode()
    text = f"#!/bin/bash\necho '{blob}' | base64 -d > /etc/munge/munge.key\n"
    findings = scan_bytes("head.sh", text.encode()).findings
    assert kinds(findings) == [FindingKind.KEY_BLOB]
    assert f"base64 of {size} random-looking bytes" in findings[0].detail


def test_a_munge_key_as_secrets_manager_generates_it_is_found():
    key = letters_and_digits(MUNGE_KEY_LENGTH)
    text = json.dumps({"ARN": "arn:aws:secretsmanager:us-east-2:123456789012:secret:x", "SecretString": key})
    findings = scan_bytes("get-secret-value.json", text.encode()).findings
    assert kinds(findings) == [FindingKind.KEY_BLOB]
    assert "1024 random letters and digits" in findings[0].detail
    assert key not in findings[0].detail


@pytest.mark.parametrize(
    ("text", "host"),
    [
        ("enroot import 'docker://robot:Pa55w0rd-x9@nvcr.io#nvidia/pytorch:25.01-py3'\n", "nvcr.io"),
        ("IMAGE=docker://robot:Pa55w0rd-x9@registry.example.com/team/train:v1\n", "registry.example.com"),
        ('{"url": "https://robot:Pa55w0rd-x9@registry.example.com:5000/v2/"}\n', "registry.example.com"),
        # Enroot's credentials file, a netrc: one line, or one entry over several.
        ("machine nvcr.io login $oauthtoken password Pa55w0rd-x9\n", "nvcr.io"),
        ("machine registry.example.com\n  login robot\n  password Pa55w0rd-x9\n", "registry.example.com"),
    ],
)
def test_a_registry_password_in_a_reference_or_credentials_line_is_found(text, host):
    findings = scan_bytes("rendered.sh", f"#!/bin/bash\n{text}".encode()).findings
    assert kinds(findings) == [FindingKind.LOGIN_PASSWORD]
    assert findings[0].line == 2
    assert findings[0].detail.endswith(f"with a password for {host}")
    assert "Pa55w0rd-x9" not in findings[0].detail and "robot" not in findings[0].detail


def test_a_file_named_munge_key_is_found_whatever_it_holds():
    assert kinds(scan_bytes("etc/munge/munge.key", os.urandom(128)).findings) == [FindingKind.KEY_BLOB]


@pytest.mark.parametrize(
    "text",
    [
        "db:\n  password: hunter2hunter2\n",
        'PASSWORD="s3cr3t-value"\n',
        "StoragePass=slurmdbpass\n",
    ],
)
def test_literal_passwords_in_rendered_files_are_found(text):
    assert kinds(scan_bytes("rendered.conf", text.encode()).findings) == [FindingKind.LITERAL_PASSWORD]


def test_literal_passwords_in_cloudformation_are_found():
    resources = {
        "Database": {
            "Type": "AWS::RDS::DBInstance",
            "Properties": {"MasterUsername": "admin", "MasterUserPassword": "hunter2hunter2"},
        },
        "Joined": {
            "Type": "AWS::RDS::DBCluster",
            "Properties": {"MasterUserPassword": {"Fn::Join": ["", ["hunter", {"Ref": "Suffix"}]]}},
        },
        "Literal": {
            "Type": "AWS::SecretsManager::Secret",
            "Properties": {"SecretString": '{"password":"hunter2"}'},
        },
        "Directory": {
            "Type": "AWS::FSx::FileSystem",
            "Properties": {
                "WindowsConfiguration": {
                    "SelfManagedActiveDirectoryConfiguration": {"UserName": "a", "Password": "pw1"}
                }
            },
        },
    }
    parameters = {"DbPassword": {"Type": "String", "NoEcho": True, "Default": "changeme"}}
    findings = scan_bytes("demo-storage.template.json", template(resources, parameters)).findings
    details = sorted(f.detail.split(" ")[0] for f in findings)
    assert details == [
        "Parameters/DbPassword",
        "Resources/Database/MasterUserPassword",
        "Resources/Directory/WindowsConfiguration/SelfManagedActiveDirectoryConfiguration/Password",
        "Resources/Joined/MasterUserPassword",
        "Resources/Literal/SecretString",
    ]
    assert set(kinds(findings)) == {FindingKind.LITERAL_PASSWORD}
    text = template(resources, parameters).decode().splitlines()
    database = next(f for f in findings if "Database" in f.detail)
    assert "MasterUserPassword" in text[database.line - 1]


def test_archives_are_opened(tmp_path):
    bundle = io.BytesIO()
    with tarfile.open(fileobj=bundle, mode="w:gz") as tar:
        data = pem_private_key("ec").encode()
        info = tarfile.TarInfo("bin/bootstrap.sh")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    (tmp_path / "asset.abc").mkdir()
    (tmp_path / "asset.abc" / "bundle.tar.gz").write_bytes(bundle.getvalue())
    packed = io.BytesIO()
    with zipfile.ZipFile(packed, "w") as archive:
        archive.writestr("index.py", f"KEY = '{ACCESS_KEY_ID}'\n")
    (tmp_path / "asset.def.zip").write_bytes(packed.getvalue())
    findings = scan_path(tmp_path).findings
    assert sorted((f.file.removeprefix(tmp_path.as_posix() + "/"), f.kind) for f in findings) == [
        ("asset.abc/bundle.tar.gz!bin/bootstrap.sh", FindingKind.PRIVATE_KEY),
        ("asset.def.zip!index.py", FindingKind.AWS_ACCESS_KEY_ID),
    ]


# --- negatives ---------------------------------------------------------------------------


def test_references_and_generated_secrets_are_not_findings():
    resources = {
        "MungeKeySecret": {
            "Type": "AWS::SecretsManager::Secret",
            "Properties": {
                "Name": "gpucluster/demo/munge-key",
                "GenerateSecretString": {
                    "PasswordLength": 1024,
                    "GenerateStringKey": "password",
                    "SecretStringTemplate": '{"user":"munge"}',
                },
            },
        },
        "Database": {
            "Type": "AWS::RDS::DBInstance",
            "Properties": {
                "MasterUserPassword": "{{resolve:secretsmanager:MySecret:SecretString:password}}",
                "Other": {"Fn::Sub": "{{resolve:secretsmanager:${Secret}:SecretString:password}}"},
            },
        },
        "Joined": {
            "Type": "AWS::RDS::DBInstance",
            "Properties": {
                # What the CDK writes for a generated secret: the reference joined around its Ref.
                "MasterUserPassword": {
                    "Fn::Join": [
                        "",
                        ["{{resolve:secretsmanager:", {"Ref": "Secret"}, ":SecretString:password}}"],
                    ]
                },
            },
        },
        "Cluster": {
            "Type": "AWS::RDS::DBCluster",
            "Properties": {
                "MasterUserPassword": {"Ref": "DbPassword"},
                "ManageMasterUserPassword": True,
            },
        },
        "Policy": {
            "Type": "AWS::Cognito::UserPool",
            "Properties": {"Policies": {"PasswordPolicy": {"MinimumLength": 12}}},
        },
    }
    parameters = {"DbPassword": {"Type": "String", "NoEcho": True}}
    assert scan_bytes("demo-storage.template.json", template(resources, parameters)).findings == []


def test_rendered_look_alikes_are_not_findings():
    low_entropy = base64.b64encode(b"#!/bin/bash\necho hello\n" * 80).decode()
    text = "\n".join(
        [
            # long and random, but not a key's alphabet or not a key's length
            f"CHECKSUMS={os.urandom(1024).hex()}",
            f"SHORT_KEY={letters_and_digits(MUNGE_KEY_LENGTH - 1)}",
            f"SHORT_BLOB={base64.b64encode(os.urandom(767)).decode()}",
            # image references and URLs without a password
            f"IMAGE=nvcr.io/nvidia/pytorch@sha256:{SHA256}",
            "IMAGE=docker://robot@nvcr.io#nvidia/pytorch:25.01-py3",
            "REGISTRY=https://registry.example.com:5000/v2/",
            'git clone "https://${GIT_USER}:${GIT_TOKEN}@github.com/org/repo"',
            "# proxy url, masked: https://***:***@proxy.example.com",
            # the import job's own line, and the README's placeholder
            '    printf \'machine %s login AWS password %s\\n\' "${registry}" "${token}"',
            "machine nvcr.io login $oauthtoken password <your NGC API key>",
            "#!/bin/bash",
            "set -euo pipefail",
            f"BUNDLE_SHA256={SHA256}",
            f"ASSET=s3://cdk-hnb659fds-assets-123456789012-us-east-2/{SHA256}.tar.gz",
            'read -rsp "password: " answer',
            "password: ${DB_PASSWORD}",
            "password=$(aws secretsmanager get-secret-value --secret-id x --query SecretString)",
            "AccountingStoragePass=/var/run/munge/munge.socket.2",
            "INSTANCE_ID=AKIAWORD",  # too short to be an access key id
            "REQUEST=XAKIAIOSFODNN7EXAMPLEX",  # embedded in a longer token
            f"BLOB={low_entropy}",
            "secret_access_key: ${AWS_SECRET_ACCESS_KEY}",
        ]
    )
    assert scan_bytes("bootstrap.sh", text.encode()).findings == []


def test_template_password_keys_are_left_to_the_structural_scan():
    # The text rule would flag `"Password": {` shapes; templates get the structural one only.
    resources = {"R": {"Type": "AWS::X::Y", "Properties": {"Password": {"Ref": "P"}}}}
    assert scan_bytes("a.template.json", template(resources)).findings == []
    assert kinds(scan_bytes("notes.txt", b"Password = letmein\n").findings) == [FindingKind.LITERAL_PASSWORD]


def test_an_archive_that_cannot_be_opened_is_unchecked_not_a_secret_and_still_read_as_text():
    scan = scan_bytes("broken.tar.gz", f"not gzip {ACCESS_KEY_ID}".encode())
    assert kinds(scan.findings) == [FindingKind.AWS_ACCESS_KEY_ID]
    [broken] = scan.unchecked
    assert broken.file == "broken.tar.gz"
    assert broken.problem.startswith("could not be opened as an archive (")
    assert "rebuild the archive" in broken.fix


def test_a_truncated_archive_fails_the_scan_with_its_own_fix_not_as_a_secret(tmp_path, capsys):
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as archive:
        member = tarfile.TarInfo("bin/bootstrap.sh")
        body = b"#!/bin/bash\necho ok\n" * 4000
        member.size = len(body)
        archive.addfile(member, io.BytesIO(body))
    cut = tmp_path / "bundle.tar.gz"
    cut.write_bytes(packed.getvalue()[: len(packed.getvalue()) // 2])
    assert run_scan([tmp_path]) == 1
    out = capsys.readouterr().out
    assert f"{cut.as_posix()}: could not be opened as an archive (" in out
    assert "so its members were not checked" in out and "rebuild the archive" in out
    assert "secrets found" not in out and "rotate" not in out
    assert "1 path(s) could not be checked" in out
    assert scan_path(tmp_path).findings == []


def test_run_scan_exit_codes(tmp_path, capsys):
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "a.sh").write_text("#!/bin/bash\necho ok\n")
    assert run_scan([clean]) == 0
    (clean / "b.conf").write_text("password: hunter2hunter2\n")
    assert run_scan([clean]) == 1
    out = capsys.readouterr().out
    assert "b.conf" in out and "hunter2hunter2" not in out
    assert run_scan([tmp_path / "missing"]) == 2


# --- the real output ---------------------------------------------------------------------


def test_synthesized_examples_and_their_bundles_hold_no_secrets(synthesized):
    for name, result in synthesized.items():
        bundles = list(result.outdir.glob("asset.*.tar.gz"))
        assert bundles, f"{name}: the bootstrap bundle is not in cdk.out, so the scan would miss it"
        assert scan_path(result.outdir) == Scan(), name


def test_the_pinned_slurm_source_is_known_by_its_sha256_and_not_opened():
    """The Cluster stack ships the vendored Slurm source as is; its own contribs hold
    literal example passwords that are no cluster's secret. A changed byte is scanned."""
    source = SOURCE_TARBALL.read_bytes()
    assert scan_bytes("asset.slurm.tar.gz", source) == Scan()
    tampered = scan_bytes("asset.slurm.tar.gz", source + b"\n" + ACCESS_KEY_ID.encode() + b"\n")
    assert tampered != Scan()
