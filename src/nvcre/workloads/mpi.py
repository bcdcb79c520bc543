"""The shell pieces of an MPI workload: the worker's sshd bootstrap and the launcher's
wait-for-workers barrier, plus the SSH key pair the native adapter hands out.

The sshd install is bounded and retried: each apt-get step runs under
``timeout -s KILL 120``, three attempts at most, so a hung mirror costs minutes
instead of the whole timeoutPerJob. Images that ship ``/usr/sbin/sshd`` skip it.
"""

from __future__ import annotations

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

SSH_SECRET_MOUNT = "/etc/nvcre/ssh"
# On a rendered Secret: "generate an ed25519 key pair here when creating it"; the value is the key comment.
SSH_KEY_ANNOTATION = "nvcre.nvidia.com/generate-ssh-keypair"
SSH_KEY_FILES = ("id_ed25519", "id_ed25519.pub", "authorized_keys")
HOSTFILE_DIR = "/etc/mpi"
HOSTFILE = f"{HOSTFILE_DIR}/hostfile"
DONE_DIR = "/run/nvcre"
SSH_OPTS = "-o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5"
WAIT_ROUNDS = 240

SSHD_INSTALL = """\
if [ ! -x /usr/sbin/sshd ]; then
  if ! command -v apt-get >/dev/null 2>&1 || ! command -v timeout >/dev/null 2>&1; then
    echo "sshd is not in the image and apt-get/timeout are missing to install it" >&2; exit 1
  fi
  attempt=1
  while :; do
    if timeout -s KILL 120 apt-get -o Acquire::Retries=3 update -qq \\
       && DEBIAN_FRONTEND=noninteractive timeout -s KILL 120 apt-get -o Acquire::Retries=3 install -y -qq openssh-server >/dev/null; then
      break
    fi
    if [ "$attempt" -ge 3 ]; then echo "sshd install attempt $attempt of 3 failed or timed out" >&2; exit 1; fi
    attempt=$((attempt + 1))
    timeout -s KILL 120 dpkg --configure -a || true
  done
fi
mkdir -p /var/run/sshd && chmod 0755 /var/run/sshd
"""


def copy_keys(source: str) -> str:
    """Copy keys from a read-only secret mount into /root/.ssh with the modes sshd wants."""
    return (
        f"mkdir -p /root/.ssh && chmod 700 /root/.ssh && cp {source}/* /root/.ssh/ \\\n"
        "  && chmod 600 /root/.ssh/id_* && chmod 644 /root/.ssh/*.pub /root/.ssh/authorized_keys 2>/dev/null || true\n"
    )


def native_worker_script(pre_command: str) -> str:
    """Start sshd and stay up until the launcher writes its exit code to /run/nvcre/done."""
    return (
        "set -u\n"
        + SSHD_INSTALL
        + copy_keys(SSH_SECRET_MOUNT)
        + pre_command
        + f"mkdir -p {DONE_DIR}\n"
        "/usr/sbin/sshd -De &\n"
        "sshd_pid=$!\n"
        'echo "worker $(hostname): sshd started, waiting for the launcher"\n'
        f"while [ ! -f {DONE_DIR}/done ]; do\n"
        '  if ! kill -0 "$sshd_pid" 2>/dev/null; then echo "sshd exited before the launcher finished" >&2; exit 1; fi\n'
        "  sleep 2\n"
        "done\n"
        f'echo "launcher finished with exit code $(cat {DONE_DIR}/done); stopping sshd"\n'
        'kill "$sshd_pid" 2>/dev/null || true\n'
        "exit 0\n"
    )


def trainjob_worker_script(pre_command: str, key_source: str) -> str:
    """Kubeflow Trainer workers: sshd in the foreground (Trainer ends the pods)."""
    return "set -u\n" + SSHD_INSTALL + copy_keys(key_source) + pre_command + "exec /usr/sbin/sshd -De\n"


def wait_for_workers(hostfile: str) -> str:
    """Loop until every host in the hostfile answers ssh (bounded), else fail."""
    return (
        f"hosts=$(awk '{{print $1}}' {hostfile})\n"
        'total=$(echo "$hosts" | wc -w)\n'
        'waiting="$hosts"\n'
        f"for round in $(seq 1 {WAIT_ROUNDS}); do\n"
        '  still=""\n'
        f'  for h in $waiting; do ssh {SSH_OPTS} "$h" true >/dev/null 2>&1 || still="$still $h"; done\n'
        '  waiting="$still"\n'
        '  [ -z "$waiting" ] && break\n'
        f'  echo "waiting for sshd on:$waiting (round $round of {WAIT_ROUNDS})"\n'
        "  sleep 5\n"
        "done\n"
        'if [ -n "$waiting" ]; then echo "workers never answered ssh:$waiting" >&2; fi\n'
    )


def native_launcher_script(pre_command: str) -> str:
    """Wait for every worker, run mpirun (the container args), release the workers."""
    return (
        "set -u\n"
        + copy_keys(SSH_SECRET_MOUNT)
        + pre_command
        + wait_for_workers(HOSTFILE)
        + 'if [ -n "$waiting" ]; then rc=1; else\n'
        '  echo "all $total workers answer ssh; starting mpirun"\n'
        '  "$@"; rc=$?\n'
        "fi\n"
        f'for h in $hosts; do ssh {SSH_OPTS} "$h" "mkdir -p {DONE_DIR} && echo $rc > {DONE_DIR}/done" >/dev/null 2>&1 || true; done\n'
        "exit $rc\n"
    )


def kai_launcher_script(pre_command: str) -> str:
    """Trainer launcher under KAI (no dependsOn gate): wait for the workers, then exec mpirun."""
    return (
        "set -u\n" + pre_command + wait_for_workers(HOSTFILE)
        + 'if [ -n "$waiting" ]; then exit 1; fi\n'
        'echo "all $total workers answer ssh; starting mpirun"\n'
        'exec "$@"\n'
    )


def ssh_secret_request(metadata: dict) -> dict:
    """The Secret as rendered: a request for a key pair (annotation), no key material."""
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": metadata}


def with_generated_keys(obj: dict) -> dict:
    """``obj`` itself, or, for a Secret that asks for a key pair and holds no data yet, a copy
    with a fresh pair: called only when the Secret is created, so each run gets its own key
    and it never appears in a spec or a render."""
    meta = obj.get("metadata") or {}
    comment = (meta.get("annotations") or {}).get(SSH_KEY_ANNOTATION)
    if obj.get("kind") != "Secret" or obj.get("apiVersion") != "v1" or comment is None:
        return obj
    if obj.get("data") or obj.get("stringData"):
        return obj
    private, public = generate_keypair(str(comment)[:64] or "nvcre")
    return {**obj, "stringData": {"id_ed25519": private, "id_ed25519.pub": public, "authorized_keys": public}}


def generate_keypair(comment: str = "nvcre") -> tuple[str, str]:
    """A fresh ed25519 key pair (OpenSSH private key, public key line)."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode()
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH).decode()
    return private, f"{public} {comment}"
