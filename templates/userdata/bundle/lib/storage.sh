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
  while read -r name value; do
    case "${name}" in
      "${PARAM_EFS_ID}") EFS_ID="${value}" ;;
      "${PARAM_FSX_DNS_NAME}") FSX_DNS_NAME="${value}" ;;
      "${PARAM_FSX_MOUNT_NAME}") FSX_MOUNT_NAME="${value}" ;;
      "${PARAM_MUNGE_SECRET_ARN}") MUNGE_SECRET="${value}" ;;
    esac
  done <<<"${listing}"
  [[ -n "${EFS_ID}" ]] || die "SSM parameter ${PARAM_EFS_ID} is missing; deploy the Storage stack first"
  [[ -n "${MUNGE_SECRET}" ]] ||
    die "SSM parameter ${PARAM_MUNGE_SECRET_ARN} is missing; deploy the Storage stack first"
  if [[ -n "${FSX_MOUNT_POINT}" ]] && [[ -z "${FSX_DNS_NAME}" || -z "${FSX_MOUNT_NAME}" ]]; then
    die "SSM parameters ${PARAM_FSX_DNS_NAME} and ${PARAM_FSX_MOUNT_NAME} are missing; deploy the Storage stack first"
  fi
  log "storage: EFS ${EFS_ID}${FSX_DNS_NAME:+, FSx ${FSX_DNS_NAME}@tcp:/${FSX_MOUNT_NAME}}"
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
    die "the image has no Lustre client (mount.lustre); use the Deep Learning AMI, which ships lustre-client-modules for its kernel"
  mount_fstab_entry "${FSX_MOUNT_POINT}" \
    "${FSX_DNS_NAME}@tcp:/${FSX_MOUNT_NAME} ${FSX_MOUNT_POINT} lustre defaults,noatime,flock,_netdev 0 0"
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
  if [[ "${LUSTRE_EFA_INTERFACES}" == 0 ]]; then
    return 0
  fi
  if write_if_changed /etc/systemd/system/gpucluster-lustre-efa.service 0644 <<UNIT; then
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
  if ! systemctl is-enabled --quiet gpucluster-lustre-efa.service; then
    systemctl enable gpucluster-lustre-efa.service
  fi
}
