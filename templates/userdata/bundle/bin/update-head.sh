#!/bin/bash
# gpucluster head node update: update-head.sh [--apply]
#
# Run by gpucluster-head-update.timer. A stack update that changes any cluster setting
# publishes a new bundle and points the SSM parameter BUNDLE_PARAMETER at it; the head's
# launch template and user data stay the same, so nothing replaces the head. This script
# brings the new bundle to the running head: it reads the pointer, and when it names a
# bundle other than the one applied, downloads it, checks its sha256, puts it in place
# of the installed bundle and runs the new bundle's copy with --apply, which installs the
# controller files and agents and runs `scontrol reconfigure`. Nothing changes when the
# pointer names the applied bundle, so running it again is harmless.
set -Eeuo pipefail

BUNDLE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readonly BUNDLE_DIR
# shellcheck source=../lib/entry.sh
source "${BUNDLE_DIR}/lib/entry.sh"
# shellcheck source=../lib/slurm.sh
source "${BUNDLE_DIR}/lib/slurm.sh"
# shellcheck source=../lib/accounting.sh
source "${BUNDLE_DIR}/lib/accounting.sh"
# shellcheck source=../lib/rest_api.sh
source "${BUNDLE_DIR}/lib/rest_api.sh"
# shellcheck source=../lib/roles.sh
source "${BUNDLE_DIR}/lib/roles.sh"
# shellcheck source=../lib/system.sh
source "${BUNDLE_DIR}/lib/system.sh"
# shellcheck source=../lib/users.sh
source "${BUNDLE_DIR}/lib/users.sh"
# shellcheck source=../lib/packages.sh
source "${BUNDLE_DIR}/lib/packages.sh"
# shellcheck source=../lib/metadata.sh
source "${BUNDLE_DIR}/lib/metadata.sh"

# roles.sh and slurm.sh read these, as in a head bootstrap.
ROLE="head"
ROLE_TREE="files/head"
readonly NEXT_DIR="${R}${BUNDLE_INSTALL_DIR}.next"
readonly NEXT_ARCHIVE="${R}${BUNDLE_INSTALL_DIR}.next.tar.gz"
# Holds reconfigure or restart while a bundle's files are installed but not yet applied, so
# a run after a failed reconfigure or restart still applies them (the files no longer differ).
readonly PENDING="${R}${APPLIED_BUNDLE}.pending"
# Every AWS or Slurm call is cut off after HEAD_UPDATE_CALL_TIMEOUT and retried at most
# HEAD_UPDATE_RETRIES times (gpucluster.bootstrap.boot_budget).

read_pointer() {
  local pointer
  pointer="$(timeout "${HEAD_UPDATE_CALL_TIMEOUT}" aws --region "${REGION}" ssm get-parameter \
    --name "${BUNDLE_PARAMETER}" --query Parameter.Value --output text)" ||
    die "cannot read SSM parameter ${BUNDLE_PARAMETER}; the head role needs ssm:GetParameter on it; the next run retries"
  read -r WANT_SHA256 WANT_URL <<<"${pointer}"
  if [[ ! "${WANT_SHA256:-}" =~ ^[0-9a-f]{64}$ || "${WANT_URL:-}" != s3://* ]]; then
    die "SSM parameter ${BUNDLE_PARAMETER} holds '${pointer}', not '<sha256> s3://...'; redeploy the Cluster stack"
  fi
  log "the cluster's bundle is ${WANT_SHA256} (${WANT_URL})"
}

applied_pointer() { cat "${R}${APPLIED_BUNDLE}" 2>/dev/null || true; }

fetch_bundle() {
  rm -rf "${NEXT_DIR}" "${NEXT_ARCHIVE}"
  mkdir -p "$(dirname "${NEXT_ARCHIVE}")"
  retry HEAD_UPDATE_RETRIES timeout "${HEAD_UPDATE_CALL_TIMEOUT}" aws --region "${REGION}" s3 cp --only-show-errors \
    "${WANT_URL}" "${NEXT_ARCHIVE}" ||
    die "cannot download ${WANT_URL}; the head role's s3:GetObject follows the bundle in the same stack update, so a run during the update may fail once; the next run retries"
  log "downloaded ${WANT_URL}"
}

verify_bundle() {
  echo "${WANT_SHA256}  ${NEXT_ARCHIVE}" | sha256sum --check --status ||
    die "bundle ${WANT_URL} does not have sha256 ${WANT_SHA256}; nothing was changed; redeploy the Cluster stack"
  mkdir -p "${NEXT_DIR}"
  tar -xzf "${NEXT_ARCHIVE}" -C "${NEXT_DIR}"
  [[ -x "${NEXT_DIR}/bin/update-head.sh" ]] ||
    die "bundle ${WANT_URL} has no bin/update-head.sh; nothing was changed"
  log "bundle ${WANT_SHA256} verified"
}

# The previous bundle stays next to the new one until the next update, for a look back.
swap_bundle() {
  # Not "installed": shellcheck reads pin_kernel's array of that name (lib/system.sh) into it.
  local live="${R}${BUNDLE_INSTALL_DIR}"
  rm -rf "${live}.previous"
  if [[ -d "${live}" ]]; then
    mv "${live}" "${live}.previous"
  fi
  mv "${NEXT_DIR}" "${live}"
  rm -f "${NEXT_ARCHIVE}"
  log "bundle ${WANT_SHA256} installed in ${BUNDLE_INSTALL_DIR}"
}

slurm_setting() { grep -i "^$1=" "$2" 2>/dev/null || true; }

# Decided before the new files are installed, while SLURM_CONF is still the running one.
# A key that `scontrol reconfigure` cannot apply (slurmctld would exit, as 22.05 does on
# a new MaxNodeCount) makes this update a restart, which keeps jobs: state is on EFS.
plan_slurmctld_change() {
  local key new="${BUNDLE_DIR}/${ROLE_TREE}${SLURM_CONF}" old="${R}${SLURM_CONF}"
  SLURMCTLD_ACTION="$(cat "${PENDING}" 2>/dev/null || echo reconfigure)"
  if [[ -f "${PENDING}" ]]; then
    log "an earlier run installed files it did not apply; this run applies them (${SLURMCTLD_ACTION})"
  fi
  for key in "${SLURMCTLD_RESTART_KEYS[@]}"; do
    if [[ "$(slurm_setting "${key}" "${old}")" != "$(slurm_setting "${key}" "${new}")" ]]; then
      log "${key} changes; scontrol reconfigure cannot apply that, so slurmctld restarts (jobs are kept)"
      SLURMCTLD_ACTION=restart
    fi
  done
  mkdir -p "$(dirname "${PENDING}")"
  echo "${SLURMCTLD_ACTION}" >"${PENDING}"
}

apply_slurm_config() {
  if [[ "${CONTROLLER_CONFIG_CHANGED}" != yes && "${SLURMCTLD_PENDING}" != yes ]]; then
    log "Slurm configuration unchanged; slurmctld keeps running as it is"
    return 0
  fi
  if [[ "${SLURMCTLD_ACTION}" == restart ]]; then
    systemctl restart slurmctld ||
      die "slurmctld did not restart with the new /etc/slurm files; see 'journalctl -u slurmctld' and /var/log/slurm/slurmctld.log"
    verify_slurmctld
    log "slurmctld restarted with the new configuration"
    return 0
  fi
  retry HEAD_UPDATE_RETRIES timeout "${HEAD_UPDATE_CALL_TIMEOUT}" scontrol reconfigure ||
    die "'scontrol reconfigure' failed; the new files are in /etc/slurm; see /var/log/slurm/slurmctld.log, then run 'scontrol reconfigure' (or 'systemctl restart slurmctld', which keeps jobs)"
  log "slurmctld reconfigured"
}

record_applied() {
  mkdir -p "$(dirname "${R}${APPLIED_BUNDLE}")"
  echo "${WANT_SHA256} ${WANT_URL}" >"${R}${APPLIED_BUNDLE}"
  rm -f "${PENDING}"
  log "bundle ${WANT_SHA256} applied"
}

# Runs from the new bundle, so the files and steps are the new bundle's own.
apply() {
  WANT_SHA256="$1"
  WANT_URL="$2"
  SLURMCTLD_PENDING=no
  if [[ -f "${PENDING}" ]]; then
    SLURMCTLD_PENDING=yes
  fi
  # A head that booted from an older bundle gets the guard here, and a changed guard too.
  step restrict_metadata
  step require_accounting_setup
  step create_users
  step close_session_manager_user
  step install_access_files
  step plan_slurmctld_change
  step install_controller_files
  step install_slurmdbd_conf
  step write_jwt_key
  step start_slurmdbd
  step apply_slurm_config
  step apply_accounts
  step start_slurmrestd
  step install_agents
  # A head that booted before the Cluster stack created its image record writes it here,
  # once (its marker is the record's); a head that wrote it already makes no call.
  step record_head_image
  step record_applied
}

update() {
  step read_pointer
  if [[ "$(applied_pointer)" == "${WANT_SHA256} ${WANT_URL}" ]]; then
    log "bundle ${WANT_SHA256} is applied; nothing to do"
    return 0
  fi
  step fetch_bundle
  step verify_bundle
  step swap_bundle
  exec "${R}${BUNDLE_INSTALL_DIR}/bin/update-head.sh" --apply "${WANT_SHA256}" "${WANT_URL}"
}

main() {
  case "${1:-}" in
    "") update ;;
    --apply) (($# == 3)) || die "usage: $0 --apply SHA256 URL"; apply "$2" "$3" ;;
    *) die "usage: $0 [--apply SHA256 URL]" ;;
  esac
}

main "$@"
