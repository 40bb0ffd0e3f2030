"""`render_node_files`: every file the nodes get, rendered once, for the infrastructure to ship."""

from __future__ import annotations

from gpucluster.bootstrap import boot_budget, node_logs
from gpucluster.bootstrap.userdata import (
    BundleRef,
    archive_sha256,
    bundle_archive,
    render_bundle,
    render_user_data,
)
from gpucluster.node_files import BUNDLE_URL_SLOT, LOG_GROUP_SLOT, NodeFiles
from gpucluster.resolved import ResolvedCluster
from gpucluster.slurm.conf import SlurmSite


def render_node_files(resolved: ResolvedCluster) -> NodeFiles:
    """Raises UserDataTooLarge for the first role (head, login, then each group) whose user
    data is over budget, measured with the bundle URL's slot in its place."""
    archive = bundle_archive(render_bundle(resolved))
    bundle = BundleRef(url=BUNDLE_URL_SLOT, sha256=archive_sha256(archive))
    site = SlurmSite()
    return NodeFiles(
        bundle=archive,
        bundle_sha256=bundle.sha256,
        bundle_pointer=bundle.pointer,
        head_user_data=render_user_data(resolved, "head", None),
        login_user_data=render_user_data(resolved, "login", bundle)
        if resolved.login_nodes.count > 0
        else None,
        compute_user_data={
            group.name: render_user_data(resolved, "compute", bundle, group) for group in resolved.groups
        },
        launch_hook_timeout_seconds=boot_budget.heartbeat_timeout(),
        log_agent_config=node_logs.agent_config(LOG_GROUP_SLOT, site),
        log_retention_days=node_logs.RETENTION_DAYS,
        slurmctld_port=site.slurmctld_port,
    )
