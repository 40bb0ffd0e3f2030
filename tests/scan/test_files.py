"""Which files the secret scan reads: linked directories are followed, and what cannot be read
fails the scan with its own fix, never as a secret and never as a Python error.

The tests run as root, which reads a file of mode 000 all the same. A file no one can open
is made two ways: a symbolic link that loops (ELOOP) or points nowhere (ENOENT), and, for
"Permission denied" itself, a forked child that drops to user nobody before it scans.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster.cli import app
from gpucluster.scan.files import scan_path
from gpucluster.scan.rules import FindingKind

NOBODY = 65534
ACCESS_KEY_ID = "AKIA" + "IOSFODNN7EXAMPLE"


def scan_cli(*paths: Path):
    return CliRunner().invoke(app, ["scan", *map(str, paths)])


def test_a_key_in_a_symlinked_directory_is_found(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "credentials").write_text(f"aws_access_key_id = {ACCESS_KEY_ID}\n")
    scanned = tmp_path / "cdk.out"
    scanned.mkdir()
    (scanned / "assets").symlink_to(outside, target_is_directory=True)
    scan = scan_path(scanned)
    assert [(f.file, f.kind) for f in scan.findings] == [
        ((scanned / "assets" / "credentials").as_posix(), FindingKind.AWS_ACCESS_KEY_ID)
    ]
    result = scan_cli(scanned)
    assert result.exit_code == 1, result.output
    assert "secrets found" in result.output and "no key material" not in result.output


def test_directory_link_loops_end_and_a_directory_linked_twice_is_read_once(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "db.conf").write_text("password: hunter2hunter2\n")
    (tmp_path / "a" / "up").symlink_to("..", target_is_directory=True)
    (tmp_path / "b").symlink_to("a", target_is_directory=True)
    scan = scan_path(tmp_path)
    assert [f.file for f in scan.findings] == [(tmp_path / "a" / "db.conf").as_posix()]
    assert scan.unchecked == []


@pytest.mark.parametrize(
    ("target", "error"),
    [("loop", "Too many levels of symbolic links"), ("nowhere", "No such file or directory")],
)
def test_a_link_that_cannot_be_followed_fails_the_scan_with_its_fix(tmp_path, target, error):
    (tmp_path / "ok.sh").write_text("#!/bin/bash\necho ok\n")
    (tmp_path / "loop").symlink_to("loop")
    link = tmp_path / "key.pem" if target == "nowhere" else tmp_path / "loop"
    if target == "nowhere":
        link.symlink_to(tmp_path / "nowhere")
    result = scan_cli(tmp_path)
    assert result.exit_code == 1, result.output
    assert "internal error" not in result.output and "secrets found" not in result.output
    line = f"{link.as_posix()}: could not be opened: a symbolic link to "
    assert line in result.output and f"({error}), so it was not checked" in result.output
    assert "point the link at a file that exists, or remove it" in result.output
    assert "could not be checked: the scan cannot call this output clean" in result.output


def test_sockets_and_fifos_hold_nothing_to_read_and_do_not_block(tmp_path):
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "a.sh").write_text("#!/bin/bash\necho ok\n")
    result = scan_cli(tmp_path)
    assert result.exit_code == 0, result.output
    assert "no key material or passwords" in result.output


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A directory user nobody may enter (pytest's tmp_path is root's alone)."""
    path = Path(tempfile.mkdtemp(prefix="gpucluster-scan-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def _scan_as_nobody(path: Path) -> dict:
    """`gpucluster scan PATH` with root's rights dropped, in a forked child: (exit code, output)."""
    # Every module the scan and its messages use is loaded now: nobody cannot read root's
    # Python installation to import one after the drop.
    primer = path.parent / f"{path.name}-primer"
    primer.mkdir()
    (primer / "loop").symlink_to("loop")
    (primer / "db.conf").write_text("password: hunter2hunter2\n")
    assert scan_cli(primer).exit_code == 1
    shutil.rmtree(primer)
    if os.geteuid() != 0:
        result = scan_cli(path)
        return {"code": result.exit_code, "output": result.output}
    reader, writer = os.pipe()
    child = os.fork()
    if child == 0:
        try:
            os.close(reader)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            result = scan_cli(path)
            os.write(writer, json.dumps({"code": result.exit_code, "output": result.output}).encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        payload = pipe.read()
    os.waitpid(child, 0)
    return json.loads(payload)


def test_a_file_and_a_directory_without_read_permission_fail_the_scan_with_their_fix(shared_dir):
    scanned = shared_dir / "rendered"
    scanned.mkdir()
    (scanned / "ok.sh").write_text("#!/bin/bash\necho ok\n")
    secret = scanned / "head.key"
    secret.write_text("not for nobody\n")
    secret.chmod(0o000)
    closed = scanned / "closed"
    closed.mkdir()
    (closed / "db.conf").write_text("password: hunter2hunter2\n")
    closed.chmod(0o000)
    result = _scan_as_nobody(scanned)
    assert result["code"] == 1, result["output"]
    output = result["output"]
    assert "internal error" not in output and "PermissionError" not in output
    assert f"{secret.as_posix()}: could not be read (Permission denied); make it readable" in output
    assert f"{closed.as_posix()}: could not be listed (Permission denied), so nothing in it" in output
    assert "2 path(s) could not be checked" in output and "secrets found" not in output
