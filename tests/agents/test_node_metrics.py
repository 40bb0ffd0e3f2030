"""The GPU node collector against recorded nvidia-smi and journal output and an EFA sysfs
tree (tests/fixtures/metrics/README.md says where each format comes from)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpucluster.agents import emf, gpu_readings, node_metrics
from gpucluster.agents import metric_names as m
from tests.agent_scripts import run_from_bundle_copy
from tests.conftest import REPO

FIXTURES = REPO / "tests" / "fixtures" / "metrics"
NODE = "gpu-i-0a1b2c3d4e5f60001"
T0 = datetime(2026, 12, 4, 21, 0, tzinfo=UTC)


def efa_tree(root: Path, devices: dict[str, dict[str, int]]) -> Path:
    for device, counters in devices.items():
        folder = root / device / "ports" / "1" / "hw_counters"
        folder.mkdir(parents=True, exist_ok=True)
        for name, value in counters.items():
            (folder / name).write_text(f"{value}\n")
    return root


class Host:
    """nvidia-smi and journalctl as recorded; every command the collector runs is kept."""

    def __init__(self, smi: str, journal: str, smi_code: int = 0, lost_cursor: bool = False) -> None:
        self.smi, self.journal, self.smi_code, self.lost_cursor = smi, journal, smi_code, lost_cursor
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str]) -> tuple[int, str, str]:
        self.calls.append(list(argv))
        if argv[0] == "nvidia-smi":
            return (self.smi_code, self.smi, "" if self.smi_code == 0 else "NVIDIA-SMI has failed")
        if argv[0] == "journalctl":
            if self.lost_cursor and argv[-1].startswith("--after-cursor="):
                return 1, "", "Failed to seek to cursor: Invalid argument"
            return 0, self.journal, ""
        raise AssertionError(f"unexpected command {argv}")


def records(lines: list[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in lines]


def by_dims(lines: list[str], key: str) -> dict[str, dict[str, object]]:
    return {str(rec[key]): rec for rec in records(lines) if key in rec}


def test_each_gpu_gets_its_readings_xids_and_ecc(tmp_path: Path):
    host = Host((FIXTURES / "nvidia-smi-h200.csv").read_text(), (FIXTURES / "journal-xid.txt").read_text())
    lines = node_metrics.collect("demo", NODE, host, tmp_path / "state.json", tmp_path / "none", T0)
    gpus = by_dims(lines, m.GPU)
    assert sorted(gpus) == [str(index) for index in range(8)]
    assert gpus["0"][m.GPU_UTILIZATION.name] == 97
    assert gpus["0"][m.GPU_MEMORY_USED.name] == 80123
    assert gpus["0"][m.GPU_POWER.name] == 612.34
    assert gpus["0"][m.GPU_TEMPERATURE.name] == 54
    # Two Xid 79 lines name bus 5d (GPU 3), one Xid 48 bus bb (GPU 5).
    assert {index: rec[m.GPU_XID_ERRORS.name] for index, rec in gpus.items()} == {
        **{str(index): 0 for index in range(8)},
        "3": 2,
        "5": 1,
    }
    assert gpus["5"][m.GPU_ECC_ERRORS.name] == 2
    # [N/A] power is left out, not published as 0.
    assert m.GPU_POWER.name not in gpus["7"]
    emf_meta = gpus["7"]["_aws"]
    assert isinstance(emf_meta, dict)
    declared = [metric["Name"] for metric in emf_meta["CloudWatchMetrics"][0]["Metrics"]]
    assert m.GPU_POWER.name not in declared
    assert emf_meta["CloudWatchMetrics"][0]["Namespace"] == "gpucluster/demo"
    assert emf_meta["CloudWatchMetrics"][0]["Dimensions"] == [[m.NODE, m.GPU]]
    assert gpus["3"][m.NODE] == NODE
    assert host.calls[0] == list(gpu_readings.NVIDIA_SMI)
    assert host.calls[1][-1] == "--boot"


def test_a_real_h200_answer_parses():
    """Captured on an H200 host with the collector's own command line."""
    (gpu,) = gpu_readings.parse_gpus((FIXTURES / "h200-captured.csv").read_text())
    assert gpu.index == 0
    assert gpu.bus_id == (0, 0, 6)
    assert (gpu.utilization, gpu.memory_used, gpu.temperature, gpu.ecc_uncorrected) == (0, 0, 38, 0)
    assert gpu.power == 79.17
    with_units = (FIXTURES / "h200-captured-with-units.csv").read_text().splitlines()
    assert with_units[0].split(", ")[0] == "index", "the query's fields, in the collector's order"
    assert [f.split(" [")[0] for f in with_units[0].split(", ")] == list(gpu_readings.QUERY_FIELDS)


def test_a_real_h200_under_load_parses():
    """The lead's capture of a wider query while the GPU was busy: the collector's fields,
    picked out by name, read as nvidia-smi printed them."""
    command, line, status = (FIXTURES / "h200-lead-query-full-load-nounits.csv").read_text().splitlines()
    assert status == "[rc=0]"
    fields = command.split("--query-gpu=", 1)[1].split()[0].split(",")
    values = dict(zip(fields, (value.strip() for value in line.split(",")), strict=True))
    (gpu,) = gpu_readings.parse_gpus(", ".join(values[name] for name in gpu_readings.QUERY_FIELDS))
    assert (gpu.utilization, gpu.memory_used, gpu.power, gpu.temperature) == (100, 1139, 693.65, 63)
    assert gpu.ecc_uncorrected == 0


def test_driver_lines_that_are_not_xids_count_nothing():
    """Real NVRM lines of an H200 host (driver load, an FBHUB notice): no Xid among them."""
    assert gpu_readings.parse_journal((FIXTURES / "h200-lead-dmesg-nvrm.txt").read_text()).xids == {}


def test_the_journal_continues_after_the_previous_cursor(tmp_path: Path):
    journal = (FIXTURES / "journal-xid.txt").read_text()
    state = tmp_path / "state.json"
    smi = (FIXTURES / "nvidia-smi-h200.csv").read_text()
    node_metrics.collect("demo", NODE, Host(smi, journal), state, tmp_path / "none", T0)
    host = Host(smi, "")
    lines = node_metrics.collect("demo", NODE, host, state, tmp_path / "none", T0 + timedelta(minutes=1))
    cursor = journal.splitlines()[-1].removeprefix("-- cursor: ")
    assert host.calls[1][-1] == f"--after-cursor={cursor}"
    assert all(rec[m.GPU_XID_ERRORS.name] == 0 for rec in by_dims(lines, m.GPU).values())
    # An empty answer printed no cursor: the old one is kept for the next run.
    assert json.loads(state.read_text())["cursor"] == cursor


def test_a_rotated_away_cursor_goes_on_from_the_previous_run(tmp_path: Path):
    smi = (FIXTURES / "nvidia-smi-h200.csv").read_text()
    journal = (FIXTURES / "journal-xid.txt").read_text()
    state = tmp_path / "state.json"
    node_metrics.collect("demo", NODE, Host(smi, ""), state, tmp_path / "none", T0)
    State = node_metrics.State
    State(T0.timestamp(), {}, "s=gone").save(state)
    host = Host(smi, journal, lost_cursor=True)
    lines = node_metrics.collect("demo", NODE, host, state, tmp_path / "none", T0 + timedelta(minutes=1))
    assert host.calls[1][-1] == "--after-cursor=s=gone"
    assert host.calls[2][-1] == f"--since=@{int(T0.timestamp())}"
    assert by_dims(lines, m.GPU)["3"][m.GPU_XID_ERRORS.name] == 2
    # The next run continues from the new cursor, not the lost one.
    assert json.loads(state.read_text())["cursor"] == journal.splitlines()[-1].removeprefix("-- cursor: ")


def test_efa_counters_become_rates_per_device(tmp_path: Path):
    sysfs = tmp_path / "infiniband"
    start = {
        "tx_bytes": 1_000,
        "rx_bytes": 2_000,
        "rdma_read_bytes": 0,
        "rdma_write_bytes": 0,
        "retrans_pkts": 5,
        "rx_drops": 1,
        "rdma_read_wr_err": 0,
        "unresponsive_remote_events": 0,
    }
    efa_tree(sysfs, {"rdmap79s0": start, "rdmap80s0": start})
    state = tmp_path / "state.json"
    host = Host("", "", smi_code=9)
    assert node_metrics.collect("demo", NODE, host, state, sysfs, T0) == []  # first reading: no rate yet
    efa_tree(
        sysfs,
        {
            "rdmap79s0": {
                **start,
                "tx_bytes": 1_000 + 60 * 5_000,
                "rx_bytes": 2_000 + 60 * 4_000,
                "rdma_read_bytes": 60 * 100,
                "rdma_write_bytes": 60 * 200,
                "retrans_pkts": 12,
                "rx_drops": 2,
                "unresponsive_remote_events": 3,
            },
            # Driver reloaded: its counters went back to 0, so no rate this minute.
            "rdmap80s0": dict.fromkeys(start, 0),
        },
    )
    lines = node_metrics.collect("demo", NODE, host, state, sysfs, T0 + timedelta(seconds=60))
    devices = by_dims(lines, m.DEVICE)
    assert sorted(devices) == ["rdmap79s0"]
    first = devices["rdmap79s0"]
    assert first[m.EFA_TX_BYTES.name] == 5_000
    assert first[m.EFA_RX_BYTES.name] == 4_000
    assert first[m.EFA_RDMA_READ_BYTES.name] == 100
    assert first[m.EFA_RDMA_WRITE_BYTES.name] == 200
    assert first[m.EFA_RETRANSMITS.name] == 7
    assert first[m.EFA_ERRORS.name] == 4  # one drop, three unresponsive-remote events
    assert first["_aws"]["CloudWatchMetrics"][0]["Dimensions"] == [[m.NODE, m.DEVICE]]  # type: ignore[index]


def test_every_published_metric_is_declared_with_its_dimensions(tmp_path: Path):
    """What the collector writes matches metric_names exactly (the dashboard's source)."""
    sysfs = efa_tree(
        tmp_path / "ib",
        {
            "rdmap79s0": dict.fromkeys(
                ("tx_bytes", "rx_bytes", "rdma_read_bytes", "rdma_write_bytes", "retrans_pkts", "rx_drops"), 1
            )
        },
    )
    host = Host((FIXTURES / "nvidia-smi-h200.csv").read_text(), "")
    state = tmp_path / "state.json"
    node_metrics.collect("demo", NODE, host, state, sysfs, T0)
    lines = node_metrics.collect("demo", NODE, host, state, sysfs, T0 + timedelta(minutes=1))
    declared = {metric.name: metric for metric in m.ALL_METRICS}
    published = set()
    for rec in records(lines):
        meta = rec["_aws"]["CloudWatchMetrics"][0]  # type: ignore[index]
        for metric in meta["Metrics"]:
            spec = declared[metric["Name"]]
            assert tuple(meta["Dimensions"][0]) == spec.dimensions
            assert metric["Unit"] == spec.unit
            published.add(spec)
    assert published == set(m.GPU_METRICS) | set(m.EFA_METRICS)


def test_a_malformed_answer_is_an_error_not_a_zero():
    with pytest.raises(gpu_readings.ReadingError, match="where a number belongs"):
        gpu_readings.parse_gpus("0, 00000000:19:00.0, busy, 1, 2, 3, 0\n")
    with pytest.raises(gpu_readings.ReadingError, match="expected 7 fields"):
        gpu_readings.parse_gpus("0, 00000000:19:00.0, 97\n")


def test_records_refuse_metrics_of_other_dimensions():
    with pytest.raises(ValueError, match="has dimensions"):
        emf.record("gpucluster/demo", {m.NODE: NODE}, [(m.GPU_UTILIZATION, 1.0)], T0)


def test_the_script_runs_from_the_bundle_and_appends_whole_lines(tmp_path: Path):
    bad = run_from_bundle_copy(tmp_path, "gpucluster.agents.node_metrics", "--cluster", "Not_A_Name")
    assert bad.returncode == 2
    assert "is not a gpucluster cluster name" in bad.stdout
    out = tmp_path / "out"
    emf.append(['{"a":1}', '{"b":2}'], T0, out)
    emf.append(['{"c":3}'], T0, out)
    assert (out / "2026120421.emf").read_text() == '{"a":1}\n{"b":2}\n{"c":3}\n'


def test_an_unwritable_output_is_one_line_and_exit_1(tmp_path: Path, monkeypatch, caplog):
    """The lines cannot be written (a full disk, a file where the directory belongs): the
    run says so in one line and fails, rather than ending in a traceback."""
    monkeypatch.setattr(node_metrics, "collect", lambda *args: ['{"a":1}'])
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    assert node_metrics.main(["--cluster", "demo", "--output", str(blocked)]) == 1
    assert f"cannot write the metric records to {blocked}" in caplog.text


def test_an_unreadable_kernel_log_leaves_the_xid_count_out(tmp_path: Path):
    """journalctl failing says nothing about Xid errors: the count is left out, not a 0
    that would read as a clean minute."""

    class NoJournal(Host):
        def __call__(self, argv: Sequence[str]) -> tuple[int, str, str]:
            if argv[0] == "journalctl":
                self.calls.append(list(argv))
                return 1, "", "Failed to open journal"
            return super().__call__(argv)

    smi = (FIXTURES / "nvidia-smi-h200.csv").read_text()
    lines = node_metrics.collect(
        "demo", NODE, NoJournal(smi, ""), tmp_path / "state.json", tmp_path / "none", T0
    )
    gpus = by_dims(lines, m.GPU)
    assert gpus and all(m.GPU_XID_ERRORS.name not in rec for rec in gpus.values())
    assert all(m.GPU_UTILIZATION.name in rec for rec in gpus.values())
