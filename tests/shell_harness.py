"""Runs the rendered bootstrap in a scratch root against stub system commands.

The node is simulated by a directory tree (GPUCLUSTER_ROOT, which every absolute path
in the scripts goes through), a state directory the stubs share (installed packages,
mounts, active units, holds) and a call log with one line per stub invocation. PATH
holds only the stubs and an allowlist of harmless real tools, so a command the
scripts use but the harness does not know fails loudly instead of touching this host.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import shutil
import subprocess
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

from gpucluster import lustre_client, names, node_logs
from gpucluster.bootstrap import bundle_files, enroot_downloads, pyxis_download
from gpucluster.config import ClusterConfig, SoftwareConfig
from gpucluster.slurm_conf import SlurmSite

# Real tools the scripts may run: they only read or write inside the scratch root.
ALLOWED_TOOLS = (
    "bash",
    "cat",
    "cmp",
    "cp",
    "mv",
    "rm",
    "mkdir",
    "chmod",
    "install",
    "grep",
    "awk",
    "sed",
    "tar",
    "gzip",
    "sha256sum",
    "mktemp",
    "tr",
    "head",
    "tail",
    "wc",
    "touch",
    "readlink",
    "basename",
    "dirname",
    "date",
    "nproc",
    "sort",
    "uniq",
    "cut",
    "env",
    "ls",
    "ln",
    "true",
    "false",
    "id",
    # Bounds the head update's calls; it runs the stubs like any other command.
    "timeout",
)

SLURM_DEBIAN_VERSION = "23.11.4-1.2ubuntu5"
INSTANCE_ID = "i-0123456789abcdef0"
LOCAL_IPV4 = "10.80.1.23"
ASG_NAME = "demo-cluster-gpu-asg"
MUNGE_SECRET_ARN = (
    "arn:aws:secretsmanager:{region}:123456789012:secret:gpucluster/{name}/munge-key-0123456789ab-AbCdEf"
)
# The fingerprint of the FSx Lustre repository key the harness serves, unless a Node says otherwise.
LUSTRE_KEY_FINGERPRINT = "0123456789ABCDEF0123456789ABCDEF01234567"
MUNGE_SECRET = "Zq7" + "x" * 40 + "MUNGEKEYSENTINEL" + "y" * 60

# Packages the Deep Learning AMI ships that the kernel pin holds.
IMAGE_PACKAGES = {
    "linux-aws": "6.8.0.1021.21",
    "linux-image-aws": "6.8.0.1021.21",
    "linux-headers-aws": "6.8.0.1021.21",
    "linux-base": "4.5ubuntu9",
    "lustre-client-modules-aws": "2.15.5-1",
}

# Slurm's client commands (sinfo, scontrol, srun, even with --version) read a configuration
# before anything else; a configless node has none until slurmd or sackd fetched it, and
# then they die as Slurm 22.05.8 did here: "fatal: Could not establish a configuration source".
CLIENT_PRELUDE = r"""
if [[ ! -f "$GPUCLUSTER_ROOT/etc/slurm/slurm.conf" && ! -f "$SIM_STATE/active/slurmd" &&
  ! -f "$SIM_STATE/active/sackd" ]]; then
  echo "$(basename "$0"): error: fetch_config: DNS SRV lookup failed" >&2
  echo "$(basename "$0"): fatal: Could not establish a configuration source" >&2
  exit 1
fi
"""

# The agent's control script at its real path, forwarding to the call-logging stub.
CLOUDWATCH_AGENT_SHIM = "#!/bin/bash\nexec amazon-cloudwatch-agent-ctl \"$@\"\n"

STUBS: dict[str, str] = {
    "apt-get": r"""
install_cloudwatch_agent_shim() {
  local ctl="$GPUCLUSTER_ROOT/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl"
  mkdir -p "$(dirname "$ctl")"
  printf '#!/bin/bash\nexec amazon-cloudwatch-agent-ctl "$@"\n' >"$ctl"
  chmod 0755 "$ctl"
}
args=("$@"); install=no
for ((i = 0; i < ${#args[@]}; i++)); do
  a="${args[i]}"
  case "$a" in
    -o) i=$((i + 1)) ;;
    install) install=yes ;;
    -*|update) ;;
    *)
      [[ "$install" == yes ]] || continue
      if [[ "$a" == *.deb ]]; then
        [[ -f "$a" ]] || { echo "E: Unsupported file $a" >&2; exit 100; }
        base="$(basename "$a" .deb)"; name="${base%%_*}"; rest="${base#*_}"; version="${rest%_*}"
      elif [[ "$a" == *=* ]]; then
        name="${a%%=*}"; version="${a#*=}"
      else
        name="$a"; version="1.0-1"
      fi
      echo "$version" >"$SIM_STATE/dpkg/$name"
      # The FSx repository's module package for the running kernel puts its modules there.
      if [[ "$name" == "lustre-client-modules-$SIM_KERNEL" ]]; then
        mkdir -p "$SIM_STATE/modules/$SIM_KERNEL"
        for m in lnet ksocklnd lustre; do touch "$SIM_STATE/modules/$SIM_KERNEL/$m"; done
        [[ "$SIM_KEFALND_BUILT" == yes ]] && touch "$SIM_STATE/modules/$SIM_KERNEL/kefalnd"
      fi
      if [[ "$name" == amazon-cloudwatch-agent ]]; then
        install_cloudwatch_agent_shim
      fi
      if [[ "$name" == libslurm-dev ]]; then
        mkdir -p "$GPUCLUSTER_ROOT/usr/include/slurm"; touch "$GPUCLUSTER_ROOT/usr/include/slurm/spank.h"
      fi
      ;;
  esac
done
""",
    # Fails like the real agent when the configuration parameter cannot be read.
    "amazon-cloudwatch-agent-ctl": r"""
[[ " $* " == *" -a fetch-config "* && " $* " == *" -c ssm:$SIM_LOG_AGENT_CONFIG "* ]] ||
  { echo "E! fetch-config failed: $*" >&2; exit 1; }
touch "$SIM_STATE/active/amazon-cloudwatch-agent"
""",
    "apt-mark": r"""
case "$1" in
  hold) shift; for p in "$@"; do echo "$p" >>"$SIM_STATE/holds"; done ;;
  showhold) cat "$SIM_STATE/holds" 2>/dev/null || true ;;
  *) exit 1 ;;
esac
""",
    "apt-cache": r"""
[[ "$1" == madison ]] || exit 1
if [[ "$2" == lustre-client-modules-* ]]; then
  # Like apt: nothing on stdout for a package no repository has.
  list="$GPUCLUSTER_ROOT/etc/apt/sources.list.d/fsxlustreclientrepo.list"
  [[ "$SIM_LUSTRE_AVAILABLE" == yes && -f "$list" ]] &&
    echo " $2 | 2.15.6-1 | https://fsx-lustre-client-repo.s3.amazonaws.com/ubuntu noble/main amd64 Packages"
  exit 0
fi
for v in $SIM_SLURM_AVAILABLE; do
  echo " $2 | $v | http://archive.ubuntu.com/ubuntu noble/universe amd64 Packages"
done
""",
    "dpkg-query": r"""
fmt=""; pkg=""
for a in "$@"; do case "$a" in -f=*) fmt="${a#-f=}" ;; -W) ;; *) pkg="$a" ;; esac; done
f="$SIM_STATE/dpkg/$pkg"
[[ -f "$f" ]] || { echo "dpkg-query: no packages found matching $pkg" >&2; exit 1; }
v="$(cat "$f")"
out="${fmt//\$\{Status\}/install ok installed}"; out="${out//\$\{Version\}/$v}"
printf "$out"
""",
    # Locks are free unless SIM_LOCK_BUSY_FROM/_FOR name a run of calls (1-based) that find
    # them held, as when apt-daily starts after the bootstrap's first look.
    "fuser": r"""
calls=$(( $(cat "$SIM_STATE/fuser-calls" 2>/dev/null || echo 0) + 1 ))
echo "$calls" >"$SIM_STATE/fuser-calls"
from=${SIM_LOCK_BUSY_FROM:-0}
((calls >= from && calls < from + ${SIM_LOCK_BUSY_FOR:-0}))
""",
    "systemctl": r"""
quiet=""; [[ "${2:-}" == --quiet ]] && quiet=yes
case "$1" in
  is-enabled) [[ -f "$SIM_STATE/enabled/${!#}" ]] ;;
  is-active)
    unit="${!#}"
    # A unit that systemd reports active once and that then exits, as a Type=simple
    # slurmd does when it cannot load a plugin.
    if [[ "$unit" == "${SIM_EXITS_AFTER_START:-none}" && -f "$SIM_STATE/active/$unit" ]]; then
      if [[ -f "$SIM_STATE/seen-$unit" ]]; then rm -f "$SIM_STATE/active/$unit"; exit 3; fi
      touch "$SIM_STATE/seen-$unit"
    fi
    [[ -f "$SIM_STATE/active/$unit" ]] ;;
  enable) touch "$SIM_STATE/enabled/$2" ;;
  start|restart)
    [[ "$2" == "${SIM_FAIL_UNIT:-none}" ]] && exit 1
    touch "$SIM_STATE/active/$2" ;;
  daemon-reload) ;;
  *) exit 1 ;;
esac
""",
    "aws": r"""
[[ "$1" == --region ]] && shift 2
case "$1 $2" in
  "secretsmanager get-secret-value")
    # Only the ARN the Storage stack publishes names the secret (its name is per stack).
    [[ " $* " == *" --secret-id $SIM_SECRET_ARN "* ]] ||
      { echo "ResourceNotFoundException: $*" >&2; exit 254; }
    cat "$SIM_SECRET_FILE"; echo ;;
  "ssm get-parameters-by-path") cat "$SIM_STATE/ssm" ;;
  # The bundle pointer (names.bundle_parameter) and the bundles it names, as files.
  "ssm get-parameter") cat "$SIM_STATE/bundle-pointer" ;;
  "s3 cp")
    args=("$@"); src="${args[-2]}"; dst="${args[-1]}"
    [[ -f "$SIM_FIXTURES/$(basename "$src")" ]] || { echo "fatal error: 404 $src" >&2; exit 1; }
    cp "$SIM_FIXTURES/$(basename "$src")" "$dst" ;;
  "ec2 create-tags") ;;
  "autoscaling describe-auto-scaling-instances") echo "$SIM_ASG" ;;
  "autoscaling complete-lifecycle-action") ;;
  "autoscaling record-lifecycle-action-heartbeat")
    [[ -z "${SIM_HEARTBEAT_FAIL:-}" ]] || {
      echo "An error occurred (AccessDenied) when calling RecordLifecycleActionHeartbeat" >&2
      exit 254
    } ;;
  *) echo "aws stub: unexpected $*" >&2; exit 1 ;;
esac
""",
    "mount": r"""
[[ -d "$1" ]] || { echo "mount: $1: mount point does not exist" >&2; exit 32; }
echo "$1" >>"$SIM_STATE/mounts"
""",
    "mountpoint": r"""
target="${!#}"
grep -qxF "$target" "$SIM_STATE/mounts" 2>/dev/null
""",
    "mount.lustre": "exit 0\n",
    "hostname": r"""cat "$SIM_STATE/hostname" 2>/dev/null || echo "ip-10-80-1-23" """,
    "hostnamectl": r"""[[ "$1" == set-hostname ]] && echo "$2" >"$SIM_STATE/hostname" """,
    "uname": r"""[[ "$1" == -r ]] && echo "$SIM_KERNEL" """,
    "sysctl": r"""
case "$1" in
  -p) grep -E '^[a-z]' "$2" | while IFS=' =' read -r key value; do
        echo "$value" >"$SIM_STATE/sysctl-$key"; done ;;
  -n) cat "$SIM_STATE/sysctl-$2" 2>/dev/null || echo 1 ;;
  *) exit 1 ;;
esac
""",
    "curl": r"""
url=""; out=""
while (($# > 0)); do
  case "$1" in -o) out="$2"; shift ;; -H|-X) shift ;; http*) url="$1" ;; esac
  shift
done
case "$url" in
  */latest/api/token) echo "IMDSTOKEN" ;;
  */meta-data/instance-id) echo "$SIM_INSTANCE_ID" ;;
  */meta-data/local-ipv4) echo "$SIM_LOCAL_IPV4" ;;
  */meta-data/tags/instance/*) exit 22 ;;
  *)
    src="$SIM_FIXTURES/$(basename "$url")"
    [[ -f "$src" && -n "$out" ]] || exit 22
    cp "$src" "$out" ;;
esac
""",
    "make": r"""
for a in "$@"; do
  [[ "$a" == DESTDIR=* ]] && dest="${a#DESTDIR=}"
done
if [[ " $* " == *" install "* ]]; then
  mkdir -p "$dest/usr/local/lib/slurm"; touch "$dest/usr/local/lib/slurm/spank_pyxis.so"
fi
""",
    "chown": "exit 0\n",
    "modprobe": "exit 0\n",
    "modinfo": r"""
[[ "$1" == -k ]] || { echo "modinfo stub: want -k KERNEL NAME" >&2; exit 1; }
[[ -f "$SIM_STATE/modules/$2/$3" ]] || { echo "modinfo: ERROR: Module $3 not found." >&2; exit 1; }
echo "filename: /lib/modules/$2/updates/kernel/net/lustre/$3.ko"
""",
    # Key files are text: "pub <fingerprint>", with "binary " in front once dearmored.
    "gpg": r"""
out=""; file=""; mode=""
while (($# > 0)); do
  case "$1" in
    -o) out="$2"; shift ;;
    --show-keys) mode=show ;;
    --dearmor) mode=dearmor ;;
    -*) ;;
    *) file="$1" ;;
  esac
  shift
done
[[ -n "$GNUPGHOME" || "$mode" == dearmor ]] || { echo "gpg stub: GNUPGHOME unset" >&2; exit 2; }
case "$mode" in
  show)
    grep -q 'pub ' "$file" || { echo "gpg: no valid OpenPGP data found." >&2; exit 2; }
    awk '/pub /{print "pub:-:4096:1:0000000000000000:1600000000:::-:::scESC:::"
      print "fpr:::::::::" $NF ":"}' "$file" ;;
  dearmor) { printf 'binary '; cat "$file"; } >"$out" ;;
  *) exit 2 ;;
esac
""",
    "lnetctl": r"""
case "$1 $2" in
  "net show") cat "$SIM_STATE/lnet" 2>/dev/null || true ;;
  "net add")
    if [[ " $* " == *" --net efa "* ]]; then echo "    - nid: $SIM_LOCAL_IPV4@efa" >>"$SIM_STATE/lnet"; fi ;;
  *) ;;
esac
""",
    "ip": r"""echo "default via 10.80.0.1 dev ens32 proto dhcp src $SIM_LOCAL_IPV4 metric 100" """,
    "nvidia-smi": r"""
for ((i = 0; i < SIM_GPUS; i++)); do
  echo "GPU $i: NVIDIA H100 80GB HBM3 (UUID: GPU-0000000$i)"
done
""",
    "fi_info": r"""
((SIM_EFA > 0)) || { echo "fi_getinfo: -61 (No data available)" >&2; exit 1; }
for ((i = 0; i < SIM_EFA; i++)); do
  printf 'provider: efa\n    fabric: efa\n    domain: rdmap%ss0-rdm\n' "$i"
  printf '    version: 122.0\n    type: FI_EP_RDM\n    protocol: FI_PROTO_EFA\n'
done
""",
    "munge": r"""echo "MUNGE:credential:" """,
    "unmunge": "cat >/dev/null\n",
    "scontrol": CLIENT_PRELUDE + r"""
case "$1 ${2:-}" in
  "ping ")
    if [[ -n "${SIM_CONTROLLER_DOWN:-}" ]]; then
      echo "Slurmctld(primary) at demo-head is DOWN"; exit 1
    fi
    echo "Slurmctld(primary) at demo-head is UP" ;;
  "reconfigure ") [[ -z "${SIM_RECONFIGURE_FAILS:-}" ]] ;;
  "show node")
    if [[ -n "${SIM_UNREGISTERED:-}" || ! -f "$SIM_STATE/active/slurmd" ]]; then
      echo "Node $3 not found"; exit 1
    fi
    printf 'NodeName=%s Arch=x86_64 CoresPerSocket=48\n   State=%s ThreadsPerCore=2\n' \
      "$3" "${SIM_NODE_STATE:-IDLE+DYNAMIC_NORM}" ;;
esac
""",
    "nc": r"""[[ -z "${SIM_CONTROLLER_DOWN:-}" ]]""",
    # Returns at once, except a sleep of SIM_REAL_SLEEP_FOR seconds, which really sleeps
    # SIM_REAL_SLEEP_SECONDS (bash's read -t: the allowlist has no sleep).
    "sleep": r"""
if [[ "$1" == "${SIM_REAL_SLEEP_FOR:-none}" ]]; then
  read -rt "${SIM_REAL_SLEEP_SECONDS}" <> <(:) || true
fi
""",
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


def fixture_bytes(name: str) -> bytes:
    return f"fixture {name}\n".encode()


def pyxis_fixture(version: str) -> bytes:
    """A tar.gz shaped like GitHub's archive of the pyxis tag: pyxis-<version>/Makefile.

    Byte-identical at every call (gzip header time fixed), since the checksum in the config
    and the file the node downloads are made separately."""
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as zipped, tarfile.open(
        fileobj=zipped, mode="w"
    ) as tar:
        data = b"all:\n"
        info = tarfile.TarInfo(f"pyxis-{version}/Makefile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def with_fixture_checksums(cfg: ClusterConfig) -> ClusterConfig:
    """The config with software checksums of the harness's download fixtures."""
    downloads = enroot_downloads(cfg)

    def digest(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    software = SoftwareConfig(
        slurm=cfg.software.slurm,
        enroot_version=cfg.software.enroot_version,
        enroot_sha256=digest(fixture_bytes(downloads.deb)),
        enroot_caps_sha256=digest(fixture_bytes(downloads.caps_deb)),
        pyxis_version=cfg.software.pyxis_version,
        pyxis_sha256=digest(pyxis_fixture(cfg.software.pyxis_version)),
    )
    return cfg.model_copy(update={"software": software})


@dataclass
class Node:
    """One simulated instance: scratch root, stub state and knobs for what the host reports."""

    workdir: Path
    cfg: ClusterConfig
    kernel: str = "6.8.0-1021-aws"
    gpus: int = 8
    efa: int = 32
    nvme_mounted: bool = True
    slurm_available: tuple[str, ...] = (SLURM_DEBIAN_VERSION,)
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
        self.secret_file = self.workdir / "munge-secret"
        self.secret_file.write_text(MUNGE_SECRET)
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
        self.site = SlurmSite(healthcheck_path=f"{self.stubs}:{self.allowed}", mount_root=str(self.root))
        self.files = bundle_files(self.cfg, self.site)
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
        for tool in ALLOWED_TOOLS:
            real = shutil.which(tool)
            if real is not None:
                (self.allowed / tool).symlink_to(real)

    def _write_fixtures(self) -> None:
        downloads = enroot_downloads(self.cfg)
        pyxis = pyxis_download(self.cfg)
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
        (self.state / "ssm").write_text("\n".join(lines) + "\n")

    def _write_efa_devices(self) -> None:
        driver = self.root / "sys/bus/pci/drivers/efa"
        driver.mkdir(parents=True)
        for index in range(self.efa):
            device = self.root / f"sys/class/infiniband/rdmap{index:02d}s0/device"
            device.mkdir(parents=True)
            (device / "driver").symlink_to(driver)

    def run(self, role: str, group: str | None = None) -> Run:
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
            "SIM_LOG_AGENT_CONFIG": names.log_agent_config_parameter(self.cfg),
            "SIM_KERNEL": self.kernel,
            "SIM_GPUS": str(self.gpus),
            "SIM_EFA": str(self.efa),
            "SIM_INSTANCE_ID": INSTANCE_ID,
            "SIM_LOCAL_IPV4": LOCAL_IPV4,
            "SIM_ASG": ASG_NAME,
            "SIM_SLURM_AVAILABLE": " ".join(self.slurm_available),
            "SIM_KEFALND_BUILT": "yes" if self.kefalnd else "no",
            "SIM_LUSTRE_AVAILABLE": "yes" if self.lustre_available else "no",
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
