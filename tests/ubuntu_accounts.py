"""The local accounts of an Ubuntu 24.04 Deep Learning AMI that the bootstrap adds people
beside (system accounts, then the image's own user `ubuntu`, 1000), shortened, for the
simulated node."""

from __future__ import annotations

PASSWD = """root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
bin:x:2:2:bin:/bin:/usr/sbin/nologin
sys:x:3:3:sys:/dev:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
systemd-network:x:998:998:systemd Network Management:/:/usr/sbin/nologin
messagebus:x:101:102::/nonexistent:/usr/sbin/nologin
syslog:x:102:103::/nonexistent:/usr/sbin/nologin
ubuntu:x:1000:1000:Ubuntu:/home/ubuntu:/bin/bash
"""
GROUP = """root:x:0:
daemon:x:1:
bin:x:2:
sys:x:3:
adm:x:4:syslog,ubuntu
sudo:x:27:ubuntu
messagebus:x:102:
syslog:x:103:
systemd-network:x:998:
nogroup:x:65534:
ubuntu:x:1000:
"""
SHADOW = "".join(f"{line.split(':')[0]}:*:20000:0:99999:7:::\n" for line in PASSWD.splitlines())
GSHADOW = "".join(f"{line.split(':')[0]}:*::\n" for line in GROUP.splitlines())

FILES = {"etc/passwd": PASSWD, "etc/group": GROUP, "etc/shadow": SHADOW, "etc/gshadow": GSHADOW}
