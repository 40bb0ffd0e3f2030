"""Every path gpucluster owns on a node, derived from one root (gpucluster.node_root).

The renderers take their paths from here: Python, the Jinja templates (user data, the
systemd units, the jobs) and, through conf/cluster.sh, the bundle's plain shell files.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpucluster.agents.cluster_names import AGENT_ENV_FILE
from gpucluster.agents.emf import METRICS_LOG_DIR_NAME
from gpucluster.node_root import NODE_ROOT

# The bundle's folder of the agents' package tree (gpucluster.agent_package).
AGENTS_TREE = "agents"


@dataclass(frozen=True)
class NodeLayout:
    root: str = NODE_ROOT
    # What the node remembers across boots: markers of finished steps, the applied bundle.
    state_dir: str = "/var/lib/gpucluster"
    # The head node's agents' settings (their systemd units' EnvironmentFile=); the agents
    # import nothing of gpucluster but each other and read it from their own module.
    agent_env_file: str = AGENT_ENV_FILE
    # The collectors' metric lines, under /var/log (their units' LogsDirectory=), which
    # the CloudWatch agent ships.
    metrics_log_dir_name: str = METRICS_LOG_DIR_NAME

    @property
    def bundle_dir(self) -> str:
        """Where the thin user data unpacks the bundle; boot-time units run scripts from there."""
        return f"{self.root}/bundle"

    @property
    def bundle_archive(self) -> str:
        return f"{self.bundle_dir}.tar.gz"

    @property
    def agents_dir(self) -> str:
        """The agents' package tree (gpucluster.agent_package), the working directory they
        run in as `python3 -m gpucluster.agents.<module>`."""
        return f"{self.bundle_dir}/{AGENTS_TREE}"

    def agent_source(self, module: str) -> str:
        """Where the source of an agent module (`gpucluster.agents.node_repair`) lies."""
        return f"{self.agents_dir}/{module.replace('.', '/')}.py"

    @property
    def jobs_dir(self) -> str:
        """The sbatch jobs login nodes install for their users, one directory per group."""
        return f"{self.root}/jobs"

    @property
    def lib_dir(self) -> str:
        """What compute nodes keep for the jobs' ranks (gpucluster.launch.node_lib)."""
        return f"{self.root}/lib"

    @property
    def downloads_dir(self) -> str:
        """The bootstrap's verified downloads (packages, source tarballs)."""
        return f"{self.root}/downloads"

    @property
    def build_dir(self) -> str:
        """Where the bootstrap unpacks and builds sources (Slurm on the head, Pyxis)."""
        return f"{self.root}/build"

    @property
    def applied_bundle(self) -> str:
        """`<sha256> <url>` of the bundle the head runs: its user data writes it at boot, its
        update timer after each bundle it applied."""
        return f"{self.state_dir}/applied-bundle"


NODE_LAYOUT = NodeLayout()
