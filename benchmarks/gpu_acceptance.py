"""GPU acceptance: everything the project checks and measures on an accelerator, in one command.

    python benchmarks/gpu_acceptance.py                       # on a GPU machine (~20 min on one H100)
    python benchmarks/gpu_acceptance.py --dry-run             # the same code paths at tiny sizes (CPU, CI)
    python benchmarks/gpu_acceptance.py --stages tier rows    # some stages only
    python benchmarks/gpu_acceptance.py --render DIR          # the report again from DIR's stage records

Stages, each in its own process with its own time limit, so one that fails or runs out of
time is recorded and the others still run:

* ``info``: ``python -m jaxclimate.info`` (backend, devices, memory, versions, flags, matmul
  precision, a throughput probe per environment);
* ``tier``: the ``gpu`` test tier, ``python -m pytest -m gpu -n 0`` (float32 on the
  accelerator against float64 on the CPU for every environment, exact divisions, a short
  training run that learns, the benchmark suite's quick record; ``--notebooks`` adds the
  notebooks in FAST mode);
* ``roofline``: env steps at 65,536 parallel envs against the device's measured roofline
  (``benchmarks/bench_accelerator.py roofline``);
* ``training``: the three training rows (``benchmarks/bench_accelerator.py training``);
* ``suite``: the benchmark suite at 1, 256, 4,096 and 65,536 envs (``python -m benchmarks``).

Writes into ``--out`` (default ``benchmarks/results/accelerator-<device>/``): each stage's log
and JSON, ``gpu_acceptance.json`` (every stage: status, exit code, wall time) and
``gpu_acceptance.md`` (the tables the README quotes). On a GPU machine with no internet, run
it from the checkout with ``PYTHONPATH`` pointing there (docs/gpu.md).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("info", "tier", "roofline", "training", "suite")
#: each stage's time limit in seconds: (full run, dry run)
LIMITS = {"info": (90, 240), "tier": (300, 300), "roofline": (240, 300), "training": (200, 300), "suite": (600, 600)}


def stage_command(stage: str, out: Path, dry: bool, notebooks: bool) -> list[str]:
    py = sys.executable
    if stage == "info":
        probe = ["--num-envs", "8", "--seconds", "0.5", "--envs", "ebm-v1"] if dry else ["--seconds", "3"]
        return [py, "-m", "jaxclimate.info", "--json", str(out / "info.json"), *probe]
    if stage == "tier":
        marker = "gpu" if notebooks else "gpu and not slow"
        return [
            py,
            "-m",
            "pytest",
            "tests/gpu",
            "-m",
            marker,
            "-n",
            "0",
            "-p",
            "no:cacheprovider",
            "-q",
            "-s",
            "-o",
            "junit_family=legacy",
            "--junitxml",
            str(out / "tier.xml"),
        ]
    if stage in ("roofline", "training"):
        return [py, "benchmarks/bench_accelerator.py", stage, "--out", str(out), *(["--dry-run"] if dry else [])]
    envs = ["1", "4"] if dry else ["1", "256", "4096", "65536"]
    return [py, "-m", "benchmarks", "--envs", *envs, "--out", str(out / "suite"), *(["--quick", "--only", "ebm"] if dry else [])]


def run_stage(stage: str, out: Path, dry: bool, notebooks: bool, limit: float) -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    # stages run one after another, but the tier's notebook kernels and subprocesses share the device
    env.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    cmd = stage_command(stage, out, dry, notebooks)
    print(f"\n=== {stage} (limit {limit:.0f} s): {' '.join(cmd[1:])}", flush=True)
    start = time.perf_counter()
    with open(out / f"{stage}.log", "w") as log:
        # its own process group, so a stage cut off takes its children (notebook kernels) with it
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
        watchdog = threading.Timer(limit, _kill_group, (proc.pid,))
        watchdog.start()
        for line in proc.stdout:  # ends when the stage exits or the watchdog kills it
            print(line, end="", flush=True)
            log.write(line)
        returncode = proc.wait()
        timed_out = watchdog.finished.is_set() and returncode < 0  # set once the timer has fired (cancel comes after)
        watchdog.cancel()
    status = "timed out" if timed_out else "passed" if returncode == 0 else "failed"
    result = {
        "stage": stage,
        "status": status,
        "returncode": proc.returncode,
        "wall_s": time.perf_counter() - start,
        "limit_s": limit,
        "command": " ".join(cmd[1:]),
    }
    print(f"=== {stage}: {status} in {result['wall_s']:.0f} s", flush=True)
    return result


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:  # it ended meanwhile
        pass


# --- the report ------------------------------------------------------------------------------------


def tier_summary(path: Path) -> dict:
    """Counts and per-test outcome (with recorded errors) from the tier's JUnit XML."""
    if not path.exists():
        return {}
    tests = []
    for case in ET.parse(path).getroot().iter("testcase"):
        outcome = (
            "failed"
            if case.find("failure") is not None or case.find("error") is not None
            else ("skipped" if case.find("skipped") is not None else "passed")
        )
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        tests.append({"test": case.get("name"), "outcome": outcome, "time_s": float(case.get("time", 0)), **props})
    return {"tests": tests, **{k: sum(t["outcome"] == k for t in tests) for k in ("passed", "failed", "skipped")}}


def _version(name: str, v) -> str:
    if not isinstance(v, int):
        return str(v)
    return f"{v // 10000}.{v // 100 % 100}.{v % 100}" if name == "cudnn" else f"{v // 1000}.{v % 1000 // 10}"


def _versions(cuda) -> str:
    """CUDA versions as jax reports them (13000 → 13.0)."""
    if not isinstance(cuda, dict) or not cuda:
        return str(cuda or "-")
    return ", ".join(f"{k.replace('cuda_', '')} {_version(k, v)}" for k, v in cuda.items())


def _load(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


def markdown(out: Path, stages: list[dict]) -> str:
    info, roof, train = _load(out / "info.json"), _load(out / "roofline.json"), _load(out / "training.json")
    lines = []
    if info:
        dev = (info.get("devices") or [{}])[0]
        lines.append(
            f"Device: {dev.get('kind', '?')} ({info.get('backend', '?')}), jax {info.get('jax', '?')}, "
            f"jaxlib {info.get('jaxlib', '?')}, CUDA {_versions(info.get('cuda'))}, Python {info.get('python', '?')}."
        )
    lines += ["", "| stage | status | wall s |", "|---|---|---:|"]
    lines += [f"| {s['stage']} | {s['status']} | {s['wall_s']:.0f} |" for s in stages]
    tier = tier_summary(out / "tier.xml")
    if tier:
        lines += [
            "",
            f"gpu tier: {tier['passed']} passed, {tier['failed']} failed, {tier['skipped']} skipped.",
            "",
            "| test | outcome | accelerator error | CPU float32 error |",
            "|---|---|---:|---:|",
        ]
        for t in tier["tests"]:
            acc, cpu = t.get("relative_error_accelerator"), t.get("relative_error_cpu_float32")
            lines.append(
                f"| `{t['test']}` | {t['outcome']} | {float(acc):.1e} | {float(cpu):.1e} |" if acc else f"| `{t['test']}` | {t['outcome']} | | |"
            )
    if roof:
        p = roof["peaks"]
        lines += [
            "",
            f"Roofline measured in the run: {p['bytes_per_s'] / 1e9:,.0f} GB/s, float32 (HIGHEST) "
            f"{p['float32_flop_per_s'] / 1e12:,.1f} TFLOP/s, default precision {p['default_precision_flop_per_s'] / 1e12:,.1f} TFLOP/s.",
            "",
            "| environment | parallel envs | env-steps/s | target | bound | of roofline | compile s |",
            "|---|---:|---:|---:|---|---:|---:|",
        ]
        lines += [
            f"| {r['env']} | {r['n_envs']:,} | {r['env_steps_per_s']:,.0f} | {r['target_env_steps_per_s']:,.0f} | {r['bound']} | "
            f"{100 * r['fraction_of_roofline']:.1f} % | {r['compile_s']:.1f} |"
            for r in roof["rows"]
        ]
    if train:
        lines += ["", "| training row | rate | whole row | target | met | measured over |", "|---|---:|---:|---|---|---|"]
        for r in train["rows"]:
            rate = r.get("env_steps_per_s") or r.get("agent_steps_per_s")
            unit = "env-steps/s" if "env_steps_per_s" in r else "agent-steps/s"
            whole = r.get("whole_row_s") or r.get("projected_row_s") or r.get("paper_run_s")
            how = "run" if r.get("whole_row_s") else "projected"
            whole_text = f"{whole:,.0f} s ({how})" if whole is not None else "—"
            lines.append(
                f"| {r['row']} | {rate:,.0f} {unit} | {whole_text} | {r['target']} | {'yes' if r['meets_target'] else 'no'} | {r['measured']} |"
            )
    notes = (_load(out / "gpu_acceptance.json") or {}).get("notes")
    if notes:
        lines += ["", "Notes:", ""] + [f"* {n}" for n in notes]
    suite = out / "suite"
    for md in sorted(suite.glob("suite*.md")) if suite.exists() else []:
        lines += ["", f"Benchmark suite ({md.name}):", "", md.read_text().strip()]
    return "\n".join(lines) + "\n"


def write_report(out: Path, stages: list[dict], dry: bool) -> None:
    from jaxclimate._io import atomic_write_text

    previous = _load(out / "gpu_acceptance.json") or {}
    merged = {s["stage"]: s for s in previous.get("stages", [])} | {s["stage"]: s for s in stages}
    record = {"dry_run": dry, "stages": [merged[s] for s in STAGES if s in merged], "notes": previous.get("notes", [])}
    atomic_write_text(out / "gpu_acceptance.json", json.dumps(record, indent=1) + "\n")
    atomic_write_text(out / "gpu_acceptance.md", markdown(out, record["stages"]))


def device_slug() -> str:
    """The default device's kind as a file name (in a subprocess: this one never starts JAX)."""
    code = "import jax; print(jax.devices()[0].device_kind)"
    kind = (
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ, XLA_PYTHON_CLIENT_PREALLOCATE="false")
        ).stdout.strip()
        or "unknown"
    )
    return re.sub(r"[^A-Za-z0-9.]+", "-", kind).strip("-").lower()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1]
    )
    p.add_argument("--dry-run", action="store_true", help="tiny sizes, CPU allowed (CI)")
    p.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES))
    p.add_argument("--notebooks", action="store_true", help="the tier also runs the notebooks in FAST mode")
    p.add_argument("--out", type=Path, help="results folder (default benchmarks/results/accelerator-<device>)")
    p.add_argument("--budget-s", type=float, help="stop starting stages, and cut the running one, after this many seconds")
    p.add_argument("--render", type=Path, metavar="DIR", help="only write the report again from DIR's records")
    args = p.parse_args(argv)
    if args.render:
        write_report(args.render, [], bool((_load(args.render / "gpu_acceptance.json") or {}).get("dry_run")))
        print((args.render / "gpu_acceptance.md").read_text())
        return 0
    out = args.out or ROOT / "benchmarks" / "results" / f"accelerator-{device_slug()}{'-dry-run' if args.dry_run else ''}"
    out.mkdir(parents=True, exist_ok=True)
    stages, deadline = [], time.perf_counter() + (args.budget_s or float("inf"))
    for stage in (s for s in STAGES if s in args.stages):
        limit = min(LIMITS[stage][args.dry_run], deadline - time.perf_counter())
        if limit < 20:
            stages.append({"stage": stage, "status": "not run (budget spent)", "returncode": None, "wall_s": 0.0})
        else:
            stages.append(run_stage(stage, out.resolve(), args.dry_run, args.notebooks, limit))
        write_report(out, stages, args.dry_run)
    print("\n" + (out / "gpu_acceptance.md").read_text())
    print(f"wrote {out}")
    return 0 if all(s["status"] == "passed" for s in stages) else 1


if __name__ == "__main__":
    sys.exit(main())
