# Matrix multiplication; leading dimensions are batch dimensions and broadcast.
import torch

x = torch.ones(16, 32)
w = torch.ones(32, 2)
record("x_shape", x.shape)
record("w_shape", w.shape)
y = x @ w
record("y_shape", y.shape)
y_0_0 = record("y_0_0", y[0, 0].item())  # a sum of 32 ones
assert y_0_0 == x.shape[1]  # -> entry_counts_inner

# For each of 4 batch elements and 8 tokens, a 16x32 by 32x2 product.
x = torch.ones(4, 8, 16, 32)
record("batched_x_shape", x.shape)
y = x @ w
record("batched_y_shape", y.shape)
batched_y_max = record("batched_y_max", y.max().item())
batched_y_min = record("batched_y_min", y.min().item())
assert (batched_y_min, batched_y_max) == (x.shape[3], x.shape[3])  # -> every_entry_counts_inner
