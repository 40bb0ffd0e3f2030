"""Resources that leave a stack (deleted, or retained and detached), what makes a
resource hold data, and what --allow-replace lets through."""

from __future__ import annotations

import copy

from rich.console import Console

from gpucluster.diff import ChangeKind, diff_templates, print_report
from tests.diff_stacks import (
    CLUSTER,
    EFS,
    FSX,
    LOGIN,
    REGION,
    SECRET,
    STORAGE,
    edited,
    lustre,
    stacks,
)


def test_deleting_a_file_system_that_is_not_retained_fails():
    def deletable(t):
        t[STORAGE]["Resources"][FSX]["DeletionPolicy"] = "Delete"

    baseline = edited(deletable)
    report = diff_templates(baseline, edited(lambda t: t[STORAGE]["Resources"].pop(FSX)), region=REGION)
    change = report.change(STORAGE, FSX)
    assert change.kind == ChangeKind.DELETED
    assert change.blocks
    assert report.exit_code == 1


def test_a_snapshot_policy_still_deletes_the_resource():
    def snapshot(t):
        t[STORAGE]["Resources"][EFS]["DeletionPolicy"] = "Snapshot"

    report = diff_templates(
        edited(snapshot), edited(lambda t: t[STORAGE]["Resources"].pop(EFS)), region=REGION
    )
    assert report.change(STORAGE, EFS).kind == ChangeKind.DELETED
    assert report.exit_code == 1


def test_a_retained_resource_leaving_the_template_is_kept_not_at_risk():
    log_group = "NodeLogsNodes1A2B3C4D"

    def with_log_group(t):
        t[CLUSTER]["Resources"][log_group] = {
            "Type": "AWS::Logs::LogGroup",
            "Properties": {"LogGroupName": "/gpucluster/demo/nodes", "RetentionInDays": 90},
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        }

    report = diff_templates(edited(with_log_group), stacks(), region=REGION)
    change = report.change(CLUSTER, log_group)
    assert change.kind == ChangeKind.RETAINED
    # Logs are only ever written: keeping the group loses nothing the cluster reads back.
    assert not change.blocks
    assert report.exit_code == 0
    console = Console(width=250, record=True)
    print_report(report, console)
    text = console.export_text()
    assert "removed from stack, retained in the account" in text
    assert "DATA AT RISK" not in text
    assert "kept; delete by hand when unused" in text


def test_a_retained_file_system_leaving_the_template_is_detached_and_needs_allowing():
    without_fsx = edited(lambda t: t[STORAGE]["Resources"].pop(FSX))
    report = diff_templates(stacks(), without_fsx, region=REGION)
    change = report.change(STORAGE, FSX)
    assert change.kind == ChangeKind.RETAINED
    assert change.blocks, "the data survives, but the cluster would no longer mount it"
    console = Console(width=250, record=True)
    print_report(report, console)
    text = console.export_text()
    assert "DATA AT RISK" not in text
    assert "kept; delete by hand when unused, detached" in text
    allowed = diff_templates(stacks(), without_fsx, {FSX}, region=REGION)
    assert allowed.exit_code == 0
    assert allowed.unused_allowances == ()


def test_the_munge_secret_renamed_per_stack_is_a_replacement_that_needs_allowing():
    def per_stack_name(t):
        t[STORAGE]["Resources"][SECRET]["Properties"]["Name"] = {
            "Fn::Join": [
                "",
                [
                    "gpucluster/demo/munge-key-",
                    {
                        "Fn::Select": [
                            4,
                            {
                                "Fn::Split": [
                                    "-",
                                    {"Fn::Select": [2, {"Fn::Split": ["/", {"Ref": "AWS::StackId"}]}]},
                                ]
                            },
                        ]
                    },
                ],
            ]
        }

    current = edited(per_stack_name)
    report = diff_templates(stacks(), current, region=REGION)
    change = report.change(STORAGE, SECRET)
    assert change.kind == ChangeKind.REPLACED
    assert change.blocks, "a new munge key breaks running daemons until every node has it"
    assert diff_templates(stacks(), current, {SECRET}, region=REGION).exit_code == 0


def test_allow_replace_lets_a_named_replacement_through():
    current = edited(lambda t: lustre(t).update(DeploymentType="PERSISTENT_1", PerUnitStorageThroughput=200))
    assert diff_templates(stacks(), current, {FSX}, region=REGION).exit_code == 0
    assert diff_templates(stacks(), current, {f"{STORAGE}/{FSX}"}, region=REGION).exit_code == 0
    assert diff_templates(stacks(), current, {f"{CLUSTER}/{FSX}"}, region=REGION).exit_code == 1


def test_allowance_that_matches_nothing_is_reported():
    report = diff_templates(stacks(), stacks(), {"FsxLustreFileSytem"}, region=REGION)
    assert report.unused_allowances == ("FsxLustreFileSytem",)
    assert report.exit_code == 0


def test_renamed_logical_id_detaches_the_old_and_adds_an_empty_one():
    def rename(t):
        resources = t[STORAGE]["Resources"]
        resources["HomeFileSystemRenamed"] = resources.pop(EFS)

    report = diff_templates(stacks(), edited(rename), region=REGION)
    assert report.change(STORAGE, EFS).kind == ChangeKind.RETAINED
    assert report.change(STORAGE, EFS).blocks
    assert report.change(STORAGE, "HomeFileSystemRenamed").kind == ChangeKind.ADDED
    assert report.exit_code == 1


def test_retain_policy_makes_any_resource_stateful():
    def move(t):
        t[CLUSTER]["Resources"][LOGIN]["Properties"]["SubnetId"] = "subnet-0fedcba9876543210"

    assert diff_templates(stacks(), edited(move), region=REGION).exit_code == 0

    def retained(t):
        t[CLUSTER]["Resources"][LOGIN]["DeletionPolicy"] = "Retain"

    baseline = edited(retained)
    current = copy.deepcopy(baseline)
    move(current)
    report = diff_templates(baseline, current, region=REGION)
    assert report.change(CLUSTER, LOGIN).kind == ChangeKind.REPLACED
    assert report.change(CLUSTER, LOGIN).blocks
    assert report.exit_code == 1


def test_removed_stack_deletes_its_resources():
    current = stacks()
    del current[STORAGE]
    report = diff_templates(stacks(), current, region=REGION)
    # Everything in the storage stack is retained: deleting the stack loses no data, but
    # detaches it from the cluster, so it still needs an allowance.
    for logical_id in (FSX, EFS, SECRET):
        assert report.change(STORAGE, logical_id).kind == ChangeKind.RETAINED
        assert report.change(STORAGE, logical_id).blocks
    assert report.exit_code == 1

    def deletable(t):
        t[STORAGE]["Resources"][SECRET]["DeletionPolicy"] = "Delete"

    report = diff_templates(edited(deletable), current, region=REGION)
    assert report.change(STORAGE, SECRET).kind == ChangeKind.DELETED
    assert report.change(STORAGE, SECRET).blocks
    assert report.exit_code == 1


def test_new_stack_only_adds():
    baseline = stacks()
    del baseline[CLUSTER]
    report = diff_templates(baseline, stacks(), region=REGION)
    assert {c.kind for c in report.changes} == {ChangeKind.ADDED}
    assert report.exit_code == 0
