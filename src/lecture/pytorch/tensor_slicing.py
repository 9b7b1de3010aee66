# Many operations only make a new view: no copy, the same storage, new strides.
import torch


def same_storage(a, b):  # the same allocation (identity, not contents)
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


x = record("x", torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]))

y = record("row_0", x[0])  # row 0
record("row_0_same_storage", same_storage(x, y))
y = record("column_1", x[:, 1])  # column 1
record("column_1_same_storage", same_storage(x, y))
y = record("view_3_2", x.view(3, 2))  # same 6 numbers read as 3x2
record("view_3_2_same_storage", same_storage(x, y))
y = record("transpose", x.transpose(1, 0))
transpose_same_storage = record("transpose_same_storage", same_storage(x, y))
assert transpose_same_storage  # -> transpose_is_a_view

# Writing through x shows up in its transposed view: they are one storage.
written = record("written", 100.0)
x[0, 0] = written
transpose_after_write_0_0 = record("transpose_after_write_0_0", y[0, 0].item())
assert transpose_after_write_0_0 == written  # -> write_shows_through

# A transpose is not contiguous, so a view that merges its dimensions fails...
x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
y = x.transpose(1, 0)
transpose_is_contiguous = record("transpose_is_contiguous", y.is_contiguous())
assert not transpose_is_contiguous  # -> transpose_not_contiguous
try:
    y.view(2, 3)
except RuntimeError as e:
    view_error = str(e)  # -> view_error  (torch words it differently: "view size is not compatible ...")
# ...until .contiguous() copies it into fresh storage.
y = record("contiguous_view_2_3", x.transpose(1, 0).contiguous().view(2, 3))
contiguous_same_storage = record("contiguous_same_storage", same_storage(x, y))
assert not contiguous_same_storage  # -> contiguous_copies
