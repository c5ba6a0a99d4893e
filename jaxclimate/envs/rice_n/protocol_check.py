"""``check_protocol``: what every RICE-N negotiation protocol must satisfy (docs/protocols.md).

In the spirit of the competition's unit tests and of :func:`jaxclimate.testing.check_env`, it
builds RICE-N on a few regions with the protocol and raises :class:`ProtocolError`, one line
naming the protocol and what is wrong, at the first violation of:

1. **declarations**: stages with a method each, heads for exactly those stages (2..10 levels);
   every stage update returns a state of the same structure, shapes and dtypes; features are
   (N, F) at every stage; each lever is (N,) or (N, N);
2. **the episode it declares**: (S + 1)·T env steps, activity steps exactly at stage 0, ``done``
   exactly at the last;
3. **masks**: at every step every head allows at least one level;
4. **whatever it enforces, the masks allow**: at every activity step an enforced floor is at
   or below the lowest level the mask allows, so a masked choice is applied unchanged;
5. **the economy changes only through the declared levers**: (a) with its masks fully open and
   nothing enforced, on unmasked random actions, and (b) as it is, on random actions its masks
   allow, the economy after every activity step equals protocol ``none``'s fed the same
   activity actions;
6. the environment's conformance (``check_env``): determinism, ``jit`` == eager, ``vmap`` ==
   loop, compile once, spaces, auto-reset.

Everything but (6) runs as a few compiled programs over ``episodes`` random episodes.
``quick=True`` checks (1)–(4) and (5b) only: one compiled program, what :func:`quick_check`
runs before training under a user's protocol.

From a shell (exit 0 with one line when it passes, 1 with the one-line reason)::

    python -m jaxclimate.check_protocol my_protocols.py:MedianFloor [--quick]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from typing import Any, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxclimate.envs.rice_n.env import RiceN
from jaxclimate.envs.rice_n.protocol import LEVERS, Levers, Protocol, check_traced_shapes, is_builtin, lever_heads, resolve_protocol


class ProtocolError(AssertionError):
    """A protocol breaks a rule of :func:`check_protocol`."""


def check_protocol(
    protocol: Any,
    *,
    regions: Sequence[int] = (0, 5, 12, 20),
    num_activity_steps: int = 3,
    episodes: int = 4,
    seed: int = 0,
    conformance: bool = True,
    quick: bool = False,
) -> Protocol:
    """Check ``protocol`` (an object, a registered name, ``"module:Name"`` or
    ``"file.py:Name"``); see the module docstring. ``quick``: rules (1)–(4) and (5b) only, one
    compiled program (``conformance`` is then not run either). Runs in float64 (64-bit JAX
    switched on for the check and restored after), where batched and unbatched reductions agree
    to rounding (docs/rice_n.md §15). Returns the protocol checked; raises
    :class:`ProtocolError`, one line, at the first violation (an exception the protocol's own
    code raises is reported the same way)."""
    name = getattr(protocol, "name", protocol)
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    try:
        resolved = resolve_protocol(protocol)
        name = resolved.name
        env = RiceN(protocol=resolved, regions=regions, num_activity_steps=num_activity_steps, dtype="float64")
        check_traced_shapes(env)
        key = jax.random.PRNGKey(seed)
        _check_masked_episodes(env, key, episodes)
        if not quick:
            _check_open_economy(env, key, episodes)
            if conformance:
                _check_conformance(env)
    except ProtocolError as err:
        raise ProtocolError(f"rice-n protocol {name!r}: {err}") from err.__cause__
    except (ValueError, TypeError) as err:
        raise ProtocolError(f"rice-n protocol {name!r}: {_first_line(err)}") from err
    except Exception as err:  # the protocol's own code failed (a KeyError in a stage, say): that is its check's result
        raise ProtocolError(f"rice-n protocol {name!r}: {type(err).__name__}: {_first_line(err)}") from err
    finally:
        jax.config.update("jax_enable_x64", previous)
    return resolved


def quick_check(protocol: Any) -> str | None:
    """What a run under a user's protocol checks before it trains: ``None`` for a built-in
    protocol (``none``, ``bilateral``, ``club``: the test suite checks those); otherwise
    :func:`check_protocol` with ``quick=True`` (about 15 s on a 2-core CPU, compilation
    mostly) and the one line saying it passed, to print. Raises :class:`ProtocolError`, one
    line, if it does not."""
    if is_builtin(protocol):
        return None
    start = time.perf_counter()
    checked = check_protocol(protocol, quick=True)
    return (
        f"rice-n protocol {checked.name!r}: passed the quick protocol check in {time.perf_counter() - start:.0f} s "
        f"(python -m jaxclimate.check_protocol {_spec_text(protocol)} runs every check)"
    )


def _spec_text(protocol: Any) -> str:
    return protocol if isinstance(protocol, str) else f"{type(protocol).__module__}:{type(protocol).__qualname__}"


def _first_line(err: Exception) -> str:
    """The first non-blank line of an error's message (numpy's assertions start with a blank
    one), without a leading ``rice-n protocol '...': `` the message already carries (its name
    may be the loaded protocol's where the check names the spec it was given)."""
    line = next((line.strip() for line in str(err).splitlines() if line.strip()), type(err).__name__)
    return re.sub(r"^rice-n protocol '[^']*': ", "", line)


def _economy(state: Any) -> Any:
    """The state without the env-step counter and the protocol's own state."""
    return state.replace(time=jnp.zeros_like(state.time), negotiation=())


def _none_env(env: RiceN) -> RiceN:
    return RiceN(protocol="none", regions=env.regions, num_activity_steps=env.num_activity_steps, dtype=env.dtype)


def _masked_sample(key: jax.Array, mask: jax.Array) -> jax.Array:
    """One allowed level per head, uniformly among the allowed ones (an empty mask gives 0)."""
    return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)


def _episode(env: RiceN, params: Any, key: jax.Array, masked: bool) -> dict[str, jax.Array]:
    """One episode from reset without auto-reset: per step the levels played, the mask, the
    protocol's levers before the step and the state after it."""

    def body(state, k):
        mask = env.action_mask("regions", state, params)
        levels = _masked_sample(k, mask) if masked else env.sample_actions(k)["regions"]
        floors = env.protocol.floors(state.negotiation, params)
        enforced = env.protocol.enforced(state.negotiation, params)
        state, info = env.transition(state, levels, params)
        return state, dict(levels=levels, mask=mask, floors=_dense(floors, env), enforced=_dense(enforced, env), state=state, done=info["done"])

    _, state = env.reset(key, params)
    return jax.lax.scan(body, state, jax.random.split(key, env.episode_length))[1]


def _dense(levers: Levers, env: RiceN) -> dict[str, jax.Array]:
    """Every lever as an array (0 where it has no floor), so traces of different steps stack."""
    n = env.num_regions
    shapes = {name: (n,) if lever_heads(n)[name][1] == 1 else (n, n) for name in LEVERS}
    return {name: jnp.zeros(shapes[name], env.dtype) if getattr(levers, name) is None else getattr(levers, name) for name in LEVERS}


def _activity_replay(env: RiceN, params: Any, key: jax.Array, levels: jax.Array) -> Any:
    """Protocol ``none`` fed ``levels`` (T, N, 3 + 2N): the state after each step."""

    def body(state, lv):
        state, _ = env.transition(state, lv, params)
        return state, state

    _, state = env.reset(key, params)
    return jax.lax.scan(body, state, levels)[1]


def _batch(env: RiceN, keys: jax.Array, masked: bool) -> tuple[dict, Any]:
    """An episode of ``env`` per key and protocol ``none`` fed its activity actions."""
    none = _none_env(env)
    params, none_params = env.default_params, none.default_params
    period, a = env.steps_per_activity, 3 + 2 * env.num_regions

    def one(key):
        out = _episode(env, params, key, masked)
        activity_levels = out["levels"][period - 1 :: period, :, :a]
        return out, _activity_replay(none, none_params, key, activity_levels)

    # one episode after another (lax.map): compiles in half the time of a vmap over episodes
    return jax.device_get(jax.jit(lambda keys: jax.lax.map(one, keys))(keys))


def _check_masked_episodes(env: RiceN, key: jax.Array, episodes: int) -> None:
    out, reference = _batch(env, jax.random.split(key, episodes), masked=True)
    _check_episode_length(env, out)
    _check_masks(env, out)
    _check_same_economy(env, out, reference, "on actions its masks allow")


def _check_episode_length(env: RiceN, out: dict) -> None:
    length, period = env.episode_length, env.steps_per_activity
    done, activity = np.asarray(out["done"]), np.asarray(out["state"].activity_step)
    want_done = np.zeros(length, bool)
    want_done[-1] = True
    if not (done == want_done).all():
        raise ProtocolError(
            f"done must fire exactly at env step {length} = (stages + 1)·{env.num_activity_steps}, fired at {np.flatnonzero(done[0]) + 1}"
        )
    want_activity = np.arange(1, length + 1) // period
    if not (activity == want_activity).all():
        raise ProtocolError(f"activity steps must come every {period} env steps (after the {env.num_stages} negotiation stage(s))")


def _check_masks(env: RiceN, out: dict) -> None:
    mask = np.asarray(out["mask"])  # (E, T, N, A, 10)
    empty = ~mask.any(axis=-1)
    if empty.any():
        e, t, i, h = np.argwhere(empty)[0]
        raise ProtocolError(f"the mask allows no level of head {h} for region {i} at env step {t + 1}")
    period, n = env.steps_per_activity, env.num_regions
    activity_rows = slice(period - 1, None, period)
    lowest = mask[:, activity_rows].argmax(axis=-1)  # (E, T', N, A): the lowest allowed level
    for lever in LEVERS:
        start, width = lever_heads(n)[lever]
        enforced = np.asarray(out["enforced"][lever])[:, activity_rows]
        allowed = lowest[..., start : start + width].reshape(enforced.shape) / 10.0
        excess = enforced - allowed
        if (excess > 1e-6).any():
            idx = np.unravel_index(int(excess.argmax()), excess.shape)
            raise ProtocolError(
                f"enforces {lever} {float(enforced[idx]):.4g} above the lowest level the mask allows ({float(allowed[idx]):.1f}) "
                f"at activity step {idx[1] + 1}: a masked choice would be overridden (floors() must declare at least what enforced() imposes, on the level grid: up_to_level)"
            )


def _check_same_economy(env: RiceN, out: dict, reference: Any, how: str) -> None:
    period = env.steps_per_activity
    after_activity = jax.tree_util.tree_map(lambda x: x[:, period - 1 :: period], out["state"])
    got, want = _economy(after_activity), _economy(reference)
    for (path, a), b in zip(jax.tree_util.tree_leaves_with_path(got), jax.tree_util.tree_leaves(want)):
        a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
        # Relative to the leaf's scale at that step: an export-saturated region's domestic
        # consumption is a cancellation residue (docs/rice_n.md §15), 0 in one program and
        # 3e-17 in another, which moves its consumption by ~1e-8 of the largest region's.
        scale = np.abs(b).reshape(b.shape[0], b.shape[1], -1).max(-1).reshape(b.shape[:2] + (1,) * (b.ndim - 2))
        bad = np.abs(a - b) > 1e-6 * (np.abs(b) + scale)
        if bad.any():
            e, t = np.argwhere(bad.reshape(bad.shape[0], bad.shape[1], -1).any(-1))[0]
            raise ProtocolError(
                f"changes the economy other than through its levers {how}: {jax.tree_util.keystr(path)} differs from "
                f"protocol 'none' fed the same activity actions after activity step {t + 1}"
            )


class _Unbinding(Protocol):
    """``inner`` with its masks fully open and nothing enforced."""

    def __init__(self, inner: Protocol):
        self.inner, self.name, self.stages = inner, inner.name, tuple(inner.stages)

    def heads(self, n: int):
        return self.inner.heads(n)

    def init(self, n: int, dtype: Any) -> Any:
        return self.inner.init(n, dtype)

    def default_params(self) -> Any:
        return self.inner.default_params()

    def update(self, stage: str, pstate: Any, levels: Any, state: Any, params: Any) -> Any:
        return self.inner.update(stage, pstate, levels, state, params)

    def features(self, pstate: Any) -> Any:
        return self.inner.features(pstate)


def _check_open_economy(env: RiceN, key: jax.Array, episodes: int) -> None:
    open_env = RiceN(protocol=_Unbinding(env.protocol), regions=env.regions, num_activity_steps=env.num_activity_steps, dtype=env.dtype)
    out, reference = _batch(open_env, jax.random.split(jax.random.fold_in(key, 1), episodes), masked=False)
    _check_same_economy(open_env, out, reference, "with its masks open and nothing enforced")


def _check_conformance(env: RiceN) -> None:
    from jaxclimate.testing import check_env

    params = env.default_params
    try:
        check_env(env, params.replace(max_steps=min(5, env.episode_length)), num_steps=4)
    except AssertionError as err:
        raise ProtocolError(f"environment conformance: {_first_line(err)}") from err


# --- the command line ----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m jaxclimate.check_protocol SPEC [--quick]``: exit 0 with one line when the
    protocol passes, 1 with the one-line reason when it does not."""
    parser = argparse.ArgumentParser(
        prog="python -m jaxclimate.check_protocol", description="Check a RICE-N negotiation protocol against the rules of docs/protocols.md §3."
    )
    parser.add_argument("spec", metavar="SPEC", help="a registered protocol name, path/to/file.py:Class or package.module:Class")
    parser.add_argument(
        "--quick", action="store_true", help="declarations, masks, enforcement and the economy on masked actions only (one compiled program)"
    )
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        checked = check_protocol(args.spec, quick=args.quick)
    except ProtocolError as err:
        print(str(err).replace("\n", " "), file=sys.stderr)
        return 1
    what = "the quick check" if args.quick else "every check"
    given = "" if args.spec == checked.name else f" ({args.spec})"
    print(f"rice-n protocol {checked.name!r}{given}: passed {what} in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
