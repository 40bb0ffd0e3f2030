"""A reused output directory holds this run's files and the user's, nothing an earlier run
left: synth of another cluster, render without a group, container render, all into the
directory of an earlier run (gpucluster.output_files)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gpucluster import names
from gpucluster.bad_input import BadInput
from gpucluster.cli import app
from gpucluster.output_files import manifest_name, replacing
from gpucluster.slurm_release import PINNED_SHA256
from tests.conftest import REPO

DEFAULT = REPO / "examples" / "default.yaml"


def run(*args: str):
    return CliRunner().invoke(app, list(map(str, args)))


def _renamed(tmp_path: Path, old: str, new: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(DEFAULT.read_text().replace(old, new, 1))
    return path


def _files(root: Path) -> set[str]:
    return {path.relative_to(root).as_posix() for path in root.rglob("*") if path.is_file()}


def test_synth_of_another_cluster_leaves_none_of_the_first(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out = tmp_path / "cdk.out"
    assert run("synth", DEFAULT, "-o", out).exit_code == 0
    (out / "notes.txt").write_text("mine\n")
    assert {f"demo-{stack}.template.json" for stack in ("network", "storage", "cluster")} <= _files(out)

    result = run("synth", _renamed(tmp_path, "name: demo", "name: demo2"), "-o", out)
    assert result.exit_code == 0, result.output
    files = _files(out)
    assert not [name for name in files if name.startswith("demo-")], files
    assert {f"demo2-{stack}.template.json" for stack in ("network", "storage", "cluster")} <= files
    # demo2's bundle, and the Slurm source both clusters ship.
    slurm_source = names.slurm_source_object_key(PINNED_SHA256).split(".")[0]
    assets = [name for name in files if name.startswith("asset.")]
    assert len(assets) == 2 and sum(slurm_source in name for name in assets) == 1, files
    assert (out / "notes.txt").read_text() == "mine\n"
    assert not [p for p in out.iterdir() if p.is_dir()], "no staging directory is left behind"
    # What reads the directory next sees one cluster: the cloud assembly's own manifest agrees.
    manifest = json.loads((out / "manifest.json").read_text())
    named = {a.get("properties", {}).get("templateFile") for a in manifest["artifacts"].values()}
    assert named - {None} == {name for name in files if name.endswith(".template.json")}


def test_render_without_a_group_removes_its_files_and_keeps_the_users(tmp_path: Path) -> None:
    out = tmp_path / "rendered"
    assert run("render", DEFAULT, "-o", out).exit_code == 0
    assert (out / "user-data" / "compute-gpu.sh").is_file()
    assert (out / "bundle" / "files" / "compute-gpu").is_dir()
    (out / "user-data" / "notes.txt").write_text("mine\n")
    edited = out / "bundle" / "files" / "compute-gpu" / "usr" / "local" / "sbin" / "gpucluster-healthcheck"
    edited.write_text(edited.read_text() + "# my change\n")

    result = run("render", _renamed(tmp_path, "- name: gpu", "- name: h100"), "-o", out)
    assert result.exit_code == 0, result.output
    files = _files(out)
    assert "user-data/compute-h100.sh" in files
    assert "user-data/compute-gpu.sh" not in files
    # The one stale file the user changed is kept, and named; nothing else of group gpu is left.
    gpu = sorted(name for name in files if "compute-gpu" in name or "/jobs/gpu/" in name)
    assert gpu == [edited.relative_to(out).as_posix()]
    assert f"warning {edited}: kept: an earlier `gpucluster render` wrote it" in result.stderr
    assert (out / "user-data" / "notes.txt").read_text() == "mine\n"
    assert not [p for p in out.rglob("*") if p.is_dir() and not any(p.iterdir())], "empty directories"
    listed = json.loads((out / manifest_name("render")).read_text())["files"]
    assert set(listed) == files - {manifest_name("render"), "user-data/notes.txt", gpu[0]}


def test_container_render_replaces_its_dockerfile_and_nothing_else(tmp_path: Path) -> None:
    out = tmp_path / "image"
    out.mkdir()
    (out / "Dockerfile").write_text("FROM scratch\n")  # a user's, from before gpucluster wrote here
    (out / "train.py").write_text("print('mine')\n")
    result = run("container", "render", "--config", DEFAULT, "-o", out)
    assert result.exit_code == 0, result.output
    assert (out / "Dockerfile").read_text().count("FROM nvcr.io/nvidia/pytorch:") == 1
    assert (out / "train.py").read_text() == "print('mine')\n"
    assert _files(out) == {"Dockerfile", "train.py", manifest_name("container render")}


def test_a_failed_run_leaves_the_directory_as_it_was(tmp_path: Path) -> None:
    root = tmp_path / "out"
    with replacing(root, "render", "--output") as output:
        (output.staging / "a.txt").write_text("first\n")
    before = {path: path.read_bytes() for path in root.rglob("*")}
    with pytest.raises(RuntimeError), replacing(root, "render", "--output") as output:
        (output.staging / "b.txt").write_text("second\n")
        raise RuntimeError("failed halfway")
    assert {path: path.read_bytes() for path in root.rglob("*")} == before


def test_a_list_naming_files_outside_the_directory_removes_none_of_them(tmp_path: Path) -> None:
    root, outside = tmp_path / "out", tmp_path / "precious.txt"
    outside.write_text("keep\n")
    root.mkdir()
    (root / "link.txt").symlink_to(outside)
    digest = hashlib.sha256(b"keep\n").hexdigest()
    files = {"../precious.txt": digest, str(outside): digest, "link.txt": digest}
    (root / manifest_name("synth")).write_text(json.dumps({"files": files}))
    with replacing(root, "synth", "--output") as output:
        (output.staging / "new.txt").write_text("new\n")
    assert outside.read_text() == "keep\n" and (root / "link.txt").is_symlink()
    assert _files(root) == {"new.txt", "link.txt", manifest_name("synth")}


def test_a_directory_that_cannot_hold_the_files_is_bad_input(tmp_path: Path) -> None:
    root = tmp_path / "out"
    root.mkdir()
    (root / "sub").write_text("a file where the run writes a directory\n")
    with pytest.raises(BadInput) as caught, replacing(root, "render", "--output") as output:
        (output.staging / "sub").mkdir()
        (output.staging / "sub" / "x.txt").write_text("x\n")
    assert f"--output: {root / 'sub'} cannot be written (File exists)" in str(caught.value)
    assert (root / "sub").read_text().startswith("a file")


def test_a_nag_refusal_still_writes_the_templates_and_names_the_report_in_place(
    tmp_path: Path, example_configs, monkeypatch
) -> None:
    from gpucluster.constructs_lib import head_node
    from gpucluster.synth.app import synthesize
    from gpucluster.synth.nag import NagFindings

    monkeypatch.setattr(head_node, "acknowledge", lambda *args, **kwargs: None)
    out = tmp_path / "cdk.out"
    with pytest.raises(NagFindings, match=f"see {out / 'validation-report.json'}$"):
        synthesize(example_configs["default"], out, nag=True)
    assert (out / "validation-report.json").is_file()
    assert (out / "demo-cluster.template.json").is_file()
    assert "validation-report.json" in json.loads((out / manifest_name("synth")).read_text())["files"]
