"""``python -m benchmarks``: the whole benchmark suite (see benchmarks/run_all.py)."""

from benchmarks.run_all import main

main()
