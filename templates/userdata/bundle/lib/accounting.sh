# shellcheck shell=bash
# Slurm accounting on the head (gpucluster.bootstrap.accounting): slurmdbd with its
# database's address and credentials written at boot from SSM and Secrets Manager (never
# rendered), the cluster registered once, and after slurmctld registered, the config's
# accounts, users and QOS applied by the accounts agent. Every step does nothing on a
# cluster without accounting; the slurmdbd steps nothing where slurmdbd runs elsewhere.

accounting_on() { [[ "${ACCOUNTING}" == yes ]]; }

own_slurmdbd() { [[ "${RUNS_SLURMDBD}" == yes ]]; }

# slurmdbd refuses a configuration file that others can read.
install_slurmdbd_conf() {
  SLURMDBD_CONFIG_CHANGED=no
  own_slurmdbd || return 0
  if install_from_bundle "${ROLE_TREE}${SLURMDBD_CONF}" "${SLURMDBD_CONF}" 0600; then
    SLURMDBD_CONFIG_CHANGED=yes
  fi
  chown slurm:slurm "${R}${SLURMDBD_CONF}"
}

# StorageHost, StoragePort, StorageUser and StoragePass, which slurmdbd.conf includes: the
# address from the Storage stack's SSM parameters, user and password from the database's
# secret ({"username", "password"}). Written to a private file and never echoed.
write_database_credentials() {
  own_slurmdbd || return 0
  [[ -n "${ACCOUNTING_DB_HOST}" && -n "${ACCOUNTING_DB_PORT}" && -n "${ACCOUNTING_DB_SECRET}" ]] ||
    die "SSM parameters ${PARAM_ACCOUNTING_DB_HOST}, ${PARAM_ACCOUNTING_DB_PORT} and ${PARAM_ACCOUNTING_DB_SECRET_ARN} are missing; deploy the Storage stack with accounting.database first"
  local target="${R}${SLURMDBD_STORAGE_CONF}" fresh
  mkdir -p "$(dirname "${target}")"
  fresh="$(mktemp "${target}.XXXXXX")"
  chmod 0600 "${fresh}"
  printf 'StorageHost=%s\nStoragePort=%s\n' "${ACCOUNTING_DB_HOST}" "${ACCOUNTING_DB_PORT}" >"${fresh}"
  if ! aws --region "${REGION}" secretsmanager get-secret-value --secret-id "${ACCOUNTING_DB_SECRET}" \
    --query SecretString --output text | python3 -c '
import json, sys
secret = json.load(sys.stdin)
user, word = secret["username"], secret["password"]
if not word or any(c in word for c in "#\n\r"):
    sys.exit("the password is empty or holds a character slurmdbd.conf cannot carry (#, a line break)")
print(f"StorageUser={user}\nStoragePass={word}")
' >>"${fresh}"; then
    rm -f "${fresh}"
    die "cannot read the accounting database's user and password from secret ${ACCOUNTING_DB_SECRET}; the head role needs secretsmanager:GetSecretValue on it, and the secret holds JSON with username and password"
  fi
  if replace_if_changed "${fresh}" "${target}" 0600 slurm:slurm; then
    SLURMDBD_CONFIG_CHANGED=yes
    log "wrote ${SLURMDBD_STORAGE_CONF} from ${ACCOUNTING_DB_SECRET}"
  fi
}

# The update path writes no database credentials: a head whose cluster turned accounting
# on after it booted sets slurmdbd up with its bootstrap, once. The update stops before it
# installs anything, and the next run retries.
require_accounting_setup() {
  own_slurmdbd || return 0
  [[ -f "${R}${SLURMDBD_STORAGE_CONF}" ]] ||
    die "accounting.database is on but this head has no ${SLURMDBD_STORAGE_CONF} yet: run its bootstrap once (sudo ${BUNDLE_DIR}/bin/bootstrap.sh --role head), which sets slurmdbd up; the new Slurm files are not installed until then"
}

# RDS's CA bundle (gpucluster.rds_ca: vendored, its provenance there) from the bootstrap bundle,
# refused unless it has the pinned sha256; slurmdbd checks the database's certificate against it
# (StorageParameters=SSL_CA=...). No download: the file AWS serves changes when a region opens.
install_database_ca() {
  own_slurmdbd || return 0
  local source="${BUNDLE_DIR}/${DATABASE_CA_SOURCE}" fresh
  [[ -f "${source}" ]] || die "bundle file ${DATABASE_CA_SOURCE} is missing; the bundle is corrupt, redeploy the Cluster stack"
  sha256sum --check --status <<<"${DATABASE_CA_SHA256}  ${source}" ||
    die "the bundle's ${DATABASE_CA_SOURCE} does not have the pinned sha256 ${DATABASE_CA_SHA256}; it is not the RDS CA bundle gpucluster vendors, so slurmdbd would not trust the database. Redeploy the Cluster stack"
  mkdir -p "$(dirname "${R}${DATABASE_CA}")"
  fresh="$(mktemp "${R}${DATABASE_CA}.XXXXXX")"
  cp "${source}" "${fresh}"
  if replace_if_changed "${fresh}" "${R}${DATABASE_CA}" 0644 root:root; then
    SLURMDBD_CONFIG_CHANGED=yes
    log "installed ${DATABASE_CA} (sha256 ${DATABASE_CA_SHA256} verified)"
  fi
}

sacctmgr_answers() { sacctmgr -n show cluster >/dev/null 2>&1; }

start_slurmdbd() {
  own_slurmdbd || return 0
  ensure_service slurmdbd "${SLURMDBD_CONFIG_CHANGED}"
  poll_until SLURMDBD_START_TIMEOUT "waiting for slurmdbd to answer" sacctmgr_answers ||
    die "slurmdbd does not answer within ${SLURMDBD_START_TIMEOUT} s; see /var/log/slurm/slurmdbd.log ('Access denied': the password; 'Can't connect': the database's security group or TLS)"
  log "slurmdbd answers"
}

# slurmctld registers with slurmdbd under ClusterName; the cluster must be known there first.
register_cluster() {
  accounting_on || return 0
  if sacctmgr -n -P show cluster format=cluster | grep -qxF -- "${CLUSTER_NAME}"; then
    log "cluster ${CLUSTER_NAME} is registered with slurmdbd"
    return 0
  fi
  sacctmgr -i add cluster "${CLUSTER_NAME}" >/dev/null ||
    die "cannot register cluster ${CLUSTER_NAME} with slurmdbd; see /var/log/slurm/slurmdbd.log"
  log "registered cluster ${CLUSTER_NAME} with slurmdbd"
}

# A slurmctld that knows its cluster refuses to start without its association usage file
# ("No Assoc usage file ... to recover"), which it writes when it stops and every 5 minutes:
# a first slurmctld that died before that would never start again, so a clean restart writes it.
save_controller_state() {
  accounting_on || return 0
  [[ ! -f "${R}${ASSOC_USAGE}" ]] || return 0
  systemctl restart slurmctld || die "slurmctld did not restart; see 'journalctl -u slurmctld'"
  verify_slurmctld
  [[ -f "${R}${ASSOC_USAGE}" ]] ||
    die "slurmctld wrote no ${ASSOC_USAGE} when it stopped; see /var/log/slurm/slurmctld.log"
  log "slurmctld saved its state (${ASSOC_USAGE})"
}

# After slurmctld registered: that makes the gres/gpu TRES the QOS limits name.
apply_accounts() {
  accounting_on || return 0
  # python3 -m imports the agent and its package from the working directory.
  (cd "${BUNDLE_DIR}/${AGENTS_TREE}" && python3 -m "${ACCOUNTS_AGENT}" "${BUNDLE_DIR}/${ACCOUNTS_STATE}") ||
    die "applying the accounts, users and QOS of the config failed (the line above says why); fix it and rerun $0"
}
