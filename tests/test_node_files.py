"""The seam between the node files and the infrastructure: what render_node_files hands over,
and that filling the bundle URL's slot gives what rendering with the URL gives."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml

from gpucluster.bootstrap import userdata
from gpucluster.bootstrap.node_files import render_node_files
from gpucluster.bootstrap.userdata import (
    BundleRef,
    UserDataTooLarge,
    bundle_archive,
    render_bundle,
    render_user_data,
)
from gpucluster.config import ClusterConfig
from gpucluster.node_files import BUNDLE_URL_SLOT, LOG_GROUP_SLOT, NodeFiles, with_bundle_url, with_log_group
from gpucluster.resolved import resolve
from tests.conftest import REPO

# What the CDK hands the stacks for the bundle's URL at synth.
TOKEN = "${Token[TOKEN.82]}"


@pytest.fixture(scope="module")
def mixed() -> ClusterConfig:
    return ClusterConfig.model_validate(yaml.safe_load((REPO / "examples" / "mixed.yaml").read_text()))


@pytest.fixture(scope="module")
def files(mixed: ClusterConfig) -> NodeFiles:
    return render_node_files(resolve(mixed))


def test_the_bundle_is_the_rendered_archive_with_its_sha256(mixed: ClusterConfig, files: NodeFiles) -> None:
    assert files.bundle == bundle_archive(render_bundle(resolve(mixed)))
    assert files.bundle_sha256 == hashlib.sha256(files.bundle).hexdigest()
    assert with_bundle_url(files.bundle_pointer, TOKEN) == f"{files.bundle_sha256} {TOKEN}"


def test_filled_user_data_is_what_rendering_with_the_url_gives(
    mixed: ClusterConfig, files: NodeFiles
) -> None:
    bundle = BundleRef(url=TOKEN, sha256=files.bundle_sha256)
    assert BUNDLE_URL_SLOT not in files.head_user_data
    assert files.head_user_data == render_user_data(resolve(mixed), "head", None)
    assert files.login_user_data is not None
    assert files.login_user_data.count(BUNDLE_URL_SLOT) == 1
    assert with_bundle_url(files.login_user_data, TOKEN) == render_user_data(resolve(mixed), "login", bundle)
    assert list(files.compute_user_data) == ["train", "dev", "eval"]
    for group in resolve(mixed).groups:
        filled = with_bundle_url(files.compute_user_data[group.name], TOKEN)
        assert filled == render_user_data(resolve(mixed), "compute", bundle, group)


def test_a_cluster_without_login_nodes_has_no_login_user_data(mixed: ClusterConfig) -> None:
    cfg = mixed.model_copy(update={"login_nodes": mixed.login_nodes.model_copy(update={"count": 0})})
    assert render_node_files(resolve(cfg)).login_user_data is None


def test_a_text_without_the_slot_is_refused(files: NodeFiles) -> None:
    with pytest.raises(ValueError, match="no bundle URL slot"):
        with_bundle_url(files.head_user_data, TOKEN)


def test_the_agent_configuration_names_the_log_group_by_its_slot(files: NodeFiles) -> None:
    assert LOG_GROUP_SLOT in json.dumps(files.log_agent_config)
    filled = json.dumps(with_log_group(dict(files.log_agent_config), "node-logs"))
    assert LOG_GROUP_SLOT not in filled
    collected = json.loads(filled)["logs"]["logs_collected"]["files"]["collect_list"]
    assert {entry["log_group_name"] for entry in collected} == {"node-logs"}


def test_user_data_over_budget_is_refused_from_the_text_with_the_slot(
    mixed: ClusterConfig, files: NodeFiles, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget is checked on the text as rendered; the head's, the longest, is met first."""
    assert files.login_user_data is not None
    others = [files.login_user_data, *files.compute_user_data.values()]
    head = len(files.head_user_data.encode())
    assert head > max(len(text.encode()) for text in others)
    monkeypatch.setattr(userdata, "USER_DATA_LIMIT", head)
    assert render_node_files(resolve(mixed)) == files
    monkeypatch.setattr(userdata, "USER_DATA_LIMIT", head - 1)
    with pytest.raises(
        UserDataTooLarge, match=rf"^user-data for the head node is {head} bytes, over the {head - 1}-byte"
    ):
        render_node_files(resolve(mixed))
