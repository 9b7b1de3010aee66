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
float16_element_size = record("float16_element_size", x.element_size())
assert 2 * float16_element_size == torch.finfo(torch.float32).bits // 8  # -> float16_is_half_float32
test_value = record("test_value", 1e-8)
x = torch.tensor([test_value], dtype=torch.float16)
fp16_1e_8 = record("fp16_1e_8", x.item())
assert fp16_1e_8 == 0  # -> fp16_underflows

# bfloat16 keeps float32's exponent range with fewer mantissa bits: 1e-8 survives, coarsely.
x = torch.tensor([test_value], dtype=torch.bfloat16)
record("bfloat16_element_size", x.element_size())
bf16_1e_8 = record("bf16_1e_8", x.item())
assert bf16_1e_8 > 0  # -> bf16_keeps_it


def info(dtype):
    f = torch.finfo(dtype)
    mantissa_bits = -int(math.log2(f.eps))  # eps = 2**-mantissa_bits; finfo has no bit counts
    return {
        "bits": f.bits, "exponent_bits": f.bits - 1 - mantissa_bits, "mantissa_bits": mantissa_bits,
        "eps": f.eps, "min": f.min, "max": f.max,
        "smallest_normal": f.smallest_normal, "smallest_subnormal": f.smallest_normal * f.eps,  # not in finfo
        "resolution": f.resolution,
    }


float32_info = record("float32_info", info(torch.float32))
float16_info = record("float16_info", info(torch.float16))
bfloat16_info = record("bfloat16_info", info(torch.bfloat16))
assert bfloat16_info["exponent_bits"] == float32_info["exponent_bits"]  # -> bf16_has_float32_exponent
assert bfloat16_info["bits"] == float16_info["bits"]  # -> bf16_as_wide_as_float16
# fp8 (H100 tensor cores): E4M3 trades range for precision, E5M2 the other way round.
record("fp8_e4m3_info", info(torch.float8_e4m3fn))
record("fp8_e5m2_info", info(torch.float8_e5m2))
formats = [torch.float32, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2]
record("bit_layouts", [
    {"name": str(d).removeprefix("torch."), "sign": 1, "exponent": info(d)["exponent_bits"], "mantissa": info(d)["mantissa_bits"]}
    for d in formats
] + [{"name": "float4_e2m1fn", "sign": 1, "exponent": 2, "mantissa": 1}])  # fp4: no finfo in torch (below)

# fp4 (Blackwell, NVFP4): E2M1. PyTorch 2.15 has the storage dtype, two values a byte, but no
# finfo for it and, on the CPU, no cast into or out of it ("copy_kernel" is not implemented), so
# the values are decoded here from the bit layout, and the cast is tried where it exists.
assert torch.float4_e2m1fn_x2.itemsize == 1  # two 4-bit values in one byte


def e2m1(code):
    sign = -1.0 if code & 0b1000 else 1.0
    exponent, mantissa = (code >> 1) & 0b11, code & 1
    if exponent == 0:  # subnormal: 0 or 0.5
        return sign * mantissa * 0.5
    return sign * (1 + mantissa / 2) * 2.0 ** (exponent - 1)


record("fp4_e2m1_info", {
    "bits": 4, "exponent_bits": 2, "mantissa_bits": 1, "eps": 0.5, "min": -6.0, "max": 6.0,
    "smallest_normal": 1.0, "smallest_subnormal": 0.5, "resolution": 1.0,
})
fp4_values = record("fp4_values", sorted({e2m1(c) + 0.0 for c in range(16)}))  # + 0.0: -0 is 0
codes = torch.arange(16, dtype=torch.uint8)
packed = (codes[1::2] << 4 | codes[::2]).view(torch.float4_e2m1fn_x2)  # PyTorch's own packing
try:
    from_torch = packed.to(torch.float32)  # where PyTorch can cast (recent GPUs)
except (RuntimeError, NotImplementedError):
    from_torch = None  # this CPU: the dtype holds bytes and nothing else
if from_torch is not None:
    assert sorted({v + 0.0 for v in from_torch.flatten().tolist()}) == fp4_values
table = torch.tensor(fp4_values)
fp4_rounding_inputs = record("fp4_rounding_inputs", [0.25, 0.75, 1.25, 1.75, 2.5, 2.6, 3.5, 5.0, 7.0, -0.3])


def round_e2m1(x):
    """Nearest E2M1 value, a tie to the even code (mantissa 0), saturating at ±6: torch ops."""
    x = torch.as_tensor(x).clamp(-6.0, 6.0)
    distance = (x[:, None] - table[None, :]).abs()
    nearest = distance == distance.min(dim=1, keepdim=True).values
    even = torch.tensor([[v in (0.0, 1.0, 2.0, 4.0, -1.0, -2.0, -4.0) for v in fp4_values]])
    pick = torch.where(nearest.sum(1, keepdim=True) > 1, nearest & even, nearest)
    return table[pick.int().argmax(1)]


record("fp4_rounded", round_e2m1(torch.tensor(fp4_rounding_inputs)))

# NVFP4 on a trained layer: 32x32 weights (the Rust trains the Cruncher; torch's draws differ, so
# the errors are named, not compared). Per block of 16: E4M3 scale of amax / 6 in units of a
# float32 tensor scale amax / (6 * 448).
w = torch.randn(32, 32) / 32**0.5
record("trained_layer_shape", w.shape)
nvfp4_block = record("nvfp4_block", 16)
blocks = w.reshape(-1, nvfp4_block)
tensor_scale = torch.tensor(blocks.abs().max().item() / (6.0 * 448.0), dtype=torch.float32)
block_scale = (blocks.abs().amax(1, keepdim=True) / 6.0 / tensor_scale).to(torch.float8_e4m3fn).float()
scale = block_scale * tensor_scale
dequantized = round_e2m1((blocks / scale).reshape(-1)).reshape(blocks.shape) * scale
packed_bytes = w.numel() // 2 + blocks.shape[0] * torch.float8_e4m3fn.itemsize + tensor_scale.element_size()
nvfp4_bits_per_parameter = record("nvfp4_bits_per_parameter", 8 * packed_bytes / w.numel())
nvfp4_relative_error = ((dequantized - blocks).norm() / blocks.norm()).item()  # -> nvfp4_relative_error
fp8_scale = w.abs().max() / 448.0
fp8 = (w / fp8_scale).to(torch.float8_e4m3fn).float() * fp8_scale
fp8_bits_per_parameter = record("fp8_bits_per_parameter", (8 * w.numel() + 32) / w.numel())
fp8_relative_error = ((fp8 - w).norm() / w.norm()).item()  # -> fp8_relative_error
bf16_bits_per_parameter = record("bf16_bits_per_parameter", 8 * torch.bfloat16.itemsize)
assert nvfp4_bits_per_parameter < fp8_bits_per_parameter  # -> nvfp4_fewer_bits_than_fp8
assert fp8_bits_per_parameter < bf16_bits_per_parameter  # -> fp8_fewer_bits_than_bf16
bf16_relative_error = ((w.bfloat16().float() - w).norm() / w.norm()).item()  # -> bf16_relative_error
