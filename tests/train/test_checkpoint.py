"""The checkpoint protocol: temporary file, fsync, rename, manifest, read-back, then prune."""

from __future__ import annotations

import json
import os

import pytest

from tests.train.conftest import needs_torch

pytestmark = needs_torch

torch = pytest.importorskip("torch", reason="torch is not installed (the `train` extra)")

from gpucluster.train import checkpoint  # noqa: E402


def _state(step: int) -> dict:
    return {"step": step, "model": {"w": torch.full((4, 4), float(step))}, "rng": torch.get_rng_state()}


def _save(directory, step: int) -> checkpoint.Manifest:
    return checkpoint.save(
        directory, _state(step), step=step, total_steps=100, world_size=1, weights_sha256="0" * 64
    )


def test_a_saved_checkpoint_has_a_manifest_with_its_sha256_and_replaces_the_older_one(tmp_path):
    _save(tmp_path, 10)
    manifest = _save(tmp_path, 20)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["step-00000020.json", "step-00000020.pt"]
    on_disk = json.loads((tmp_path / "step-00000020.json").read_text())
    assert (
        on_disk["sha256"] == manifest.sha256
        and on_disk["step"] == 20
        and on_disk["file"] == "step-00000020.pt"
    )
    assert checkpoint.newest_verified(tmp_path) == manifest
    assert checkpoint.load(tmp_path, manifest)["step"] == 20


def _crash_renaming_onto(monkeypatch, name: str) -> None:
    """os.replace fails for `name` only, as a crash or a full disk at that rename would."""
    real_replace = os.replace

    def replace(src, dst):
        if str(dst).endswith(name):
            raise OSError(28, f"No space left on device (simulated, renaming onto {name})")
        real_replace(src, dst)

    monkeypatch.setattr(checkpoint.os, "replace", replace)


def test_a_crash_between_write_and_rename_leaves_the_previous_checkpoint_usable(tmp_path, monkeypatch):
    previous = _save(tmp_path, 10)
    _crash_renaming_onto(monkeypatch, "step-00000020.pt")
    with pytest.raises(OSError, match="simulated"):
        _save(tmp_path, 20)
    monkeypatch.undo()
    assert checkpoint.newest_verified(tmp_path) == previous
    assert checkpoint.load(tmp_path, previous)["step"] == 10
    assert not (tmp_path / "step-00000020.pt").exists() and not (tmp_path / "step-00000020.json").exists()


def test_a_killed_writer_leaves_a_temporary_file_that_resume_ignores_and_the_next_save_removes(tmp_path):
    previous = _save(tmp_path, 10)
    # What a SIGKILL during write leaves: half a file under the temporary name, no manifest.
    (tmp_path / ".tmp-4242-step-00000020.pt").write_bytes(b"PK\x03\x04 half a zip")
    assert checkpoint.newest_verified(tmp_path) == previous
    _save(tmp_path, 30)
    assert not any(path.name.startswith(".tmp-") for path in tmp_path.iterdir())


def test_a_crash_after_the_file_but_before_its_manifest_keeps_the_previous_one(tmp_path, monkeypatch):
    previous = _save(tmp_path, 10)
    _crash_renaming_onto(monkeypatch, "step-00000020.json")
    with pytest.raises(OSError, match="simulated"):
        _save(tmp_path, 20)
    monkeypatch.undo()
    # The new .pt exists but nothing vouches for it; resume takes the verified older one.
    assert (tmp_path / "step-00000020.pt").exists()
    assert checkpoint.newest_verified(tmp_path) == previous


@pytest.mark.parametrize(
    "damage", ["flip_byte", "truncate", "delete_file", "bad_manifest_json", "manifest_fields"]
)
def test_a_corrupt_newest_checkpoint_is_skipped_for_the_newest_good_one(tmp_path, capsys, damage):
    older = _save(tmp_path / "older", 10)
    # Two checkpoints side by side, as after a crash between save and prune.
    for name in ("step-00000010.pt", "step-00000010.json"):
        (tmp_path / name).write_bytes((tmp_path / "older" / name).read_bytes())
    _save(tmp_path / "newer", 20)
    for name in ("step-00000020.pt", "step-00000020.json"):
        (tmp_path / name).write_bytes((tmp_path / "newer" / name).read_bytes())
    newest_pt, newest_json = tmp_path / "step-00000020.pt", tmp_path / "step-00000020.json"
    if damage == "flip_byte":
        data = bytearray(newest_pt.read_bytes())
        data[len(data) // 2] ^= 0xFF
        newest_pt.write_bytes(bytes(data))
    elif damage == "truncate":
        newest_pt.write_bytes(newest_pt.read_bytes()[:100])
    elif damage == "delete_file":
        newest_pt.unlink()
    elif damage == "bad_manifest_json":
        newest_json.write_text('{"step": 20, ')
    else:
        newest_json.write_text(json.dumps({"step": 20}))
    assert checkpoint.newest_verified(tmp_path) == older
    assert "skipping checkpoint" in capsys.readouterr().err


def test_a_failed_read_back_raises_and_deletes_nothing(tmp_path, monkeypatch):
    previous = _save(tmp_path, 10)
    monkeypatch.setattr(checkpoint, "verify", lambda directory, manifest: "sha256 differs (simulated)")
    with pytest.raises(checkpoint.CheckpointError, match="read-back"):
        _save(tmp_path, 20)
    monkeypatch.undo()
    # The older checkpoint survives untouched (the new one is fine on disk: only the check was faked).
    assert (tmp_path / "step-00000010.json").exists()
    assert checkpoint.verify(tmp_path, previous) is None


def test_no_checkpoint_directory_means_a_fresh_start(tmp_path):
    assert checkpoint.newest_verified(tmp_path / "absent") is None
