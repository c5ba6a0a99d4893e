"""``python -m jaxclimate.info``: what JAX sees here, and how fast each environment steps.

Prints the backend, every device (kind, memory), the jax / jaxlib / CUDA versions, the XLA
flags and matrix-product precision in force (physics is always traced at full float32,
:mod:`jaxclimate.core.precision`; policies use the backend default, TF32 on Ampere and newer
GPUs), then a short throughput probe per environment: a batch of environments stepping with
random actions in one compiled ``jit(vmap(scan))`` program, compile time apart.

    python -m jaxclimate.info                      # everything, ~10 s per environment
    python -m jaxclimate.info --no-probe           # the device report only
    python -m jaxclimate.info --envs rice-n --seconds 3 --num-envs 4096 --json info.json
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from typing import Any

import jax
import numpy as np

import jaxclimate
from jaxclimate._cli import OneLineParser
from jaxclimate._xla import use_cpu_safe_xla_flags
from jaxclimate.core.precision import PHYSICS_PRECISION, POLICY_PRECISION  # noqa: E402
from jaxclimate.memory import gib  # noqa: E402
from jaxclimate.testing import rollout  # noqa: E402

#: One environment per system (the probe's default).
PROBE_ENVS = ("climate-mitigation", "rice-n", "invest-esg", "ebm-v3-a6")
PROBE_STEPS = 20  # env steps per compiled call


def _cuda_versions() -> dict[str, Any]:
    try:
        from jax._src.lib import cuda_versions  # present in CUDA builds only
    except ImportError:
        return {}
    if cuda_versions is None:
        return {}
    out = {}
    for name in ("cuda_runtime_get_version", "cuda_driver_get_version", "cudnn_get_version"):
        try:
            out[name.replace("_get_version", "")] = getattr(cuda_versions, name)()
        except Exception:  # noqa: BLE001 - a missing library is reported as absent
            pass
    return out


def _host_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def _device_row(device: Any) -> dict[str, Any]:
    row: dict[str, Any] = {"id": device.id, "platform": device.platform, "kind": device.device_kind}
    stats = device.memory_stats() if hasattr(device, "memory_stats") else None
    if stats:
        row["memory_bytes"] = stats.get("bytes_limit")
        row["memory_in_use_bytes"] = stats.get("bytes_in_use")
    if getattr(device, "compute_capability", None):
        row["compute_capability"] = device.compute_capability
    return row


def device_report() -> dict[str, Any]:
    """Backend, devices, versions, flags and precisions, as a JSON-ready dict."""
    backend = jax.default_backend()
    devices = [_device_row(d) for d in jax.devices()]
    capability = devices[0].get("compute_capability")
    tf32 = backend == "gpu" and capability is not None and float(capability) >= 8.0
    import jaxlib

    return {
        "python": platform.python_version(),
        "jaxclimate": jaxclimate.__version__,
        "jax": jax.__version__,
        "jaxlib": getattr(jaxlib, "__version__", "?"),
        "cuda": _cuda_versions(),
        "backend": backend,
        "process_count": jax.process_count(),
        "devices": devices,
        "host_memory_bytes": _host_memory_bytes(),
        "x64": bool(jax.config.jax_enable_x64),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
        "default_matmul_precision": jax.config.jax_default_matmul_precision,
        "physics_precision": PHYSICS_PRECISION,
        "policy_precision": POLICY_PRECISION or "backend default",
        "policy_matmuls_in_tf32": tf32,
    }


def probe(env_id: str, num_envs: int, seconds: float) -> dict[str, Any]:
    """env-steps/s of ``num_envs`` environments with random actions, for about ``seconds``."""
    env, params = jaxclimate.make(env_id)
    run = jax.jit(jax.vmap(lambda k: rollout(env, params, k, PROBE_STEPS)[1]["rewards"]))
    keys = jax.random.split(jax.random.PRNGKey(0), num_envs)
    start = time.perf_counter()
    jax.block_until_ready(run(keys))
    compile_s = time.perf_counter() - start
    times: list[float] = []
    deadline = time.perf_counter() + seconds
    while not times or (time.perf_counter() < deadline and len(times) < 1000):
        keys = jax.random.split(keys[0], num_envs)
        start = time.perf_counter()
        jax.block_until_ready(run(keys))
        times.append(time.perf_counter() - start)
    median = float(np.median(times))
    return {
        "env": env_id,
        "num_envs": num_envs,
        "steps_per_call": PROBE_STEPS,
        "calls": len(times),
        "compile_s": compile_s,
        "median_call_s": median,
        "env_steps_per_s": num_envs * PROBE_STEPS / median,
    }


def _gib(n: int | None) -> str:
    return "?" if n is None else gib(n)


def print_report(report: dict[str, Any]) -> None:
    print(f"jaxclimate {report['jaxclimate']}  jax {report['jax']}  jaxlib {report['jaxlib']}  Python {report['python']}")
    if report["cuda"]:
        print("CUDA: " + ", ".join(f"{k} {v}" for k, v in report["cuda"].items()))
    print(f"backend: {report['backend']} ({report['process_count']} process(es)); host memory {_gib(report['host_memory_bytes'])}")
    for d in report["devices"]:
        extra = f", {_gib(d['memory_bytes'])}" if d.get("memory_bytes") else ""
        extra += f", compute capability {d['compute_capability']}" if d.get("compute_capability") else ""
        print(f"  device {d['id']}: {d['kind']} ({d['platform']}{extra})")
    print(
        f"matmul precision: physics {report['physics_precision']}; policies {report['policy_precision']}"
        f"{' (TF32 on this GPU)' if report['policy_matmuls_in_tf32'] else ''}; "
        f"jax_default_matmul_precision={report['default_matmul_precision']}"
    )
    print(f"x64: {report['x64']}; XLA_FLAGS: {report['xla_flags'] or '(none)'}")


def gpu_present() -> bool:
    """Whether the machine has an NVIDIA GPU its driver sees (``nvidia-smi -L`` lists one)."""
    import shutil
    import subprocess

    exe = shutil.which("nvidia-smi")
    if exe is None:
        return False
    try:
        listing = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return listing.returncode == 0 and "GPU" in listing.stdout


def check_backend() -> None:
    """Stop where a GPU is present but JAX runs on the CPU (its CUDA build missing, or replaced
    by a CPU build during an install): everything would silently run on the CPU.
    ``JAXCLIMATE_ALLOW_CPU=1``, or ``JAX_PLATFORMS`` naming only the CPU, goes on."""
    platforms = os.environ.get("JAX_PLATFORMS", "")
    cpu_asked_for = bool(platforms) and not any(p in platforms for p in ("cuda", "gpu", "rocm", "tpu"))
    if jax.default_backend() == "cpu" and not cpu_asked_for and os.environ.get("JAXCLIMATE_ALLOW_CPU") != "1" and gpu_present():
        raise RuntimeError(
            "A GPU is present (nvidia-smi lists it) but JAX runs on the CPU: its CUDA build is missing or was "
            'replaced. Reinstall it (pip install -U "jax[cuda12]", or jax[cuda13] for CUDA 13 drivers) and '
            "restart the runtime; or set JAXCLIMATE_ALLOW_CPU=1 to go on on the CPU."
        )


def banner() -> dict[str, Any]:
    """The device report printed (a notebook's first output), then :func:`check_backend`."""
    report = device_report()
    print_report(report)
    check_backend()
    return report


def main(argv: list[str] | None = None) -> int:
    use_cpu_safe_xla_flags()  # before JAX starts its backend (see jaxclimate/_xla.py)
    parser = OneLineParser(prog="python -m jaxclimate.info", description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-probe", action="store_true", help="skip the throughput probe")
    parser.add_argument("--envs", nargs="+", default=list(PROBE_ENVS), help=f"environments to probe (default: {' '.join(PROBE_ENVS)})")
    parser.add_argument("--num-envs", type=int, help="environments per probe (default 4096 on an accelerator, 64 on CPU)")
    parser.add_argument("--seconds", type=float, default=10.0, help="time per probe, compilation apart (default 10)")
    parser.add_argument("--json", metavar="PATH", help="also write the report as JSON")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.envs) - set(jaxclimate.registered_envs()))
    if unknown:
        parser.error(f"--envs: unknown {unknown}; registered: {jaxclimate.registered_envs()}")
    if args.num_envs is not None and args.num_envs < 1:
        parser.error(f"--num-envs must be >= 1, got {args.num_envs}")
    if args.seconds <= 0:
        parser.error(f"--seconds must be > 0, got {args.seconds}")
    report = device_report()
    print_report(report)
    if not args.no_probe:
        num_envs = args.num_envs or (64 if report["backend"] == "cpu" else 4096)
        report["probe"] = []
        print(f"\nthroughput probe: {num_envs} envs × {PROBE_STEPS} steps per call, random actions, ~{args.seconds:g} s each")
        print(f"{'environment':<22} {'compile s':>9} {'env-steps/s':>14}")
        for env_id in args.envs:
            row = probe(env_id, num_envs, args.seconds)
            report["probe"].append(row)
            print(f"{env_id:<22} {row['compile_s']:9.1f} {row['env_steps_per_s']:14,.0f}")
    if args.json:
        from jaxclimate._io import atomic_write_text

        atomic_write_text(args.json, json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    sys.exit(guarded(main, "python -m jaxclimate.info"))
