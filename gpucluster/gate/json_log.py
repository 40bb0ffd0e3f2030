"""Reads the JSON file nccl-tests 2.19 writes with `-J FILE.json`.

Its shape (`"version": 3`): `args` (argv, the binary first), `nccl_version` (22809 for
2.28.9), `config` (`maximum_bytes`, `devices[]` with `rank` and `hostname`), `results[]`
(`size`, `count`, `type`, `redop`, `out_of_place`/`in_place` with `time`, `alg_bw`,
`bus_bw`, `nwrong`), `out_of_bounds` (`count`, `okay`) and `average_bus_bandwidth`.
The JSON holds no NCCL INFO lines, so it cannot show the transport.
"""

from __future__ import annotations

import json
import math
from typing import Any

from gpucluster.bad_input import BadInput
from gpucluster.gate import collectives
from gpucluster.gate.model import Count, Measure, NcclRun, Origin, SizeRow, Summary, Sweep, Versions
from gpucluster.json_input import JsonProblem
from gpucluster.json_input import parse_json as read_json

_FIX = "pass the file nccl-tests wrote with -J, unchanged"


def looks_like_json(text: str) -> bool:
    return text.lstrip().startswith("{")


class _Reader:
    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, field: str, what: str) -> BadInput:
        return BadInput(self.source, field, what, _FIX)

    def mapping(self, value: object, field: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(field, "is not a JSON object")
        return value

    def number(self, value: object, field: str, *, optional: bool = True) -> float | None:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(field, f"is {json.dumps(value)[:40]}, not a number")
        try:
            as_float = float(value)
        except OverflowError:
            raise self.fail(field, "is too large to be a measurement") from None
        return as_float if math.isfinite(as_float) else None

    def whole(self, value: object, field: str) -> int:
        number = self.number(value, field, optional=False)
        if number is None or number != int(number) or number < 0:
            raise self.fail(field, f"is {json.dumps(value)[:40]}, not a whole number of bytes")
        return int(number)

    def measure(self, value: object, field: str) -> Measure:
        half = self.mapping(value, field)
        wrong = self.number(half.get("nwrong"), f"{field}.nwrong")
        return Measure(
            time_us=self.number(half.get("time"), f"{field}.time"),
            algbw_gbps=self.number(half.get("alg_bw"), f"{field}.alg_bw"),
            busbw_gbps=self.number(half.get("bus_bw"), f"{field}.bus_bw"),
            wrong=None if wrong is None else int(wrong),
        )

    def row(self, value: object, index: int) -> SizeRow:
        field = f"results[{index}]"
        entry = self.mapping(value, field)
        count = entry.get("count")
        return SizeRow(
            size_bytes=self.whole(entry.get("size"), f"{field}.size"),
            count=count if isinstance(count, int) and not isinstance(count, bool) else None,
            dtype=str(entry["type"]) if "type" in entry else None,
            redop=str(entry["redop"]) if "redop" in entry else None,
            out_of_place=self.measure(entry.get("out_of_place"), f"{field}.out_of_place"),
            in_place=self.measure(entry.get("in_place"), f"{field}.in_place"),
            # JSON has no lines that matter to a user; the run's first line stands for all.
            line=1,
        )


def _version(code: object) -> str | None:
    # NCCL_VERSION_CODE: major*10000 + minor*100 + patch (NCCL >= 2.9).
    if not isinstance(code, int) or isinstance(code, bool) or code <= 0:
        return None
    return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"


def _collective(args: object) -> str | None:
    if isinstance(args, list) and args and isinstance(args[0], str) and args[0].strip():
        return collectives.normalize(args[0].strip())
    return None


def parse_json(source: str, text: str) -> NcclRun:
    reader = _Reader(source)
    try:
        raw = read_json(text)
    except JsonProblem as exc:
        raise BadInput(source, f"line {exc.line or 1}", f"is {exc.what}", _FIX) from None
    top = reader.mapping(raw, "(top level)")
    if "results" not in top:
        raise reader.fail("results", "is missing: this is not an nccl-tests -J file")
    results = top["results"]
    if not isinstance(results, list):
        raise reader.fail("results", "is not a list")
    rows = tuple(reader.row(entry, index) for index, entry in enumerate(results))
    config = reader.mapping(top.get("config", {}), "config")
    devices = config.get("devices", [])
    if not isinstance(devices, list):
        raise reader.fail("config.devices", "is not a list")
    hosts = sorted({str(device.get("hostname")) for device in devices if isinstance(device, dict)})
    collective = _collective(top.get("args"))
    collective_from: Origin | None = "json" if collective else None
    if collective is None and (named := collectives.from_file_name(source)):
        collective, collective_from = named, "file name"
    return NcclRun(
        source=source,
        first_line=1,
        kind="json",
        collective=collective,
        collective_from=collective_from,
        versions=Versions(nccl=_version(top.get("nccl_version"))),
        ranks=Count(value=len(devices), origin="json") if devices else None,
        nodes=Count(value=len(hosts), origin="json") if hosts else None,
        hosts=tuple(hosts),
        sweep=_sweep(reader, config, rows, finished=_finished(top)),
        wrong_column="#wrong",
        rows=rows,
        summary=_summary(reader, top),
    )


def _sweep(reader: _Reader, config: dict[str, Any], rows: tuple[SizeRow, ...], *, finished: bool) -> Sweep:
    maximum = config.get("maximum_bytes")
    factor = config.get("step_factor")
    step = config.get("step_bytes")
    sweep = Sweep(
        max_bytes=reader.whole(maximum, "config.maximum_bytes") if maximum is not None else None,
        step_factor=factor if isinstance(factor, int) and not isinstance(factor, bool) else None,
        step_bytes=step if isinstance(step, int) and not isinstance(step, bool) else None,
    )
    # config.maximum_bytes is written before nccl-tests lowers maxBytes to fit GPU memory
    # (src/util.cu writeDeviceReport runs before src/common.cu prints "Reducing maxBytes"), and
    # no field records the lowered value. The footer is written only after every size ran, so
    # with it the largest result is where the sweep ended.
    largest = max((row.size_bytes for row in rows), default=None)
    asked = sweep.max_bytes
    if finished and asked is not None and largest is not None and sweep.after(largest) <= asked:
        return sweep.model_copy(update={"max_bytes": largest, "asked_max_bytes": asked})
    return sweep


def _finished(top: dict[str, Any]) -> bool:
    # average_bus_bandwidth: written after the last size (src/util.cu writeResultFooter);
    # end_time alone is also written when the run returns an error part way.
    return isinstance(top.get("average_bus_bandwidth"), dict) and "end_time" in top


def _summary(reader: _Reader, top: dict[str, Any]) -> Summary:
    bounds = top.get("out_of_bounds")
    average = top.get("average_bus_bandwidth")
    return Summary(
        out_of_bounds=_bounds(reader, bounds),
        out_of_bounds_line=1 if isinstance(bounds, dict) else None,
        avg_busbw_gbps=reader.number(average.get("bandwidth"), "average_bus_bandwidth.bandwidth")
        if isinstance(average, dict)
        else None,
        # The JSON is written when the run ends: its end_time stands for the summary line.
        line=1 if "end_time" in top else None,
    )


def _bounds(reader: _Reader, bounds: object) -> int | None:
    if not isinstance(bounds, dict):
        return None
    count = reader.number(bounds.get("count"), "out_of_bounds.count")
    return None if count is None else int(count)
