def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3 x86_32 of data."""
    m = 0xFFFFFFFF
    rotl = lambda x, r: ((x << r) | (x >> (32 - r))) & m  # noqa: E731
    mix = lambda k: rotl(k * 0xCC9E2D51 & m, 15) * 0x1B873593 & m  # noqa: E731
    h, n = seed, len(data) // 4 * 4
    for i in range(0, n, 4):
        h = (rotl(h ^ mix(int.from_bytes(data[i:i + 4], "little")), 13) * 5 + 0xE6546B64) & m
    if len(data) > n:
        h ^= mix(int.from_bytes(data[n:], "little"))
    h ^= len(data)
    h = (h ^ h >> 16) * 0x85EBCA6B & m
    h = (h ^ h >> 13) * 0xC2B2AE35 & m
    return h ^ h >> 16


def assign(experiment: str, key: str, arms: list, traffic: float = 1.0):
    """The arm of key: arms are (name, weight) pairs in configuration order.
    None when the key is outside the experiment's traffic share."""
    data = f"{experiment}:{key}".encode()
    if traffic < 1 and murmur3_32(data, 1) >= traffic * 2**32:
        return None
    bucket = murmur3_32(data, 0) * sum(w for _, w in arms) >> 32
    for name, weight in arms:
        if bucket < weight:
            return name
        bucket -= weight
