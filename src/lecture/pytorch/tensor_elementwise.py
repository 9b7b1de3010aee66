# Elementwise operations apply to each element independently; the output has the input's shape.
import torch

x = record("x", torch.tensor([1.0, 4.0, 9.0]))
record("pow_2", x.pow(2))
record("sqrt", x.sqrt())
rsqrt = record("rsqrt", x.rsqrt())  # 1 / sqrt(x)
# One over the square root of 9 in float32: the nearest float32 to a third, not a third.
one_third = rsqrt[2].item()
assert one_third != 1 / 3  # -> a_third_is_not_exact
assert abs(one_third * 3 - 1) < 1e-6  # -> a_third_to_float32_precision
record("x_plus_x", x + x)
record("x_times_2", x * 2)
record("x_div_0_5", x / 0.5)
# triu keeps the upper triangle: the building block of a causal attention mask.
ones = torch.ones(3, 3)
record("ones_shape", ones.shape)
record("triu", ones.triu())
