"""Changes CloudFormation would try in place and the service refuses (property_rules): the
diff refuses them with the reason (exit 2), never calls them safe, and lets a replacement
(a new resource) through to the data guard instead."""

from __future__ import annotations

import pytest
from rich.console import Console

from gpucluster.diff import ChangeKind, diff_templates, print_report
from tests.diff_stacks import EFS, FSX, REGION, STORAGE, edited, fsx_props, lustre, stacks


def report_of(edit, baseline_edit=None):
    return diff_templates(edited(baseline_edit or (lambda t: None)), edited(edit), region=REGION)


def refused(report) -> list[str]:
    return [r.problem for r in report.refusals]


def printed(report) -> str:
    console = Console(record=True, width=250, color_system=None)
    print_report(report, console)
    return console.export_text()


def test_a_shrinking_file_system_is_refused_not_safe():
    report = report_of(lambda t: fsx_props(t).update(StorageCapacity=2400))
    change = report.change(STORAGE, FSX)
    assert change.kind == ChangeKind.MODIFIED and not change.blocks
    assert refused(report) == ["FSx for Lustre storage only grows, it cannot shrink from 4800 to 2400 GiB"]
    assert report.refusals[0].setting == "storage.fsx_lustre.storage_gib"
    assert report.exit_code == 2
    text = printed(report)
    assert "CANNOT UPDATE" in text and "not deployable" in text
    assert "safe" not in text


def test_an_allowance_does_not_let_a_refused_change_through():
    current = edited(lambda t: fsx_props(t).update(StorageCapacity=2400))
    report = diff_templates(stacks(), current, {FSX}, region=REGION)
    assert report.exit_code == 2


@pytest.mark.parametrize(
    ("capacity", "problem"),
    [
        (7200, None),
        (9600, None),
        (6000, "4800 -> 6000 GiB: FSx grows this file system's storage in multiples of 2400 GiB"),
    ],
)
def test_storage_grows_only_in_the_steps_fsx_offers(capacity, problem):
    report = report_of(lambda t: fsx_props(t).update(StorageCapacity=capacity))
    assert refused(report) == ([problem] if problem else [])
    assert report.exit_code == (2 if problem else 0)


def test_an_efa_enabled_file_system_grows_by_whole_servers():
    def efa(templates):
        fsx_props(templates).update(StorageCapacity=19200)
        lustre(templates).update(EfaEnabled=True, PerUnitStorageThroughput=250)

    def grown(templates):
        efa(templates)
        fsx_props(templates).update(StorageCapacity=24000)

    report = report_of(grown, efa)
    assert refused(report) == [
        "19200 -> 24000 GiB: FSx grows this file system's storage in multiples of 19200 GiB"
    ]


def test_scratch_1_storage_cannot_grow():
    def scratch(templates):
        lustre(templates).update(DeploymentType="SCRATCH_1")
        lustre(templates).pop("PerUnitStorageThroughput")
        fsx_props(templates).update(StorageCapacity=3600)

    def grown(templates):
        scratch(templates)
        fsx_props(templates).update(StorageCapacity=7200)

    assert refused(report_of(grown, scratch)) == ["SCRATCH_1 storage cannot be increased (3600 -> 7200 GiB)"]


@pytest.mark.parametrize(("before", "after"), [(None, True), (True, None), (True, False)])
def test_efa_is_fixed_at_creation_either_way(before, after):
    def setting(value):
        return lambda t: lustre(t).update(EfaEnabled=value) if value is not None else None

    report = report_of(setting(after), setting(before))
    [refusal] = report.refusals
    assert refusal.setting == "storage.fsx_lustre.efa"
    shown = {None: "false", True: "true", False: "false"}
    assert refusal.problem.startswith(
        f"LustreConfiguration/EfaEnabled {shown[before]} -> {shown[after]}: FSx sets it only when it "
        "creates the resource"
    )
    assert report.exit_code == 2


def test_the_lustre_version_only_moves_forward():
    older = report_of(lambda t: fsx_props(t).update(FileSystemTypeVersion="2.12"))
    assert refused(older) == [
        "Lustre 2.15 -> 2.12: FSx upgrades a file system's Lustre version, never downgrades it"
    ]
    assert (
        older.refusals[0].problem_line().startswith("(FsxLustreFileSystem3A1B2C3D FileSystemTypeVersion): ")
    )
    newer = report_of(lambda t: None, lambda t: fsx_props(t).update(FileSystemTypeVersion="2.12"))
    assert newer.exit_code == 0


def test_metadata_iops_only_grow():
    def iops(value):
        return lambda t: lustre(t).update(MetadataConfiguration={"Mode": "USER_PROVISIONED", "Iops": value})

    assert refused(report_of(iops(6000), iops(12000))) == [
        "metadata IOPS 12000 -> 6000: FSx only raises a file system's provisioned metadata IOPS"
    ]
    assert report_of(iops(24000), iops(12000)).exit_code == 0


def test_a_replaced_file_system_is_new_so_only_the_data_guard_applies():
    # A deployment type change replaces the file system: shrinking the new one is no update.
    report = report_of(
        lambda t: (
            lustre(t).update(DeploymentType="PERSISTENT_1", PerUnitStorageThroughput=200),
            fsx_props(t).update(StorageCapacity=2400),
        )
    )
    change = report.change(STORAGE, FSX)
    assert change.kind == ChangeKind.REPLACED and change.refusals == ()
    assert report.exit_code == 1


def test_fixed_values_that_stay_the_same_pass():
    same = report_of(lambda t: lustre(t).update(EfaEnabled=False))  # absent means false
    assert same.refusals == () and same.exit_code == 0


@pytest.mark.parametrize(("prop", "value"), [("Encrypted", False), ("KmsKeyId", "alias/other")])
def test_efs_create_only_properties_come_from_the_schema_as_replacements(prop, value):
    report = report_of(lambda t: t[STORAGE]["Resources"][EFS]["Properties"].update({prop: value}))
    change = report.change(STORAGE, EFS)
    assert change.kind == ChangeKind.REPLACED and prop in change.replaced_by
    assert change.refusals == () and report.exit_code == 1
