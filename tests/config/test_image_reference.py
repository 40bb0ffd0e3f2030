"""Image and registry references: a login written into one exits 2 naming the field, without
showing the login, and says where logins go; the references people write load as before."""

from __future__ import annotations

import copy

import pytest
import yaml
from typer.testing import CliRunner

from gpucluster.cli import app
from gpucluster.config.loader import load_config
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
runner = CliRunner()
ECR = "123456789012.dkr.ecr.us-east-2.amazonaws.com"
DIGEST = "sha256:" + "5955c51e88df0c5ed538d87abb5264609d4bad55fa8570745ed5d4ec66c8ab91"

# Each field that names an image or a registry: its path in the error, and the config with it set.
IMAGE_FIELDS = {
    "software.training_image": lambda ref: {"software": {"training_image": ref}},
    "validation.container_image": lambda ref: {"validation": {"container_image": ref}},
}
ECR_FIELD = {"software.ecr_repositories.0": lambda ref: {"software": {"ecr_repositories": [ref]}}}

# (reference, the login in it, the reference without it)
IMAGE_LOGINS = [
    (
        "docker://robot:Pa55w0rd-x9@registry.example.com/team/train:v1",
        ("robot", "Pa55w0rd-x9"),
        "docker://registry.example.com/team/train:v1",
    ),
    (
        "https://deploy:tok3nQwErTy@registry.example.com:5000/team/train:v1",
        ("deploy", "tok3nQwErTy"),
        "https://registry.example.com:5000/team/train:v1",
    ),
    (
        "robot:Pa55w0rd-x9@nvcr.io#nvidia/pytorch:25.01-py3",
        ("robot", "Pa55w0rd-x9"),
        "nvcr.io#nvidia/pytorch:25.01-py3",
    ),
    # A user alone, and a token standing in its place: neither belongs in the config.
    ("alice@nvcr.io#nvidia/pytorch:25.01-py3", ("alice",), "nvcr.io#nvidia/pytorch:25.01-py3"),
    (
        f"ghpT0kenAbCdEf@registry.example.com/team/train@{DIGEST}",
        ("ghpT0kenAbCdEf",),
        f"registry.example.com/team/train@{DIGEST}",
    ),
    # A password holding `@` itself is masked whole.
    (
        "robot:p@ss-w0rd@registry.example.com/train:v1",
        ("robot", "p@ss-w0rd"),
        "registry.example.com/train:v1",
    ),
]
ECR_LOGINS = [
    (f"AWS:eyJwYXlsb2FkIjoi@{ECR}/train", ("AWS", "eyJwYXlsb2FkIjoi"), f"{ECR}/train"),
    (f"docker://AWS:eyJwYXlsb2FkIjoi@{ECR}/team/*", ("eyJwYXlsb2FkIjoi",), f"docker://{ECR}/team/*"),
]
IMAGES = [
    f"{ECR}#train:v1",
    f"{ECR}/train:v1",
    "nvcr.io/nvidia/pytorch:25.01-py3",
    "nvcr.io#nvidia/pytorch:25.01-py3",
    f"nvcr.io/nvidia/pytorch@{DIGEST}",
    f"nvcr.io#nvidia/pytorch:25.01-py3@{DIGEST}",
    "registry.example.com:5000/team/train:v1",
    "ubuntu:24.04",
]
ECR_REPOSITORIES = [f"{ECR}/train", f"{ECR}/team/*", "arn:aws:ecr:us-east-2:123456789012:repository/*"]


def written(tmp_path, section: dict):
    data = copy.deepcopy(DEFAULT)
    data.update(section)
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def validate(tmp_path, section: dict):
    return runner.invoke(app, ["validate", str(written(tmp_path, section))])


def _cases(fields: dict, references: list) -> list:
    return [
        pytest.param(field, make, *case, id=f"{field}-{index}")
        for field, make in fields.items()
        for index, case in enumerate(references)
    ]


@pytest.mark.parametrize(
    ("field", "make", "reference", "login", "bare"),
    _cases(IMAGE_FIELDS, IMAGE_LOGINS) + _cases(ECR_FIELD, ECR_LOGINS),
)
def test_a_login_in_a_reference_exits_2_naming_the_field_and_where_logins_go(
    tmp_path, field, make, reference, login, bare
):
    result = validate(tmp_path, make(reference))
    assert result.exit_code == 2, result.output
    [line] = [line for line in result.output.splitlines() if line.startswith("error ")]
    assert f"cluster.yaml: {field}: '" in line
    assert "holds a registry login" in line
    assert f"write '{bare}'" in line
    assert "instance role" in line and "~/.config/enroot/.credentials" in line
    assert "$ENROOT_CONFIG_PATH/.credentials" in line
    for part in login:
        assert part not in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize("field", IMAGE_FIELDS)
def test_a_password_and_a_user_alone_are_told_apart(tmp_path, field):
    with_password = validate(tmp_path, IMAGE_FIELDS[field]("robot:Pa55w0rd@nvcr.io#nvidia/pytorch:25.01-py3"))
    assert "'***@nvcr.io#nvidia/pytorch:25.01-py3' holds a registry login with its password" in (
        with_password.output
    )
    user = validate(tmp_path, IMAGE_FIELDS[field]("robot@nvcr.io#nvidia/pytorch:25.01-py3"))
    assert "'***@nvcr.io#nvidia/pytorch:25.01-py3' holds a registry login (user@)" in user.output


@pytest.mark.parametrize("field", IMAGE_FIELDS)
def test_a_login_is_refused_before_the_shape_check_that_would_show_it(tmp_path, field):
    # `!` is no image character: the shape check's message would quote the whole value.
    result = validate(tmp_path, IMAGE_FIELDS[field]("robot:Pa55!w0rd@nvcr.io#nvidia/pytorch:25.01-py3"))
    assert result.exit_code == 2
    assert "holds a registry login" in result.output and "Pa55!w0rd" not in result.output


@pytest.mark.parametrize(("field", "reference"), [(f, r) for f in IMAGE_FIELDS for r in IMAGES])
def test_the_references_people_write_still_load(tmp_path, field, reference):
    cfg = load_config(written(tmp_path, IMAGE_FIELDS[field](reference)))
    section, key = field.split(".")
    assert getattr(getattr(cfg, section), key) == reference


@pytest.mark.parametrize("repository", ECR_REPOSITORIES)
def test_ecr_repositories_still_load(tmp_path, repository):
    cfg = load_config(written(tmp_path, ECR_FIELD["software.ecr_repositories.0"](repository)))
    assert cfg.software.ecr_repositories == [repository]
