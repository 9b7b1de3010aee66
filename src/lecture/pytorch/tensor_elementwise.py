# Elementwise operations apply to each element independently; the output has the input's shape.
import torch

x = record("x", torch.tensor([1.0, 4.0, 9.0]))
record("pow_2", x.pow(2))
record("sqrt", x.sqrt())
record("rsqrt", x.rsqrt())  # 1 / sqrt(x)
record("x_plus_x", x + x)
record("x_times_2", x * 2)
record("x_div_0_5", x / 0.5)
# triu keeps the upper triangle: the building block of a causal attention mask.
ones = torch.ones(3, 3)
record("ones_shape", ones.shape)
record("triu", ones.triu())
