"""The round-trip config editor: only the fields set change; invalid results and failed
writes leave the file as it was."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gpucluster.bad_input import BadInput
from gpucluster.config.edit import Edit, UtcTime, apply_edits, edit_config, write_atomically
from tests.aws.config_text import COMMENTED_CONFIG

BLOCK = "compute_groups", 0, "capacity"
START = datetime(2027, 6, 7, 11, 30, tzinfo=UTC)
END = datetime(2027, 6, 14, 11, 30, tzinfo=UTC)


def _block_edits(reservation: str = "cr-0123456789abcdef0") -> list[Edit]:
    return [
        Edit((*BLOCK, "type"), "capacity-block"),
        Edit((*BLOCK, "reservation_id"), reservation),
        Edit((*BLOCK, "start"), UtcTime.of(START)),
        Edit((*BLOCK, "end"), UtcTime.of(END)),
    ]


def _changed_lines(before: str, after: str) -> tuple[set[str], set[str]]:
    old, new = before.splitlines(), after.splitlines()
    return set(old) - set(new), set(new) - set(old)


def test_setting_a_block_changes_only_the_capacity_lines(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(COMMENTED_CONFIG)
    cfg = edit_config(path, _block_edits())
    after = path.read_text()
    removed, added = _changed_lines(COMMENTED_CONFIG, after)
    assert removed == {"    capacity: {type: on-demand}   # bought in the console for now"}
    assert added == {
        "    capacity:                     # bought in the console for now",
        "      type: capacity-block",
        "      reservation_id: cr-0123456789abcdef0",
        "      start: 2027-06-07T11:30:00Z",
        "      end: 2027-06-14T11:30:00Z",
    }
    # Order of the user's top-level keys, quotes and comments all survive.
    kept = [line for line in after.splitlines() if line in COMMENTED_CONFIG.splitlines()]
    assert kept == [line for line in COMMENTED_CONFIG.splitlines() if line not in removed]
    group = cfg.compute_groups[0]
    assert group.capacity.type == "capacity-block"
    assert group.capacity.end == END  # type: ignore[union-attr]


def test_a_new_field_with_a_comment_is_added_in_place(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(COMMENTED_CONFIG)
    edit_config(path, [Edit(("image", "ami_id"), "ami-0123456789abcdef0", comment="DLAMI 2026-11-20")])
    after = path.read_text()
    removed, added = _changed_lines(COMMENTED_CONFIG, after)
    assert removed == set()
    assert added == {"  ami_id: ami-0123456789abcdef0  # DLAMI 2026-11-20"}
    lines = after.splitlines()
    ssm = next(line for line in lines if line.startswith("  ssm_parameter:"))
    assert lines.index("  ami_id: ami-0123456789abcdef0  # DLAMI 2026-11-20") == lines.index(ssm) + 1


def test_an_invalid_result_leaves_the_file_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(COMMENTED_CONFIG)
    with pytest.raises(BadInput) as caught:
        edit_config(path, _block_edits(reservation="not-a-reservation"))
    assert "compute_groups.0.capacity.reservation_id" in str(caught.value)
    assert path.read_text() == COMMENTED_CONFIG
    assert [p.name for p in tmp_path.iterdir()] == ["cluster.yaml"]


def test_a_path_through_a_scalar_is_refused(tmp_path: Path) -> None:
    with pytest.raises(BadInput, match="name: is not a mapping"):
        apply_edits(COMMENTED_CONFIG, [Edit(("name", "x"), 1)], tmp_path / "c.yaml")
    with pytest.raises(BadInput, match="has no entry 5"):
        apply_edits(COMMENTED_CONFIG, [Edit(("compute_groups", 5, "count"), 1)], tmp_path / "c.yaml")


def test_a_failed_write_keeps_the_old_file_and_no_temp_file(tmp_path: Path, monkeypatch) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text("old\n")
    os.chmod(path, 0o600)

    def fail(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError):
        write_atomically(path, "new\n")
    assert path.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["cluster.yaml"]


def test_the_write_keeps_the_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text("old\n")
    os.chmod(path, 0o640)
    write_atomically(path, "new\n")
    assert path.read_text() == "new\n"
    assert path.stat().st_mode & 0o777 == 0o640


def test_flat_sequences_keep_their_indentation(tmp_path: Path) -> None:
    flat = COMMENTED_CONFIG.replace("\n  - name", "\n- name").replace("\n    ", "\n  ")
    out = apply_edits(flat, [Edit(("compute_groups", 1, "count"), 3)], tmp_path / "c.yaml")
    removed, added = _changed_lines(flat, out)
    assert (removed, added) == ({"  count: 1"}, {"  count: 3"})


SPELLINGS = """\
name: demo   # ruamel.yaml writes each of these lines its own way
network: {vpc_id: null,  cidr: 10.80.0.0/16}
image:
  ssm_parameter: ~
  ami_id: Null
  kernel:
login_nodes: {count: +1}
storage:
  fsx_lustre:
    efa: False
    storage_gib:  4800
    throughput_per_tib: NULL
tags: [a,  b]
availability_zone: us-east-2a
"""


def test_lines_the_edit_did_not_make_keep_their_spelling(tmp_path: Path) -> None:
    out = apply_edits(SPELLINGS, [Edit(("availability_zone",), "us-east-2b")], tmp_path / "c.yaml")
    assert _changed_lines(SPELLINGS, out) == (
        {"availability_zone: us-east-2a"},
        {"availability_zone: us-east-2b"},
    )


def test_a_line_put_back_that_would_change_a_value_is_not_put_back(tmp_path: Path, monkeypatch) -> None:
    from gpucluster.config import edit

    # As if a line had been paired with the wrong one: the respelled file is kept instead.
    monkeypatch.setattr(edit, "_as_written", lambda before, dumped, lines: dumped.replace("4800", "2400"))
    out = apply_edits(SPELLINGS, [Edit(("availability_zone",), "us-east-2b")], tmp_path / "c.yaml")
    assert "storage_gib: 4800" in out and "2400" not in out
    assert "  ami_id:\n" in out  # ruamel.yaml's own spelling of null
