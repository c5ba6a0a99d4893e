"""The README's quick start and the user guide's examples run as written: the README's blocks
in one namespace, as a reader runs them top to bottom; each of the guide's blocks on its own
(each starts from its imports), so the suite's workers can share them."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide.md"
CONTRIBUTING = ROOT / "docs" / "contributing.md"
PROTOCOLS = ROOT / "docs" / "protocols.md"


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)


def run_blocks(page: Path, blocks: list[str]) -> dict:
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(page), "exec"), namespace)
    return namespace


def test_the_pages_keep_their_examples():
    assert len(python_blocks(README)) >= 2, "README lost its quick-start code blocks"
    assert len(python_blocks(GUIDE)) == len(GUIDE_CHECKS), "a guide example without its check below (or a check without its example)"


@pytest.mark.slow
@pytest.mark.full_opt  # run time dominates: 1,024 × 200 EBM steps, six static runs to equilibrium (42 -> 28 s of CPU)
def test_readme_quick_start_runs():
    namespace = run_blocks(README, python_blocks(README))
    assert namespace["returns"].shape == (1024, 6)
    assert namespace["rewards"]["bands"].shape == (6,)
    gradients = namespace["gradients"]  # equator-to-pole contrast falls as heat transport grows
    assert bool((gradients[1:] < gradients[:-1]).all()) and 75 < float(gradients[0]) < 90
    assert set(namespace["observations"]) == set(namespace["zoo"].possible_agents)
    assert namespace["observation"].shape == (96,) and "__all__" not in namespace["marl"].agents


def _surrogate(ns):
    assert abs(float(ns["T"][-1]) - 2.10) < 0.02


def _climate_game(ns):
    assert ns["rewards"]["countries"].shape == (10,)
    assert 0.7 < float(ns["info"]["temperature"]) < 0.85


def _rice_n(ns):
    assert ns["obs"]["regions"].shape == (27, 1207) and ns["mask"].shape == (27, 138, 10)
    assert abs(ns["zeros"]["delta_t"] - 2.1666698) < 1e-4
    assert ns["o"]["regions"].own.shape == (27, 36) and ns["flat"].shape == (27, 1043)


def _invest_esg(ns):  # P100 and W100 per mitigation level as the comments print them
    p100 = ns["final"]["final_climate_risk"].mean(1)
    w100 = ns["final"]["final_market_wealth"].mean(1)
    assert ns["company_returns"].shape == (5, 256, 5)
    assert abs(float(p100[0]) - 1.04) < 0.01 and abs(float(p100[1]) - 0.56) < 0.01
    assert float(w100[1]) > float(w100[2]) > float(w100[3]) > float(w100[0]) > float(w100[4])


#: the guide's python blocks, in page order, and what each must show
GUIDE_CHECKS = [_surrogate, _climate_game, _rice_n, _invest_esg]


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(GUIDE_CHECKS)), ids=[c.__name__.strip("_") for c in GUIDE_CHECKS])
def test_guide_example_runs(index):
    block = python_blocks(GUIDE)[index]
    GUIDE_CHECKS[index](run_blocks(GUIDE, [block]))


@pytest.mark.slow
def test_contributing_example_registers_checks_and_trains_a_new_environment():
    from jaxclimate import registered_envs
    from jaxclimate.core import registry

    try:
        namespace = run_blocks(CONTRIBUTING, python_blocks(CONTRIBUTING))
        assert "counters-v0" in registered_envs() and float(namespace["params"].gain) == 0.5
        assert namespace["metrics"]["movers"]["episode_return"].shape == (4, 2)
    finally:  # the example's id must not leak into tests that list every registered environment
        registry._REGISTRY.pop("counters-v0", None)


@pytest.mark.slow
def test_protocols_example_checks_and_steps_a_users_protocol(capsys):
    namespace = run_blocks(PROTOCOLS, python_blocks(PROTOCOLS))
    assert namespace["env"].name == "rice-n-median-floor[4 regions]"
    assert float(namespace["state"].negotiation) == pytest.approx(0.6)  # the median pledge 6.5, down to a level
    assert capsys.readouterr().out.strip() == "0.6 [False, False, False, False, False, False, True, True, True, True]"
