# shellcheck shell=bash
# Only root reaches the instance metadata service (gpucluster.bootstrap.metadata_guard): the
# instance role's credentials there read the munge key, with which anyone can be root on every
# node. Each role's first step, so no user logs in and no job runs while it is open; the unit
# applies the same rules at every boot, before the network.

# The Deep Learning AMI has iptables; an image without it gets it here, before any other step.
install_metadata_guard_package() {
  [[ -z "$(installed_version "${METADATA_GUARD_PACKAGE}")" ]] || return 0
  apt_update_once
  log "installing ${METADATA_GUARD_PACKAGE}"
  retry PACKAGE_RETRIES apt_get install -y -q --no-install-recommends "${METADATA_GUARD_PACKAGE}" ||
    die "cannot install ${METADATA_GUARD_PACKAGE}, which keeps instance metadata from users; see the apt errors above and rerun $0"
}

restrict_metadata() {
  install_metadata_guard_package
  install_from_bundle "${ROLE_TREE}${METADATA_GUARD}" "${METADATA_GUARD}" 0755 || true
  if install_from_bundle "${ROLE_TREE}${METADATA_GUARD_UNIT_FILE}" "${METADATA_GUARD_UNIT_FILE}" 0644; then
    systemctl daemon-reload
  fi
  if ! systemctl is-enabled --quiet "${METADATA_GUARD_UNIT}"; then
    systemctl enable "${METADATA_GUARD_UNIT}"
  fi
  "${R}${METADATA_GUARD}" ||
    die "${METADATA_GUARD} could not keep instance metadata from users (its error is above): every user here could take the instance role's credentials and with them the munge key, so this node stops. See 'iptables -S OUTPUT' and 'journalctl -k', then rerun $0"
  log "instance metadata (${METADATA_ADDRESS}) answers root only, now and at every boot (${METADATA_GUARD_UNIT})"
}
