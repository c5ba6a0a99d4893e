"""``python -m jaxclimate.sweep KEY=v1,v2,...``: one training per value, all in one compiled program.

KEY is a field of the environment's ``EnvParams`` (e.g. ``damage_coefficient`` of the climate
game) or a traceable hyper-parameter of the algorithm (IPPO: ``lr``, ``ent_coef``,
``vf_coef``, ``clip_eps``, ``gamma``, ``gae_lambda``). Every value trains with the same seeds
(common random numbers, so differences between values are not seed noise), and the run axis —
values × seeds — is ``vmap``ped and laid over every device (:mod:`jaxclimate.distributed`),
so the sweep compiles once. Every other option is ``python -m jaxclimate.train``'s.

Writes to ``--out``: ``sweep.json`` (per value: final return per agent group, mean and std
over seeds, the environment's episode metrics, and the learning curve), ``sweep.md`` (the
table) and ``sweep.png`` (learning curves per value; final return against the value). A sweep
is a run: it checkpoints every chunk, Ctrl-C keeps the last finished chunk, and ``--resume
OUT`` finishes it to the results of an uninterrupted sweep.

    python -m jaxclimate.sweep damage_coefficient=0.002,0.004,0.008 --seeds 4 --out runs/sweep-damage
    python -m jaxclimate.sweep lr=1e-4,3e-4,1e-3 --env invest-esg --seeds 3 --out runs/sweep-lr
    python -m jaxclimate.sweep --resume runs/sweep-lr
"""

from __future__ import annotations

import sys
from pathlib import Path

from jaxclimate._cli import OneLineParser, guarded, prepare_process

PROG = "python -m jaxclimate.sweep"


def make_parser() -> OneLineParser:
    parser = OneLineParser(
        prog=PROG, description=__doc__.split("\n\n")[0], epilog="Every other option is python -m jaxclimate.train's (see its --help)."
    )
    parser.add_argument("sweep", nargs="?", help="KEY=v1,v2,... (an EnvParams field or a traceable hyper-parameter)")
    parser.add_argument("--out", type=Path, help="the sweep's folder: sweep.json, sweep.md, sweep.png, its checkpoints")
    parser.add_argument("--run-dir", type=Path, help="the same as --out (a sweep is one run)")
    parser.add_argument("--resume", type=Path, metavar="OUT", help="finish the interrupted sweep in OUT")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = make_parser()
    args, rest = parser.parse_known_args(argv)
    prepare_process(rest)
    from jaxclimate.run.flags import build_options
    from jaxclimate.run.sweeping import load_sweep, parse_sweep, run_sweep, start_sweep

    if args.resume is not None:
        if args.sweep or args.out or args.run_dir or [a for a in rest if a not in ("--quiet", "--no-plots", "--no-compile-cache")]:
            parser.error("--resume takes only the sweep's folder (and --quiet, --no-plots): a resumed sweep keeps its settings")
        try:
            options, key, texts = load_sweep(args.resume, quiet="--quiet" in rest, no_plots="--no-plots" in rest)
        except FileNotFoundError as err:
            parser.error(f"--resume: {err}")
    else:
        if args.sweep is None:
            parser.error("give KEY=v1,v2,... (or --resume OUT)")
        if args.out and args.run_dir and args.out != args.run_dir:
            parser.error(f"--out {args.out} and --run-dir {args.run_dir} differ: a sweep has one folder")
        out = args.out or args.run_dir
        if out is None:
            parser.error("--out is required: the sweep's folder")
        try:
            key, texts = parse_sweep(args.sweep)
        except ValueError as err:
            parser.error(str(err))
        options = build_options(rest + ["--run-dir", str(out)], prog=PROG)
        try:
            start_sweep(options, key, texts)
        except (ValueError, FileExistsError) as err:
            parser.error(str(err))
    result = run_sweep(options, key, texts)
    return 130 if result.get("interrupted") else 1 if result.get("non_finite") else 0


if __name__ == "__main__":
    sys.exit(guarded(main, PROG))
