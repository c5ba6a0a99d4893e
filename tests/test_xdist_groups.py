"""The suite's ``xdist_group`` marks reach pytest-xdist's scheduler: under ``--dist loadgroup``
a grouped test's node id carries ``@<group>``, which is how the scheduler keeps a group on one
worker (the notebooks that train one program, the ``full_opt`` tests, the module fixtures built
once). pytest 9.2 broke this silently (pytest-dev/pytest-xdist#1386), hence the pin in
pyproject.toml."""

import pytest


@pytest.mark.xdist_group("xdist-groups-check")
def test_a_grouped_test_carries_its_group_to_the_scheduler(request):
    if not getattr(request.config.option, "loadgroup", False):
        pytest.skip("not an xdist worker under --dist loadgroup (-n 0 runs every test in one process)")
    assert request.node.nodeid.endswith("@xdist-groups-check"), request.node.nodeid


def test_full_opt_tests_join_one_group(request):
    """conftest.py puts every ``full_opt`` test in one group, so they run in a row."""
    full_opt = [item for item in request.session.items if item.get_closest_marker("full_opt") is not None]
    if not full_opt:
        pytest.skip("no full_opt test collected: run it with the suite")
    for item in full_opt:
        assert [m.args[0] for m in item.iter_markers("xdist_group")] == ["full-opt"], item.nodeid


def test_a_test_without_a_group_joins_its_files(request):
    """conftest.py gives every other test its file's group: a file's tests run on one worker,
    sharing its module fixtures and the programs it traces."""
    assert [m.args[0] for m in request.node.iter_markers("xdist_group")] == ["tests/test_xdist_groups.py"]
    for item in request.session.items:  # a test that names its group keeps it
        if item.name == "test_a_grouped_test_carries_its_group_to_the_scheduler":
            assert [m.args[0] for m in item.iter_markers("xdist_group")] == ["xdist-groups-check"]
