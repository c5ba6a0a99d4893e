"""benchmarks/flops.py: loops are counted as many times as they run (XLA's cost analysis counts
a loop body once, which hid 98 % of the GRU surrogate's products from the roofline)."""

import jax
import jax.numpy as jnp

from benchmarks.flops import count_flops

W = jnp.full((8, 8), 0.5)
X = jnp.ones((4, 8))
MATMUL, TANH = 2 * 4 * 8 * 8, 4 * 8  # one (4, 8) @ (8, 8) product and the tanh of its result


def cell(h):
    return jnp.tanh(h @ W)


def test_a_while_loop_counts_each_trip_its_data_asks_for():
    def loop(x, n):
        return jax.lax.fori_loop(0, n, lambda i, h: cell(h), x)

    three, seven = count_flops(loop, X, 3), count_flops(loop, X, 7)
    assert seven - three == 4 * (MATMUL + TANH + 2)  # per trip: the cell, the counter's add and the test
    assert three >= 3 * (MATMUL + TANH)


def test_a_scan_counts_its_body_length_times_with_or_without_an_inner_loop():
    def plain(x):
        return jax.lax.scan(lambda h, _: (cell(h), None), x, None, length=5)[0]

    def nested(x):  # the inner trip count grows with the scan index: 0 + 1 + 2 + 3 + 4 trips
        def body(h, i):
            return jax.lax.fori_loop(0, i, lambda j, g: cell(g), h), None

        return jax.lax.scan(body, x, jnp.arange(5))[0]

    assert count_flops(plain, X) == 5 * (MATMUL + TANH)
    assert 10 * (MATMUL + TANH) <= count_flops(nested, X) <= 10 * (MATMUL + TANH) + 40


def test_a_cond_counts_its_costliest_branch_or_where_run_the_branch_taken():
    def branch(x, flag):
        return jax.lax.cond(flag, lambda x: cell(cell(x)), lambda x: x + 1.0, x)

    assert count_flops(branch, X, True) == count_flops(branch, X, False) == 2 * (MATMUL + TANH)  # read, not run

    def looped(x, flag, n):  # a while_loop (a traced trip count) makes the program run: the branch taken counts
        return jax.lax.fori_loop(0, n, lambda i, h: branch(h, flag), x)

    assert count_flops(looped, X, True, 1) - count_flops(looped, X, False, 1) == 2 * (MATMUL + TANH) - 4 * 8
