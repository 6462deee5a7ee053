"""A one-node Slurm cluster for the tests: munge, ``slurmctld`` and ``slurmd``, started and stopped by a test.

Everything lives in one temporary folder: a munge key made for this cluster (so no other munge daemon or
cluster can talk to it, nor it to them), ``slurm.conf``, the controller's state, the node's spool and the
three daemons' logs. The daemons run in the foreground as this process's children (``munged -F``,
``slurmctld -D``, ``slurmd -D``) on ports picked free at start, so two clusters, of two test sessions on
one machine, never meet. Clients (``sbatch``, ``sinfo``, submitit) find the cluster through
``SLURM_CONF``, which :attr:`SlurmCluster.env` sets.

Job processes are not the daemons' children (``slurmstepd`` starts its own session), so
:meth:`SlurmCluster.stop` cancels every job and waits for its processes to end before it stops the
daemons. It knows the cluster's processes by ``SLURM_CONF`` in their environment (job steps inherit it
from the submitting process, ``slurmstepd`` from ``slurmd``); any still alive a while after the daemons
stopped is killed by its id and reported, so a test can fail on it.

Debian's packages (``slurm-wlm``, ``munge``; ``make slurm`` installs them) give every program used here.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "NODE",
    "PARTITION",
    "SlurmCluster",
    "SlurmUnavailable",
    "missing_requirements",
    "processes_of",
    "start_one_node_cluster",
]

#: The node's name in ``slurm.conf`` (``slurmd -N``): fixed, so the cluster never depends on this machine's
#: host name resolving.
NODE = "gr-node"
#: The cluster's only partition, the default one.
PARTITION = "debug"
#: CPUs the node offers: two points run at once, as with Ray's ``--num-cpus=2`` in the Ray test.
CPUS = 2
#: Daemons and clients: ``/usr/sbin`` holds the daemons and is not on every user's ``PATH``.
PROGRAMS = ("munged", "munge", "slurmctld", "slurmd", "sinfo", "sbatch", "srun", "squeue", "scancel")
#: Seconds the node may take to come up idle, and the daemons to stop, before the cluster gives up.
START_SECONDS = 30.0
STOP_SECONDS = 15.0


class SlurmUnavailable(Exception):
    """This machine cannot run the cluster; the message says why (a test skips with it)."""


def _search_path() -> str:
    return os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


def _program(name: str) -> str:
    found = shutil.which(name, path=_search_path())
    if found is None:
        raise SlurmUnavailable(f"{name} is not installed")
    return found


def missing_requirements() -> str | None:
    """Why this machine cannot start the cluster before trying to, or ``None`` when it may.

    Returns
    -------
    str or None
        The programs missing (with how to install them), or that the process is not root: ``slurmd``
        starts every job step as the job's user, which needs root.
    """
    missing = [name for name in PROGRAMS if shutil.which(name, path=_search_path()) is None]
    if missing:
        return (
            f"Slurm is not installed (missing {', '.join(missing)}): "
            "apt-get install slurm-wlm munge, or `make slurm` as root"
        )
    if os.geteuid() != 0:
        return "slurmd must run as root to start job steps as the job's user; this process is not root"
    return None


def _client(argv: list[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a Slurm client (``sinfo``, ``squeue``, ``scancel``) for at most 10 s, its output captured."""
    return subprocess.run(
        [_program(argv[0]), *argv[1:]], env=dict(env), capture_output=True, text=True, timeout=10, check=False
    )


def _free_port() -> int:
    """A TCP port free on every interface now (the daemons listen on all of them)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("", 0))
        port: int = probe.getsockname()[1]
        return port


def _tail(path: Path, lines: int = 15) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"({path.name}: no log)"
    return "\n".join(text.splitlines()[-lines:]) or f"({path.name}: empty)"


def _memory_mib() -> int:
    """This machine's memory in MiB, from ``/proc/meminfo``, declared as the node's ``RealMemory``."""
    with open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    raise SlurmUnavailable("/proc/meminfo has no MemTotal")


def _slurm_conf(folder: Path, ctld_port: int, slurmd_port: int) -> str:
    """The cluster's ``slurm.conf``: one node on loopback, root's own daemons, no cgroups, no accounting."""
    return f"""\
# A one-node test cluster (tests/slurm_cluster.py): every path under {folder}.
ClusterName=gpureplay-test
SlurmctldHost=localhost
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={folder / "munge" / "munge.socket"}
StateSaveLocation={folder / "state"}
SlurmdSpoolDir={folder / "spool"}
SlurmctldPidFile={folder / "slurmctld.pid"}
SlurmdPidFile={folder / "slurmd.pid"}
# Processes tracked by their parent ids, no task binding: cgroups are often not ours to use in a container.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# No slurmdbd: sacct answers "accounting storage is disabled", and submitit then waits on result files.
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
# CPUs are the consumable: two one-CPU points share the node, as on a real cluster's shared partition.
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# The node is what this file says, whatever the machine has (a CI runner may have more CPUs).
SlurmdParameters=config_overrides
ReturnToService=2
NodeName={NODE} NodeAddr=127.0.0.1 NodeHostname=localhost CPUs={CPUS} RealMemory={_memory_mib()} State=UNKNOWN
PartitionName={PARTITION} Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


@dataclass
class SlurmCluster:
    """A running one-node cluster: its folder, its ``slurm.conf`` and its daemons.

    Attributes
    ----------
    folder
        The temporary folder holding everything of the cluster.
    conf
        Its ``slurm.conf``.
    daemons
        The daemons, in start order: ``munged``, ``slurmctld``, ``slurmd``.
    """

    folder: Path
    conf: Path
    daemons: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def env(self) -> dict[str, str]:
        """``os.environ`` with this cluster's ``SLURM_CONF``: what clients of the cluster run with."""
        return {**os.environ, "SLURM_CONF": str(self.conf), "PATH": _search_path()}

    def logs(self) -> str:
        """The last lines of each daemon's output (in the foreground, its log), for a failure's message."""
        return "\n".join(f"--- {name}:\n{_tail(self.folder / f'{name}.log')}" for name in self.daemons)

    def _start(self, name: str, argv: list[str], env: Mapping[str, str]) -> None:
        with open(self.folder / f"{name}.log", "wb") as log:  # the child keeps its own copy of it
            self.daemons[name] = subprocess.Popen(
                argv, env=dict(env), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT
            )

    def _exited(self) -> str | None:
        for name, proc in self.daemons.items():
            if proc.poll() is not None:
                return f"{name} exited with status {proc.returncode}"
        return None

    def start(self) -> None:
        """Write the key and ``slurm.conf``, start the daemons and wait until the node is idle.

        Raises
        ------
        SlurmUnavailable
            When a daemon exits or the node does not come up idle within :data:`START_SECONDS`; the message
            holds the daemons' last log lines. Nothing started is left running.
        """
        try:
            self._start_daemons()
        except BaseException:
            self.stop()
            raise

    def _start_daemons(self) -> None:
        munge_dir = self.folder / "munge"
        for sub in ("munge", "state", "spool"):
            (self.folder / sub).mkdir()
        # munged refuses a socket folder others cannot enter, and a key anyone but its owner can read.
        munge_dir.chmod(0o755)
        key = munge_dir / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        socket_path = munge_dir / "munge.socket"
        self._start(
            "munged",
            [
                _program("munged"),
                "--foreground",
                f"--key-file={key}",
                f"--socket={socket_path}",
                f"--pid-file={munge_dir / 'munged.pid'}",
                f"--log-file={munge_dir / 'munged.log'}",
                f"--seed-file={munge_dir / 'munged.seed'}",
            ],
            os.environ,
        )
        self._wait("munged's socket", socket_path.exists)
        self.conf.write_text(_slurm_conf(self.folder, _free_port(), _free_port()))
        env = self.env
        self._start("slurmctld", [_program("slurmctld"), "-D", "-f", str(self.conf)], env)
        self._start("slurmd", [_program("slurmd"), "-D", "-N", NODE, "-f", str(self.conf)], env)

        def idle() -> bool:
            try:
                probe = _client(["sinfo", "--noheader", "--nodes", NODE, "--format", "%t"], env)
            except subprocess.TimeoutExpired:  # the controller is still starting: ask again
                return False
            return probe.stdout.strip() == "idle"

        self._wait(f"node {NODE} to be idle (sinfo)", idle)

    def _wait(self, what: str, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + START_SECONDS
        while not ready():
            exited = self._exited()
            if exited is not None:
                raise SlurmUnavailable(f"{exited} while waiting for {what}:\n{self.logs()}")
            if time.monotonic() > deadline:
                raise SlurmUnavailable(f"gave up waiting {START_SECONDS:.0f} s for {what}:\n{self.logs()}")
            time.sleep(0.2)

    def stop(self) -> list[str]:
        """Cancel every job, stop the daemons, end any process of the cluster still alive, remove the folder.

        Returns
        -------
        list[str]
            The processes that outlived the daemons by :data:`STOP_SECONDS` and had to be killed
            (``pid command``); empty when the cluster went down on its own, as it should.
        """
        env = self.env
        followed = _Followed(self.conf)
        followed.look()  # before cancelling: a job step that is exiting can no longer be found
        ctld = self.daemons.get("slurmctld")
        if ctld is not None and ctld.poll() is None:
            # A client stuck on a sick controller must not keep the daemons from being stopped below.
            with suppress(subprocess.TimeoutExpired):
                _client(["scancel", "--partition", PARTITION], env)
                deadline = time.monotonic() + STOP_SECONDS
                while time.monotonic() < deadline:
                    queue = _client(["squeue", "--noheader", "--format", "%i"], env)
                    if queue.returncode != 0 or not queue.stdout.strip():
                        break
                    time.sleep(0.2)
            # A cancelled job's slurmstepd still cleans up and reports to slurmctld after the queue is empty:
            # stopping the daemons under it would leave it retrying. The daemons' own helpers (slurmscriptd,
            # a child of slurmctld) go with them.
            daemons = {proc.pid for proc in self.daemons.values()}
            followed.settle(lambda pid, ppid: pid not in daemons and ppid not in daemons)
        for name in reversed(list(self.daemons)):
            proc = self.daemons[name]
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(STOP_SECONDS)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        left = followed.settle(lambda pid, ppid: True)
        for pid in left:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.folder, ignore_errors=True)
        return [f"{pid} {cmd}" for pid, cmd in sorted(left.items())]


def _stat(pid: int) -> tuple[str, int, int] | None:
    """A process's state letter, parent id and start time (``/proc/PID/stat``), or ``None`` once it is gone.

    The start time tells a process from a later one that reuses its id.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name, in parentheses, may hold spaces: the fields after its last ")" are fixed
    # (state is field 3 of proc(5), the parent id 4, the start time 22).
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[19])


def processes_of(conf: Path) -> dict[int, str]:
    """Live processes whose environment names ``conf`` as ``SLURM_CONF``: this cluster's, and only its.

    Job steps inherit ``SLURM_CONF`` from the process that submitted the job, ``slurmstepd`` from
    ``slurmd``; nothing else on the machine carries this cluster's path.
    """
    marker = f"SLURM_CONF={conf}".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:  # gone meanwhile, or not ours to read
            continue
    return found


class _Followed:
    """The cluster's processes, each followed by its id from the first time it is seen.

    A process that is exiting no longer shows its environment, so it cannot be found again by
    :func:`processes_of`; its id (with its start time, against a later process reusing the id) can.
    """

    def __init__(self, conf: Path) -> None:
        self.conf = conf
        self.seen: dict[int, tuple[int, int, str]] = {}  # id: (parent id, start time, command line)

    def look(self) -> None:
        """Add the cluster's processes alive now."""
        for pid, cmd in processes_of(self.conf).items():
            stat = _stat(pid)
            if stat is not None and pid not in self.seen:
                self.seen[pid] = (stat[1], stat[2], cmd)

    def settle(self, counts: Callable[[int, int], bool]) -> dict[int, str]:
        """Wait up to :data:`STOP_SECONDS` for the processes ``counts`` (by id and parent id) to end.

        Returns
        -------
        dict[int, str]
            Those still alive at the deadline, by id, with their command lines.
        """
        deadline = time.monotonic() + STOP_SECONDS
        while True:
            self.look()
            alive = {}
            for pid, (ppid, started, cmd) in self.seen.items():
                stat = _stat(pid)
                if counts(pid, ppid) and stat is not None and stat[0] != "Z" and stat[2] == started:
                    alive[pid] = cmd
            if not alive or time.monotonic() > deadline:
                return alive
            time.sleep(0.2)


def start_one_node_cluster() -> SlurmCluster:
    """Start a one-node cluster in a new temporary folder; the caller stops it (:meth:`SlurmCluster.stop`).

    Returns
    -------
    SlurmCluster
        The cluster, its node idle.

    Raises
    ------
    SlurmUnavailable
        When the machine lacks Slurm or munge, is not root, or the daemons cannot start (the message says
        which and holds their logs); nothing is left running then.
    """
    reason = missing_requirements()
    if reason is not None:
        raise SlurmUnavailable(reason)
    # A short folder under /tmp: munge's and slurmd's unix-socket paths must stay under ~107 characters,
    # and munged wants every folder above its socket enterable by all (pytest's tmp_path is 0700).
    folder = Path(tempfile.mkdtemp(prefix="gr-slurm-", dir="/tmp"))
    folder.chmod(0o755)
    cluster = SlurmCluster(folder=folder, conf=folder / "slurm.conf")
    cluster.start()
    return cluster
