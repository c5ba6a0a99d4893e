"""A protocol tournament on RICE-N: IPPO trained under each negotiation protocol × seeds, each
scored as the competition scored a submission, all drawn on the index plane beside the
constant policies and the welfare-maximising planner (docs/protocols.md §5).

    python baselines/rice_n_protocols.py                      # the five protocols, 3 seeds, 20k steps each (~25 min on 2 CPU cores)
    python baselines/rice_n_protocols.py --steps 200000 --out tournament_200k.json   # a GPU: minutes
    python baselines/rice_n_protocols.py --protocols none my_protocols.py:MyProtocol --out mine.json

Protocols: the three built-ins (``none``, ``bilateral``, ``club``) and the two written as a user
writes one (``baselines/protocols/``: a climate club with a border carbon adjustment, mutually
conditional binding commitments), or any given. Each is trained and evaluated exactly as
``baselines/rice_n.py`` trains and evaluates a protocol (one shared MLP, masks on the logits,
10 stochastic roll-outs per seed; its options apply), and each row adds the competition's
eight metrics (docs/rice_n.md §18). The figure puts every protocol's seed points, Pareto front
and hypervolume on the plane of the paper's indices, with the constant policies and the
planner of ``baselines/results/cooperative_optimum_rice_n.json`` (the DICE-2016 module).
The default ``--out`` is the committed record of the default settings: a run with other
protocols or settings needs its own ``--out``.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))


@functools.lru_cache(maxsize=None)
def _baseline():
    """``baselines/rice_n.py`` (its training, evaluation and options)."""
    spec = importlib.util.spec_from_file_location("rice_n_baseline", HERE / "rice_n.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BUILT_IN = ["none", "bilateral", "club"]
EXAMPLES = [f"{HERE / 'protocols' / 'club_bca.py'}:ClubBCA", f"{HERE / 'protocols' / 'conditional_commitment.py'}:ConditionalCommitment"]
OPTIMUM = HERE / "results" / "cooperative_optimum_rice_n.json"


def parser():
    p = _baseline().parser()
    p.description = __doc__
    p.set_defaults(protocols=BUILT_IN + EXAMPLES, steps=20_000, observation="factored", out=HERE / "results" / "rice_n_protocols.json")
    return p


def reference_points(path: Path = OPTIMUM) -> dict:
    """The constant policies' and the planner's (climate, economic) index points (DICE-2016)."""
    if not path.exists():
        return {}
    module = next(m for m in json.loads(path.read_text())["modules"] if m["module"] == "dice")
    constants = [[c["climate_index"], c["economic_index"]] for c in module["constants"]]
    return {"constants": constants, "planner": [module["planner"]["climate_index"], module["planner"]["economic_index"]]}


def table(results: list[dict]) -> str:
    head = (
        f"{'protocol':>24} {'HV':>6} {'climate':>8} {'economic':>9} {'T_AT 2100':>10} {'reward':>8} {'capital':>8} {'abatement':>10} {'steps/s':>8}"
    )
    lines = [head]
    for r in results:
        c, e = np.mean(r["points"], axis=0)
        m = r["competition"]
        lines.append(
            f"{r['protocol']:>24} {r['hypervolume']:6.3f} {c:8.3f} {e:9.3f} {np.mean(r['temperature_2100']):10.2f} "
            f"{m['Episode Reward']:8.2f} {m['Capital']:8d} {m['Abatement Cost']:10.2f} {r['env_steps_per_s_incl_updates']:8.0f}"
        )
    return "\n".join(lines)


def main(argv=None) -> dict:
    from jaxclimate.envs.rice_n.report import plot_index_plane

    p = parser()
    args = p.parse_args(argv)
    payload = _baseline().run(args, p.parse_args([]))
    results = payload["results"]
    figure = Path(args.out).with_suffix(".png")
    title = f"RICE-N protocol tournament: IPPO, {args.seeds} seeds × {args.steps:,} env steps"
    plot_index_plane({r["protocol"]: r["points"] for r in results}, figure, title=title, reference=reference_points())
    print("\n" + table(results))
    print(f"saved {figure}")
    return payload


if __name__ == "__main__":
    from jaxclimate._cli import guarded

    raise SystemExit(guarded(main, "baselines/rice_n_protocols.py"))
