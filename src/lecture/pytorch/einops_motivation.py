# The old way: dimensions by position; which of -2 and -1 is which lives only in comments.
import torch

x = torch.ones(2, 2, 3)  # batch seq hidden
y = torch.ones(2, 2, 3)  # batch seq hidden
record("x_shape", x.shape)
z = record("z", x @ y.transpose(-2, -1))  # batch seq seq; each entry sums 3 products of ones
assert (z == x.shape[2]).all()  # -> entries_count_hidden
