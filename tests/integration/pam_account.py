"""PAM's account check for a user, as sshd makes it before a login, from a tiny program:

    python pam_account.py SERVICE USER [COMMAND...]

Prints one JSON line: the PAM result (its number and pam_strerror), the messages the modules
sent the user, and this process's cgroups afterwards (pam_slurm_adopt moves the calling
process, as it moves sshd's, into a job's extern step). With COMMAND, runs it once the check
passed and adds its output: a child of an adopted process is in the job too.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path

PAM_SUCCESS = 0


class PamMessage(ctypes.Structure):
    _fields_ = [("msg_style", ctypes.c_int), ("msg", ctypes.c_char_p)]


class PamResponse(ctypes.Structure):
    _fields_ = [("resp", ctypes.c_char_p), ("resp_retcode", ctypes.c_int)]


CONVERSE = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.c_int,
    ctypes.POINTER(ctypes.POINTER(PamMessage)),
    ctypes.POINTER(ctypes.POINTER(PamResponse)),
    ctypes.c_void_p,
)


class PamConv(ctypes.Structure):
    _fields_ = [("conv", CONVERSE), ("appdata_ptr", ctypes.c_void_p)]


def main(service: str, user: str, command: list[str]) -> int:
    # Global, as in sshd, which links libpam: a module may leave libpam's symbols to its host
    # (pam_slurm_adopt.so does: pam_syslog is undefined in it).
    pam = ctypes.CDLL("libpam.so.0", mode=ctypes.RTLD_GLOBAL)
    libc = ctypes.CDLL("libc.so.6")
    libc.calloc.restype = ctypes.c_void_p
    pam.pam_strerror.restype = ctypes.c_char_p
    messages: list[str] = []

    def converse(count, requests, responses, _data):  # type: ignore[no-untyped-def]
        # PAM frees the answers: they must come from the C heap. Every message is shown text.
        answers = libc.calloc(count, ctypes.sizeof(PamResponse))
        for index in range(count):
            messages.append((requests[index].contents.msg or b"").decode())
        responses[0] = ctypes.cast(answers, ctypes.POINTER(PamResponse))
        return PAM_SUCCESS

    conversation = PamConv(CONVERSE(converse), None)
    handle = ctypes.c_void_p()
    started = pam.pam_start(service.encode(), user.encode(), ctypes.byref(conversation), ctypes.byref(handle))
    if started != PAM_SUCCESS:
        print(json.dumps({"error": f"pam_start returned {started}"}))
        return 2
    result = pam.pam_acct_mgmt(handle, 0)
    report = {
        "result": result,
        "text": pam.pam_strerror(handle, result).decode(),
        "messages": messages,
        "pid": os.getpid(),
        "cgroups": Path("/proc/self/cgroup").read_text().splitlines(),
    }
    pam.pam_end(handle, result)
    if result == PAM_SUCCESS and command:
        report["command"] = subprocess.run(command, capture_output=True, text=True, check=False).stdout
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
