"""Each shared name format is written once: a second, hand-written copy fails here.

The scan covers the source tree (Python, shell, Jinja, systemd units) and the rendered
bootstrap bundle of every example. Each detector is itself checked against the copies
that used to exist, so a detector that matches nothing cannot pass silently.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from gpucluster import names
from gpucluster.agents import cluster_names, maintenance, node_cleanup, runtime
from gpucluster.bootstrap.bundle import bundle_files
from gpucluster.config import ClusterConfig
from gpucluster.config.loader import load_config
from gpucluster.resolved import resolve
from gpucluster.slurm import conf as slurm_conf
from gpucluster.slurm_release import PINNED_SHA256
from tests.slurm.conf_text import conf_line_of

REPO = Path(__file__).resolve().parent.parent
PRODUCTION_DIRS = ("gpucluster", "templates")
SOURCE_SUFFIXES = {".py", ".sh", ".j2", ".service", ".timer"}
THIS_FILE = Path(__file__).resolve()

# A group-like value, a dash, then an instance-id-like value: f"{group}-{instance_id}",
# "${GROUP}-$(instance_id)", a regex "(?P<group>...)-(?P<instance_id>i-[0-9a-f]...".
_NODE_NAME_COPY = re.compile(
    r"(?i)(?:[{$]\{?[a-z_.]*group[a-z_.]*\}?|group>[^\n]*\))-(?:[{$][{(]?[a-z_.]*(?:instance|iid)"
    r"|\(\?P<instance_id>|i-\[0-9a-f\])"
)
_PARAMETER_PATH_COPY = re.compile(r"/gpucluster/(?:[{%]|\$\{)")
_TAG_KEY_COPY = re.compile(
    r"""["'](?:aws:ResourceTag/)?gpucluster:(?:cluster|role|group|bootstrap-failure)["']"""
)

_BUNDLE_KEY_COPY = re.compile(r"hnb659fds|[\"'/]bundle\.tar\.gz[\"']|\{digest\}\.(?:tar\.)?gz")
_AGENT_SETTING_COPY = re.compile(r"[\"'$]GPUCLUSTER_(?:CLUSTER|REGION)\b|^GPUCLUSTER_(?:CLUSTER|REGION)=")
_BOOTSTRAP_LOG_COPY = re.compile(r"/var/log/gpucluster-bootstrap\.log")
_AGENT_ENV_FILE_COPY = re.compile(r"/etc/gpucluster/agents\.env")
# The imported image's file name: the .sqsh suffix glued to a value, or the rule that turns
# other characters into '+'.
_SQUASHFS_NAME_COPY = re.compile(
    r"""[}]\.sqsh|%s\.sqsh|["']\.sqsh["']|\[\^A-Za-z0-9\._-\](?:/\+|["'],\s*["']\+)"""
)

_NODE_ROOT_COPY = re.compile(r"/opt/gpucluster\b")
_GROUP_NAME_COPY = re.compile(r"\[a-z\]\[a-z0-9\]\{0,19\}")
_CLUSTER_NAME_COPY = re.compile(r"\[a-z\](?:\[a-z0-9-\]\{0,19\}|\(\?:\[a-z0-9-\])")

# name -> (detector, where to look, files allowed to hold the one definition, copies it
# must catch). Tests may pin SSM paths and tag keys as literal expected values (that is
# the contract they check); the node name they build through gpucluster.names.
FORMATS = {
    "compute node name": (
        _NODE_NAME_COPY,
        (*PRODUCTION_DIRS, "tests"),
        {"gpucluster/agents/cluster_names.py"},
        [
            'NODE_NAME="${GROUP}-$(instance_id)"',
            'return f"{group}-{instance_id}"',
            'name = f"{self.group.name}-{iid}"',
            r're.compile(r"^(?P<group>[a-z][a-z0-9]{0,19})-(?P<instance_id>i-[0-9a-f]{8,17})$")',
        ],
    ),
    "SSM parameter path": (
        _PARAMETER_PATH_COPY,
        PRODUCTION_DIRS,
        {"gpucluster/agents/cluster_names.py"},
        [
            'return f"/gpucluster/{cluster}/compute"',
            '"no compute group parameters under /gpucluster/%s/compute"',
        ],
    ),
    "tag key": (
        _TAG_KEY_COPY,
        PRODUCTION_DIRS,
        {"gpucluster/names.py"},
        ['{"aws:ResourceTag/gpucluster:cluster": cfg.name}', '**{"gpucluster:group": group.name}'],
    ),
    "bundle object key": (
        _BUNDLE_KEY_COPY,
        PRODUCTION_DIRS,
        {"gpucluster/names.py"},
        [
            'url=f"s3://cdk-hnb659fds-assets-{account}-{cfg.region}/{digest}.gz"',
            'url=f"s3://{PLACEHOLDER_BUCKET}/{digest}.tar.gz"',
            '(staging / "bundle.tar.gz").write_bytes(archive)',
        ],
    ),
    "agents' setting keys": (
        _AGENT_SETTING_COPY,
        PRODUCTION_DIRS,
        {"gpucluster/agents/cluster_names.py"},
        [
            "GPUCLUSTER_CLUSTER={{ cfg.name }}",
            'self.require("GPUCLUSTER_REGION", "--region", self._args.region)',
            'help="cluster name (default: $GPUCLUSTER_CLUSTER)"',
        ],
    ),
    "bootstrap log": (
        _BOOTSTRAP_LOG_COPY,
        PRODUCTION_DIRS,
        {"gpucluster/bootstrap/node_logs.py"},
        ["exec > >(tee -a /var/log/gpucluster-bootstrap.log | logger -t gpucluster -s 2>/dev/console) 2>&1"],
    ),
    # The import job keeps a shell copy for an image given on its command line;
    # tests/jobs/test_import_image_job.py checks it agrees with gpucluster.names.squashfs_name.
    "imported image file name": (
        _SQUASHFS_NAME_COPY,
        PRODUCTION_DIRS,
        {"gpucluster/names.py", "templates/jobs/import-image.sbatch.j2"},
        [
            "printf '%s.sqsh\\n' \"${ref//[^A-Za-z0-9._-]/+}\"",
            'final="${IMAGE_DIR}/${name}.sqsh"',
            'return f"{image_dir(cfg)}/{reference}.sqsh"',
            'sqsh = directory + "/" + name + ".sqsh"',
            're.sub(r"[^A-Za-z0-9._-]", "+", image.split("#")[-1])',
        ],
    ),
    "agents' settings file": (
        _AGENT_ENV_FILE_COPY,
        PRODUCTION_DIRS,
        {"gpucluster/agents/cluster_names.py"},
        ['AGENT_ENV_FILE = "/etc/gpucluster/agents.env"', "EnvironmentFile=/etc/gpucluster/agents.env"],
    ),
    "group name": (
        _GROUP_NAME_COPY,
        PRODUCTION_DIRS,
        {"gpucluster/agents/cluster_names.py"},
        ['r"^[a-z][a-z0-9]{0,19}$",', 'GROUP = re.compile(r"[a-z][a-z0-9]{0,19}")'],
    ),
    "cluster name": (
        _CLUSTER_NAME_COPY,
        PRODUCTION_DIRS,
        {"gpucluster/agents/cluster_names.py"},
        [
            'if not re.match(r"^[a-z][a-z0-9-]{0,19}$", value) or value.endswith("-"):',
            '_CLUSTER = re.compile(r"^[a-z][a-z0-9-]{0,19}$")',
            'NAME = r"[a-z](?:[a-z0-9-]{0,18}[a-z0-9])?"',
        ],
    ),
    # Every path under it comes from gpucluster.resolved.node_layout.
    "node root": (
        _NODE_ROOT_COPY,
        PRODUCTION_DIRS,
        {
            "gpucluster/node_root.py",
            # The schema's description of `validation` (tests/golden/config-schema.json) tells
            # users where the jobs are; it is documentation, not a path the code uses.
            "gpucluster/config/validation.py",
        },
        [
            'JOBS_DIR = "/opt/gpucluster/jobs"',
            "ExecStart=/usr/bin/python3 /opt/gpucluster/bundle/agents/node_cleanup.py",
            'DOWNLOAD_DIR="${R}/opt/gpucluster/downloads"',
        ],
    ),
}


def _sources(dirs: tuple[str, ...]) -> list[Path]:
    return sorted(
        path
        for top in dirs
        for path in (REPO / top).rglob("*")
        if path.is_file() and path.suffix in SOURCE_SUFFIXES and path.resolve() != THIS_FILE
    )


@pytest.mark.parametrize("name", FORMATS)
def test_the_detector_catches_a_hand_written_copy(name):
    detector, _, _, copies = FORMATS[name]
    for copy in copies:
        assert detector.search(copy), f"{name}: the detector misses {copy!r}"


@pytest.mark.parametrize("name", FORMATS)
def test_the_source_tree_holds_one_definition(name):
    detector, dirs, homes, _ = FORMATS[name]
    found = []
    for path in _sources(dirs):
        relative = str(path.relative_to(REPO))
        if relative in homes:
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if detector.search(line):
                found.append(f"{relative}:{number}: {line.strip()}")
    assert not found, f"{name} written again outside {sorted(homes)}; import it instead:\n" + "\n".join(found)


@pytest.mark.parametrize("example", ["default", "mixed"])
def test_the_rendered_bundle_holds_no_copy_of_the_node_name(example):
    files = bundle_files(resolve(load_config(REPO / "examples" / f"{example}.yaml")))
    copies = [
        f"{path}: {line.strip()}"
        for path, text in files.items()
        if path != "agents/gpucluster/agents/cluster_names.py"
        for line in text.splitlines()
        if _NODE_NAME_COPY.search(line)
    ]
    assert not copies, "\n".join(copies)
    # The node computes its name with the function rendered from the one format.
    rendered = cluster_names.COMPUTE_NODE_NAME_FORMAT.format(group="${1}", instance_id="${2}")
    assert f'compute_node_name() {{ echo "{rendered}"; }}' in files["conf/cluster.sh"]
    assert 'compute_node_name "${GROUP}"' in files["lib/roles.sh"]


def test_the_name_a_node_gets_is_the_name_the_cleanup_agent_recognizes():
    name = names.compute_node_name("gpu", "i-0123456789abcdef0")
    match = node_cleanup.COMPUTE_NODE_NAME.match(name)
    assert match and match.group("group", "instance_id") == ("gpu", "i-0123456789abcdef0")
    with pytest.raises(ValueError, match="not an EC2 instance id"):
        names.compute_node_name("gpu", "i-0123456789abcdef")  # 16 digits: no EC2 id has them


def test_the_group_feature_and_partition_agree_across_slurm_conf_slurmd_and_the_maintenance_agent():
    cfg = load_config(REPO / "examples" / "mixed.yaml")
    text = slurm_conf.render_slurm_files(resolve(cfg)).slurm_conf
    start = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
    for group in cfg.compute_groups:
        feature = names.group_feature(group.name)
        assert f"Nodeset={slurm_conf.nodeset(resolve(cfg).group(group.name))} Feature={feature}\n" in text
        assert f" Feature={feature}," in conf_line_of(cfg, group)
        assert f"Feature={feature}" in maintenance.anchor_command(group.name)
        partition = names.group_partition(group.name)
        assert (
            f"\nPartitionName={partition} Nodes={slurm_conf.nodeset(resolve(cfg).group(group.name))} " in text
        )
        command = maintenance.reservation_command(group.name, start, start + timedelta(hours=1))
        assert f"PartitionName={partition}" in command


def test_the_bundle_key_is_the_key_the_cdk_writes(synthesized):
    result = synthesized["default"]
    slurm_hash = names.slurm_source_object_key(PINNED_SHA256).split(".")[0]
    staged = result.outdir.glob(f"asset.*.{names.BUNDLE_FILE.split('.', 1)[1]}")
    (asset_hash,) = [path.name.split(".")[1] for path in staged if slurm_hash not in path.name]
    (cluster,) = [t for name, t in result.templates.items() if name.endswith("-cluster")]
    assert f"/{names.bundle_object_key(asset_hash)}" in json.dumps(cluster)


def test_the_slurm_source_key_is_the_key_the_cdk_writes(synthesized):
    """The head computes the source's S3 key from the pin (conf/cluster.sh SLURM_SOURCE_KEY);
    the CDK stages the vendored tarball under that hash and the head's role may read it."""
    result = synthesized["default"]
    key = names.slurm_source_object_key(PINNED_SHA256)
    (staged,) = result.outdir.glob(f"asset.{key.split('.')[0]}.*")
    assert hashlib.sha256(staged.read_bytes()).hexdigest() == PINNED_SHA256
    (cluster,) = [t for name, t in result.templates.items() if name.endswith("-cluster")]
    assert f"/{key}" in json.dumps(cluster)


def test_the_readme_names_what_the_code_defines():
    readme = (REPO / "README.md").read_text()
    placeholders = ClusterConfig.model_construct(name="<name>", region="<region>")
    documented = [
        names.COMPUTE_NODE_NAME_FORMAT.format(group="<group>", instance_id="<instance id>"),
        f"'{names.CLUSTER_TAG}'",
        f"`{names.BOOTSTRAP_FAILURE_TAG}`",
        f"`{cluster_names.parameter_prefix('<name>')}/",
        f"`{names.session_document_name(placeholders)}`",
        f"`{names.people_policy_name(placeholders)}`",
        f"Key={names.RUN_AS_TAG},",
    ]
    for name in documented:
        assert name in readme, f"README does not name {name!r} as the code writes it"


@pytest.mark.parametrize("name", ["a", "demo", "p5en-cluster", "a" * 20, "a" * 21, "a-", "1a", "A", "a_b"])
def test_the_config_and_the_agents_accept_the_same_cluster_names(name):
    raw = yaml.safe_load((REPO / "examples" / "default.yaml").read_text())
    try:
        ClusterConfig.model_validate({**raw, "name": name})
        config_accepts = True
    except ValidationError:
        config_accepts = False
    assert (
        config_accepts
        == bool(runtime._CLUSTER.match(name))
        == (name in ("a", "demo", "p5en-cluster", "a" * 20))
    )
