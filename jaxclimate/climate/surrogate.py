"""GRU / LSTM / TCN surrogates of CICERO-SCM (paper §3.2, Eqs. 16–18).

Input: z-scored controllable emissions (..., W+1, 5): rows 0..W−1 are the W = 65 preceding
years, row W is the target year itself. An encoder summarises the history into h; h is
concatenated with the target-year row (a skip connection) and a two-layer head predicts the
raw temperature (K):

    ΔT̂(t) = W2 · act(W1 · [h; x_t] + b1) + b2

| kind | encoder | h | head |
|---|---|---|---|
| ``gru``  | 1-layer GRU, hidden 128, zero initial state | last hidden state | 133 → 64, SiLU, → 1 |
| ``lstm`` | 1-layer LSTM, hidden 128 | last hidden output | 133 → 64, GELU, → 1 |
| ``tcn``  | pointwise conv 5 → 128, 5 residual blocks (causal conv k=3, dilation 2^b, GELU, pointwise conv, + residual, GELU) | mean over time | 133 → 128, GELU, → 1 |

Sizes are the authors' (run ids ``gru_128_1``, ``lstm_128_1``, ``tcn_128_5``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from jaxclimate.core.precision import at_physics_precision

N_GASES = 5


@dataclasses.dataclass(frozen=True)
class SurrogateConfig:
    """Architecture of a surrogate; stored with its weights."""

    kind: str = "gru"
    hidden: int = 128
    head: int = 64
    num_blocks: int = 5  # TCN residual blocks
    window: int = 65

    def __post_init__(self) -> None:
        if self.kind not in ("gru", "lstm", "tcn"):
            raise ValueError(f"SurrogateConfig.kind must be 'gru', 'lstm' or 'tcn', got {self.kind!r}")
        for name in ("hidden", "head", "num_blocks", "window"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"SurrogateConfig.{name} must be >= 1, got {getattr(self, name)!r}")

    @classmethod
    def paper(cls, kind: str) -> "SurrogateConfig":
        """The authors' sizes for ``kind``."""
        return cls(kind=kind, head=128 if kind == "tcn" else 64)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class _Head(nn.Module):
    width: int
    activation: Callable[[jax.Array], jax.Array]

    @nn.compact
    def __call__(self, h: jax.Array, current: jax.Array) -> jax.Array:
        z = jnp.concatenate([h, current], axis=-1)
        z = self.activation(nn.Dense(self.width, name="dense1")(z))
        return nn.Dense(1, name="dense2")(z)[..., 0]


def _recurrent_cell(config: SurrogateConfig, name: str | None = None) -> nn.RNNCellBase:
    if config.kind == "gru":
        return nn.GRUCell(config.hidden, name=name)
    return nn.OptimizedLSTMCell(config.hidden, name=name)


def _head(config: SurrogateConfig, name: str | None = None) -> _Head:
    activation = {"gru": nn.silu, "lstm": nn.gelu, "tcn": nn.gelu}[config.kind]
    return _Head(config.head, activation, name=name)


class _Recurrent(nn.Module):
    config: SurrogateConfig

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        history, current = x[..., :-1, :], x[..., -1, :]
        cell = _recurrent_cell(self.config, name=self.config.kind)
        outputs = nn.RNN(cell, name="rnn")(history)
        return _head(self.config, name="head")(outputs[..., -1, :], current)


class _TCN(nn.Module):
    config: SurrogateConfig

    @nn.compact
    def __call__(self, x: jax.Array) -> jax.Array:
        history, current = x[..., :-1, :], x[..., -1, :]
        c = self.config.hidden
        h = nn.Conv(c, (1,), name="input_proj")(history)
        for b in range(self.config.num_blocks):
            d = 2**b
            # causal: pad 2·d on the left only, so step t sees t, t−d, t−2d
            y = jnp.pad(h, [(0, 0)] * (h.ndim - 2) + [(2 * d, 0), (0, 0)])
            y = nn.Conv(c, (3,), kernel_dilation=(d,), padding="VALID", name=f"block{b}_causal")(y)
            y = nn.Conv(c, (1,), name=f"block{b}_pointwise")(nn.gelu(y))
            h = nn.gelu(h + y)
        return _head(self.config, name="head")(h.mean(axis=-2), current)


def build_model(config: SurrogateConfig) -> nn.Module:
    return _TCN(config) if config.kind == "tcn" else _Recurrent(config)


def init_params(config: SurrogateConfig, key: jax.Array) -> Any:
    model = build_model(config)
    return model.init(key, jnp.zeros((1, config.window + 1, N_GASES), jnp.float32))["params"]


def count_params(params: Any) -> int:
    return sum(int(x.size) for x in jax.tree_util.tree_leaves(params))


def normalise(x: jax.Array, mean: jax.Array, std: jax.Array) -> jax.Array:
    """Per-gas z-score (σ already includes the +1e-6)."""
    return (x - mean) / std


class RecurrentParts:
    """A GRU/LSTM surrogate taken apart, to run its encoder one step at a time:
    ``predict(x) == head(output(carry after every history row), x[-1])`` for a model of the
    same config and params (the engine uses it to start from a precomputed carry)."""

    def __init__(self, config: SurrogateConfig, params: Any):
        if config.kind not in ("gru", "lstm"):
            raise ValueError(f"RecurrentParts needs a 'gru' or 'lstm' surrogate, got {config.kind!r}")
        self.config = config
        self._cell, self._cell_params = _recurrent_cell(config), {"params": params[config.kind]}
        self._head, self._head_params = _head(config), {"params": params["head"]}
        self._gru = _merged_gru_weights(params["gru"]) if config.kind == "gru" else None

    def zero_carry(self) -> Any:
        h = jnp.zeros((self.config.hidden,), jnp.float32)
        return h if self.config.kind == "gru" else (h, h)

    def step(self, carry: Any, row: jax.Array) -> Any:
        """One encoder step on a z-scored row (5,)."""
        if self._gru is not None:
            return merged_gru_step(self._gru, carry, row)
        return self._cell.apply(self._cell_params, carry, row)[0]

    def output(self, carry: Any) -> jax.Array:
        return carry if self.config.kind == "gru" else carry[1]  # LSTM carry is (c, h)

    def head(self, h: jax.Array, current: jax.Array) -> jax.Array:
        return self._head.apply(self._head_params, h, current)


# --- GRU cell with one product per step (the climate engine's) -----------------------------------
#
# flax's GRUCell runs six products a step: three of the input row (5 wide) and three of the
# hidden state. Batched over 65,536 envs each writes a (65,536, 128) float32 result that the
# gates then read back, so on a GPU the step is bound by moving those results rather than by
# the products themselves. Here the hidden state's three kernels are one (H, 3H) product and the
# input row's contribution, 5 wide, is written as multiply-adds that XLA fuses into the gates.
# The arithmetic is flax's GRUCell (names and gate equations below), summed in another order.
# On an H100 the climate game (gru) at 65,536 envs ran 5.96M env-steps/s with this cell and 5.26M
# with flax's (docs/gpu.md, benchmarks/gpu_probes.py --only gru).


def _merged_gru_weights(p: Any) -> tuple[jax.Array, ...]:
    """(w_h (H, 3H), w_x (5, 3H), b_x (3H,), b_hn (H,)) from flax GRUCell parameters."""
    cat = lambda names, leaf: jnp.concatenate([jnp.asarray(p[n][leaf]) for n in names], axis=-1)  # noqa: E731
    return cat(("hr", "hz", "hn"), "kernel"), cat(("ir", "iz", "in"), "kernel"), cat(("ir", "iz", "in"), "bias"), jnp.asarray(p["hn"]["bias"])


def merged_gru_step(w: tuple[jax.Array, ...], h: jax.Array, x: jax.Array) -> jax.Array:
    """flax's GRUCell step, h (..., H) and x (..., 5) -> h', with one product of h."""
    w_h, w_x, b_x, b_hn = w
    gx = b_x
    for j in range(w_x.shape[0]):  # the input's few columns as elementwise multiply-adds
        gx = gx + x[..., j : j + 1] * w_x[j]
    return gru_update(h @ w_h, gx, h, b_hn)


def gru_update(gh: jax.Array, gx: jax.Array, h: jax.Array, b_hn: jax.Array) -> jax.Array:
    """h' from the hidden state's and the input's pre-activations (..., 3H), blocks r, z, n
    (the input's with its biases; the hidden n block's bias is ``b_hn``)."""
    H = h.shape[-1]
    r = jax.nn.sigmoid(gx[..., :H] + gh[..., :H])
    z = jax.nn.sigmoid(gx[..., H : 2 * H] + gh[..., H : 2 * H])
    n = jnp.tanh(gx[..., 2 * H :] + r * (gh[..., 2 * H :] + b_hn))
    return (1 - z) * n + z * h


# --- GRU with a hand-written backward pass (training speed) -------------------------------------
#
# Autodiff of a scanned GRU stacks the gate activations of every step as scan outputs, which
# XLA on CPU handles slowly (~5x the forward time for the backward pass here). This version
# keeps only the hidden states, recomputes the gates in the reverse scan and accumulates the
# weight gradients in its carry: the same values and gradients (to float rounding);
# value_and_grad at batch 512 takes 144 ms instead of 226 ms on one CPU core (~1.2x per step
# inside fit's loop, where sampling and the optimiser also run). Parameter names and gate equations are flax's GRUCell:
#   r = σ(W_ir x + b_ir + W_hr h),  z = σ(W_iz x + b_iz + W_hz h)
#   n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn)),  h' = (1 − z) ⊙ n + z ⊙ h

_GRU_NAMES = (
    ("ir", "kernel"),
    ("iz", "kernel"),
    ("in", "kernel"),
    ("ir", "bias"),
    ("iz", "bias"),
    ("in", "bias"),
    ("hr", "kernel"),
    ("hz", "kernel"),
    ("hn", "kernel"),
    ("hn", "bias"),
)


def _gru_gates(w, h, x):
    w_ir, w_iz, w_in, b_ir, b_iz, b_in, w_hr, w_hz, w_hn, b_hn = w
    r = jax.nn.sigmoid(x @ w_ir + b_ir + h @ w_hr)
    z = jax.nn.sigmoid(x @ w_iz + b_iz + h @ w_hz)
    hn = h @ w_hn + b_hn
    n = jnp.tanh(x @ w_in + b_in + r * hn)
    return r, z, hn, n


def _gru_forward(w, xs):
    """xs (T, B, in) -> (last hidden (B, H), hidden states before each step (T, B, H))."""

    def step(h, x):
        r, z, hn, n = _gru_gates(w, h, x)
        return (1 - z) * n + z * h, h

    return jax.lax.scan(step, jnp.zeros((xs.shape[1], w[6].shape[0]), xs.dtype), xs)


@jax.custom_vjp
def _gru_last(w, xs):
    return _gru_forward(w, xs)[0]


def _gru_last_fwd(w, xs):
    h, hs = _gru_forward(w, xs)
    return h, (w, xs, hs)


def _gru_last_bwd(saved, dh_last):
    w, xs, hs = saved
    w_ir, w_iz, w_in, _, _, _, w_hr, w_hz, w_hn, _ = w

    def step(carry, h_x):
        dh, acc = carry
        h, x = h_x
        r, z, hn, n = _gru_gates(w, h, x)
        dn = dh * (1 - z) * (1 - n * n)  # d/d(pre-activation of n)
        dz = dh * (h - n) * z * (1 - z)
        dr = dn * hn * r * (1 - r)
        dhn = dn * r
        dh_prev = dh * z + dr @ w_hr.T + dz @ w_hz.T + dhn @ w_hn.T
        dx = dr @ w_ir.T + dz @ w_iz.T + dn @ w_in.T
        inc = (x.T @ dr, x.T @ dz, x.T @ dn, dr.sum(0), dz.sum(0), dn.sum(0), h.T @ dr, h.T @ dz, h.T @ dhn, dhn.sum(0))
        return (dh_prev, jax.tree_util.tree_map(jnp.add, acc, inc)), dx

    zeros = jax.tree_util.tree_map(jnp.zeros_like, w)
    (_, grads), dxs = jax.lax.scan(step, (dh_last, zeros), (hs, xs), reverse=True)
    return grads, dxs


_gru_last.defvjp(_gru_last_fwd, _gru_last_bwd)


@at_physics_precision
def apply(config: SurrogateConfig, params: Any, x: jax.Array) -> jax.Array:
    """``build_model(config).apply({"params": params}, x)`` for a batch x (B, W+1, 5); a GRU
    runs with the hand-written backward pass above (what ``fit`` trains with)."""
    if config.kind != "gru" or x.ndim != 3:
        return build_model(config).apply({"params": params}, x)
    w = tuple(params["gru"][layer][leaf] for layer, leaf in _GRU_NAMES)
    h = _gru_last(w, jnp.swapaxes(x[:, :-1], 0, 1))
    return _head(config).apply({"params": params["head"]}, h, x[:, -1])
