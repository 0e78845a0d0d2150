"""The course's random numbers in Python: common/core/rng.cpp line for line, so a peer framework visits the
same examples in the same batches as every stage (epoch_order) and tests can redraw what a trainer drew.

xoshiro256** seeded through splitmix64, unbiased integers by rejection, Box-Muller normals. Python's
integers are unbounded, so every 64-bit operation is masked back to 64 bits (MASK) where C++ wraps.
"""
import math

MASK = (1 << 64) - 1


def _splitmix64(state):
    """(next state, output) of splitmix64: the C++ version advances its argument in place."""
    state = (state + 0x9E3779B97F4A7C15) & MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return state, z ^ (z >> 31)


def _rotl(x, k):
    return ((x << k) | (x >> (64 - k))) & MASK


class Rng:
    """course::Rng: the same seed and stream give the same sequence as the C++ generator."""

    def __init__(self, seed, stream=0):
        x = (seed ^ ((stream * 0xD1B54A32D192ED03) & MASK)) & MASK
        self.s = []
        for _ in range(4):
            x, out = _splitmix64(x)
            self.s.append(out)
        self._spare = None

    def next_u64(self):
        s0, s1, s2, s3 = self.s
        result = (_rotl((s1 * 5) & MASK, 7) * 9) & MASK
        t = (s1 << 17) & MASK
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = _rotl(s3, 45)
        self.s = [s0, s1, s2, s3]
        return result

    def uniform(self, lo=0.0, hi=1.0):
        """Uniform in [lo, hi): 53 random bits, as Rng::uniform."""
        u = (self.next_u64() >> 11) * 2.0 ** -53
        return u if (lo, hi) == (0.0, 1.0) else lo + (hi - lo) * u

    def below(self, n):
        """Uniform integer in [0, n), unbiased: draws in the top partial copy of [0, n) are redrawn."""
        if n <= 0:
            raise ValueError(f"Rng.below({n})")
        limit = MASK - MASK % n
        while True:
            r = self.next_u64()
            if r < limit:
                return r % n

    def normal(self):
        """Standard normal by Box-Muller; the second number of each pair is kept for the next call."""
        if self._spare is not None:
            spare, self._spare = self._spare, None
            return spare
        u1 = self.uniform()
        while u1 <= 0.0:
            u1 = self.uniform()
        u2 = self.uniform()
        r = math.sqrt(-2.0 * math.log(u1))
        theta = 2.0 * math.pi * u2
        self._spare = r * math.sin(theta)
        return r * math.cos(theta)


def epoch_order(n, seed, epoch):
    """course::epoch_order: the order in which epoch `epoch` (0-based) visits n examples, a Fisher-Yates
    shuffle drawn from stream 1000 + epoch of the seed. Batch b of an epoch is order[b*B : (b+1)*B]."""
    order = list(range(n))
    rng = Rng(seed, 1000 + epoch)
    for i in range(n - 1, 0, -1):
        j = rng.below(i + 1)
        order[i], order[j] = order[j], order[i]
    return order
