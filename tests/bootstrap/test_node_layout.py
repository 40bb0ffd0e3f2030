"""Every path on a node comes from the ResolvedCluster's NodeLayout: a cluster resolved with
another root renders the bundle, the user data and the systemd units under that root."""

from __future__ import annotations

import dataclasses

from gpucluster.bootstrap.bundle import bundle_files
from gpucluster.bootstrap.userdata import BundleRef, render_user_data
from gpucluster.config.loader import load_config
from gpucluster.config.mount_points import mount_point_problem
from gpucluster.node_root import NODE_ROOT
from gpucluster.resolved import resolve
from gpucluster.resolved.node_layout import NodeLayout
from tests.conftest import REPO

OTHER = NodeLayout(root="/srv/gc", state_dir="/var/lib/gc", agent_env_file="/etc/gc/agents.env")


def test_the_layout_derives_every_path_from_its_root() -> None:
    layout = resolve(load_config(REPO / "examples" / "default.yaml")).node
    assert layout.root == NODE_ROOT
    for path in (
        layout.bundle_dir,
        layout.bundle_archive,
        layout.agents_dir,
        layout.jobs_dir,
        layout.lib_dir,
    ):
        assert path.startswith(f"{NODE_ROOT}/")
    assert layout.applied_bundle.startswith(f"{layout.state_dir}/")


def test_the_bundle_and_user_data_follow_the_resolved_layout() -> None:
    resolved = dataclasses.replace(resolve(load_config(REPO / "examples" / "default.yaml")), node=OTHER)
    files = bundle_files(resolved)
    conf = files["conf/cluster.sh"]
    assert 'readonly BUNDLE_INSTALL_DIR="/srv/gc/bundle"\n' in conf
    assert 'readonly STATE_DIR="${R}/var/lib/gc"\n' in conf
    assert 'readonly APPLIED_BUNDLE="/var/lib/gc/applied-bundle"\n' in conf
    units = {path: text for path, text in files.items() if path.startswith("files/head/etc/systemd/system/")}
    assert units and "files/head/etc/gc/agents.env" in files
    for path, text in units.items():
        assert NODE_ROOT not in text, path
    cleanup = units["files/head/etc/systemd/system/gpucluster-node-cleanup.service"]
    assert "WorkingDirectory=/srv/gc/bundle/agents\n" in cleanup
    assert "Documentation=file:///srv/gc/bundle/agents/gpucluster/agents/node_cleanup.py\n" in cleanup
    assert "EnvironmentFile=/etc/gc/agents.env\n" in cleanup
    for role, ref in (("head", None), ("login", BundleRef(url="s3://b/k", sha256="0" * 64))):
        thin = render_user_data(resolved, role, ref)
        assert "readonly BUNDLE_DIR=/srv/gc/bundle\n" in thin and NODE_ROOT not in thin


def test_the_config_refuses_a_mount_point_over_the_node_root() -> None:
    problem = mount_point_problem(f"{NODE_ROOT}/data")
    assert problem is not None and f"inside {NODE_ROOT}" in problem
