"""The stub system commands a simulated node runs instead of this host's, and the real
tools it may use. Each stub keeps its state under $SIM_STATE and reads its knobs from
SIM_* variables that tests/shell_harness.py's Node sets."""

from __future__ import annotations

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
    # The head runs the accounts agent (gpucluster.agents.accounts) with the real Python,
    # against the sacctmgr stub.
    "python3",
    "tr",
    "head",
    "tail",
    "wc",
    "touch",
    "readlink",
    "stat",
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
    # Reads dcgmi's JSON report in the pre-join health check (installed with Enroot's dependencies).
    "jq",
)

# The account tools run for real when told to work under the scratch root (--prefix, as
# lib/users.sh does for the people of users:); any other call is only recorded, so nothing
# here can change this host's accounts.
_UNDER_PREFIX = r"""
if [[ "${1:-}" == --prefix ]]; then
  [[ "$2" == "$GPUCLUSTER_ROOT" ]] || { echo "stub: --prefix $2 is not the node's root" >&2; exit 1; }
  exec /usr/sbin/TOOL "$@"
fi
"""


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
CLOUDWATCH_AGENT_SHIM = '#!/bin/bash\nexec amazon-cloudwatch-agent-ctl "$@"\n'

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
  enable)
    if [[ "$2" == --now ]]; then
      touch "$SIM_STATE/enabled/$3"
      [[ "$3" == "${SIM_FAIL_UNIT:-none}" ]] && exit 1
      touch "$SIM_STATE/active/$3"
    else
      touch "$SIM_STATE/enabled/$2"
    fi ;;
  disable) rm -f "$SIM_STATE/enabled/${!#}"; [[ "$2" != --now ]] || rm -f "$SIM_STATE/active/${!#}" ;;
  # Units the image ships besides those the bootstrap installs (SIM_UNITS, space-separated).
  cat) [[ " ${SIM_UNITS:-} " == *" $2 "* ]] ;;
  start|restart)
    [[ "$2" == "${SIM_FAIL_UNIT:-none}" ]] && exit 1
    # slurmctld saves its association usage when it stops.
    if [[ "$1 $2" == "restart slurmctld" && -n "${SIM_ASSOC_USAGE:-}" ]]; then
      mkdir -p "${SIM_ASSOC_USAGE%/*}"; touch "$SIM_ASSOC_USAGE"
    fi
    touch "$SIM_STATE/active/$2" ;;
  daemon-reload) ;;
  *) exit 1 ;;
esac
""",
    "aws": r"""
[[ "$1" == --region ]] && shift 2
case "$1 $2" in
  "secretsmanager get-secret-value")
    if [[ " $* " == *" --secret-id ${SIM_DB_SECRET_ARN:-none} "* ]]; then
      cat "$SIM_DB_SECRET_FILE"; echo; exit 0
    fi
    if [[ " $* " == *" --secret-id ${SIM_JWT_SECRET_ARN:-none} "* ]]; then
      cat "$SIM_JWT_SECRET_FILE"; echo; exit 0
    fi
    # Only the ARN the Storage stack publishes names the secret (its name is per stack).
    [[ " $* " == *" --secret-id $SIM_SECRET_ARN "* ]] ||
      { echo "ResourceNotFoundException: $*" >&2; exit 254; }
    cat "$SIM_SECRET_FILE"; echo ;;
  "ssm get-parameters-by-path") cat "$SIM_STATE/ssm" ;;
  # The bundle pointer (names.bundle_parameter) and the bundles it names, as files.
  "ssm get-parameter")
    # The REST API's key secret (names.storage_parameter rest_api_jwt_secret_arn).
    if [[ " $* " == *" --name ${SIM_JWT_PARAMETER:-none} "* ]]; then
      echo "$SIM_JWT_SECRET_ARN"; exit 0
    fi
    cat "$SIM_STATE/bundle-pointer" ;;
  "ssm put-parameter") printf '%s\n' "$*" >>"$SIM_STATE/put-parameters" ;;
  "s3 cp")
    args=("$@"); src="${args[-2]}"; dst="${args[-1]}"
    [[ -f "$SIM_FIXTURES/$(basename "$src")" ]] || { echo "fatal error: 404 $src" >&2; exit 1; }
    cp "$SIM_FIXTURES/$(basename "$src")" "$dst" ;;
  "ec2 create-tags") ;;
  # An instance's NetworkNodes as `--output text` prints them, or None when EC2 does not
  # describe it; SIM_TOPOLOGY_FAIL fails the call.
  "ec2 describe-instance-topology")
    [[ -z "${SIM_TOPOLOGY_FAIL:-}" ]] || { echo "An error occurred (UnauthorizedOperation)" >&2; exit 254; }
    printf '%s\n' "${SIM_TOPOLOGY:-None}" ;;
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
    # The kernel's tables: the guard's chain as iptables-restore last loaded it, and OUTPUT's
    # rules, newest first. SIM_IPTABLES_FAIL makes the restore fail with that message.
    "iptables-restore": r"""
[[ -z "${SIM_IPTABLES_FAIL:-}" ]] ||
  { echo "iptables-restore v1.8.10 (nf_tables): $SIM_IPTABLES_FAIL" >&2; exit 1; }
[[ " $* " == *" --noflush "* ]] ||
  { echo "iptables-restore stub: without --noflush every other rule goes" >&2; exit 2; }
cat >"$SIM_STATE/iptables-chain"
""",
    "iptables": r"""
[[ "$1" == -w ]] && shift 2
rules="$SIM_STATE/iptables-output"
case "$1 $2" in
  "-C OUTPUT") shift 2; grep -qxF -- "$*" "$rules" 2>/dev/null ;;
  "-I OUTPUT")
    shift 3
    [[ -f "$SIM_STATE/iptables-chain" ]] ||
      { echo "iptables v1.8.10 (nf_tables): Chain '${!#}' does not exist" >&2; exit 2; }
    { echo "$*"; cat "$rules" 2>/dev/null || true; } >"$rules.new"
    mv "$rules.new" "$rules" ;;
  *) echo "iptables stub: unexpected $*" >&2; exit 2 ;;
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
url=""; out=""; headers=""
while (($# > 0)); do
  case "$1" in
    -o) out="$2"; shift ;;
    -H) headers="$2"; shift ;;
    -X | --max-time) shift ;;
    http*) url="$1" ;;
  esac
  shift
done
case "$url" in
  */latest/api/token) echo "IMDSTOKEN" ;;
  */meta-data/instance-id) echo "$SIM_INSTANCE_ID" ;;
  */meta-data/ami-id) echo "ami-0123456789abcdef0" ;;
  */meta-data/local-ipv4) echo "$SIM_LOCAL_IPV4" ;;
  */meta-data/tags/instance/*) exit 22 ;;
  # slurmrestd's ping: 7 (cannot connect) while SIM_RESTD_DOWN, else 200 for a token header file.
  */slurm/v0.0.*/ping/)
    [[ -z "${SIM_RESTD_DOWN:-}" ]] || exit 7
    [[ "$headers" == @* ]] && grep -q '^X-SLURM-USER-TOKEN: stubtoken' "${headers#@}" || exit 22 ;;
  *)
    src="$SIM_FIXTURES/$(basename "$url")"
    [[ -f "$src" && -n "$out" ]] || exit 22
    cp "$src" "$out" ;;
esac
""",
    # Pyxis's install gives spank_pyxis.so; a tree with stub-install-files (the harness's
    # Slurm source) installs the files it lists.
    "make": r"""
dir=.
while (($# > 0)); do
  case "$1" in -C) dir="$2"; shift ;; DESTDIR=*) dest="${1#DESTDIR=}" ;; install) install=yes ;; esac
  shift
done
[[ -n "${install:-}" ]] || exit 0
if [[ -f "$dir/stub-install-files" ]]; then
  while read -r file; do
    mkdir -p "$dest$(dirname "$file")"; touch "$dest$file"
  done <"$dir/stub-install-files"
else
  mkdir -p "$dest/usr/local/lib/slurm"; touch "$dest/usr/local/lib/slurm/spank_pyxis.so"
fi
""",
    # Checks a sudoers file as visudo -c does; it refuses one whose path ends with SIM_SUDOERS_BAD.
    "visudo": r"""
if [[ -n "${SIM_SUDOERS_BAD:-}" && "${!#}" == *"$SIM_SUDOERS_BAD" ]]; then
  echo "${!#}:3:5: syntax error" >&2
  exit 1
fi
[[ -f "${!#}" ]]
""",
    "getent": r"""[[ "$1" == passwd ]] && grep -qx "$2" "$SIM_STATE/users" 2>/dev/null""",
    "groupadd": _UNDER_PREFIX.replace("TOOL", "groupadd") + "exit 0\n",
    "useradd": _UNDER_PREFIX.replace("TOOL", "useradd") + r"""echo "${!#}" >>"$SIM_STATE/users" """,
    "usermod": _UNDER_PREFIX.replace("TOOL", "usermod") + 'echo "usermod: only under --prefix" >&2; exit 1\n',
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
    "scontrol": CLIENT_PRELUDE
    + r"""
case "$1 ${2:-}" in
  "ping ")
    if [[ -n "${SIM_CONTROLLER_DOWN:-}" ]]; then
      echo "Slurmctld(primary) at demo-head is DOWN"; exit 1
    fi
    echo "Slurmctld(primary) at demo-head is UP" ;;
  "reconfigure ") [[ -z "${SIM_RECONFIGURE_FAILS:-}" ]] ;;
  "token username="*) echo "SLURM_JWT=stubtoken" ;;
  "show node")
    if [[ -n "${SIM_UNREGISTERED:-}" || ! -f "$SIM_STATE/active/slurmd" ]]; then
      echo "Node $3 not found"; exit 1
    fi
    printf 'NodeName=%s Arch=x86_64 CoresPerSocket=48\n   State=%s ThreadsPerCore=2\n' \
      "$3" "${SIM_NODE_STATE:-IDLE+DYNAMIC_NORM}" ;;
esac
""",
    "nc": r"""[[ -z "${SIM_CONTROLLER_DOWN:-}" ]]""",
    # slurmdbd: the clusters it knows, the TRES slurmctld registered; other listings are
    # empty and every change succeeds (the calls log records them).
    "sacctmgr": r"""
case "$*" in
  "-n show cluster") [[ -z "${SIM_SLURMDBD_DOWN:-}" ]] ;;
  "-n -P show cluster format=cluster") cat "$SIM_STATE/sacctmgr-clusters" 2>/dev/null || true ;;
  "-i add cluster "*) echo "$4" >>"$SIM_STATE/sacctmgr-clusters" ;;
  "-n -P show tres format=type,name") printf 'cpu|\nmem|\ngres|gpu\n' ;;
  "-n -P show "* | "-i "*) ;;
  *) echo "sacctmgr stub: unexpected $*" >&2; exit 1 ;;
esac
""",
    # Returns at once, except a sleep of SIM_REAL_SLEEP_FOR seconds, which really sleeps
    # SIM_REAL_SLEEP_SECONDS (bash's read -t: the allowlist has no sleep).
    "sleep": r"""
if [[ "$1" == "${SIM_REAL_SLEEP_FOR:-none}" ]]; then
  read -rt "${SIM_REAL_SLEEP_SECONDS}" <> <(:) || true
fi
""",
}
