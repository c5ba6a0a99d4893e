"""The protocol interface: loading, declarations, the checker (and that it can fail), and the
two example protocols of ``baselines/protocols/`` (docs/protocols.md)."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxclimate import make
from jaxclimate.envs.rice_n import Levers, Protocol, RiceN, registered_protocols, replay, up_to_level
from jaxclimate.envs.rice_n import protocol_check as pc
from jaxclimate.envs.rice_n.negotiation import Bilateral

ROOT = Path(__file__).resolve().parents[3]
CLUB_BCA = f"{ROOT}/baselines/protocols/club_bca.py:ClubBCA"
COMMITMENT = f"{ROOT}/baselines/protocols/conditional_commitment.py:ConditionalCommitment"
SMALL = [0, 5, 12, 20]


def test_a_protocol_is_an_object_a_name_or_a_path():
    assert registered_protocols()[:3] == ["none", "bilateral", "club"]
    by_object = RiceN(protocol=Bilateral(), regions=SMALL)
    by_name = RiceN(protocol="bilateral", regions=SMALL)
    by_module = RiceN(protocol="jaxclimate.envs.rice_n.negotiation:Bilateral", regions=SMALL)
    for env in (by_object, by_name, by_module):
        assert env.name == "rice-n-bilateral[4 regions]" and env.nvec.tolist() == by_name.nvec.tolist()
    env, params = make("rice-n", protocol=COMMITMENT, regions=SMALL)
    assert env.name == "rice-n-conditional-commitment[4 regions]" and env.episode_length == 40
    assert env.stage_slices == {"activity": (0, 11), "pledge": (11, 13)}
    env, params = make("rice-n", protocol=CLUB_BCA, regions=SMALL, **{"negotiation.bca_rate": 0.5})
    assert float(params.negotiation.bca_rate) == 0.5 and env.episode_length == 60
    with pytest.raises(ValueError, match="unknown option 'negotiation.rate'"):
        make("rice-n", protocol=CLUB_BCA, regions=SMALL, **{"negotiation.rate": 0.5})
    with pytest.raises(ValueError, match="cannot be loaded"):
        RiceN(protocol="no_such_module:Thing")
    with pytest.raises(ValueError, match="cannot be built with no arguments"):
        RiceN(protocol="numpy:ndarray")
    with pytest.raises(ValueError, match="is a float, not a jaxclimate.envs.rice_n.Protocol"):
        RiceN(protocol="math:pi")


def test_a_built_environments_parameters_change_as_make_changes_them():
    """``override_params`` (what ``load_policy`` and ``python -m jaxclimate.evaluate --env-set``
    use): dotted names reach a protocol's own parameters; numbers are checked; a constructor
    option is refused, named."""
    from jaxclimate.core.registry import override_params

    env, params = make("rice-n", protocol=CLUB_BCA, regions=SMALL)
    changed = override_params("rice-n", params, {"negotiation.bca_rate": 0.0, "alpha": 1.5})
    assert float(changed.negotiation.bca_rate) == 0.0 and float(changed.alpha) == 1.5
    assert float(params.negotiation.bca_rate) != 0.0  # the original untouched
    with pytest.raises(ValueError, match="'protocol' is a constructor option, not a parameter"):
        override_params("rice-n", params, {"protocol": "club"})
    with pytest.raises(ValueError, match="parameter alpha must be a number"):
        override_params("rice-n", params, {"alpha": "abc"})
    with pytest.raises(ValueError, match="unknown option 'negotiation.rate'"):
        override_params("rice-n", params, {"negotiation.rate": 1.0})


class _Broken(Protocol):
    name = "broken"
    stages = ("offer",)

    def heads(self, n):
        return {"offer": [10]}

    def init(self, n, dtype):
        return jnp.zeros((n,), dtype)

    def offer(self, pstate, levels, state, params):
        return levels[:, 0].astype(pstate.dtype) / 10


@pytest.mark.parametrize(
    "override, message",
    [
        (dict(stages=("offer", "offer")), "stages must be distinct identifiers"),
        (dict(stages=("activity",)), "'activity' is the environment's stage"),
        (dict(stages=("vote",)), r"no method for stage\(s\) \['vote'\]"),
        (dict(heads=lambda self, n: {"other": [10]}), "heads\\(n\\) must name exactly the stages"),
        (dict(heads=lambda self, n: {"offer": [11]}), "2..10 levels"),
        (dict(offer=lambda self, p, lv, s, pa: lv.astype(jnp.float32)), "returns a state of another structure"),
        (dict(features=lambda self, p: p), r"features must be \(N, F\)"),
        (dict(floors=lambda self, p, pa: Levers(tariffs=p)), r"floors\(\).tariffs must have shape \(4, 4\)"),
    ],
)
def test_the_checker_names_the_protocol_and_what_is_wrong(override, message):
    broken = type("Broken", (_Broken,), override)()
    with pytest.raises(pc.ProtocolError, match=f"^rice-n protocol 'broken': .*{message}") as caught:
        pc.check_protocol(broken, regions=SMALL, conformance=False)
    assert str(caught.value).count("rice-n protocol") == 1 and "\n" not in str(caught.value)


def test_the_checker_reports_the_first_line_that_says_something():
    """numpy's assertion messages start with a blank line; the one-line report skips it."""
    err = AssertionError("\nNot equal to tolerance rtol=0, atol=0\nvmap over keys differs from a loop\n x: ...")
    assert pc._first_line(err) == "Not equal to tolerance rtol=0, atol=0"
    assert pc._first_line(ValueError("rice-n protocol 'x': stage 'a' needs ...")) == "stage 'a' needs ..."
    assert pc._first_line(AssertionError()) == "AssertionError"


@pytest.mark.parametrize(
    "name, message",
    [
        ("", "name must be letters, digits"),
        ("a b", "name must be"),
        ("-x", "starting with a letter or digit"),
        ("bilateral", "that name is the registered Bilateral's"),
    ],
)
def test_a_protocol_needs_a_name_of_its_own(name, message):
    """Its name names the environment (rice-n-<name>) in reports and results: a built-in's name
    on another protocol would pass its runs off as the built-in's."""
    with pytest.raises(ValueError, match=message):
        RiceN(protocol=type("Named", (_Broken,), {"name": name})(), regions=SMALL)


def test_the_checker_says_once_what_is_wrong_with_a_protocol_given_by_path(tmp_path):
    """The check names the spec it was given; the loaded protocol's own complaint follows once."""
    (tmp_path / "mine.py").write_text("from jaxclimate.envs.rice_n.negotiation import Bilateral\n\nclass Mine(Bilateral):\n    name = 'club'\n")
    with pytest.raises(pc.ProtocolError, match="that name is the registered Club's") as caught:
        pc.check_protocol(f"{tmp_path / 'mine.py'}:Mine", regions=SMALL, conformance=False)
    assert str(caught.value).count("rice-n protocol") == 1


def test_registering_checks_the_name_and_takes_the_same_code_again():
    from jaxclimate.envs.rice_n import protocol as p

    with pytest.raises(ValueError, match="a protocol name must be letters"):
        p.register_protocol("my club", _Broken)
    p.register_protocol("test-broken", _Broken)
    try:
        p.register_protocol("test-broken", type("_Broken", (_Broken,), {"__module__": _Broken.__module__, "__qualname__": "_Broken"}))
        with pytest.raises(ValueError, match="'test-broken' is already registered"):
            p.register_protocol("test-broken", Bilateral)
    finally:
        p._PROTOCOLS.pop("test-broken")


class _Overreaching(_Broken):
    """Masks allow any mitigation, but the offer is enforced: a masked choice gets overridden."""

    def enforced(self, pstate, params):
        return Levers(mitigation=pstate)


@pytest.mark.slow
def test_the_checker_catches_enforcement_beyond_the_masks():
    with pytest.raises(pc.ProtocolError, match="enforces mitigation .* above the lowest level the mask allows"):
        pc.check_protocol(_Overreaching(), regions=SMALL, num_activity_steps=2, episodes=2, conformance=False)
    # the same protocol with its masks at the enforced floors passes
    fixed = type("Fixed", (_Overreaching,), dict(floors=lambda self, p, pa: Levers(mitigation=p)))()
    pc.check_protocol(fixed, regions=SMALL, num_activity_steps=2, episodes=2, conformance=False)


def test_the_economy_comparison_can_fail(x64):
    env = RiceN(protocol="club", regions=SMALL, num_activity_steps=1, dtype="float64")
    _, state = env.reset(jax.random.PRNGKey(0))
    after = jax.tree_util.tree_map(lambda x: jnp.stack([x] * env.steps_per_activity)[None], state)
    reference = jax.tree_util.tree_map(lambda x: x[None, None], state)
    pc._check_same_economy(env, {"state": after}, reference, "here")  # identical: passes
    with pytest.raises(pc.ProtocolError, match=r"\.capital differs from protocol 'none'"):
        pc._check_same_economy(env, {"state": after.replace(capital=after.capital * 1.001)}, reference, "here")


@pytest.mark.slow
@pytest.mark.parametrize("protocol, conformance", [(COMMITMENT, True), (CLUB_BCA, False)], ids=["commitment", "club-bca"])
def test_the_example_protocols_pass_the_checker(protocol, conformance):
    """The commitment protocol (one stage: a cycle unlike the built-ins') also through check_env."""
    pc.check_protocol(protocol, regions=SMALL, num_activity_steps=2, episodes=3, conformance=conformance)


def _load(spec: str):
    from jaxclimate.envs.rice_n.protocol import resolve_protocol

    return resolve_protocol(spec)


def test_the_binding_set_is_the_largest_set_whose_conditions_hold():
    module = __import__(type(_load(COMMITMENT)).__module__)
    binding_set = jax.jit(module.binding_set)
    rng = np.random.default_rng(0)
    n = 5
    for _ in range(40):
        pledge = rng.integers(0, 10, n) / 10
        condition = rng.integers(0, 10, n) / 10
        feasible = [
            set(s)
            for k in range(n + 1)
            for s in itertools.combinations(range(n), k)
            if all(sum(pledge[j] for j in s if j != i) / (n - 1) >= condition[i] - 1e-9 for i in s)
        ]
        largest = set().union(*feasible)  # feasible sets are closed under union
        got = np.asarray(binding_set(jnp.asarray(pledge), jnp.asarray(condition)))
        assert set(np.flatnonzero(got)) == largest, (pledge, condition)


def test_club_bca_tariffs_scale_with_the_mitigation_gap(x64):
    """Region 0 proposes μ = 0.6 and region 1 joins; regions 2 and 3 stay out after mitigating
    0.1 and 0 at the first activity step: members levy ≥ up_to_level(bca_rate·gap) on them."""
    for rate, expected in ((1.0, [0.5, 0.6]), (0.5, [0.3, 0.3])):  # 0.25 → 0.3, 0.3 → 0.3 on the level grid
        env, params = make("rice-n", protocol=CLUB_BCA, regions=SMALL, dtype="float64", **{"negotiation.bca_rate": rate})
        n, a = 4, 3 + 2 * 4
        actions = np.zeros((6, n, env.nvec.size), np.int64)
        actions[2, :, 1] = [0, 0, 1, 0]  # first activity step: regions' mitigation levels
        actions[3, 0, a] = 6  # second cycle: region 0 proposes μ = 0.6
        actions[4, 1, a + 1] = 1  # region 1 joins club 0
        out = replay(env, actions, params)
        tariffs = out["state__future_tariffs"][6]
        np.testing.assert_allclose(tariffs[:2, 2:], [expected, expected])  # members on outsiders
        assert (tariffs[:2, :2] == 0).all() and (tariffs[2:] == 0).all()  # none within the club, none from outsiders
        np.testing.assert_allclose(out["state__mitigation_rate_all_regions"][6], [0.6, 0.6, 0.0, 0.0])  # enforced
    assert float(up_to_level(jnp.asarray(0.3))) == pytest.approx(0.3)  # a rate on the grid stays


# --- the protocol lab's rough edges (issue 63) ------------------------------------------------


def test_the_same_class_registered_and_loaded_by_path_is_one_protocol(tmp_path, monkeypatch):
    """Loaded from its file, a class runs under another module name; it is still the class the
    user registered after importing it, not another protocol taking its name."""
    import importlib

    from jaxclimate.envs.rice_n import protocol as p

    (tmp_path / "my_majority.py").write_text(
        "from jaxclimate.envs.rice_n.negotiation import Bilateral\n\nclass MajorityFloor(Bilateral):\n    name = 'test-majority-floor'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    imported = importlib.import_module("my_majority").MajorityFloor
    p.register_protocol("test-majority-floor", imported)
    try:
        by_path = f"{tmp_path / 'my_majority.py'}:MajorityFloor"
        env, _ = make("rice-n", protocol=by_path, regions=SMALL)
        assert env.name == "rice-n-test-majority-floor[4 regions]" and type(env.protocol) is not imported
        p.register_protocol("test-majority-floor", type(env.protocol))  # the same code again: accepted
        assert RiceN(protocol="test-majority-floor", regions=SMALL).name == env.name
        (tmp_path / "other.py").write_text((tmp_path / "my_majority.py").read_text())
        with pytest.raises(ValueError, match="that name is the registered MajorityFloor's"):
            make("rice-n", protocol=f"{tmp_path / 'other.py'}:MajorityFloor", regions=SMALL)
    finally:
        p._PROTOCOLS.pop("test-majority-floor")
        sys.modules.pop("my_majority", None)


class _Branching(Protocol):
    """A stage with a Python ``if`` on a traced value."""

    name = "test-branching"
    stages = ("vote",)

    def heads(self, n):
        return {"vote": [2]}

    def init(self, n, dtype):
        return jnp.zeros((), dtype)

    def vote(self, pstate, levels, state, params):
        if levels.sum() > 0:  # the bug: both branches must be taken under jit
            return pstate + 0.1
        return pstate


def _line_of(text: str, cls: type) -> str:
    """``file:line`` of the first line holding ``text`` in ``cls``'s source."""
    import inspect

    lines, first = inspect.getsourcelines(cls)
    return f"{inspect.getsourcefile(cls)}:{first + next(i for i, line in enumerate(lines) if text in line)}"


def test_a_python_if_in_a_stage_names_the_protocol_the_stage_and_the_line():
    from jaxclimate.envs.rice_n.protocol import ProtocolTraceError

    where = _line_of("if levels.sum() > 0", _Branching)
    message = rf"^rice-n protocol 'test-branching': stage 'vote' \({re.escape(where)}\): a Python if/and/or/not \(bool\) on a traced array"
    with pytest.raises(ProtocolTraceError, match=message) as caught:
        make("rice-n", protocol=_Branching(), regions=SMALL)  # at construction: abstract evaluation, nothing compiled
    assert isinstance(caught.value.__cause__, jax.errors.TracerBoolConversionError) and "\n" not in str(caught.value)
    with pytest.raises(ProtocolTraceError, match=message):  # wherever the stage is traced
        jax.jit(lambda levels: _Branching().update("vote", jnp.zeros(()), levels, None, None))(jnp.ones((4, 1), jnp.int32))
    with pytest.raises(pc.ProtocolError, match=message):
        pc.check_protocol(_Branching(), regions=SMALL, conformance=False)


def test_a_python_value_from_a_traced_array_in_floors_is_named_too():
    class FloatFloor(_Broken):
        name = "test-float-floor"

        def floors(self, pstate, params):
            return Levers(mitigation=jnp.full(pstate.shape, float(pstate.max())))

    from jaxclimate.envs.rice_n.protocol import ProtocolTraceError

    where = _line_of("float(pstate.max())", FloatFloor)
    with pytest.raises(ProtocolTraceError, match=rf"^rice-n protocol 'test-float-floor': floors\(\) \({re.escape(where)}\)"):
        RiceN(protocol=FloatFloor(), regions=SMALL)


def _command(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=600)


_BRANCHING_FILE = """import jax.numpy as jnp
from jaxclimate.envs.rice_n import Protocol


class Branching(Protocol):
    name = "branching"
    stages = ("vote",)

    def heads(self, n):
        return {"vote": [2]}

    def init(self, n, dtype):
        return jnp.zeros((), dtype)

    def vote(self, pstate, levels, state, params):
        if levels.sum() > 0:
            return pstate + 0.1
        return pstate
"""


@pytest.mark.parametrize("module", ["jaxclimate.check_protocol", "jaxclimate.envs.rice_n.protocol_check"])
def test_the_command_line_checker_exits_1_with_the_one_line_reason(tmp_path, module):
    """Both module paths are the command; neither passes a protocol it has not checked."""
    (tmp_path / "branching.py").write_text(_BRANCHING_FILE)
    done = _command(module, f"{tmp_path / 'branching.py'}:Branching")
    assert done.returncode == 1 and done.stdout == "", done
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"rice-n protocol 'branching': stage 'vote' ({tmp_path / 'branching.py'}:16)"), done.stderr
    missing = _command(module, f"{tmp_path / 'nowhere.py'}:Thing")
    assert missing.returncode == 1 and "cannot be loaded" in missing.stderr and len(missing.stderr.strip().splitlines()) == 1
    assert _command(module).returncode == 2  # no spec given: the usage error


@pytest.mark.slow
def test_the_command_line_checker_passes_a_good_protocol_in_one_line():
    done = _command("jaxclimate.check_protocol", COMMITMENT, "--quick")
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(rf"rice-n protocol 'conditional-commitment' \({re.escape(COMMITMENT)}\): passed the quick check in \d+ s\n", done.stdout)


def test_the_quick_check_before_training_skips_built_ins_and_names_what_is_wrong():
    assert pc.quick_check("bilateral") is None and pc.quick_check(Bilateral()) is None
    with pytest.raises(pc.ProtocolError, match=r"^rice-n protocol 'test-branching': stage 'vote' \("):
        pc.quick_check(_Branching())


@pytest.mark.slow
def test_the_quick_check_passes_a_users_protocol_in_one_line():
    line = pc.quick_check(CLUB_BCA)
    assert re.fullmatch(
        rf"rice-n protocol 'club-bca': passed the quick protocol check in \d+ s \(python -m jaxclimate.check_protocol {re.escape(CLUB_BCA)} runs every check\)",
        line,
    )
