"""The training image's Dockerfile: rendered for every example by `gpucluster container render`,
clean under hadolint with no rule ignored, the EFA installer verified against its pinned sha256
before it runs, and no variable that forces legacy NCCL/EFA behaviour."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster.cli import app
from gpucluster.config.loader import load_config
from gpucluster.container.dockerfile import FORBIDDEN_VARIABLES, render_dockerfile
from gpucluster.jobs.validation import CONTAINER_NCCL_TESTS_DIR
from gpucluster.launch.gpu_env import LIBRARY_DIRS
from tests.conftest import EXAMPLES
from tests.shell_pipe import HOSTILE_NAMES, pipe_to_sh

HADOLINT = Path(sys.executable).parent / "hadolint"


@pytest.fixture(params=EXAMPLES, ids=lambda path: path.stem)
def example(request) -> Path:
    return request.param


def render_cli(*args: str):
    return CliRunner().invoke(app, ["container", "render", *args])


def instructions(dockerfile: str) -> list[str]:
    """Each Dockerfile instruction on one line: continuations joined, comments dropped."""
    joined = re.sub(r"\\\n", " ", dockerfile)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.startswith("#")]


def test_every_example_renders_and_passes_hadolint(example: Path, tmp_path: Path) -> None:
    result = render_cli("--config", str(example), "-o", str(tmp_path / "image"))
    assert result.exit_code == 0, result.output
    dockerfile = tmp_path / "image" / "Dockerfile"
    assert dockerfile.is_file()
    assert "hadolint ignore" not in dockerfile.read_text()
    lint = subprocess.run(
        [str(HADOLINT), "--no-color", "--failure-threshold", "style", str(dockerfile)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_hadolint_sees_a_bad_dockerfile(tmp_path: Path) -> None:
    # The lint above can fail: an unpinned base image is a finding.
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM ubuntu\nRUN cd /tmp && echo hi\n")
    lint = subprocess.run(
        [str(HADOLINT), "--no-color", str(bad)], capture_output=True, text=True, check=False
    )
    assert lint.returncode != 0 and "DL3006" in lint.stdout and "DL3003" in lint.stdout


def pinned_download(cfg, arg: str, version: str, sha256: str, marker: str) -> tuple[list[str], int, int]:
    """The one RUN holding `marker` as its && commands, after checking the version and checksum
    ARGs (ARG_VERSION, ARG_SHA256) hold the config's pins; with where it checks the download's
    sha256 and where it unpacks it."""
    steps = instructions(render_dockerfile(cfg))
    assert f"ARG {arg}_VERSION={version}" in steps
    assert f"ARG {arg}_SHA256={sha256}" in steps
    [step] = [step for step in steps if marker in step]
    commands = [command.strip() for command in step.removeprefix("RUN ").split("&&")]
    check = next(i for i, c in enumerate(commands) if "sha256sum -c" in c)
    unpack = next(i for i, c in enumerate(commands) if c.startswith("tar "))
    return commands, check, unpack


def test_the_installer_is_checksum_verified_before_it_runs(example: Path) -> None:
    software = load_config(example).software
    commands, check, unpack = pinned_download(
        load_config(example),
        "EFA_INSTALLER",
        software.efa_installer_version,
        software.efa_installer_sha256,
        "efa_installer.sh",
    )
    run = next(i for i, c in enumerate(commands) if c.startswith("./efa_installer.sh"))
    assert '"${EFA_INSTALLER_SHA256}  aws-efa-installer-${EFA_INSTALLER_VERSION}.tar.gz"' in commands[check]
    assert check < unpack < run
    # User-space only, as AWS documents for containers.
    assert commands[run] == "./efa_installer.sh --yes --skip-kmod --skip-limit-conf --no-verify"


def test_no_forced_legacy_variables_and_the_plugin_is_on_the_library_path(example: Path) -> None:
    text = render_dockerfile(load_config(example))
    for variable in FORBIDDEN_VARIABLES:
        assert variable not in text, variable
    [env] = [step for step in instructions(text) if step.startswith("ENV ")]
    assert f'LD_LIBRARY_PATH="{":".join(LIBRARY_DIRS)}:${{LD_LIBRARY_PATH}}"' in env
    # The plugin by its container name, over any default the base image sets (spcx).
    assert env.endswith("NCCL_NET_PLUGIN=ofi")
    [check] = [step for step in instructions(text) if "find /opt/amazon/ofi-nccl" in step]
    assert "-name 'libnccl-net-ofi.so'" in check and "exit 1" in check
    assert "/opt/amazon/ofi-nccl/lib" in LIBRARY_DIRS and "/opt/amazon/efa/lib" in LIBRARY_DIRS


def test_base_image_tag_and_digest_come_from_the_config(tmp_path: Path) -> None:
    digest = "ab" * 32
    config = tmp_path / "pinned.yaml"
    config.write_text(
        EXAMPLES[0].read_text() + f"software:\n  ngc_pytorch_tag: 25.01-py3\n  ngc_pytorch_digest: {digest}\n"
    )
    steps = instructions(render_dockerfile(load_config(config)))
    assert steps[0] == f"FROM nvcr.io/nvidia/pytorch:25.01-py3@sha256:{digest}"
    # The user's code is the last layer: a code change rebuilds nothing below it.
    assert steps[-3:-1] == ["WORKDIR /workspace/train", "COPY . /workspace/train"]


@pytest.mark.parametrize(
    ("version", "checksum"),
    [
        ("efa_installer_version: 1.51.0", "efa_installer_sha256"),
        ("nccl_tests_version: 2.20.0", "nccl_tests_sha256"),
    ],
)
def test_a_new_download_version_needs_its_own_checksum(tmp_path: Path, version: str, checksum: str) -> None:
    config = tmp_path / "bumped.yaml"
    config.write_text(EXAMPLES[0].read_text() + f"software:\n  {version}\n")
    result = render_cli("--config", str(config), "-o", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert f"software.{checksum}" in result.output
    assert "set it to the sha256 published for the new version" in result.output


def test_a_moving_base_tag_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "latest.yaml"
    config.write_text(EXAMPLES[0].read_text() + "software:\n  ngc_pytorch_tag: latest\n")
    result = render_cli("--config", str(config), "-o", str(tmp_path / "out"))
    assert result.exit_code == 2
    assert "'latest' is not an NGC PyTorch release tag" in result.output


def test_usage_errors_exit_2_with_one_line(tmp_path: Path) -> None:
    missing = render_cli("-o", str(tmp_path / "out"))
    assert missing.exit_code == 2
    assert (
        missing.output.startswith("error gpucluster container render: --config: is required;")
        and "--config" in missing.output
    )
    absent = render_cli("--config", str(tmp_path / "nope.yaml"), "-o", str(tmp_path / "out"))
    assert absent.exit_code == 2 and "Traceback" not in absent.output
    assert str(tmp_path / "nope.yaml") in absent.output
    helped = CliRunner().invoke(app, ["container", "render", "-h"])
    assert helped.exit_code == 0
    assert "--config CONFIG" in helped.output and "-o, --output DIR" in helped.output


def test_nccl_tests_are_built_from_a_verified_tarball_where_the_gate_looks(example: Path) -> None:
    software = load_config(example).software
    commands, check, unpack = pinned_download(
        load_config(example), "NCCL_TESTS", software.nccl_tests_version, software.nccl_tests_sha256, "MPI=1"
    )
    download = next(i for i, c in enumerate(commands) if c.startswith("curl "))
    make = next(i for i, c in enumerate(commands) if c.startswith("make "))
    assert (
        '"https://github.com/NVIDIA/nccl-tests/archive/refs/tags/v${NCCL_TESTS_VERSION}.tar.gz"'
        in commands[download]
    )
    assert '"${NCCL_TESTS_SHA256}  nccl-tests-${NCCL_TESTS_VERSION}.tar.gz"' in commands[check]
    assert download < check < unpack < make
    # The validation jobs run nccl-tests in a container from this directory.
    assert f"BUILDDIR={CONTAINER_NCCL_TESTS_DIR}" in commands[make]
    assert "MPI_HOME=/opt/hpcx/ompi" in commands[make]
    assert commands[make + 1] == f"test -x {CONTAINER_NCCL_TESTS_DIR}/all_reduce_perf"
    assert CONTAINER_NCCL_TESTS_DIR == "/opt/nccl-tests/build"


def test_the_build_hint_pastes_whole_from_the_code_directory(tmp_path: Path, monkeypatch) -> None:
    # A relative -o with a space, in a path long enough that an 80-column console would wrap it.
    work = tmp_path / ("a-long-directory-name-" * 3) / "work"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    result = render_cli("--config", str(EXAMPLES[0]), "-o", "my image")
    assert result.exit_code == 0, result.output
    [hint] = [line for line in result.output.splitlines() if "docker build" in line]
    dockerfile = work / "my image" / "Dockerfile"
    assert len(hint) > 80
    # Pasted after `cd` into the code's directory: absolute, quoted, on one line.
    assert shlex.split(hint) == ["docker", "build", "-f", str(dockerfile), "-t", "train:v1", "."]
    assert f"wrote {dockerfile}" in result.output.splitlines()
    assert dockerfile.is_file()


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_the_build_hint_piped_to_sh_hands_docker_the_directory_whole(tmp_path: Path, name: str) -> None:
    output = tmp_path / name
    result = render_cli("--config", str(EXAMPLES[0]), "-o", str(output))
    assert result.exit_code == 0, result.output
    hint = result.stdout.split("(the build context):\n")[1]
    shell = pipe_to_sh(hint, ["docker"], tmp_path)
    assert (shell.returncode, shell.strays) == (0, [])
    dockerfile = str(output.resolve() / "Dockerfile")
    assert [call.argv for call in shell.calls] == [["build", "-f", dockerfile, "-t", "train:v1", "."]]


def test_the_dockerfile_header_builds_with_f() -> None:
    header = [line for line in render_dockerfile(load_config(EXAMPLES[0])).splitlines() if "build" in line]
    [command] = [line for line in header if "docker build" in line]
    assert "docker build -f /path/to/Dockerfile -t train:v1 ." in command
