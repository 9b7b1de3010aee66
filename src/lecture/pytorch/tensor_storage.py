# A tensor is a pointer into storage plus strides: how far to jump in storage per step along each dimension.
import torch

x = record("x", torch.arange(16, dtype=torch.float32).view(4, 4))
record("shape", x.shape)
record("stride", x.stride())
assert x.stride() == (x.shape[1], 1)  # -> row_major_strides
# Element (row, column) sits at storage position row*stride[0] + column*stride[1].
row = record("row", 1)
column = record("column", 2)
index = record("index", row * x.stride(0) + column * x.stride(1))
element = record("element", x[row, column].item())
element_at_index = record("element_at_index", torch.arange(16, dtype=torch.float32)[index].item())  # x's storage, in order
assert element == element_at_index  # -> found_both_ways
