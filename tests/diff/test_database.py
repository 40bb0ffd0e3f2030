"""The accounting database under the diff guard, on the real templates of the example that
creates one (mixed.yaml), as the file systems are: a change to its identifier, engine or
encryption is flagged as a replacement of a resource that holds data (exit 1); a new instance
size is an update in place (exit 0); a smaller volume cannot deploy (exit 2)."""

from __future__ import annotations

import copy

import pytest

from gpucluster.diff import ChangeKind, diff_templates
from tests.diff_stacks import REGION

DATABASE = "AccountingDatabase"


@pytest.fixture(scope="module")
def baseline(synthesized) -> dict[str, dict]:
    return synthesized["mixed"].templates


def storage_name(templates: dict) -> str:
    return next(name for name in templates if name.endswith("-storage"))


def changed(baseline: dict, edit) -> dict:
    current = copy.deepcopy(baseline)
    edit(current[storage_name(current)]["Resources"])
    return current


def database(**values):
    return lambda resources: resources[DATABASE]["Properties"].update(values)


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (database(DBInstanceIdentifier="gpucluster-mixed-accounting-renamed"), "DBInstanceIdentifier"),
        (database(StorageEncrypted=False), "StorageEncrypted"),
        (database(KmsKeyId="arn:aws:kms:us-east-2:123456789012:key/other"), "KmsKeyId"),
        (database(MasterUsername="admin"), "MasterUsername"),
    ],
    ids=["identifier", "encryption", "encryption-key", "user"],
)
def test_a_create_only_change_replaces_the_database_and_fails(baseline, edit, reason):
    report = diff_templates(baseline, changed(baseline, edit), region=REGION)
    change = report.change(storage_name(baseline), DATABASE)
    assert change.kind == ChangeKind.REPLACED
    assert reason in change.replaced_by
    assert change.endangers_data and change.blocks
    assert report.exit_code == 1


def test_another_engine_may_replace_the_database_and_fails(baseline):
    # The schema lists Engine among the properties whose change may replace the instance.
    report = diff_templates(baseline, changed(baseline, database(Engine="mysql")), region=REGION)
    change = report.change(storage_name(baseline), DATABASE)
    assert "Engine" in change.may_replace
    assert change.blocks
    assert report.exit_code == 1
    allowed = diff_templates(baseline, changed(baseline, database(Engine="mysql")), {DATABASE}, region=REGION)
    assert allowed.exit_code == 0


def test_a_replaced_subnet_group_takes_the_database_with_it(baseline):
    def rename(resources):
        resources["AccountingDatabaseSubnets"]["Properties"]["DBSubnetGroupName"] = "renamed"

    report = diff_templates(baseline, changed(baseline, rename), region=REGION)
    change = report.change(storage_name(baseline), DATABASE)
    assert change.kind == ChangeKind.REPLACED
    assert change.replaced_by == ("DBSubnetGroupName refers to AccountingDatabaseSubnets, which is replaced",)
    assert report.exit_code == 1


def test_a_new_instance_size_is_an_update_in_place(baseline):
    report = diff_templates(
        baseline, changed(baseline, database(DBInstanceClass="db.m7g.large")), region=REGION
    )
    change = report.change(storage_name(baseline), DATABASE)
    assert change.kind == ChangeKind.MODIFIED
    assert change.changed == ("DBInstanceClass",)
    assert not change.blocks
    assert report.exit_code == 0


def test_more_storage_is_in_place_and_less_cannot_deploy(baseline):
    grown = diff_templates(baseline, changed(baseline, database(AllocatedStorage="100")), region=REGION)
    assert grown.exit_code == 0 and not grown.refusals
    shrunk = diff_templates(changed(baseline, database(AllocatedStorage="100")), baseline, region=REGION)
    assert [r.problem_line() for r in shrunk.refusals] == [
        "accounting.database.storage_gib: RDS storage only grows, it cannot shrink from 100 to 20 GiB; "
        "keep the deployed size or grow it; a smaller database is a new one: create it beside this one, "
        "dump and restore the data"
    ]
    assert shrunk.exit_code == 2


def test_turning_accounting_off_detaches_the_database_and_needs_allowing(baseline):
    def remove(resources):
        for logical in [k for k in resources if k.startswith(DATABASE) or k.startswith("Factaccounting")]:
            del resources[logical]

    report = diff_templates(baseline, changed(baseline, remove), region=REGION)
    change = report.change(storage_name(baseline), DATABASE)
    assert change.kind == ChangeKind.RETAINED
    assert change.blocks
    assert report.exit_code == 1
