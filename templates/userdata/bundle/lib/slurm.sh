# shellcheck shell=bash
# Slurm daemons: slurmctld on the head (configless, files from the bundle), slurmd -Z on
# compute nodes, sackd (or DNS SRV) on login nodes.

install_unit_dropin() {
  local unit="$1" content="$2"
  if write_if_changed "/etc/systemd/system/${unit}.d/gpucluster.conf" 0644 <<<"${content}"; then
    systemctl daemon-reload
    return 0
  fi
  return 1
}

install_controller_files() {
  local changed=no path
  for path in "${CONTROLLER_FILES[@]}"; do
    if install_from_bundle "${ROLE_TREE}${path}" "${path}" 0644; then
      changed=yes
    fi
  done
  CONTROLLER_CONFIG_CHANGED="${changed}"
}

prepare_controller_state() {
  local directory
  for directory in "${STATE_SAVE_LOCATION}" /var/log/slurm; do
    if [[ ! -d "${R}${directory}" ]]; then
      mkdir -p "${R}${directory}"
      chown slurm:slurm "${R}${directory}"
      chmod 0750 "${R}${directory}"
      log "created ${directory} for slurmctld"
    fi
  done
}

# The served plugstack.conf includes the Pyxis file by its absolute path, and slurmctld
# does not serve included files: without a local copy slurmd and srun load no Pyxis.
install_node_slurm_files() {
  local path
  NODE_SLURM_FILES_CHANGED=no
  for path in "${NODE_SLURM_FILES[@]}"; do
    if install_from_bundle "${ROLE_TREE}${path}" "${path}" 0644; then
      NODE_SLURM_FILES_CHANGED=yes
    fi
  done
}

start_slurmctld() {
  ensure_service slurmctld "${CONTROLLER_CONFIG_CHANGED}"
}

# slurmd.service carries ConditionPathExists=/etc/slurm/slurm.conf, which a configless
# node never has, and passes $SLURMD_OPTIONS unquoted, which splits the --conf string:
# the drop-in clears the condition and spells the command line out.
start_slurmd() {
  local changed="${NODE_SLURM_FILES_CHANGED}"
  mkdir -p "${R}/var/log/slurm" "${R}/var/spool/slurmd"
  if install_unit_dropin slurmd.service "[Unit]
ConditionPathExists=

[Service]
ExecStart=
ExecStart=/usr/sbin/slurmd -D -s -Z --conf-server ${CONF_SERVER} --conf \"${SLURMD_CONF}\""; then
    changed=yes
  fi
  ensure_service slurmd "${changed}"
}

# Login nodes run no slurmd: from Slurm 23.11 sackd fetches and caches the served
# configuration for the client commands; before that, the commands resolve the
# controller through the _slurmctld._tcp SRV record, found through this search domain.
configure_slurm_client() {
  if [[ "${USE_SACKD}" == yes ]]; then
    local changed=no
    if write_if_changed /etc/default/sackd 0644 <<<"SACKD_OPTIONS=\"--conf-server ${CONF_SERVER}\""; then
      changed=yes
    fi
    ensure_service sackd "${changed}"
  elif write_if_changed /etc/systemd/resolved.conf.d/gpucluster.conf 0644 <<<"[Resolve]
Domains=${PRIVATE_ZONE}"; then
    systemctl restart systemd-resolved
  fi
}
