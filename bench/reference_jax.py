"""The benchmark GPT of bench/gpt.tape, written with JAX (float64, the whole
training step compiled by `jax.jit`) from its definition: same generator,
same draws in the same order, same model, same plain gradient step.

    python reference_jax.py V T d h steps

XLA uses its default threading; `bench/compare` pins the process to one
core (taskset) for the one-thread figure. Prints the same `step N loss X`
lines as the tape program, and on stderr `loop_seconds S`: the time of the
training loop alone (the import, the set-up and the step's compilation are
not counted; the loop waits for the last step to finish).
"""
import math
import sys
import time

import jax
import jax.numpy as jnp

from generator import SplitMix64

jax.config.update("jax_enable_x64", True)


def model(V, T, d, h):
    mask = jnp.triu(jnp.full((T, T), -jnp.inf), k=1)
    scale = 1 / math.sqrt(d)
    rate = 0.05

    def loss_of(knobs, x, y):
        E, P, Wq, Wk, Wv, W1, W2, Wout = knobs
        e = E[x] + P
        q = e @ Wq
        k = e @ Wk
        vp = e @ Wv
        p = jax.nn.softmax(q @ k.T * scale + mask, axis=1)
        r = e + p @ vp
        mean = r.mean(axis=1, keepdims=True)
        var = ((r - mean) ** 2).mean(axis=1, keepdims=True)  # the population variance
        n = (r - mean) / jnp.sqrt(var + 1e-5)
        z = n + jnp.tanh(n @ W1) @ W2
        logits = z @ Wout
        picked = jnp.take_along_axis(logits, y[:, None], axis=1)[:, 0]
        return jnp.mean(jax.nn.logsumexp(logits, axis=1) - picked)

    def step(knobs, x, y):
        loss, blame = jax.value_and_grad(loss_of)(knobs, x, y)
        return [k - rate * b for k, b in zip(knobs, blame)], loss

    return jax.jit(step)


def main():
    V, T, d, h, steps = (int(a) for a in sys.argv[1:6])
    rng = SplitMix64(42)
    shapes = [(V, d, 0.1), (T, d, 0.1), (d, d, 1 / math.sqrt(d)), (d, d, 1 / math.sqrt(d)),
              (d, d, 1 / math.sqrt(d)), (d, h, 1 / math.sqrt(d)), (h, d, 1 / math.sqrt(h)),
              (d, V, 1 / math.sqrt(d))]
    knobs = [jnp.array(rng.normals(r, c), dtype=jnp.float64) * s for r, c, s in shapes]
    step = model(V, T, d, h)
    # Compiled before the clock starts, on arguments of the step's types.
    zeros = jnp.zeros(T, dtype=jnp.int64)
    step = step.lower(knobs, zeros, zeros).compile()

    start = time.perf_counter()
    for n in range(1, steps + 1):
        xs, ys = rng.batch(T, V)
        knobs, loss = step(knobs, jnp.array(xs, dtype=jnp.int64), jnp.array(ys, dtype=jnp.int64))
        if n % 10 == 0:
            print(f"step {n} loss {float(loss):.6f}")
    jax.block_until_ready(knobs)
    print(f"loop_seconds {time.perf_counter() - start:.6f}", file=sys.stderr)


if __name__ == "__main__":
    main()
