"""`gpucluster render CONFIG -o DIR`: every file a node would run or install, readable on disk.

DIR/bundle/ holds the bootstrap bundle exactly as it is archived (its files/<role>/
trees mirror where each file lands on the node); DIR/user-data/ holds the thin
user-data of each role. The bundle URL is only known after `cdk deploy` uploads the
asset, so the user-data shows a placeholder bucket with the bundle's real sha256.
"""

from __future__ import annotations

from pathlib import Path

from gpucluster import names
from gpucluster.bootstrap.userdata import (
    BundleRef,
    archive_sha256,
    bundle_archive,
    render_bundle,
    render_user_data,
)
from gpucluster.config import ClusterConfig
from gpucluster.resolved import ResolvedCluster, resolve

PLACEHOLDER_BUCKET = "<cdk-assets-bucket>"


def placeholder_bundle_ref(bundle: dict[str, str]) -> BundleRef:
    digest = archive_sha256(bundle_archive(bundle))
    return BundleRef(url=f"s3://{PLACEHOLDER_BUCKET}/{names.bundle_object_key(digest)}", sha256=digest)


def user_data_by_target(resolved: ResolvedCluster, ref: BundleRef) -> dict[str, str]:
    """Thin user-data keyed by target: head, login, compute-<group>."""
    scripts = {
        "head": render_user_data(resolved, "head", None),
        "login": render_user_data(resolved, "login", ref),
    }
    for group in resolved.groups:
        scripts[f"compute-{group.name}"] = render_user_data(resolved, "compute", ref, group)
    return scripts


def render_to_dir(cfg: ClusterConfig, outdir: Path) -> list[Path]:
    """Writes the bundle and every role's user-data under `outdir`; returns the files written."""
    resolved = resolve(cfg)
    bundle = render_bundle(resolved)
    ref = placeholder_bundle_ref(bundle)
    written: list[Path] = []
    for name, text in sorted(bundle.items()):
        written.append(_write(outdir / "bundle" / name, text, executable=_is_script(name, text)))
    for target, text in user_data_by_target(resolved, ref).items():
        written.append(_write(outdir / "user-data" / f"{target}.sh", text, executable=True))
    return written


def _is_script(name: str, text: str) -> bool:
    return name.endswith(".sh") or text.startswith("#!")


def _write(path: Path, text: str, *, executable: bool) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755 if executable else 0o644)
    return path
