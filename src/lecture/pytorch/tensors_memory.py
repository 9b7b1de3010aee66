# Memory = (number of values) x (bytes per value); the dtype sets the bytes and what can be represented.
import math

import torch

# float32 (single precision): 1 sign bit, 8 exponent bits, 23 mantissa bits.
shape = record("shape", (4, 8))
x = torch.zeros(shape)  # float32 is the default dtype
record("dtype", x.dtype)
record("numel", x.numel())
record("element_size", x.element_size())
record("bytes", x.numel() * x.element_size())

# One matrix of GPT-3's feed-forward layer (torch.empty: allocated, not written).
gpt3_d = record("gpt3_d", 12288)
gpt3_ffn_multiplier = record("gpt3_ffn_multiplier", 4)
w = torch.empty(gpt3_ffn_multiplier * gpt3_d, gpt3_d)
record("gpt3_ffn_bytes", w.nbytes)  # 2.4 GB
del w

# float16 halves the memory, but its range is small: 1e-8 underflows to zero.
x = torch.zeros(shape, dtype=torch.float16)
record("float16_element_size", x.element_size())
test_value = record("test_value", 1e-8)
x = torch.tensor([test_value], dtype=torch.float16)
record("fp16_1e_8", x.item())

# bfloat16 keeps float32's exponent range with fewer mantissa bits: 1e-8 survives, coarsely.
x = torch.tensor([test_value], dtype=torch.bfloat16)
record("bfloat16_element_size", x.element_size())
record("bf16_1e_8", x.item())


def info(dtype):
    f = torch.finfo(dtype)
    mantissa_bits = -int(math.log2(f.eps))  # eps = 2**-mantissa_bits; finfo has no bit counts
    return {
        "bits": f.bits, "exponent_bits": f.bits - 1 - mantissa_bits, "mantissa_bits": mantissa_bits,
        "eps": f.eps, "min": f.min, "max": f.max,
        "smallest_normal": f.smallest_normal, "smallest_subnormal": f.smallest_normal * f.eps,  # not in finfo
        "resolution": f.resolution,
    }


record("float32_info", info(torch.float32))
record("float16_info", info(torch.float16))
record("bfloat16_info", info(torch.bfloat16))
# fp8 (H100 tensor cores): E4M3 trades range for precision, E5M2 the other way round.
record("fp8_e4m3_info", info(torch.float8_e4m3fn))
record("fp8_e5m2_info", info(torch.float8_e5m2))
formats = [torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2]
record("bit_layouts", [
    {"name": str(d).removeprefix("torch."), "sign": 1, "exponent": info(d)["exponent_bits"], "mantissa": info(d)["mantissa_bits"]}
    for d in formats
])
