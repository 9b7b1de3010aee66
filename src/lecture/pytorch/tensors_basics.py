# Ways to make a tensor: from data, filled with a constant, random, uninitialised, truncated normal.
import torch

x = record("x_from_data", torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))
record("x_from_data_shape", x.shape)
filled_shape = record("filled_shape", (4, 8))
x = record("x_zeros", torch.zeros(filled_shape))  # 4x8 matrix of all zeros
x = record("x_ones", torch.ones(filled_shape))  # 4x8 matrix of all ones
x = torch.randn(filled_shape)  # -> x_randn  (iid N(0, 1); torch's RNG draws other numbers than the Rust's)

# torch.empty returns uninitialised memory (whatever was there); the Rust `empty` gives zeros.
x = torch.empty(filled_shape)
record("x_empty_nbytes", x.nbytes)
x_empty_all_zero = bool((x == 0).all())  # -> x_empty_all_zero  (not promised by torch; fill before use)

# A truncated normal keeps samples inside [a, b] (absolute bounds, not multiples of std).
# torch samples it by inverse CDF; the Rust redraws samples outside [a, b]. Same distribution.
a = record("trunc_normal_a", -2.0)
b = record("trunc_normal_b", 2.0)
x = torch.nn.init.trunc_normal_(torch.empty(4, 8), mean=0.0, std=1.0, a=a, b=b)  # -> x_trunc_normal
trunc_normal_min = x.min().item()  # -> trunc_normal_min
trunc_normal_max = x.max().item()  # -> trunc_normal_max
