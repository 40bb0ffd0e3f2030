# shellcheck shell=bash
# Deploy-time facts from SSM Parameter Store, then EFS on /home and FSx for Lustre.

# Sets EFS_ID, FSX_DNS_NAME, FSX_MOUNT_NAME and MUNGE_SECRET (an ARN) from the Storage
# stack's parameters.
read_storage_parameters() {
  local listing name value
  listing="$(retry AWS_RETRIES aws --region "${REGION}" ssm get-parameters-by-path \
    --path "${STORAGE_PARAMETER_PATH}" --query 'Parameters[].[Name,Value]' --output text)" ||
    die "cannot read ${STORAGE_PARAMETER_PATH} from SSM; the instance role needs ssm:GetParametersByPath on it"
  EFS_ID="" FSX_DNS_NAME="" FSX_MOUNT_NAME="" MUNGE_SECRET=""
  ACCOUNTING_DB_HOST="" ACCOUNTING_DB_PORT="" ACCOUNTING_DB_SECRET=""
  while read -r name value; do
    case "${name}" in
      "${PARAM_EFS_ID}") EFS_ID="${value}" ;;
      "${PARAM_FSX_DNS_NAME}") FSX_DNS_NAME="${value}" ;;
      "${PARAM_FSX_MOUNT_NAME}") FSX_MOUNT_NAME="${value}" ;;
      "${PARAM_MUNGE_SECRET_ARN}") MUNGE_SECRET="${value}" ;;
      "${PARAM_ACCOUNTING_DB_HOST}") ACCOUNTING_DB_HOST="${value}" ;;
      "${PARAM_ACCOUNTING_DB_PORT}") ACCOUNTING_DB_PORT="${value}" ;;
      "${PARAM_ACCOUNTING_DB_SECRET_ARN}") ACCOUNTING_DB_SECRET="${value}" ;;
    esac
  done <<<"${listing}"
  [[ -n "${EFS_ID}" ]] || die "SSM parameter ${PARAM_EFS_ID} is missing; deploy the Storage stack first"
  [[ -n "${MUNGE_SECRET}" ]] ||
    die "SSM parameter ${PARAM_MUNGE_SECRET_ARN} is missing; deploy the Storage stack first"
  if [[ -n "${FSX_MOUNT_POINT}" ]] && [[ -z "${FSX_DNS_NAME}" || -z "${FSX_MOUNT_NAME}" ]]; then
    die "SSM parameters ${PARAM_FSX_DNS_NAME} and ${PARAM_FSX_MOUNT_NAME} are missing; deploy the Storage stack first"
  fi
  log "storage: EFS ${EFS_ID}${FSX_DNS_NAME:+, FSx ${FSX_DNS_NAME}@tcp:/${FSX_MOUNT_NAME}}${ACCOUNTING_DB_HOST:+, accounting database ${ACCOUNTING_DB_HOST}:${ACCOUNTING_DB_PORT} (password in ${ACCOUNTING_DB_SECRET})}"
}

mount_fstab_entry() {
  local mount_point="$1" entry="$2"
  ensure_line /etc/fstab "${entry}"
  mkdir -p "${R}${mount_point}"
  if mountpoint -q "${R}${mount_point}"; then
    log "${mount_point} is already mounted"
    return 0
  fi
  retry MOUNT_RETRIES mount "${R}${mount_point}" ||
    die "cannot mount ${mount_point} ($(awk '{print $1}' <<<"${entry}")); check the security groups allow NFS (2049) / Lustre (988) from this node"
}

# EFS on /home with the options the EFS guide recommends for NFSv4.1, or through
# amazon-efs-utils (TLS) when the image has it.
mount_home() {
  local entry
  if command -v mount.efs >/dev/null 2>&1; then
    entry="${EFS_ID}:/ /home efs _netdev,tls,noresvport 0 0"
  else
    entry="${EFS_ID}.efs.${REGION}.amazonaws.com:/ /home nfs4 nfsvers=4.1,rsize=1048576,wsize=1048576,hard,timeo=600,retrans=2,noresvport,_netdev 0 0"
  fi
  mount_fstab_entry /home "${entry}"
}

mount_fsx() {
  if [[ -z "${FSX_MOUNT_POINT}" ]]; then
    return 0
  fi
  command -v mount.lustre >/dev/null 2>&1 ||
    die "the image has no Lustre client utilities (mount.lustre); install lustre-client-utils from ${LUSTRE_REPO_URL} or use the Deep Learning AMI"
  mount_fstab_entry "${FSX_MOUNT_POINT}" \
    "${FSX_DNS_NAME}@tcp:/${FSX_MOUNT_NAME} ${FSX_MOUNT_POINT} lustre defaults,noatime,flock,_netdev 0 0"
}

# Users keep their checkpoints and the torchrun job's Python environment under <FSx>/<user>, and
# every user's import job writes into the image directory. A new file system's root is root's
# alone (0755): open it and the image directory the way /tmp is, writable by all and sticky, so
# nobody removes another's files. A mode other than a new root's 0755 is an administrator's
# choice and is left alone.
open_shared_directories() {
  local dir mode
  for dir in "${FSX_MOUNT_POINT}" "${IMAGE_DIR}"; do
    if [[ -z "${dir}" ]]; then
      continue
    fi
    if [[ ! -d "${R}${dir}" ]]; then
      install -d -m 1777 "${R}${dir}"
      log "created ${dir} (mode 1777)"
      continue
    fi
    mode="$(stat -c '%a %u' "${R}${dir}")"
    case "${mode}" in
      "1777 "*) log "${dir} is open to every user (mode 1777)" ;;
      "755 0")
        chmod 1777 "${R}${dir}"
        log "${dir}: mode 1777, writable by every user, sticky"
        ;;
      *) log "${dir} keeps its mode and owner (${mode}): set by an administrator" ;;
    esac
  done
}

# The Lustre client for the running kernel. Modules are built per exact kernel and the DLAMI's
# kernel moves with each release, so the image may lack lustre-client-modules-$(uname -r).
# The FSx guide ("Installing the Lustre client", Ubuntu) installs it from the FSx Lustre
# client repository with `apt install lustre-client-modules-$(uname -r)`:
# https://docs.aws.amazon.com/fsx/latest/LustreGuide/install-lustre-client.html

# modinfo -k reads that kernel's modules.dep, as modprobe will at mount time.
kernel_module_present() { modinfo -k "$(uname -r)" "$1" >/dev/null 2>&1; }

ensure_lustre_client() {
  if [[ -z "${FSX_MOUNT_POINT}" ]]; then
    return 0
  fi
  if kernel_module_present lustre; then
    log "Lustre client module for kernel $(uname -r) is installed"
    return 0
  fi
  log "kernel $(uname -r) has no Lustre client module; installing it from ${LUSTRE_REPO_URL}"
  step add_lustre_repository
  step install_lustre_client_modules
  step load_lustre_module
}

# Primary-key fingerprints in an armored or binary key file, one a line; none for a file
# that holds no key (an error page, say), which then matches no pin. GNUPGHOME is a scratch
# directory: --show-keys imports nothing, but gpg still creates its home.
key_fingerprints() {
  local home
  home="$(mktemp -d)"
  { GNUPGHOME="${home}" gpg --batch --show-keys --with-colons "$1" 2>/dev/null || true; } |
    awk -F: '$1 == "pub" {primary = 1; next} $1 == "fpr" && primary {print $10; primary = 0}'
  rm -rf "${home}"
}

# The key must be exactly the one the config pins: apt trusts a signed-by keyring fully
# for that repository, and the guide's `wget | gpg --dearmor` would trust whatever answered.
key_has_pinned_fingerprint() {
  local fingerprints
  fingerprints="$(key_fingerprints "$1")"
  [[ "${fingerprints}" == "${LUSTRE_REPO_KEY_FINGERPRINT}" ]]
}

fetch_lustre_repository_key() {
  curl -fsSL --max-time "${LUSTRE_KEY_FETCH_TIMEOUT}" -o "$1" "${LUSTRE_REPO_KEY_URL}"
}

add_lustre_repository() {
  local source_line="deb [signed-by=${LUSTRE_REPO_KEYRING}] ${LUSTRE_REPO_URL} ${LUSTRE_REPO_SUITE} main"
  local work key found
  [[ -n "${LUSTRE_REPO_KEY_FINGERPRINT}" ]] ||
    die "kernel $(uname -r) has no Lustre client module on this image and software.lustre_repo_key_fingerprint is not set, so the node will not trust ${LUSTRE_REPO_URL}; set it to the fingerprint 'gpg --show-keys' prints for ${LUSTRE_REPO_KEY_URL}, or pin an AMI whose kernel ships the module (image.ami_id)"
  if [[ -f "${R}${LUSTRE_REPO_KEYRING}" ]] && key_has_pinned_fingerprint "${R}${LUSTRE_REPO_KEYRING}"; then
    log "${LUSTRE_REPO_KEYRING} already holds key ${LUSTRE_REPO_KEY_FINGERPRINT}"
  else
    work="$(mktemp -d)"
    key="${work}/fsx-ubuntu-public-key.asc"
    retry LUSTRE_KEY_ATTEMPTS fetch_lustre_repository_key "${key}" ||
      die "cannot download ${LUSTRE_REPO_KEY_URL} after ${LUSTRE_KEY_ATTEMPTS} attempts; the node needs HTTPS to S3 (NAT gateway or S3 endpoint)"
    if ! key_has_pinned_fingerprint "${key}"; then
      found="$(key_fingerprints "${key}")"
      found="${found//$'\n'/ }"
      rm -rf "${work}"
      die "the key at ${LUSTRE_REPO_KEY_URL} has fingerprint ${found:-none}, not ${LUSTRE_REPO_KEY_FINGERPRINT} (software.lustre_repo_key_fingerprint); refusing to trust it. If AWS rotated the key, check the new one and update the config"
    fi
    gpg --batch --yes --dearmor -o "${work}/keyring.gpg" "${key}"
    install -D -m 0644 "${work}/keyring.gpg" "${R}${LUSTRE_REPO_KEYRING}"
    rm -rf "${work}"
    log "trusted key ${LUSTRE_REPO_KEY_FINGERPRINT} for ${LUSTRE_REPO_URL} in ${LUSTRE_REPO_KEYRING}"
  fi
  if write_if_changed "${LUSTRE_REPO_LIST}" 0644 <<<"${source_line}"; then
    apt_update_again
  else
    apt_update_once
  fi
}

install_lustre_client_modules() {
  local kernel package
  kernel="$(uname -r)"
  package="lustre-client-modules-${kernel}"
  if [[ -z "$(apt-cache madison "${package}" 2>/dev/null)" ]]; then
    die "no Lustre client is built for kernel ${kernel}: ${LUSTRE_REPO_URL} has no ${package}. Pin an AMI whose kernel has a build (image.ami_id; 'apt-cache search lustre-client-modules' lists the kernels that have one) or pin the kernel (image.kernel)"
  fi
  # lustre-client-utils is named so that mount.lustre comes with the module; the module
  # package depends on the matching utils version, so apt picks that one.
  retry PACKAGE_RETRIES apt_get install -y -q --no-install-recommends "${package}" lustre-client-utils ||
    die "apt-get could not install ${package}; see the apt output above"
  log "installed ${package}"
}

# Over EFA, configure_lustre_efa loads lustre only after LNet has its EFA interfaces.
load_lustre_module() {
  kernel_module_present lustre ||
    die "${LUSTRE_REPO_URL} installed lustre-client-modules-$(uname -r) but kernel $(uname -r) still has no lustre module; see 'dpkg -L lustre-client-modules-$(uname -r)'"
  if [[ "${LUSTRE_EFA_INTERFACES:-0}" == 0 ]]; then
    modprobe lustre
    log "loaded the lustre module"
  else
    log "lustre module present; it loads once LNet has its EFA interfaces"
  fi
}

# kefalnd is the EFA LNet driver the FSx guide's "Configuring EFA clients" loads; a Lustre
# client built without it would leave LNet on TCP and the mount slow, not failed.
# https://docs.aws.amazon.com/fsx/latest/LustreGuide/configure-efa-clients.html
require_kefalnd() {
  if [[ "${LUSTRE_EFA_INTERFACES}" == 0 ]]; then
    return 0
  fi
  kernel_module_present kefalnd ||
    die "kernel $(uname -r) has no EFA LNet module (kefalnd), which EFA-enabled FSx (storage.fsx_lustre.efa) needs; install a Lustre client for this kernel that ships kefalnd from ${LUSTRE_REPO_URL}, pin an AMI whose Lustre client has it (image.ami_id), or set storage.fsx_lustre.efa: false"
  log "EFA LNet module kefalnd is available for kernel $(uname -r)"
}

# EFA devices bound to the efa driver, in name order.
efa_devices() {
  local device driver
  for device in "${R}"/sys/class/infiniband/*; do
    [[ -e "${device}/device/driver" ]] || continue
    driver="$(basename "$(readlink -f "${device}/device/driver")")"
    [[ "${driver}" == efa ]] && basename "${device}"
  done
  return 0
}

# The FSx guide's "Configuring EFA clients": the kefalnd module on the primary interface,
# TCP kept for the MGS, LUSTRE_EFA_INTERFACES EFA devices spread across the cards,
# discovery on and EFA preferred. Must run before the first Lustre mount.
configure_lustre_efa() {
  if [[ "${LUSTRE_EFA_INTERFACES}" == 0 ]]; then
    return 0
  fi
  if lnetctl net show --net efa 2>/dev/null | grep -q '@efa'; then
    log "LNet already has EFA interfaces"
    return 0
  fi
  local devices=() primary index stride
  mapfile -t devices < <(efa_devices)
  ((${#devices[@]} >= LUSTRE_EFA_INTERFACES)) ||
    die "found ${#devices[@]} EFA devices for Lustre, want ${LUSTRE_EFA_INTERFACES}; the launch template must attach every EFA interface"
  primary="$(ip -o -4 route show to default | awk '{print $5; exit}')"
  [[ -n "${primary}" ]] || die "no default route; cannot tell LNet which interface carries TCP"
  modprobe lnet
  modprobe kefalnd "ipif_name=${primary}"
  modprobe ksocklnd
  lnetctl lnet configure
  lnetctl net del --net tcp 2>/dev/null || true
  lnetctl net add --net tcp --if "${primary}"
  stride=$((${#devices[@]} / LUSTRE_EFA_INTERFACES))
  for ((index = 0; index < LUSTRE_EFA_INTERFACES; index++)); do
    lnetctl net add --net efa --if "${devices[index * stride]}" --peer-credits 32
  done
  lnetctl set discovery 1
  lnetctl udsp add --src efa --priority 0
  modprobe lustre
  log "LNet uses ${LUSTRE_EFA_INTERFACES} EFA interfaces for FSx"
}

# Redoes configure_lustre_efa at every boot, before remote file systems mount.
persist_lustre_efa() {
  local unit=gpucluster-lustre-efa.service
  if [[ "${LUSTRE_EFA_INTERFACES}" == 0 ]]; then
    return 0
  fi
  if write_if_changed "/etc/systemd/system/${unit}" 0644 <<UNIT; then
[Unit]
Description=gpucluster: LNet EFA interfaces for FSx for Lustre
After=network-online.target
Wants=network-online.target
Before=remote-fs-pre.target
Wants=remote-fs-pre.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=${BUNDLE_INSTALL_DIR}/bin/lustre-efa.sh --group ${GROUP}

[Install]
WantedBy=remote-fs.target
UNIT
    systemctl daemon-reload
  fi
  if ! systemctl is-enabled --quiet "${unit}"; then
    systemctl enable "${unit}"
  fi
}
