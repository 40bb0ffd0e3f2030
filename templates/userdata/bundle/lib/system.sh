# shellcheck shell=bash
# Kernel pinning, apt locks, sysctls and the host name.

# User-data runs in cloud-init's final stage, after its package stage, so cloud-init's
# own apt work is done; what still races us on first boot is apt-daily and
# unattended-upgrades holding the dpkg and apt locks.
apt_locks_free() {
  ! fuser "${R}/var/lib/dpkg/lock-frontend" "${R}/var/lib/dpkg/lock" "${R}/var/lib/apt/lists/lock" >/dev/null 2>&1
}

wait_for_apt_locks() {
  poll_until APT_LOCK_TIMEOUT "apt/dpkg locks are held (apt-daily or unattended-upgrades); waiting" apt_locks_free ||
    die "apt/dpkg locks still held after ${APT_LOCK_TIMEOUT} s; see 'ps aux | grep -e apt -e dpkg' and rerun $0"
}

# Holding the meta-packages (not versioned kernel packages, which made the EFA installer
# rebuild for every kernel) and the Lustre client modules keeps apt from bringing a new
# kernel; the blacklist keeps unattended-upgrades from trying.
pin_kernel() {
  local installed=() held package
  for package in "${KERNEL_HOLD_PACKAGES[@]}"; do
    if dpkg-query -W -f='${Status}' "${package}" 2>/dev/null | grep -q 'install ok installed'; then
      installed+=("${package}")
    fi
  done
  held="$(apt-mark showhold)"
  for package in "${installed[@]}"; do
    if ! grep -qxF "${package}" <<<"${held}"; then
      apt-mark hold "${package}"
    fi
  done
  write_if_changed /etc/apt/apt.conf.d/51gpucluster-kernel-pin 0644 <<CONF || true
// gpucluster: the kernel and its Lustre modules change only with a new pinned AMI.
Unattended-Upgrade::Package-Blacklist {
$(printf '    "%s";\n' "${UNATTENDED_BLACKLIST[@]}")
};
CONF
}

verify_kernel() {
  local running
  running="$(uname -r)"
  if [[ -z "${PINNED_KERNEL}" ]]; then
    log "image.kernel is not set; running kernel ${running} is not checked"
    return 0
  fi
  if [[ "${running}" != "${PINNED_KERNEL}" ]]; then
    die "running kernel ${running} is not the pinned kernel ${PINNED_KERNEL} (image.kernel); the AMI changed or a kernel update slipped in. Pin image.ami_id to the AMI you tested, or set image.kernel to ${running} after testing it, then redeploy"
  fi
  log "kernel ${running} matches image.kernel"
}

# The head boots the same AMI as every node: it publishes the AMI id and the kernel it
# booted, for `gpucluster ami pin --kernel-from-cluster` to copy into image.kernel, over
# the Cluster stack's placeholder. Written to SSM only when it changed (the marker), so a
# rerun makes no call; the marker is named for the parameter, so a head that wrote the
# older /head/image parameter writes the stack's at its next boot. Not fatal: the
# cluster runs without it, but the line says how to get it.
record_head_image() {
  local ami kernel value marker="${STATE_DIR}/head-booted-image.json"
  ami="$(retry AWS_RETRIES imds ami-id)" || { log "WARNING cannot read ami-id from IMDSv2; ${PARAM_HEAD_IMAGE} not written"; return 0; }
  kernel="$(uname -r)"
  value="{\"ami_id\":\"${ami}\",\"kernel\":\"${kernel}\"}"
  write_if_changed "${marker#"${R}"}" 0644 <<<"${value}" || return 0
  if ! retry AWS_RETRIES aws --region "${REGION}" ssm put-parameter --name "${PARAM_HEAD_IMAGE}" \
    --type String --overwrite --value "${value}" >/dev/null; then
    rm -f "${marker}"
    log "WARNING cannot write ${PARAM_HEAD_IMAGE} to SSM (the head role needs ssm:PutParameter on it); image.kernel cannot be read from this cluster: set it to ${kernel} by hand"
  fi
}

# Ubuntu 24.04 forbids unprivileged user namespaces through AppArmor; Enroot needs them.
enable_user_namespaces() {
  if write_if_changed /etc/sysctl.d/99-gpucluster-enroot.conf 0644 <<'CONF'; then
# gpucluster: Enroot runs containers in unprivileged user namespaces.
kernel.apparmor_restrict_unprivileged_userns = 0
CONF
    sysctl -p "${R}/etc/sysctl.d/99-gpucluster-enroot.conf"
  fi
  [[ "$(sysctl -n kernel.apparmor_restrict_unprivileged_userns)" == 0 ]] ||
    die "kernel.apparmor_restrict_unprivileged_userns is not 0; Enroot cannot create containers. Check /etc/sysctl.d for a later file that sets it"
}

# cloud-init would reset the host name from metadata at the next boot.
set_hostname() {
  local name="$1" address
  write_if_changed /etc/cloud/cloud.cfg.d/99-gpucluster-hostname.cfg 0644 <<<"preserve_hostname: true" || true
  if [[ "$(hostname)" != "${name}" ]]; then
    hostnamectl set-hostname "${name}"
  fi
  address="$(imds local-ipv4)" || die "cannot read local-ipv4 from IMDSv2"
  ensure_line /etc/hosts "${address} ${name}"
  log "host name is ${name} (${address})"
}
