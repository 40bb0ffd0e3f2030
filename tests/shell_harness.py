"""Runs the rendered bootstrap in a scratch root against stub system commands.

The node is simulated by a directory tree (GPUCLUSTER_ROOT, which every absolute path
in the scripts goes through), a state directory the stubs share (installed packages,
mounts, active units, holds) and a call log with one line per stub invocation. PATH
holds only the stubs and an allowlist of harmless real tools, so a command the
scripts use but the harness does not know fails loudly instead of touching this host.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster import names
from gpucluster.bootstrap import lustre_client, node_logs
from gpucluster.bootstrap.bundle import bundle_files
from gpucluster.bootstrap.container_runtime import enroot_downloads, pyxis_download
from gpucluster.config import ClusterConfig
from gpucluster.resolved import resolve
from gpucluster.resolved.node_layout import NODE_LAYOUT
from gpucluster.slurm.build import NodeBuild
from gpucluster.slurm.conf import SlurmSite
from gpucluster.slurm_release import PINNED_SLURM
from tests.shell_downloads import fixture_bytes, pyxis_fixture, slurm_package_fixture, slurm_source_fixture
from tests.shell_stubs import ALLOWED_TOOLS, CLOUDWATCH_AGENT_SHIM, STUBS
from tests.ubuntu_accounts import FILES as UBUNTU_ACCOUNTS
from tests.ubuntu_pam import FILES as UBUNTU_PAM_FILES

INSTANCE_ID = "i-0123456789abcdef0"
LOCAL_IPV4 = "10.80.1.23"
ASG_NAME = "demo-cluster-gpu-asg"
ASSET_BUCKET = "cdk-hnb659fds-assets-123456789012-us-east-2"
MUNGE_SECRET_ARN = (
    "arn:aws:secretsmanager:{region}:123456789012:secret:gpucluster/{name}/munge-key-0123456789ab-AbCdEf"
)
# The fingerprint of the FSx Lustre repository key the harness serves, unless a Node says otherwise.
LUSTRE_KEY_FINGERPRINT = "0123456789ABCDEF0123456789ABCDEF01234567"
MUNGE_SECRET = "Zq7" + "x" * 40 + "MUNGEKEYSENTINEL" + "y" * 60
DB_SECRET_ARN = (
    "arn:aws:secretsmanager:{region}:123456789012:secret:gpucluster/{name}/accounting-db-0123456789ab-AbCdEf"
)
DB_PASSWORD = "Pw4DbPASSWORDSENTINEL0123456789"
DB_HOST = "gpucluster-demo-accounting-0123.cabcdefghijk.us-east-2.rds.amazonaws.com"
JWT_SECRET_ARN = (
    "arn:aws:secretsmanager:{region}:123456789012:secret:"
    "gpucluster/{name}/rest-api-jwt-key-0123456789ab-AbCdEf"
)
JWT_KEY = "Jw7" + "k" * 20 + "JWTKEYSENTINEL" + "q" * 27

# Packages the Deep Learning AMI ships: those the kernel pin holds, and iptables (Docker's).
IMAGE_PACKAGES = {
    "iptables": "1.8.10-3ubuntu2",
    "linux-aws": "6.8.0.1021.21",
    "linux-image-aws": "6.8.0.1021.21",
    "linux-headers-aws": "6.8.0.1021.21",
    "linux-base": "4.5ubuntu9",
    "lustre-client-modules-aws": "2.15.5-1",
}


@dataclass
class Run:
    returncode: int
    output: str
    calls: list[str]

    def called(self, prefix: str) -> list[str]:
        return [call for call in self.calls if call.startswith(prefix)]

    def index(self, prefix: str) -> int:
        for position, call in enumerate(self.calls):
            if call.startswith(prefix):
                return position
        raise AssertionError(f"no call starting with {prefix!r} in:\n" + "\n".join(self.calls))


@dataclass
class Node:
    """One simulated instance: scratch root, stub state and knobs for what the host reports."""

    workdir: Path
    cfg: ClusterConfig
    kernel: str = "6.8.0-1021-aws"
    gpus: int = 8
    efa: int = 32
    nvme_mounted: bool = True
    # Whether the head has published the Slurm package on /home (for login and compute).
    publish_slurm_package: bool = True
    # Packages the image carries besides IMAGE_PACKAGES, name -> version.
    image_extra: dict[str, str] = field(default_factory=dict)
    corrupt_downloads: tuple[str, ...] = ()
    # The DLAMI ships the CloudWatch agent; False simulates an image without it.
    cloudwatch_agent: bool = True
    # The image's Lustre client module for the running kernel, and whether its build has kefalnd.
    lustre_module: bool = True
    kefalnd: bool = True
    # Whether the FSx repository has a module for the kernel, and the key it serves.
    lustre_available: bool = True
    lustre_key_fingerprint: str = LUSTRE_KEY_FINGERPRINT
    env: dict[str, str] = field(default_factory=dict)
    # DCGM on the image: what `dcgmi diag -j` prints and its exit status (its nvidia-dcgm
    # service ships too); None: an image without DCGM. `dcgm_bound` shortens every level's bound.
    dcgm_report: str | None = None
    dcgm_exit: int = 0
    dcgm_hangs: bool = False
    dcgm_bound: int | None = None

    def __post_init__(self) -> None:
        self.root = self.workdir / "root"
        self.state = self.workdir / "state"
        self.stubs = self.workdir / "stubs"
        self.allowed = self.workdir / "allowed"
        self.fixtures = self.workdir / "fixtures"
        self.bundle = self.workdir / "bundle"
        self.call_log = self.workdir / "calls.log"
        for directory in (self.root, self.stubs, self.allowed, self.fixtures, self.bundle):
            directory.mkdir(parents=True, exist_ok=True)
        for sub in ("dpkg", "enabled", "active"):
            (self.state / sub).mkdir(parents=True, exist_ok=True)
        for name, version in {**IMAGE_PACKAGES, **self.image_extra}.items():
            (self.state / "dpkg" / name).write_text(version + "\n")
        if self.lustre_module:
            modules = self.state / "modules" / self.kernel
            modules.mkdir(parents=True)
            for module in ("lnet", "ksocklnd", "lustre", *(("kefalnd",) if self.kefalnd else ())):
                (modules / module).write_text("")
        (self.root / "dev").mkdir()
        (self.root / "dev" / "console").write_text("")
        for path, text in {**UBUNTU_PAM_FILES, **UBUNTU_ACCOUNTS}.items():
            (self.root / path).parent.mkdir(parents=True, exist_ok=True)
            (self.root / path).write_text(text)
        self.secret_file = self.workdir / "munge-secret"
        self.secret_file.write_text(MUNGE_SECRET)
        self.db_secret_file = self.workdir / "db-secret"
        self.db_secret_file.write_text(f'{{"username": "slurm", "password": "{DB_PASSWORD}"}}')
        self.jwt_secret_file = self.workdir / "jwt-secret"
        self.jwt_secret_file.write_text(JWT_KEY)
        self._write_stubs()
        self._write_fixtures()
        self._write_parameters()
        self._write_efa_devices()
        if self.cloudwatch_agent:
            ctl = self.root / node_logs.AGENT_CTL.lstrip("/")
            ctl.parent.mkdir(parents=True)
            ctl.write_text(CLOUDWATCH_AGENT_SHIM)
            ctl.chmod(0o755)
        if self.nvme_mounted:
            nvme = self.root / "opt/dlami/nvme"
            nvme.mkdir(parents=True)
            (self.state / "mounts").write_text(f"{nvme}\n")
        self.site = SlurmSite(
            healthcheck_path=f"{self.stubs}:{self.allowed}",
            mount_root=str(self.root),
            dcgm_bound_seconds=self.dcgm_bound,
        )
        # The Slurm source the head downloads is the harness's small stand-in.
        self.slurm_source = slurm_source_fixture(NodeBuild())
        if "slurm-source" in self.corrupt_downloads:
            self.slurm_source += b"tampered"
        self.slurm = NodeBuild(sha256=hashlib.sha256(slurm_source_fixture(NodeBuild())).hexdigest())
        (self.fixtures / names.slurm_source_object_key(self.slurm.sha256)).write_bytes(self.slurm_source)
        self.files = bundle_files(resolve(self.cfg), self.site, self.slurm)
        for name, text in self.files.items():
            path = self.bundle / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            path.chmod(0o755 if name.endswith(".sh") else 0o644)

    def _write_stubs(self) -> None:
        for name, body in STUBS.items():
            stub = self.stubs / name
            stub.write_text(
                f'#!/bin/bash\nprintf "%s\\n" "{name} $*" >>"{self.call_log}"\n' + body.lstrip("\n")
            )
            stub.chmod(0o755)
        if self.dcgm_report is not None:
            report = self.workdir / "dcgm-report.json"
            report.write_text(self.dcgm_report)
            # bash's read -t stands in for sleep, which the harness stubs to return at once.
            answer = (
                "trap '' TERM\nread -r -t 60 <> <(:)\n"
                if self.dcgm_hangs
                else f'cat "{report}"\nexit {self.dcgm_exit}\n'
            )
            # start_dcgm starts the nvidia-dcgm unit (SIM_UNITS), whose process is nv-hostengine.
            running = '[[ "$*" == "-x nv-hostengine" ]]\n'
            dcgm_stubs = {"dcgmi": answer, "nv-hostengine": "exit 0\n", "pgrep": running}
            for name, body in dcgm_stubs.items():
                stub = self.stubs / name
                stub.write_text(f'#!/bin/bash\nprintf "%s\\n" "{name} $*" >>"{self.call_log}"\n' + body)
                stub.chmod(0o755)
        for tool in ALLOWED_TOOLS:
            real = shutil.which(tool)
            if real is not None:
                (self.allowed / tool).symlink_to(real)

    def _write_fixtures(self) -> None:
        resolved = resolve(self.cfg)
        downloads = enroot_downloads(resolved)
        pyxis = pyxis_download(resolved)
        files = {
            downloads.deb: fixture_bytes(downloads.deb),
            downloads.caps_deb: fixture_bytes(downloads.caps_deb),
            Path(pyxis.url).name: pyxis_fixture(self.cfg.software.pyxis_version),
            Path(node_logs.CLOUDWATCH_AGENT.url).name: fixture_bytes("amazon-cloudwatch-agent.deb"),
            Path(lustre_client.KEY_URL).name: f"pub {self.lustre_key_fingerprint}\n".encode(),
        }
        for name, data in files.items():
            if name in self.corrupt_downloads:
                data = data + b"tampered"
            (self.fixtures / name).write_bytes(data)

    def _write_parameters(self) -> None:
        prefix = f"/gpucluster/{self.cfg.name}/storage"
        secret_arn = MUNGE_SECRET_ARN.format(region=self.cfg.region, name=self.cfg.name)
        lines = [f"{prefix}/efs_id\tfs-0123456789abcdef0", f"{prefix}/munge_secret_arn\t{secret_arn}"]
        if self.cfg.storage.fsx_lustre is not None:
            lines += [
                f"{prefix}/fsx_dns_name\tfs-0fedcba9876543210.fsx.{self.cfg.region}.amazonaws.com",
                f"{prefix}/fsx_mount_name\tabcdefgh",
            ]
        database = resolve(self.cfg).accounting
        if database is not None and database.database is not None:
            db = database.database
            db_secret = DB_SECRET_ARN.format(region=self.cfg.region, name=self.cfg.name)
            lines += [
                f"{db.host_parameter}\t{DB_HOST}",
                f"{db.port_parameter}\t{db.port}",
                f"{db.secret_arn_parameter}\t{db_secret}",
            ]
        (self.state / "ssm").write_text("\n".join(lines) + "\n")

    def _write_efa_devices(self) -> None:
        driver = self.root / "sys/bus/pci/drivers/efa"
        driver.mkdir(parents=True)
        for index in range(self.efa):
            device = self.root / f"sys/class/infiniband/rdmap{index:02d}s0/device"
            device.mkdir(parents=True)
            (device / "driver").symlink_to(driver)

    @property
    def slurm_package(self) -> Path:
        build = self.slurm
        return self.root / build.package_dir.lstrip("/") / f"slurm-{PINNED_SLURM}-{build.build_key}.tar.gz"

    def run(self, role: str, group: str | None = None) -> Run:
        applied = self.root / NODE_LAYOUT.applied_bundle.lstrip("/")
        if role == "head" and not applied.exists():
            # What the head's user data records before the bootstrap: the bundle's S3 URL,
            # whose bucket also holds the Slurm source.
            applied.parent.mkdir(parents=True, exist_ok=True)
            applied.write_text(f"{'0' * 64} s3://{ASSET_BUCKET}/bundle.gz\n")
        if role != "head" and self.publish_slurm_package and not self.slurm_package.exists():
            self.slurm_package.parent.mkdir(parents=True, exist_ok=True)
            self.slurm_package.write_bytes(slurm_package_fixture(self.slurm))
        arguments = ["--role", role] + (["--group", group] if group is not None else [])
        return self.run_script("bin/bootstrap.sh", *arguments)

    def run_script(self, script: str, *arguments: str) -> Run:
        """Runs a bundle script as the node would; returns its output and the stub calls it made."""
        start = len(self.calls())
        command = [str(self.bundle / script), *arguments]
        env = {
            "PATH": f"{self.stubs}:{self.allowed}",
            "GPUCLUSTER_ROOT": str(self.root),
            "SIM_STATE": str(self.state),
            "SIM_FIXTURES": str(self.fixtures),
            "SIM_SECRET_FILE": str(self.secret_file),
            "SIM_SECRET_ARN": MUNGE_SECRET_ARN.format(region=self.cfg.region, name=self.cfg.name),
            "SIM_DB_SECRET_ARN": DB_SECRET_ARN.format(region=self.cfg.region, name=self.cfg.name),
            "SIM_DB_SECRET_FILE": str(self.db_secret_file),
            "SIM_JWT_SECRET_ARN": JWT_SECRET_ARN.format(region=self.cfg.region, name=self.cfg.name),
            "SIM_JWT_SECRET_FILE": str(self.jwt_secret_file),
            "SIM_JWT_PARAMETER": names.storage_parameter(self.cfg, "rest_api_jwt_secret_arn"),
            "SIM_ASSOC_USAGE": f"{self.root}{self.site.state_save_location}/assoc_usage",
            "SIM_LOG_AGENT_CONFIG": names.log_agent_config_parameter(self.cfg),
            "SIM_KERNEL": self.kernel,
            "SIM_GPUS": str(self.gpus),
            "SIM_EFA": str(self.efa),
            "SIM_INSTANCE_ID": INSTANCE_ID,
            "SIM_LOCAL_IPV4": LOCAL_IPV4,
            "SIM_ASG": ASG_NAME,
            "SIM_KEFALND_BUILT": "yes" if self.kefalnd else "no",
            "SIM_LUSTRE_AVAILABLE": "yes" if self.lustre_available else "no",
            "SIM_UNITS": "nvidia-dcgm" if self.dcgm_report is not None else "",
            **self.env,
        }
        result = subprocess.run(
            [str(self.allowed / "bash"), *command],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return Run(result.returncode, result.stdout + result.stderr, self.calls()[start:])

    def calls(self) -> list[str]:
        if not self.call_log.exists():
            return []
        return self.call_log.read_text().splitlines()

    def tree(self) -> dict[str, bytes]:
        """Every file under the scratch root, for before/after comparisons."""
        return {
            str(path.relative_to(self.root)): path.read_bytes()
            for path in sorted(self.root.rglob("*"))
            if path.is_file() and not path.is_symlink()
        }
