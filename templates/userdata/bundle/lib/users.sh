# shellcheck shell=bash
# The cluster's people (conf/users.tsv, from users: in the config; gpucluster.bootstrap.people)
# get the same accounts on every node, before any Slurm daemon starts: Slurm and the shared
# /home know a person by uid, and slurmctld cannot build a job's credential for a uid it
# cannot name. The local files are read under ${R} directly: these are local accounts.

# group NAME GID exists with that gid, or the node cannot give it and says why.
ensure_group() {
  local name="$1" gid="$2" line holder
  line="$(grep -m1 "^${name}:" "${R}/etc/group" || true)"
  if [[ -n "${line}" ]]; then
    [[ "$(cut -d: -f3 <<<"${line}")" == "${gid}" ]] ||
      die "group ${name} exists on this node with gid $(cut -d: -f3 <<<"${line}"), not ${gid} as users: says; the image made it: pick another group name or gid in users: and redeploy"
    return 0
  fi
  holder="$(awk -F: -v gid="${gid}" '$3 == gid { print $1; exit }' "${R}/etc/group")"
  [[ -z "${holder}" ]] ||
    die "gid ${gid} of group ${name} is group ${holder}'s on this node; pick another gid in users: and redeploy"
  groupadd ${R:+--prefix "${R}"} --gid "${gid}" "${name}"
  log "group ${name} created (gid ${gid})"
}

# user NAME UID GROUP exists with that uid and primary group, its home under HOME_BASE.
ensure_user() {
  local name="$1" uid="$2" group="$3" gid="$4" line holder
  line="$(grep -m1 "^${name}:" "${R}/etc/passwd" || true)"
  if [[ -n "${line}" ]]; then
    [[ "$(cut -d: -f3 <<<"${line}")" == "${uid}" ]] ||
      die "user ${name} exists on this node with uid $(cut -d: -f3 <<<"${line}"), not ${uid} as users: says; the image made it: pick another name or uid in users: and redeploy"
    if [[ "$(cut -d: -f4 <<<"${line}")" != "${gid}" ]]; then
      usermod ${R:+--prefix "${R}"} --gid "${group}" "${name}"
      log "user ${name}'s group is now ${group}"
    fi
    return 0
  fi
  holder="$(awk -F: -v uid="${uid}" '$3 == uid { print $1; exit }' "${R}/etc/passwd")"
  [[ -z "${holder}" ]] ||
    die "uid ${uid} of user ${name} is ${holder}'s on this node; pick another uid in users: and redeploy"
  # Password '*': no password login, but not locked either, so sshd takes the user's keys.
  useradd ${R:+--prefix "${R}"} --uid "${uid}" --gid "${group}" --home-dir "${HOME_BASE}/${name}" \
    --no-create-home --shell /bin/bash --password '*' --comment "gpucluster user" "${name}"
  log "user ${name} created (uid ${uid})"
}

# The home on the shared file system: whichever node gets there first makes it.
ensure_home() {
  local name="$1" uid="$2" gid="$3" home="${R}${HOME_BASE}/$1"
  [[ ! -d "${home}" ]] || return 0
  install -d -m 0700 -o "${uid}" -g "${gid}" "${home}"
  log "home ${HOME_BASE}/${name} created"
}

# Session Manager's shared account: the agent makes ssm-user with passwordless sudo at the
# first plain shell session, unless the account exists already (agent 2.3.634.0 and later).
# Made here first without sudo: the agent starts sh as this account whatever its login shell,
# so a session without a person's SSMSessionRunAs tag is an unprivileged one that Slurm refuses
# jobs from. People come in as themselves (Run As, or ssh through port forwarding; README:
# Users and access); the administrators of users: keep sudo.
close_session_manager_user() {
  local line
  line="$(grep -m1 "^${SSM_USER}:" "${R}/etc/passwd" || true)"
  if [[ -z "${line}" ]]; then
    useradd ${R:+--prefix "${R}"} --system --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin --comment "Session Manager, unprivileged (gpucluster)" "${SSM_USER}"
    log "${SSM_USER} made without sudo: an untagged Session Manager shell is unprivileged"
  elif [[ "$(cut -d: -f7 <<<"${line}")" != /usr/sbin/nologin ]]; then
    usermod ${R:+--prefix "${R}"} --shell /usr/sbin/nologin "${SSM_USER}"
    log "${SSM_USER}'s shell is now /usr/sbin/nologin"
  fi
  if [[ -e "${R}${SSM_SUDOERS}" ]]; then
    rm -f "${R}${SSM_SUDOERS}"
    log "removed ${SSM_SUDOERS}: ${SSM_USER} has no sudo"
  fi
}

create_users() {
  local table="${BUNDLE_DIR}/${USERS_FILE}" name uid group gid count=0
  [[ -f "${table}" ]] || die "bundle file ${USERS_FILE} is missing; the bundle is corrupt, redeploy the Cluster stack"
  while IFS=$'\t' read -r name uid group gid; do
    ensure_group "${group}" "${gid}"
    ensure_user "${name}" "${uid}" "${group}" "${gid}"
    ensure_home "${name}" "${uid}" "${gid}"
    count=$((count + 1))
  done <"${table}"
  log "${count} users of users: are on this node"
}

# Root's files that let people in: sshd's keys directory and sudo for administrators. Keys of
# people no longer in users: go, so a removed person loses the way in at the next boot.
install_access_files() {
  local path changed=no key listed
  for path in "${PEOPLE_FILES[@]}"; do
    if install_from_bundle "${ROLE_TREE}${path}" "${path}" "$([[ "${path}" == "${SUDOERS_FILE}" ]] && echo 0440 || echo 0644)"; then
      [[ "${path}" != "${SSHD_KEYS_CONF}" ]] || changed=yes
    fi
  done
  for key in "${R}${SSH_KEYS_DIR}"/*; do
    [[ -e "${key}" ]] || continue
    listed=no
    for path in "${PEOPLE_FILES[@]}"; do
      [[ "${path}" != "${SSH_KEYS_DIR}/${key##*/}" ]] || listed=yes
    done
    if [[ "${listed}" == no ]]; then
      rm -f "${key}"
      log "removed the keys of ${key##*/}, who is no longer in users:"
    fi
  done
  visudo -cqf "${R}${SUDOERS_FILE}" || die "${SUDOERS_FILE} does not parse (visudo -cf); the bundle is corrupt, redeploy the Cluster stack"
  if [[ "${changed}" == yes ]] && service_active ssh; then
    systemctl reload ssh || die "sshd did not reload with ${SSHD_KEYS_CONF}; see 'journalctl -u ssh'"
  fi
}
