"""The specified generator (LANGUAGE.md): SplitMix64 from seed 42, uniforms
from its top 53 bits, normals by Box-Muller, `RandInt` by scaling a
uniform. Shared by the PyTorch and JAX references, which draw from it in
the tape program's order."""
import math

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

    def normals(self, rows, cols):
        """rows × cols normals, row by row, as a list of rows."""
        return [[self.normal() for _ in range(cols)] for _ in range(rows)]

    def randint(self, lo, hi):
        return lo + math.floor(self.uniform() * (hi - lo + 1))

    def batch(self, T, V):
        """One step's T token ids and their targets, 0-based: the 1-based
        `c` and `c mod V + 1` of the tape program, less one."""
        xs, ys = [], []
        for _ in range(T):
            c = self.randint(1, V)
            xs.append(c - 1)
            ys.append(c % V)
        return xs, ys
