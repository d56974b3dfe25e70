"""The benchmark GPT of bench/gpt.tape, written with PyTorch (eager, float64,
one thread) from its definition: same generator, same draws in the same
order, same model, same plain gradient step.

    python reference.py V T d h steps

Prints the same `step N loss X` lines as the tape program, and on stderr
`loop_seconds S`: the time of the training loop alone (the import of torch
and the set-up are not counted).
"""
import math
import sys
import time

import torch

torch.set_num_threads(1)
torch.set_default_dtype(torch.float64)

MASK64 = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK64

    def raw(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        return z ^ (z >> 31)

    def uniform(self):
        return (self.raw() >> 11) * 2.0**-53

    def normal(self):
        u1 = self.uniform()
        u2 = self.uniform()
        return math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)

    def randn(self, rows, cols):
        values = [self.normal() for _ in range(rows * cols)]
        return torch.tensor(values).reshape(rows, cols)

    def randint(self, lo, hi):
        return lo + math.floor(self.uniform() * (hi - lo + 1))


def main():
    V, T, d, h, steps = (int(a) for a in sys.argv[1:6])
    rng = SplitMix64(42)
    E = rng.randn(V, d) * 0.1
    P = rng.randn(T, d) * 0.1
    Wq = rng.randn(d, d) * (1 / math.sqrt(d))
    Wk = rng.randn(d, d) * (1 / math.sqrt(d))
    Wv = rng.randn(d, d) * (1 / math.sqrt(d))
    W1 = rng.randn(d, h) * (1 / math.sqrt(d))
    W2 = rng.randn(h, d) * (1 / math.sqrt(h))
    Wout = rng.randn(d, V) * (1 / math.sqrt(d))
    knobs = [E, P, Wq, Wk, Wv, W1, W2, Wout]
    for k in knobs:
        k.requires_grad_(True)
    mask = torch.triu(torch.full((T, T), float("-inf")), diagonal=1)
    scale = 1 / math.sqrt(d)
    rate = 0.05

    start = time.perf_counter()
    for step in range(1, steps + 1):
        xs, ys = [], []
        for _ in range(T):
            c = rng.randint(1, V)
            xs.append(c - 1)
            ys.append(c % V)  # the 1-based `c mod V + 1`, made 0-based
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
