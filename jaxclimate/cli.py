"""The ``jaxclimate`` console script: ``jaxclimate train|evaluate|sweep|info|consistency [options]``,
the same commands as ``python -m jaxclimate.train`` (``.evaluate``, ``.sweep``, ``.info``,
``.envs.climate_mitigation.consistency``), whose ``--help`` each subcommand passes on."""

from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "train": ("jaxclimate.train", "train any registered algorithm on any environment"),
    "evaluate": ("jaxclimate.evaluate", "roll out a trained run's policies, under its parameters or others"),
    "sweep": ("jaxclimate.sweep", "values of a parameter × seeds in one program"),
    "info": ("jaxclimate.info", "backend, devices, versions, precision and a throughput probe"),
    "consistency": ("jaxclimate.envs.climate_mitigation.consistency", "replay a climate-game run's episodes through CICERO-SCM"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = [f"  {name:<{width}}  {what}" for name, (_, what) in COMMANDS.items()]
    return (
        "usage: jaxclimate {"
        + ",".join(COMMANDS)
        + "} [options]\n\n"
        + "\n".join(lines)
        + "\n\n`jaxclimate COMMAND --help` lists a command's options."
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0
    if argv[0] not in COMMANDS:
        print(f"jaxclimate: unknown command {argv[0]!r}\n\n{usage()}", file=sys.stderr)
        return 2
    module = importlib.import_module(COMMANDS[argv[0]][0])
    sys.argv = [f"jaxclimate {argv[0]}", *argv[1:]]
    return int(module.main(argv[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
