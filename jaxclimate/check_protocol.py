"""``python -m jaxclimate.check_protocol SPEC [--quick]``: check a RICE-N negotiation protocol
(docs/protocols.md §3) from a shell or a CI script.

SPEC is a registered protocol name, ``path/to/file.py:Class`` or ``package.module:Class``.
Exit 0 with one line when it passes; 1 with the one-line reason when it does not (2 for a
malformed command line). ``--quick`` checks the declarations, masks, enforcement and the
economy on masked actions (one compiled program, what a training run under a user's protocol
checks first); without it, every rule, the environment's conformance included (about a minute
on a 2-core CPU)."""

from __future__ import annotations

import sys

from jaxclimate.envs.rice_n.protocol_check import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
