"""The FSx for Lustre rule tables: what README states is what the validator reads, and the
validator enforces every row (a whole config is parsed, so the model's use of the table is tested)."""

from __future__ import annotations

import copy
import re

import pytest
import yaml

from gpucluster.bad_input import BadInput
from gpucluster.config.fsx_rules import (
    CAPACITY_RULES,
    DEPLOYMENT_TYPES,
    METADATA_IOPS,
    CapacityRule,
    base_rule,
)
from gpucluster.config.loader import parse_config
from tests.conftest import REPO

DEFAULT = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
SECTION = "### FSx for Lustre rules"


def readme_tables() -> list[list[list[str]]]:
    """README's tables under SECTION, each a list of rows of cells (header first, no separator)."""
    text = (REPO / "README.md").read_text()
    assert SECTION in text, f"README.md lost its '{SECTION}' section"
    body = text.split(SECTION, 1)[1]
    body = re.split(r"^#{2,3} ", body, maxsplit=1, flags=re.MULTILINE)[0]
    tables: list[list[list[str]]] = []
    current: list[list[str]] = []
    for line in body.splitlines():
        if line.startswith("|"):
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if not all(set(cell) <= {"-", " "} for cell in cells):
                current.append(cells)
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return tables


def numbers(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in text.split(",")) if text else ()


def parse_sizes(text: str) -> tuple[tuple[int, ...], int]:
    """'1200, 2400, then multiples of 2400' -> ((1200, 2400), 2400)."""
    match = re.fullmatch(r"(?:(?P<first>[\d, ]+), then )?multiples of (?P<step>\d+)", text)
    assert match, f"README capacity cell {text!r} is not '<sizes>, then multiples of <step>'"
    return numbers(match["first"] or ""), int(match["step"])


def test_readme_states_the_capacity_table():
    capacity = readme_tables()[0]
    assert capacity[0] == ["deployment_type", "throughput_per_tib", "efa", "storage_gib"]
    stated = []
    for deployment_type, throughput, efa, sizes in capacity[1:]:
        first, step = parse_sizes(sizes)
        assert efa in ("true", "false"), f"efa cell {efa!r}"
        throughputs = () if throughput == "null" else numbers(throughput)
        stated.append(CapacityRule(deployment_type, throughputs, efa == "true", first, step))
    assert stated == list(CAPACITY_RULES)


def test_readme_states_the_metadata_iops_table():
    metadata = readme_tables()[1]
    assert metadata[0] == ["deployment_type", "metadata_iops"]
    stated = dict(metadata[1:])
    taking = {t for t, cell in stated.items() if cell != "null"}
    assert taking == set(METADATA_IOPS.deployment_types)
    assert set(stated) == set(DEPLOYMENT_TYPES)
    for deployment_type in taking:
        match = re.fullmatch(
            r"null, or (?P<first>[\d, ]+), then multiples of (?P<step>\d+) up to (?P<max>\d+)",
            stated[deployment_type],
        )
        assert match, f"README metadata_iops cell {stated[deployment_type]!r}"
        rule = METADATA_IOPS
        assert (numbers(match["first"]), int(match["step"]), int(match["max"])) == (
            rule.first,
            rule.step,
            rule.maximum,
        )


def test_the_table_has_one_row_without_efa_per_deployment_type():
    for deployment_type in DEPLOYMENT_TYPES:
        rows = [r for r in CAPACITY_RULES if r.deployment_type == deployment_type and not r.efa]
        assert len(rows) == 1, deployment_type
    # An EFA row refines a throughput its deployment type offers without EFA.
    for rule in (r for r in CAPACITY_RULES if r.efa):
        assert set(rule.throughputs) <= set(base_rule(rule.deployment_type).throughputs)


def problems_for(rule: CapacityRule, storage_gib: int) -> list[str]:
    data = copy.deepcopy(DEFAULT)
    data["storage"]["fsx_lustre"].update(
        deployment_type=rule.deployment_type,
        throughput_per_tib=rule.throughputs[0] if rule.throughputs else None,
        efa=rule.efa,
        storage_gib=storage_gib,
    )
    for group in data["compute_groups"]:
        group["efa"] = True
    try:
        parse_config(yaml.safe_dump(data), "c.yaml")
    except BadInput as exc:
        return exc.problems
    return []


@pytest.mark.parametrize(
    "rule", CAPACITY_RULES, ids=lambda r: f"{r.deployment_type}-{r.throughputs}-efa{r.efa}"
)
def test_the_validator_enforces_every_capacity_row(rule: CapacityRule):
    for size in (*rule.first_gib, rule.step_gib, 3 * rule.step_gib):
        assert problems_for(rule, size) == [], size
    # A size this row refuses (for an EFA row, one its deployment type takes without EFA),
    # so the message must come from this row.
    base = base_rule(rule.deployment_type)
    refused = next(
        size
        for size in range(rule.step_gib + 1200, 4 * rule.step_gib, 1200)
        if not rule.accepts(size) and base.accepts(size) is (rule is not base)
    )
    problems = problems_for(rule, refused)
    assert len(problems) == 1 and problems[0].startswith("storage.fsx_lustre.storage_gib: "), problems
    assert f"multiple of {rule.step_gib}" in problems[0]
