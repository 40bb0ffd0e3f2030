# shellcheck shell=bash
# The steps of each role, in order. Each step is a function that logs, checks before it
# acts and dies with what to do when it cannot go on.

load_group() {
  if ! group_settings "$1"; then
    echo "gpucluster: compute group '$1' is not in cluster ${CLUSTER_NAME}" >&2
    exit 64
  fi
}

install_head_packages() { install_packages "${HEAD_PACKAGES[@]}"; }

install_login_packages() { install_packages "${LOGIN_PACKAGES[@]}"; }

install_compute_packages() { install_packages "${COMPUTE_PACKAGES[@]}"; }

configure_login_enroot() { configure_enroot "${LOGIN_ENROOT_DIRECTORIES[@]}"; }

configure_compute_enroot() { configure_enroot "${COMPUTE_ENROOT_DIRECTORIES[@]}"; }

name_head_node() { set_hostname "${CONTROLLER_HOSTNAME}"; }

# The Slurm node name (compute_node_name, from conf/cluster.sh) is unique, and stable for
# the instance's life.
name_compute_node() {
  local iid
  iid="$(instance_id)"
  NODE_NAME="$(compute_node_name "${GROUP}" "${iid}")"
  set_hostname "${NODE_NAME}"
}

# The DLAMI formats and mounts local NVMe at boot, in parallel with user-data.
wait_for_nvme() {
  poll_until NVME_TIMEOUT "" mountpoint -q "${R}${NVME_MOUNT}" ||
    die "${NVME_MOUNT} is not mounted after ${NVME_TIMEOUT} s; Enroot needs local NVMe. See 'journalctl -u dlami-nvme' and 'lsblk'"
  log "${NVME_MOUNT} is mounted"
}

install_healthcheck() {
  install_from_bundle "${ROLE_TREE}${HEALTHCHECK_PROGRAM}" "${HEALTHCHECK_PROGRAM}" 0755 || true
}

# The check's FAIL lines (a DCGM diagnostic's failed tests among them) become the failure
# reason, which the instance tag and the console carry. Its lines pass through as they come:
# the diagnostic can take minutes. The last line carries the check's exit status.
run_prejoin_healthcheck() {
  local line status="" failed=()
  while IFS= read -r line; do
    if [[ "${line}" == gpucluster-exit=* ]]; then
      status="${line#gpucluster-exit=}"
      continue
    fi
    echo "${line}"
    [[ "${line}" != *"FAIL: "* ]] || failed+=("${line#*FAIL: }")
  done < <("${R}${HEALTHCHECK_PROGRAM}" --pre-join 2>&1; echo "gpucluster-exit=$?")
  [[ "${status}" == 0 ]] ||
    die "pre-join health check failed: $(IFS=';'; echo "${failed[*]:-exit status ${status}}"); this node does not join Slurm and its launch is abandoned so Auto Scaling replaces it"
}

complete_join() {
  mark_joined
  if [[ -f "${LIFECYCLE_MARKER}" ]]; then
    log "lifecycle action already completed"
    return 0
  fi
  if complete_launch CONTINUE; then
    stop_heartbeat
    mkdir -p "${STATE_DIR}"
    touch "${LIFECYCLE_MARKER}"
  else
    log "WARNING: could not complete the lifecycle action with CONTINUE; if the hook is still pending it times out and Auto Scaling abandons this instance"
  fi
}

# sbatch scripts users submit from the login node; sbatch reads them, so 0644 is enough,
# but 0755 lets a user run one by hand to see its "submit with sbatch" message.
install_validation_jobs() {
  local path
  for path in "${JOB_FILES[@]}"; do
    install_from_bundle "${ROLE_TREE}${path}" "${path}" 0755 || true
  done
}

# Read by every user's jobs, written only here.
install_node_lib_files() {
  local path
  for path in "${NODE_LIB_FILES[@]}"; do
    install_from_bundle "${ROLE_TREE}${path}" "${path}" 0644 || true
  done
}

install_agents() {
  local changed=no path unit
  for path in "${AGENT_FILES[@]}"; do
    if install_from_bundle "${ROLE_TREE}${path}" "${path}" 0644; then
      changed=yes
    fi
  done
  if [[ "${changed}" == yes ]]; then
    systemctl daemon-reload
  fi
  for unit in "${AGENT_UNITS[@]}"; do
    ensure_service "${unit}" "${changed}"
  done
}

# Units from the bundle, then their timers enabled; systemd rereads units only when one
# changed, and a changed timer restarts. Arguments: the names of the two arrays.
install_units() {
  local -n unit_files="$1" unit_timers="$2"
  local changed=no path unit
  for path in "${unit_files[@]}"; do
    if install_from_bundle "${ROLE_TREE}${path}" "${path}" 0644; then
      changed=yes
    fi
  done
  if [[ "${changed}" == yes ]]; then
    systemctl daemon-reload
  fi
  for unit in "${unit_timers[@]}"; do
    ensure_service "${unit}" "${changed}"
  done
}

# The GPU and EFA metrics collector: a timer that runs the bundle's agents/node_metrics.py.
install_node_metrics() { install_units NODE_METRICS_FILES NODE_METRICS_TIMERS; }

# The compute nodes' names in /etc/hosts. The Prolog's health check runs its program before
# every job, so it is in place before slurmd starts.
install_node_hosts_program() {
  install_from_bundle "${ROLE_TREE}${NODE_HOSTS_PROGRAM}" "${NODE_HOSTS_PROGRAM}" 0755 || true
}

# Its timer runs it at once, then every 30 s; so only once scontrol answers.
start_node_hosts_timer() { install_units NODE_HOSTS_UNITS NODE_HOSTS_TIMERS; }

run_head() {
  ROLE_TREE="files/head"
  step restrict_metadata
  step wait_for_apt_locks
  step start_log_shipping
  step pin_kernel
  step verify_kernel
  step record_head_image
  step install_head_packages
  step read_storage_parameters
  step install_munge_key
  step mount_home
  step create_users
  step close_session_manager_user
  step install_access_files
  step build_slurm_package
  step install_slurm
  step ensure_lustre_client
  step mount_fsx
  step open_shared_directories
  step name_head_node
  step build_pyxis
  step prepare_controller_state
  step install_controller_files
  step install_slurmdbd_conf
  step write_database_credentials
  step install_database_ca
  step write_jwt_key
  step start_slurmdbd
  step register_cluster
  step start_slurmctld
  step verify_slurmctld
  step save_controller_state
  step apply_accounts
  step start_slurmrestd
  step install_agents
}

run_login() {
  ROLE_TREE="files/login"
  step restrict_metadata
  step wait_for_apt_locks
  step start_log_shipping
  step pin_kernel
  step verify_kernel
  step install_login_packages
  step read_storage_parameters
  step install_munge_key
  step enable_user_namespaces
  step mount_home
  step create_users
  step close_session_manager_user
  step install_access_files
  step install_slurm
  step ensure_lustre_client
  step mount_fsx
  step install_enroot
  step configure_login_enroot
  step install_ecr_login
  step build_pyxis
  step install_node_slurm_files
  step wait_for_controller
  step configure_slurm_client
  step verify_slurm_client
  step install_node_hosts_program
  step start_node_hosts_timer
  step install_validation_jobs
}

run_compute() {
  ROLE_TREE="files/compute-${GROUP}"
  step start_heartbeat
  step restrict_metadata
  step wait_for_apt_locks
  step start_log_shipping
  step pin_kernel
  step verify_kernel
  step install_compute_packages
  step read_storage_parameters
  step install_munge_key
  step enable_user_namespaces
  step ensure_lustre_client
  step require_kefalnd
  step configure_lustre_efa
  step persist_lustre_efa
  step mount_home
  step create_users
  step close_session_manager_user
  step install_access_files
  step install_slurm
  step mount_fsx
  step wait_for_nvme
  step install_enroot
  step configure_compute_enroot
  step install_ecr_login
  step build_pyxis
  step install_node_slurm_files
  step install_node_lib_files
  step start_fabric_manager
  step start_dcgm
  step install_node_metrics
  step install_healthcheck
  step install_node_hosts_program
  step name_compute_node
  step configure_ssh_adoption
  step run_prejoin_healthcheck
  step place_in_topology
  step wait_for_controller
  step start_slurmd
  step wait_for_registration
  step start_node_hosts_timer
  step complete_join
}
