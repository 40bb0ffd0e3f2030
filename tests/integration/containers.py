"""Containers for the real-Slurm suite: a tiny image the suite makes itself (no registry),
and Enroot installed for one test cluster as the bootstrap leaves a compute node.

Enroot goes under site_files.node_prefix, which stands in for the compute node's `/`:
programs in usr/bin (on slurmd's PATH, where Pyxis finds `enroot`), /etc/enroot with the
enroot.conf the bootstrap renders (its NVMe paths under the same prefix) and the hooks
the bootstrap enables. Nothing else differs from a node.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gpucluster.bootstrap.container_runtime import COMPUTE_ENROOT, ENROOT_HOOKS, EnrootPaths, enroot_conf
from gpucluster.config import ClusterConfig, ComputeGroupConfig
from gpucluster.resolved import resolve
from tests.integration.host import run
from tests.integration.installs import SlurmInstall
from tests.integration.prerequisites import unavailable
from tests.integration.site_files import node_local_binds, node_prefix
from tests.integration.vendor_builds import ENROOT_CACHE

IMAGE_CACHE = ENROOT_CACHE / "images"
IMAGE_OS_ID = "gpucluster-test-image"
IMAGE_OS_RELEASE = f'ID={IMAGE_OS_ID}\nNAME="gpucluster test image"\nVERSION_ID="1"\n'
# As an imported NGC PyTorch image has it: `enroot import` writes the image's ENV into
# /etc/environment, and PYTORCH_VERSION is what Pyxis and the 50-slurm-pytorch hook key on.
IMAGE_ENVIRONMENT = "PATH=/bin\nPYTORCH_VERSION=2.5.0\n"
IMAGE_ETC = {
    "os-release": IMAGE_OS_RELEASE,
    "environment": IMAGE_ENVIRONMENT,
    "passwd": "root:x:0:0:root:/root:/bin/sh\n",
    "group": "root:x:0:\n",
}


def _static_busybox() -> Path:
    found = shutil.which("busybox")
    if found is None:
        unavailable("make the test image", "busybox is missing (apt-get install busybox-static)")
        raise AssertionError("unreachable")
    # The image has no C library: a dynamically linked busybox would not start in it.
    if "INTERP" in run("readelf", "-l", found).stdout:
        unavailable("make the test image", f"{found} is not static (apt-get install busybox-static)")
    return Path(found)


def busybox_image(cache: Path = IMAGE_CACHE) -> Path:
    """A squashfs image of a busybox root with an /etc/os-release of its own, made once per
    busybox binary and contents, with mksquashfs as `enroot import` makes images."""
    if shutil.which("mksquashfs") is None:
        unavailable("make the test image", "mksquashfs is missing (apt-get install squashfs-tools)")
    busybox = _static_busybox()
    digest = hashlib.sha256(busybox.read_bytes())
    for name, text in sorted(IMAGE_ETC.items()):
        digest.update(f"{name}\0{text}\0".encode())
    image = cache / f"busybox-{digest.hexdigest()[:16]}.sqsh"
    if image.is_file():
        return image
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        rootfs = Path(scratch) / "rootfs"
        (rootfs / "bin").mkdir(parents=True)
        (rootfs / "etc").mkdir()
        (rootfs / "root").mkdir()
        shutil.copy2(busybox, rootfs / "bin" / "busybox")
        for applet in run(str(busybox), "--list").stdout.split():
            if applet != "busybox":
                (rootfs / "bin" / applet).symlink_to("busybox")
        for name, text in IMAGE_ETC.items():
            (rootfs / "etc" / name).write_text(text)
        built = Path(scratch) / "image.sqsh"
        run(
            "mksquashfs",
            str(rootfs),
            str(built),
            "-noappend",
            "-all-root",
            "-quiet",
            "-no-progress",
            timeout=120,
        )
        os.replace(built, image)
    return image


@dataclass(frozen=True)
class EnrootNode:
    """Enroot as installed on the compute nodes of one test cluster."""

    prefix: Path
    paths: EnrootPaths

    @property
    def bin_dir(self) -> Path:
        return self.prefix / "usr" / "bin"

    @property
    def sysconf_dir(self) -> Path:
        return self.prefix / "etc" / "enroot"


def _make_enroot_directories(paths: EnrootPaths) -> None:
    # As configure_enroot: sticky, world-writable parents of the per-user directories.
    for directory in paths.directories:
        Path(directory).mkdir(parents=True, exist_ok=True)
        Path(directory).chmod(0o1777)


def enroot_paths(cluster_root: Path) -> EnrootPaths:
    """The compute nodes' Enroot directories, under the prefix that stands in for their `/`."""
    prefix = node_prefix(cluster_root)
    return EnrootPaths(*(f"{prefix}{directory}" for directory in COMPUTE_ENROOT.directories))


def make_node_enroot_directories(cluster_root: Path, node: str) -> None:
    """The sticky Enroot parents on test node `node`'s own local disk (its NVMe), as
    configure_enroot leaves them before slurmd starts."""
    local = [
        node_local_path(cluster_root, node, directory) for directory in enroot_paths(cluster_root).directories
    ]
    _make_enroot_directories(EnrootPaths(*local))


def install_enroot(
    build: Path, cfg: ClusterConfig, group: ComputeGroupConfig, cluster_root: Path
) -> EnrootNode:
    """The build's programs and configuration, the rendered enroot.conf and the enabled hooks,
    as install_enroot and configure_enroot (bootstrap lib/containers.sh) leave a node, and the
    NVMe directories on the host's disk (for `enroot` here); each test node makes its own
    (make_node_enroot_directories)."""
    prefix = node_prefix(cluster_root)
    paths = enroot_paths(cluster_root)
    node = EnrootNode(prefix=prefix, paths=paths)
    if (node.bin_dir / "enroot").is_file():
        return node
    _make_enroot_directories(paths)
    shutil.copytree(build / "etc" / "enroot", node.sysconf_dir)
    shutil.copytree(build / "usr" / "share" / "enroot", prefix / "usr" / "share" / "enroot")
    (node.sysconf_dir / "enroot.conf").write_text(
        enroot_conf(resolve(cfg), f"compute group {group.name}", paths)
    )
    for hook in ENROOT_HOOKS:
        shutil.copy2(
            prefix / "usr" / "share" / "enroot" / "hooks.d" / hook, node.sysconf_dir / "hooks.d" / hook
        )
    node.bin_dir.mkdir(parents=True, exist_ok=True)
    for program in (build / "usr" / "bin").iterdir():
        if program.name != "enroot":
            (node.bin_dir / program.name).symlink_to(program)
    # The enroot script names its configuration directory as built; relocating it by
    # rewriting that path is what Enroot's own `make dist` does.
    built_sysconf = str(build / "etc" / "enroot")
    script = (build / "usr" / "bin" / "enroot").read_text()
    assert built_sysconf in script, f"{build}/usr/bin/enroot does not name {built_sysconf}"
    (node.bin_dir / "enroot").write_text(script.replace(built_sysconf, str(node.sysconf_dir)))
    (node.bin_dir / "enroot").chmod(0o755)
    return node


def node_local_path(cluster_root: Path, node: str, shared: str) -> str:
    """Where test node `node` keeps `shared` (a path under one of its node-local binds)."""
    binds = node_local_binds(cluster_root, node)
    for source, target in binds:
        if shared == str(target) or shared.startswith(f"{target}/"):
            return str(source) + shared.removeprefix(str(target))
    raise AssertionError(f"{shared} is on no node-local bind mount of {node}: {binds}")


def enroot(
    install: SlurmInstall, node: EnrootNode, *args: str, timeout: float = 60, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """`enroot` in the Slurm install it was built in, as a user on a compute node runs it."""
    env = {"PATH": f"{node.bin_dir}:{os.environ['PATH']}", "HOME": "/root"}
    return run(*install.command([str(node.bin_dir / "enroot"), *args]), env=env, timeout=timeout, check=check)
