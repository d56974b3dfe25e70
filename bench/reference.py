"""The benchmark GPT of bench/gpt.tape, written with PyTorch (eager, float64)
from its definition: same generator, same draws in the same order, same
model, same plain gradient step.

    python reference.py V T d h steps [threads]

On one thread unless `threads` says otherwise (0: PyTorch's default, all
the machine's cores).

Prints the same `step N loss X` lines as the tape program, and on stderr
`loop_seconds S`: the time of the training loop alone (the import of torch
and the set-up are not counted).
"""
import math
import sys
import time

import torch

from generator import SplitMix64

THREADS = int(sys.argv[6]) if len(sys.argv) > 6 else 1
if THREADS > 0:
    torch.set_num_threads(THREADS)
torch.set_default_dtype(torch.float64)


def randn(rng, rows, cols):
    return torch.tensor(rng.normals(rows, cols))

def main():
    V, T, d, h, steps = (int(a) for a in sys.argv[1:6])
    rng = SplitMix64(42)
    E = randn(rng, V, d) * 0.1
    P = randn(rng, T, d) * 0.1
    Wq = randn(rng, d, d) * (1 / math.sqrt(d))
    Wk = randn(rng, d, d) * (1 / math.sqrt(d))
    Wv = randn(rng, d, d) * (1 / math.sqrt(d))
    W1 = randn(rng, d, h) * (1 / math.sqrt(d))
    W2 = randn(rng, h, d) * (1 / math.sqrt(h))
    Wout = randn(rng, d, V) * (1 / math.sqrt(d))
    knobs = [E, P, Wq, Wk, Wv, W1, W2, Wout]
    for k in knobs:
        k.requires_grad_(True)
    mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    scale = 1 / math.sqrt(d)
    rate = 0.05

    start = time.perf_counter()
    for step in range(1, steps + 1):
        xs, ys = rng.batch(T, V)
        x = torch.tensor(xs)
        y = torch.tensor(ys)
        e = E[x] + P
        q = e @ Wq
        k = e @ Wk
        vp = e @ Wv
        p = torch.softmax(q @ k.T * scale + mask, dim=1)
        o = p @ vp
        n = torch.nn.functional.layer_norm(e + o, (d,), eps=1e-5)
        z = n + torch.tanh(n @ W1) @ W2
        loss = torch.nn.functional.cross_entropy(z @ Wout, y)
        loss.backward()
        with torch.no_grad():
            for knob in knobs:
                knob -= rate * knob.grad
                knob.grad = None
        if step % 10 == 0:
            print(f"step {step} loss {loss.item():.6f}")
    print(f"loop_seconds {time.perf_counter() - start:.6f}", file=sys.stderr)


if __name__ == "__main__":
    main()
