# Ways to make a tensor: from data, filled with a constant, random, uninitialised, truncated normal.
import torch

# What tensors hold, at scale: every parameter of DeepSeek v3.2 (its Hugging Face page: 685B).
record("deepseek_v3_2_parameters", 685e9)

# A tensor's rank is its number of dimensions.
record("rank1_rank", torch.zeros(4).dim())  # a vector
record("rank2_rank", torch.zeros(4, 8).dim())  # a matrix
record("rank3_rank", torch.zeros(4, 8, 2).dim())
# A Transformer's attention holds rank 4: batch, sequence, heads, dimension per head.
batch, seq, heads, head_dim = record("batch", 32), record("seq", 16), record("heads", 16), record("head_dim", 64)
x = torch.zeros(batch, seq, heads, head_dim)
record("rank4_shape", x.shape)
record("rank4_rank", x.dim())
record("rank4_numel", x.numel())
assert x.numel() == batch * seq * heads * head_dim  # -> numel_is_the_product

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
