"""What every command line of the package shares: one-line errors, Ctrl-C without a traceback,
``KEY=VALUE`` flags, the compilation-cache flag and the flags of multi-process runs.

This module imports no JAX at import time, so a command can guard everything it does — its
own imports included — with :func:`guarded`: an interrupt at any moment (importing JAX,
compiling, running) ends with one line, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

#: the exit status of a command stopped by Ctrl-C (128 + SIGINT), as a shell reports it
INTERRUPTED = 130
#: the exit status of a command whose output reader went away (128 + SIGPIPE)
CLOSED_PIPE = 141


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line ending "(see --help)", without the usage
    block (a bad value's message names its flag; ``--help`` has the rest)."""

    def error(self, message: str):  # argparse's hook for every bad flag
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


#: native modules whose import a Ctrl-C must not interrupt: an interrupt raised inside their
#: initialisation aborts the process from C++ (``terminate called after throwing an instance of
#: 'nanobind::python_error'``), so they load first with SIGINT held until they are in
NATIVE_IMPORTS = ("jax", "orbax.checkpoint")


def guarded(main: Callable[[], Any], what: str) -> int:
    """Run ``main`` and return its exit status: what it returns where that is an int, else 0
    (a baseline's ``main`` returns its results, for the callers that import it); Ctrl-C at
    any moment ends it with one line (``what``: the command, as the line names it). ``main``
    says itself what was kept. Output piped to a reader that stops early (``--list | head``)
    ends it quietly with status 141, as a shell reports SIGPIPE, instead of a traceback."""
    previous_hook = sys.unraisablehook
    sys.unraisablehook = _redeliver_swallowed_interrupts(previous_hook)
    try:
        _import_holding_interrupts(NATIVE_IMPORTS)
        status = main()
        sys.stdout.flush()  # here, so a closed pipe is caught below and not at interpreter exit
        return status if isinstance(status, int) else 0
    except KeyboardInterrupt:
        _quiet_line(f"\n{what}: interrupted")
        return INTERRUPTED
    except BrokenPipeError:
        if not _stdout_closed():
            raise  # another pipe broke (a worker's, a subprocess's): a real error, with its traceback
        return CLOSED_PIPE
    finally:
        sys.unraisablehook = previous_hook


def _redeliver_swallowed_interrupts(previous_hook: Callable[[Any], None]) -> Callable[[Any], None]:
    """An ``unraisablehook`` that sends a Ctrl-C again when Python had to swallow it.

    A KeyboardInterrupt raised while Python runs a garbage-collector callback (JAX registers
    one that runs during compilation) or a ``__del__`` cannot propagate: Python prints
    "Exception ignored in …" and the command runs on as if no key had been pressed. The hook
    sends SIGINT once more from a timer thread, a moment later (sent at once, the handler would
    run inside this hook, where the interrupt is swallowed once more), so that the handler runs
    again in the main thread after the callback has returned and ends the command as usual."""
    import signal
    import threading

    def hook(unraisable: Any) -> None:
        if issubclass(unraisable.exc_type, KeyboardInterrupt):
            timer = threading.Timer(0.05, os.kill, args=(os.getpid(), signal.SIGINT))
            timer.daemon = True
            timer.start()
        else:
            previous_hook(unraisable)

    return hook


def _stdout_closed() -> bool:
    """Whether stdout's reader is gone (the write end of a pipe polls POLLERR once its read end is
    closed); if so, point stdout at /dev/null so that Python's flush at exit does not raise a
    second time (the recipe of Python's ``signal`` documentation)."""
    import select

    try:
        fd = sys.stdout.fileno()
    except (AttributeError, ValueError, OSError):  # stdout without a file descriptor: not a pipe
        return False
    if hasattr(select, "poll"):
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        if not any(events & select.POLLERR for _, events in poller.poll(0)):
            return False
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)
    return True


def _import_holding_interrupts(modules: tuple[str, ...]) -> None:
    """Import ``modules`` with Ctrl-C held back until they are in."""
    import importlib

    from jaxclimate._io import interrupts_held

    with interrupts_held():
        for module in modules:
            importlib.import_module(module)


def _quiet_line(text: str) -> None:
    """Print to stderr, ignoring a second Ctrl-C or a closed pipe while doing it."""
    try:
        print(text, file=sys.stderr, flush=True)
    except (KeyboardInterrupt, BrokenPipeError, OSError):
        pass


def key_value(text: str) -> tuple[str, str]:
    """The argparse ``type`` of the ``KEY=VALUE`` flags: ``(key, value)``, stripped; anything
    else is refused while parsing (exit 2, one line naming the flag)."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value.strip()


def add_key_value_flag(parser: argparse.ArgumentParser, flag: str, help: str) -> None:
    """A repeatable ``FLAG KEY=VALUE`` (``--set``, ``--env-set``, …): a list of ``(key, value)``."""
    parser.add_argument(flag, action="append", default=[], type=key_value, metavar="KEY=VALUE", help=help)


def add_cache_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-compile-cache", action="store_true", help="do not read or write JAX's persistent compilation cache (~/.cache/jaxclimate/xla)"
    )


def prepare_process(argv: list[str]) -> None:
    """What a command does before JAX starts its backend: the deadlock-free CPU flags
    (jaxclimate/_xla.py), the persistent compilation cache unless ``--no-compile-cache``
    (or ``JAXCLIMATE_COMPILE_CACHE=0``), and joining a multi-process run when ``argv`` (or
    the environment) names a coordinator."""
    from jaxclimate import distributed
    from jaxclimate._xla import use_cpu_safe_xla_flags

    use_cpu_safe_xla_flags()
    configure_compile_cache(argv)
    parser = argparse.ArgumentParser(add_help=False)
    add_distributed_flags(parser)
    args, _ = parser.parse_known_args(argv)
    try:
        distributed.initialize(args.coordinator, args.num_processes, args.process_id)
    except ValueError as err:
        raise SystemExit(f"error: {err}") from None


def configure_compile_cache(argv: list[str]) -> Path | None:
    """Turn the persistent compilation cache on unless ``--no-compile-cache`` is in ``argv`` (or
    ``JAXCLIMATE_COMPILE_CACHE=0``); its folder, or None. Must run before the first compilation."""
    from jaxclimate import _cache

    parser = argparse.ArgumentParser(add_help=False)
    add_cache_flag(parser)
    args, _ = parser.parse_known_args(argv)
    return None if args.no_compile_cache else _cache.enable_compilation_cache()


def add_distributed_flags(parser: argparse.ArgumentParser) -> None:
    from jaxclimate.distributed import ENV_COORDINATOR, ENV_NUM_PROCESSES, ENV_PROCESS_ID

    group = parser.add_argument_group("several processes or hosts (jax.distributed; see docs/guide.md)")
    group.add_argument("--coordinator", metavar="HOST:PORT", help=f"address of process 0's coordinator (or ${ENV_COORDINATOR})")
    group.add_argument("--num-processes", type=int, help=f"processes in the run (or ${ENV_NUM_PROCESSES})")
    group.add_argument("--process-id", type=int, help=f"this process, 0..N-1 (or ${ENV_PROCESS_ID})")
    group.add_argument(
        "--cpu-processes", type=int, metavar="N", help="use N CPU cores as N processes of one run on this machine (loopback jax.distributed)"
    )


def start_cpu_processes(argv: list[str], module: str) -> tuple[list[str], list[subprocess.Popen]]:
    """``--cpu-processes N``: start processes 1..N-1 of one run of ``python -m module`` on this
    machine (loopback coordinator, one CPU device each) and return this process's arguments as
    process 0 with the children. Several CPU devices in one process can hang with recurrent
    networks (docs/guide.md); separate processes do not. No ``--cpu-processes``: ``(argv, [])``."""
    from jaxclimate import _xla

    parser = OneLineParser(prog=f"python -m {module}", add_help=False)
    add_distributed_flags(parser)
    args, _ = parser.parse_known_args(argv)
    if args.cpu_processes is None or args.cpu_processes == 1:
        return argv, []
    if args.cpu_processes < 1 or args.coordinator or args.num_processes or args.process_id is not None:
        parser.error(
            f"--cpu-processes must be >= 1 (got {args.cpu_processes}) and starts its own processes "
            "(no --coordinator, --num-processes or --process-id beside it)"
        )
    base = [a for i, a in enumerate(argv) if not (a.startswith("--cpu-processes") or argv[i - 1 : i] == ["--cpu-processes"])]
    os.environ["XLA_FLAGS"] = _xla.without_flag(os.environ.get("XLA_FLAGS", ""), "xla_force_host_platform_device_count")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{s.getsockname()[1]}"
    n = args.cpu_processes
    joined = lambda i: [*base, "--coordinator", address, "--num-processes", str(n), "--process-id", str(i)]  # noqa: E731
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    children = [subprocess.Popen([sys.executable, "-m", module, *joined(i)], env=env) for i in range(1, n)]
    return joined(0), children


def wait_for(children: list[subprocess.Popen], failed: bool) -> int:
    """Wait for the processes :func:`start_cpu_processes` started (stop them if this one failed);
    the first non-zero exit code, or 0."""
    codes = []
    for child in children:
        if failed:
            child.terminate()
        codes.append(child.wait())
    return next((c for c in codes if c), 0)
