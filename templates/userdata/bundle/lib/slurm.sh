# shellcheck shell=bash
# Slurm daemons: slurmctld on the head (configless, files from the bundle), slurmd -Z on
# compute nodes, sackd (or DNS SRV) on login nodes, and the checks that each one works.

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
    # The topology timer rewrites topology.conf from EC2: the bundle's copy only seeds it.
    if [[ "${path##*/}" == topology.conf && -f "${R}${path}" ]]; then
      continue
    fi
    if install_from_bundle "${ROLE_TREE}${path}" "${path}" 0644; then
      changed=yes
    fi
  done
  CONTROLLER_CONFIG_CHANGED="${changed}"
}

# The state on the shared /home holds job scripts and environments: SlurmUser's only.
prepare_controller_state() {
  make_slurm_directory "${STATE_SAVE_LOCATION}" 0700
  make_slurm_directory /var/log/slurm 0750
}

make_slurm_directory() {
  local directory="$1" mode="$2"
  if [[ ! -d "${R}${directory}" ]]; then
    mkdir -p "${R}${directory}"
    chown slurm:slurm "${R}${directory}"
    chmod "${mode}" "${R}${directory}"
    log "created ${directory} for slurmctld"
  fi
}

# slurmd and srun load Pyxis through an include file named by its absolute path, and
# slurmctld does not serve included files: each compute and login node holds its own copy.
install_node_slurm_files() {
  local path
  NODE_SLURM_FILES_CHANGED=no
  for path in "${NODE_SLURM_FILES[@]}"; do
    if install_from_bundle "${ROLE_TREE}${path}" "${path}" 0644; then
      NODE_SLURM_FILES_CHANGED=yes
    fi
  done
}

slurmctld_lock() { echo "${STATE_SAVE_LOCATION}/slurmctld.lock"; }

# CloudFormation creates a replacement head before it deletes the old one, and both mount
# the same StateSaveLocation: slurmctld runs under flock on a file there, so the second
# waits up to SLURMCTLD_LOCK_WAIT s for the first to stop and otherwise never starts.
# flock stays the unit's main process holding the lock (Type=simple, slurmctld -D as its
# child), so a reload cannot signal it: it asks slurmctld itself.
start_slurmctld() {
  local changed="${CONTROLLER_CONFIG_CHANGED}"
  if install_unit_dropin slurmctld.service "[Service]
Type=simple
ExecStart=
ExecStart=/usr/bin/flock --wait ${SLURMCTLD_LOCK_WAIT} --conflict-exit-code ${SLURMCTLD_LOCK_BUSY_EXIT} $(slurmctld_lock) /usr/sbin/slurmctld -D \$SLURMCTLD_OPTIONS
ExecReload=
ExecReload=/usr/bin/scontrol reconfigure"; then
    changed=yes
  fi
  ensure_service slurmctld "${changed}"
}

# slurmctld is up once it answers: it holds the lock, has read its state from
# StateSaveLocation and listens. The wait covers the lock wait, so a head that waits for
# an old one to stop is not failed while the unit still waits for the lock.
verify_slurmctld() {
  local waited=0
  until scontrol ping >/dev/null 2>&1; do
    service_active slurmctld ||
      die "slurmctld stopped before it answered; if 'journalctl -u slurmctld' shows exit status ${SLURMCTLD_LOCK_BUSY_EXIT}, another head node still holds $(slurmctld_lock) on EFS: stop slurmctld there (or terminate that instance), then 'systemctl start slurmctld' here; otherwise see /var/log/slurm/slurmctld.log"
    if ((waited >= SLURMCTLD_START_TIMEOUT)); then
      die "slurmctld does not answer 'scontrol ping' after ${SLURMCTLD_START_TIMEOUT} s; see /var/log/slurm/slurmctld.log and 'journalctl -u slurmctld'"
    fi
    if ((waited % 60 == 0)); then
      log "waiting for slurmctld (it starts once it holds $(slurmctld_lock))"
    fi
    sleep "${SLURMCTLD_START_POLL}"
    waited=$((waited + SLURMCTLD_START_POLL))
  done
  log "slurmctld answers"
}

controller_reachable() {
  nc -z -w "${CONTROLLER_PROBE_TIMEOUT}" "${CONF_SERVER%:*}" "${CONF_SERVER##*:}" >/dev/null 2>&1
}

# slurmd and sackd fetch their configuration from slurmctld, and on a first deployment the
# head node may still be bootstrapping: wait for it instead of failing at once.
wait_for_controller() {
  poll_until CONTROLLER_TIMEOUT "waiting for slurmctld at ${CONF_SERVER}" controller_reachable ||
    die "slurmctld at ${CONF_SERVER} did not answer within ${CONTROLLER_TIMEOUT} s; check the head node (its ${FAILURE_TAG} tag and ${BOOTSTRAP_LOG}), the private DNS record, and that security groups allow TCP ${CONF_SERVER##*:} from this node"
  log "slurmctld at ${CONF_SERVER} answers"
}

# The node registers with its place in the network topology (Slurm 25.11: `slurmd -Z --conf
# "... Topology=..."`), so it is under its EC2 leaf switch from its first moment in Slurm
# and never takes a multi-node job outside it. A type EC2 does not describe hangs from the
# flat default. A described type that EC2 cannot place yet (or a failed call) registers in
# no switch, where it takes no job until the head's topology timer places it.
place_in_topology() {
  local nodes unit
  if [[ -n "${GROUP_TOPOLOGY}" ]]; then
    SLURMD_CONF="${SLURMD_CONF} Topology=${GROUP_TOPOLOGY}"
    log "registering under the flat default switch (${GROUP_TOPOLOGY}): EC2 does not describe this type's topology"
    return 0
  fi
  if ! nodes="$(aws --region "${REGION}" ec2 describe-instance-topology --instance-ids "$(instance_id)" \
    --query 'Instances[0].NetworkNodes' --output text --cli-connect-timeout 10 --cli-read-timeout 20 2>&1)"; then
    log "WARNING: DescribeInstanceTopology failed (${nodes}); registering in no switch until the head's topology timer places this node"
    return 0
  fi
  unit="${TOPOLOGY_ROOT}:$(tr -s '[:space:]' ':' <<<"${nodes}")"
  unit="${unit%:}"
  if [[ "${nodes}" == None || -z "${nodes//[[:space:]]/}" || ! "${unit}" =~ ^[A-Za-z0-9_.:-]+$ ]]; then
    log "WARNING: EC2 does not describe this instance's topology yet ('${nodes}'); registering in no switch until the head's topology timer places this node"
    return 0
  fi
  SLURMD_CONF="${SLURMD_CONF} Topology=${unit}"
  log "registering under its EC2 network switches (${unit})"
}

# Upstream's unit (in the Slurm package) carries ConditionPathExists=/etc/slurm/slurm.conf,
# which a configless node never has, and passes $SLURMD_OPTIONS unquoted, which splits the
# --conf string: the drop-in clears the condition and spells the command line out. It is
# Type=notify for `slurmd --systemd`; the drop-in runs slurmd -D as Type=simple, and a
# foreground slurmd re-executes in place on reconfigure. Jobs keep slurmd's locked-memory
# limit (PropagateResourceLimitsExcept=MEMLOCK) and EFA needs it unlimited: the drop-in says
# so rather than trusting the packaged unit to.
start_slurmd() {
  local changed="${NODE_SLURM_FILES_CHANGED}"
  mkdir -p "${R}/var/log/slurm" "${R}/var/spool/slurmd"
  if install_unit_dropin slurmd.service "[Unit]
ConditionPathExists=

[Service]
Type=simple
LimitMEMLOCK=infinity
ExecStart=
ExecStart=/usr/sbin/slurmd -D -s -Z --conf-server ${CONF_SERVER} --conf \"${SLURMD_CONF}\""; then
    changed=yes
  fi
  ensure_service slurmd "${changed}"
}

# systemd calls slurmd active as soon as it runs; only slurmctld knowing the node shows that
# it joined. A slurmd that exits (a SPANK plugin built for another Slurm: "Incompatible
# plugin version") or whose registration slurmctld rejects (INVALID_REG, e.g. "Low
# RealMemory") stops the node here, before its launch is completed.
wait_for_registration() {
  local waited=0 state
  while ((waited < REGISTER_TIMEOUT)); do
    service_active slurmd ||
      die "slurmd exited after it started; see 'journalctl -u slurmd' and /var/log/slurm/slurmd.log"
    if state="$(scontrol show node "${NODE_NAME}" 2>/dev/null | grep -o 'State=[^ ]*')"; then
      [[ "${state}" != *INVALID_REG* ]] ||
        die "slurmctld rejected the registration of ${NODE_NAME} (${state}); 'scontrol show node ${NODE_NAME}' gives the reason"
      log "${NODE_NAME} is registered (${state})"
      return 0
    fi
    sleep "${REGISTER_POLL}"
    waited=$((waited + REGISTER_POLL))
  done
  die "${NODE_NAME} did not register with slurmctld within ${REGISTER_TIMEOUT} s; see /var/log/slurm/slurmd.log"
}

# Login nodes run no slurmd: sackd fetches and caches the served configuration
# (/run/slurm/conf) for the client commands. sackd's unit gets the same drop-in as
# slurmd's: Debian turns upstream's commented-out ConditionPathExists=/etc/slurm/slurm.conf
# on (it did for slurmd), and Ubuntu's package ships no /etc/default/sackd for
# $SACKD_OPTIONS to come from.
configure_slurm_client() {
  local changed=no
  if install_unit_dropin sackd.service "[Unit]
ConditionPathExists=

[Service]
Type=notify
ExecStart=
ExecStart=/usr/sbin/sackd --systemd --conf-server ${CONF_SERVER}"; then
    changed=yes
  fi
  ensure_service sackd "${changed}"
}

verify_slurm_client() {
  retry SLURM_PING_RETRIES scontrol ping >/dev/null ||
    die "Slurm commands on this node cannot reach slurmctld at ${CONF_SERVER}; see 'journalctl -u sackd'"
  log "Slurm commands reach slurmctld"
}
