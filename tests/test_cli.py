"""The ``jaxclimate`` console script dispatches to the ``python -m`` commands."""

import pytest

from jaxclimate import cli


def test_usage_lists_every_command(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    assert all(name in out for name in cli.COMMANDS)


def test_an_unknown_command_exits_2(capsys):
    assert cli.main(["trian"]) == 2
    assert "unknown command 'trian'" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["train", "sweep", "info"])
def test_a_command_passes_its_options_on(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    assert "--" in capsys.readouterr().out  # the command's own option list


def test_guarded_exits_0_after_a_main_that_returns_its_results():
    """A baseline's ``main`` returns its results (a dict) for the callers that import it; run
    as a script it still exits 0, and a command's own exit status passes through."""
    from jaxclimate._cli import guarded

    assert guarded(lambda: {"rows": [1, 2]}, "baselines/x.py") == 0
    assert guarded(lambda: None, "x") == 0
    assert guarded(lambda: 2, "x") == 2


def test_guarded_ends_quietly_when_the_reader_of_its_output_goes_away():
    # `--list | head -1`: the reader closes the pipe after one line; the command must end with
    # SIGPIPE's status and no traceback, not "BrokenPipeError" on stderr
    import subprocess
    import sys

    script = (
        "from jaxclimate._cli import guarded\n"
        "def main():\n"
        "    for i in range(200000):\n"
        "        print('row', i)\n"
        "raise SystemExit(guarded(main, 'x'))\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert writer.stdout.readline() == b"row 0\n"
    writer.stdout.close()
    _, errors = writer.communicate(timeout=60)
    assert writer.returncode == 141
    assert b"Traceback" not in errors


def test_guarded_keeps_the_traceback_of_another_broken_pipe():
    # a pipe other than stdout (a worker's) breaking is an error to show, not a reader gone away
    from jaxclimate._cli import guarded

    def main():
        raise BrokenPipeError("worker pipe")

    with pytest.raises(BrokenPipeError, match="worker pipe"):
        guarded(main, "x")


def test_guarded_ends_a_command_whose_ctrl_c_a_garbage_collector_callback_swallowed():
    # JAX runs a callback at every garbage collection; a Ctrl-C that lands inside it is printed
    # as "Exception ignored" by Python and lost, and the command ran on to its end (exit 0)
    import gc
    import time

    from jaxclimate._cli import INTERRUPTED, guarded

    def swallowing_callback(phase, info, fired=[]):
        if not fired:
            fired.append(1)
            raise KeyboardInterrupt

    def main():
        gc.callbacks.append(swallowing_callback)
        try:
            gc.collect()
        finally:
            gc.callbacks.remove(swallowing_callback)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:  # the rest of the run, which the Ctrl-C must end
            time.sleep(0.01)
        return 0

    started = time.monotonic()
    assert guarded(main, "x") == INTERRUPTED
    assert time.monotonic() - started < 4
