# shellcheck shell=bash
# ssh into a compute node lands in the user's job there (gpucluster.bootstrap.ssh_adoption):
# sshd's account stack ends with pam_slurm_adopt, and its session stack is common-session
# without pam_systemd, which would move the adopted session into a systemd user slice, out
# of the job's cgroup. Only sshd changes: other services keep the image's stacks.

configure_ssh_adoption() {
  local path sshd="${R}/etc/pam.d/sshd" session="${R}/etc/pam.d/common-session"
  [[ -f "${sshd}" && -f "${session}" ]] ||
    die "/etc/pam.d/sshd or common-session is missing: this image's sshd has no PAM stack of Ubuntu's to put pam_slurm_adopt in"
  # A module PAM cannot load fails sshd's account check for every user but the administrators.
  [[ -e "${R}${PAM_MODULE_DIR}/pam_slurm_adopt.so" ]] ||
    die "the Slurm package $(slurm_package) has no pam_slurm_adopt.so in ${PAM_MODULE_DIR}, where PAM loads modules from, so sshd would refuse every user; the head builds it from contribs/pam_slurm_adopt: see the head's ${BOOTSTRAP_LOG}"
  # With this node's Slurm name, which name_compute_node has set.
  for path in "${SSH_ADOPTION_FILES[@]}"; do
    [[ -f "${BUNDLE_DIR}/${ROLE_TREE}${path}" ]] ||
      die "bundle file ${ROLE_TREE}${path} is missing; the bundle is corrupt, redeploy the Cluster stack"
    sed "s/${PAM_NODE_NAME_PLACEHOLDER}/${NODE_NAME}/g" "${BUNDLE_DIR}/${ROLE_TREE}${path}" |
      write_if_changed "${path}" 0644 || true
  done
  grep -v 'pam_systemd\.so' "${session}" | write_if_changed "/etc/pam.d/${PAM_SESSION_INCLUDE}" 0644 || true
  place_include "${sshd}" "@include common-account" "a" "@include ${PAM_ACCOUNT_INCLUDE}"
  place_include "${sshd}" "@include common-session" "c" "@include ${PAM_SESSION_INCLUDE}"
}

# Puts LINE into FILE once: after the line ANCHOR (a) or in its place (c).
place_include() {
  local file="$1" anchor="$2" how="$3" line="$4"
  if grep -qxF "${line}" "${file}"; then
    return 0
  fi
  grep -qxF "${anchor}" "${file}" ||
    die "/etc/pam.d/sshd has no '${anchor}' line for '${line}'; this image's sshd PAM stack is not Ubuntu's, so ssh into jobs (pam_slurm_adopt) cannot be set up"
  sed -i "/^${anchor}\$/${how} ${line}" "${file}"
  log "/etc/pam.d/sshd: ${line} ($([[ "${how}" == a ]] && echo "after" || echo "instead of") ${anchor})"
}
