"""The warm worker: pre-imports solver libraries, then forks one confined child per job.

Started by the harness (inside bubblewrap or ``unshare`` where available) as::

    python -I -B -X utf8 -c <bootstrap> <runtime dir> server <config JSON>

It speaks length-prefixed JSON on the descriptors that were its stdin/stdout (see ``framing``);
anything the libraries print goes to its stderr, which the harness keeps as a log. After start-up
it sends one ``ready`` message, then answers each job request with one reply, until stdin closes.

Per job it creates a working directory, forks a child that runs ``child.run`` (in a new PID
namespace when the kernel allows, so that killing the child kills everything it started),
watches the wall clock, the output size and (where ``RLIMIT_NPROC`` is not enforced) the number
of processes, then collects output, the result channel and the model files, and wipes the job's
traces before the next job.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import json
import os
import re
import resource
import select
import shutil
import signal
import stat
import sys
import time
from typing import Any, NamedTuple

from . import child, framing, hooks, native
from .channel import ResultChannel
from .contract import PROGRAM_FILE, WARM_FIRST, WORKDIR_TOKEN, WorkerConfig
from .imports import PostImportHooks

_TICK_S = 0.02
_MAX_COLLECTED_FILES = 100
_MAX_COLLECTED_BYTES = 64 << 20
_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


class Confinement:
    """What the worker found it can do for each job (reported in the ``ready`` message)."""

    def __init__(self) -> None:
        self.pid_namespace_fd: int | None = None
        self.job_uid: int | None = None
        self.nproc_base: int | None = None
        self.notes: list[str] = []


def main(argv: list[str]) -> int:
    config = WorkerConfig.from_json(argv[0])
    proto_in, proto_out = _take_protocol_descriptors()
    if config.parent_pid is not None:
        native.prctl(native.PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != config.parent_pid:
            return 1
    confinement = Confinement()
    _enter_job_namespaces(config, confinement, proto_in, proto_out)
    native.prctl(native.PR_SET_CHILD_SUBREAPER, 1)
    _check_job_uid(config, confinement)
    _calibrate_process_limit(confinement)
    finder = PostImportHooks(hooks.INSTALLERS)
    sys.meta_path.insert(0, finder)
    finder.install_loaded()
    preload_errors: dict[str, str] = {}
    for name in config.preload:
        try:
            importlib.import_module(name)
        except BaseException as error:
            preload_errors[name] = f"{type(error).__name__}: {error}"[:300]
    gc.collect()
    gc.freeze()
    server = Server(config, confinement)
    framing.write_frame(
        proto_out,
        {
            "ready": True,
            "pid": os.getpid(),
            "euid": os.geteuid(),
            "job_pid_namespace": confinement.pid_namespace_fd is not None,
            "job_uid": confinement.job_uid,
            "nproc_enforced": confinement.nproc_base is not None,
            "preloaded": [name for name in config.preload if name not in preload_errors],
            "preload_errors": preload_errors,
            "notes": confinement.notes,
        },
    )
    while True:
        try:
            request = framing.read_frame(proto_in)
        except framing.FrameError:
            return 0
        try:
            reply = server.run_job(request)
        except Exception as error:
            reply = {"id": request.get("id"), "error": f"{type(error).__name__}: {error}"[:2000]}
        framing.write_frame(proto_out, reply)
        # After the reply, so the import's cost is off this job's path.
        server.warm(reply, str(request.get("nonce", "")))


def _take_protocol_descriptors() -> tuple[int, int]:
    """Move the protocol off fds 0/1 so stray library output cannot corrupt it."""
    proto_in, proto_out = os.dup(0), os.dup(1)
    os.set_inheritable(proto_in, False)
    os.set_inheritable(proto_out, False)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return proto_in, proto_out


def _try_pid_namespace_switch() -> int | None:
    """An fd of this process's PID namespace if it may give each child a fresh one, else None."""
    fd = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
    try:
        native.unshare(native.CLONE_NEWPID)
        native.setns(fd, native.CLONE_NEWPID)
    except OSError:
        os.close(fd)
        return None
    return fd


def _enter_job_namespaces(
    config: WorkerConfig, confinement: Confinement, proto_in: int, proto_out: int
) -> None:
    """Make per-job PID namespaces possible, creating a user namespace of our own if needed.

    Without privilege over its PID namespace the worker unshares a user and a PID namespace and
    continues in a child (the first process of the new PID namespace); the original process only
    waits for it and exits with its status.
    """
    confinement.pid_namespace_fd = _try_pid_namespace_switch()
    if confinement.pid_namespace_fd is not None or not config.allow_user_namespace:
        if confinement.pid_namespace_fd is None:
            confinement.notes.append("no PID namespace per job: descendants are swept instead")
        return
    uid, gid = os.geteuid(), os.getegid()
    try:
        native.unshare(native.CLONE_NEWUSER | native.CLONE_NEWPID)
        native.write_id_maps(uid, gid)
    except OSError as error:
        confinement.notes.append(f"no PID namespace per job ({error}): descendants are swept instead")
        return
    pid = os.fork()
    if pid:
        os.close(proto_in)
        os.close(proto_out)
        _, status = os.waitpid(pid, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    native.prctl(native.PR_SET_PDEATHSIG, signal.SIGKILL)
    confinement.pid_namespace_fd = _try_pid_namespace_switch()
    if confinement.pid_namespace_fd is None:
        confinement.notes.append("no PID namespace per job even in an own user namespace")


def _needed_paths(config: WorkerConfig) -> list[str]:
    paths = [os.path.dirname(os.__file__), os.path.dirname(os.path.abspath(__file__)), sys.executable]
    paths += [path for path in sys.path if path and os.path.isdir(path)]
    if config.highs_package:
        paths.append(config.highs_package)
    return paths


def _check_job_uid(config: WorkerConfig, confinement: Confinement) -> None:
    """Adopt ``config.job_uid`` only if that uid can read the interpreter and the libraries."""
    if config.job_uid is None:
        return
    if os.geteuid() != 0:
        confinement.notes.append("job uid ignored: the worker is not root")
        return
    uid = config.job_uid
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            blocked = [path for path in _needed_paths(config) if not os.access(path, os.R_OK)]
            os.write(writer, "\n".join(blocked).encode())
            os._exit(0)
        except BaseException:
            os._exit(1)
    os.close(writer)
    blocked_text = _read_all(reader)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        confinement.notes.append(f"job uid {uid} unusable: cannot switch to it")
    elif blocked_text:
        confinement.notes.append(f"job uid {uid} unusable: cannot read {blocked_text.splitlines()[0]}")
    else:
        confinement.job_uid = uid


def _read_all(fd: int) -> str:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def _calibrate_process_limit(confinement: Confinement) -> None:
    """Find how many processes the kernel already charges to the jobs' uid (in this user
    namespace) besides a job, by forking under ever larger ``RLIMIT_NPROC``; None if the limit
    is not enforced at all (root in the initial user namespace)."""
    uid = confinement.job_uid
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(reader)
        try:
            if uid is not None:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)
            hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
            for limit in range(1, 65):
                if hard != resource.RLIM_INFINITY and limit > hard:
                    break
                resource.setrlimit(resource.RLIMIT_NPROC, (limit, hard))
                try:
                    grandchild = os.fork()
                except BlockingIOError:
                    continue
                if grandchild == 0:
                    os._exit(0)
                os.waitpid(grandchild, 0)
                os.write(writer, str(limit).encode())
                break
            os._exit(0)
        except BaseException:
            os._exit(1)
    os.close(writer)
    answer = _read_all(reader)
    os.waitpid(pid, 0)
    limit = int(answer) if answer.isdigit() else 0
    if limit >= 2:
        confinement.nproc_base = limit - 2
    else:
        confinement.notes.append("RLIMIT_NPROC not enforced: the process count is polled instead")


class Supervision(NamedTuple):
    """How a job process ended: wait status, resource usage, wall seconds, and what the worker
    killed it for (``"wall"``, ``"output"``, ``"processes"``) if it did."""

    status: int
    rusage: resource.struct_rusage
    wall_s: float
    killed_for: str | None


class Server:
    """Runs jobs one at a time (a worker serves one job at once; the pool runs many workers)."""

    def __init__(self, config: WorkerConfig, confinement: Confinement) -> None:
        self.config = config
        self.confinement = confinement
        self.sequence = 0
        self.demand: dict[str, int] = {}
        self.warm_failed: set[str] = set()

    def warm(self, reply: dict[str, Any], nonce: str) -> None:
        """Import in the worker the warmable modules that ``warm_after`` jobs have imported.

        Forking a worker costs more with every library it holds, so a library is warmed only
        when the workload uses it; the first few programs that use it import it themselves.
        """
        wanted = [
            name
            for name in _imported_by_job(str(reply.get("channel", "")), nonce)
            if name in self.config.warmable and name not in sys.modules and name not in self.warm_failed
        ]
        warmed = False
        for name in wanted:
            self.demand[name] = self.demand.get(name, 0) + 1
            if self.demand[name] < self.config.warm_after:
                continue
            for module in (*WARM_FIRST.get(name, ()), name):
                if module in sys.modules or module in self.warm_failed:
                    continue
                try:
                    importlib.import_module(module)
                    warmed = True
                except BaseException:
                    self.warm_failed.add(module)
        if warmed:
            gc.collect()
            gc.freeze()

    def run_job(self, request: dict[str, Any]) -> dict[str, Any]:
        self.sequence += 1
        limits = request["limits"]
        workdir = os.path.join(self.config.scratch, f"job-{self.sequence}")
        tmpdir = os.path.join(self.config.scratch, f"tmp-{self.sequence}")
        channel = ResultChannel.create(request["nonce"])
        stdout_fd = os.memfd_create("stdout", os.MFD_CLOEXEC)
        stderr_fd = os.memfd_create("stderr", os.MFD_CLOEXEC)
        try:
            source = self._prepare_directories(request, workdir, tmpdir)
            plan = child.JobPlan(
                workdir=workdir,
                program_path=os.path.join(workdir, PROGRAM_FILE),
                source=source,
                channel=channel,
                stdout_fd=stdout_fd,
                stderr_fd=stderr_fd,
                env={**(self.config.job_env or {}), "HOME": workdir, "TMPDIR": tmpdir, "PWD": workdir},
                cpu_s=float(limits["cpu_s"]),
                # Read here, not in the job: the first /proc read after a fork costs ~0.3 ms.
                address_space_bytes=_address_space_bytes() + (int(limits["memory_mib"]) << 20),
                file_size_mib=int(limits["file_size_mib"]),
                nofile=1024,
                nproc_limit=(
                    None
                    if self.confinement.nproc_base is None
                    else self.confinement.nproc_base + int(limits["max_processes"])
                ),
                job_uid=self.confinement.job_uid,
                gurobi=request["gurobi"],
                highs_package=self.config.highs_package,
                warmable=tuple(self.config.warmable),
                worker_pid=os.getpid(),
            )
            pid = self._fork(plan)
            outcome = self._supervise(pid, limits, (stdout_fd, stderr_fd))
            if self.confinement.pid_namespace_fd is None:
                _sweep_descendants()
            stdout, stdout_bytes = _read_tail(stdout_fd, int(limits["output_bytes"]))
            stderr, stderr_bytes = _read_tail(stderr_fd, int(limits["output_bytes"]))
            files = _collect_files(
                workdir, request["collect"], limit_bytes=int(limits["file_size_mib"]) << 20
            )
            return {
                "id": request.get("id"),
                "exit_code": os.waitstatus_to_exitcode(outcome.status)
                if os.WIFEXITED(outcome.status)
                else None,
                "signal": os.WTERMSIG(outcome.status) if os.WIFSIGNALED(outcome.status) else None,
                "killed_for": outcome.killed_for,
                "wall_s": outcome.wall_s,
                "cpu_s": outcome.rusage.ru_utime + outcome.rusage.ru_stime,
                "max_rss_kib": outcome.rusage.ru_maxrss,
                "stdout": stdout,
                "stdout_bytes": stdout_bytes,
                "stderr": stderr,
                "stderr_bytes": stderr_bytes,
                "channel": channel.read_all(),
                "files": files,
                "workdir": workdir,
            }
        finally:
            for fd in (stdout_fd, stderr_fd):
                os.close(fd)
            channel.close()
            self._wipe(workdir, tmpdir)

    def _prepare_directories(self, request: dict[str, Any], workdir: str, tmpdir: str) -> str:
        created = [workdir, tmpdir]
        for path in created:
            os.mkdir(path, 0o700)
        for relative, text in request["files"].items():
            target = _inside(workdir, relative)
            parent = os.path.dirname(target)
            if not os.path.isdir(parent):
                os.makedirs(parent, 0o700)
                created.extend(_parents_between(workdir, parent))
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(text)
            created.append(target)
        source = str(request["code"]).replace(WORKDIR_TOKEN, workdir)
        program = os.path.join(workdir, PROGRAM_FILE)
        with open(program, "w", encoding="utf-8", errors="surrogatepass") as handle:
            handle.write(source)
        created.append(program)
        uid = self.confinement.job_uid
        if uid is not None:
            for path in created:
                os.chown(path, uid, uid)
        return source

    def _fork(self, plan: child.JobPlan) -> int:
        namespace_fd = self.confinement.pid_namespace_fd
        sys.stdout.flush()
        sys.stderr.flush()
        if namespace_fd is not None:
            native.unshare(native.CLONE_NEWPID)
        try:
            pid = os.fork()
        except OSError:
            if namespace_fd is not None:
                native.setns(namespace_fd, native.CLONE_NEWPID)
            raise
        if pid == 0:
            child.run(plan)
        if namespace_fd is not None:
            native.setns(namespace_fd, native.CLONE_NEWPID)
        return pid

    def _supervise(self, pid: int, limits: dict[str, Any], outputs: tuple[int, int]) -> Supervision:
        start = time.monotonic()
        deadline = start + float(limits["wall_s"])
        output_cap = int(limits["output_bytes"])
        max_processes = int(limits["max_processes"])
        poll_processes = self.confinement.nproc_base is None
        pidfd = os.pidfd_open(pid)
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        killed_for: str | None = None
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    killed_for = "wall"
                elif poller.poll(min(remaining, _TICK_S) * 1000):
                    break
                elif sum(os.fstat(fd).st_size for fd in outputs) > output_cap:
                    killed_for = "output"
                elif poll_processes and len(_descendants(pid)) + 1 > max_processes:
                    killed_for = "processes"
                if killed_for:
                    self._kill(pidfd, pid)
                    break
            _, status, rusage = os.wait4(pid, 0)
        finally:
            os.close(pidfd)
        return Supervision(status, rusage, time.monotonic() - start, killed_for)

    def _kill(self, pidfd: int, pid: int) -> None:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        if self.confinement.pid_namespace_fd is None:
            for victim in _descendants(pid):
                _kill_quietly(victim)

    def _wipe(self, workdir: str, tmpdir: str) -> None:
        _remove(workdir)
        _remove(tmpdir)
        for directory in self.config.wipe:
            try:
                entries = os.listdir(directory)
            except OSError:
                continue
            for entry in entries:
                path = os.path.join(directory, entry)
                if path not in self.config.keep:
                    _remove(path)


def _imported_by_job(channel: str, nonce: str) -> list[str]:
    """The ``imported`` list of the job's ``end`` record (the last records are scanned first)."""
    for line in reversed(channel.splitlines()):
        if '"end"' not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("kind") == "end" and record.get("nonce") == nonce:
            imported = record.get("imported")
            return [name for name in imported if isinstance(name, str)] if isinstance(imported, list) else []
    return []


def _address_space_bytes() -> int:
    with open("/proc/self/statm", "rb") as handle:
        pages = int(handle.read().split()[0])
    return pages * _PAGE_SIZE


def _inside(root: str, relative: str) -> str:
    """``root/relative``; ValueError if ``relative`` is absolute or climbs out of ``root``."""
    target = os.path.normpath(os.path.join(root, relative))
    if os.path.isabs(relative) or not target.startswith(root + os.sep):
        raise ValueError(f"job file path {relative!r} leaves the working directory")
    if os.path.basename(target) == PROGRAM_FILE and os.path.dirname(target) == root:
        raise ValueError(f"job file path {relative!r} is reserved for the program")
    return target


def _parents_between(root: str, directory: str) -> list[str]:
    parents = []
    while directory != root:
        parents.append(directory)
        directory = os.path.dirname(directory)
    return parents


def _read_tail(fd: int, limit: int) -> tuple[str, int]:
    """The last ``limit`` bytes of a memfd as text, and its total size in bytes."""
    size = os.fstat(fd).st_size
    start = max(0, size - limit)
    return os.pread(fd, size - start, start).decode("utf-8", "replace"), size


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """``*`` within a path segment, ``?`` one character, ``**/`` any number of directories."""
    parts, index = [], 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            parts.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            parts.append(".*")
            index += 2
        elif pattern[index] == "*":
            parts.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            parts.append("[^/]")
            index += 1
        else:
            parts.append(re.escape(pattern[index]))
            index += 1
    return re.compile("".join(parts) + r"\Z")


def _collect_files(workdir: str, patterns: list[str], *, limit_bytes: int) -> list[dict[str, Any]]:
    """Regular files under ``workdir`` matching ``patterns`` (symlinks and specials ignored), in
    the order they were last written (graders take the last one as the program's final model)."""
    matchers = [_glob_regex(pattern) for pattern in patterns]
    found: list[dict[str, Any]] = []
    total = 0
    for directory, subdirectories, names in os.walk(workdir):
        subdirectories.sort()
        for name in sorted(names):
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, workdir).replace(os.sep, "/")
            if relative == PROGRAM_FILE or not any(matcher.match(relative) for matcher in matchers):
                continue
            try:
                fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            except OSError:
                continue
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    continue
                size = info.st_size
                data = os.pread(fd, min(size, limit_bytes, max(0, _MAX_COLLECTED_BYTES - total)), 0)
            finally:
                os.close(fd)
            total += len(data)
            found.append(
                {
                    "name": relative,
                    "content": data.decode("utf-8", "surrogateescape"),
                    "size": size,
                    "truncated": len(data) < size,
                    "mtime_ns": info.st_mtime_ns,
                }
            )
            if len(found) >= _MAX_COLLECTED_FILES:
                break
        else:
            continue
        break
    found.sort(key=lambda item: (item["mtime_ns"], item["name"]))
    for item in found:
        del item["mtime_ns"]
    return found


def _processes() -> dict[int, int]:
    """pid -> parent pid of every process visible in /proc."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
            table[int(entry)] = int(fields[1])
        except (OSError, IndexError, ValueError):
            continue
    return table


def _descendants(root: int) -> list[int]:
    table = _processes()
    children: dict[int, list[int]] = {}
    for pid, parent in table.items():
        children.setdefault(parent, []).append(pid)
    found, frontier = [], [root]
    while frontier:
        for pid in children.get(frontier.pop(), []):
            found.append(pid)
            frontier.append(pid)
    return found


def _kill_quietly(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _sweep_descendants() -> None:
    """Kill and reap everything below this worker (it is a subreaper, so orphans come back here)."""
    for _ in range(100):
        victims = _descendants(os.getpid())
        for pid in victims:
            _kill_quietly(pid)
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
        if not victims:
            return
        time.sleep(0.005)


def _remove(path: str) -> None:
    def retry(function: Any, target: str, _: Any) -> None:
        # A program may have taken the write bit off its own folders; give it back, but only
        # inside the tree being removed (never on /tmp itself, which jobs must keep entering).
        try:
            parent = os.path.dirname(target)
            if parent.startswith(path + os.sep) or parent == path:
                os.chmod(parent, 0o700)
            os.chmod(target, 0o700)
            function(target)
        except OSError:
            pass

    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, onerror=retry)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)
