# rearrange: split a dimension that holds several (heads × hidden per head), work on a part, merge back.
import torch
from einops import EinopsError, einsum, rearrange

x = torch.ones(2, 3, 8)  # batch seq total_hidden
w = torch.ones(4, 4)  # hidden1 hidden2
record("x_shape", x.shape)
record("w_shape", w.shape)

# total_hidden is heads × hidden1; the pattern cannot know how to split 8, so heads=2 says it.
heads = record("heads", 2)
x_split = rearrange(x, "... (heads hidden1) -> ... heads hidden1", heads=heads)
record("x_split_shape", x_split.shape)
x_split_same_storage = record("x_split_same_storage", x_split.untyped_storage().data_ptr() == x.untyped_storage().data_ptr())  # a view
assert x_split_same_storage  # -> split_is_a_view

x_heads = record("x_transformed", einsum(x_split, w, "... hidden1, hidden1 hidden2 -> ... hidden2"))  # sums of 4 ones
assert (x_heads == w.shape[0]).all()  # -> entries_count_hidden1

# The inverse: the two dimensions grouped back into one.
x_merged = rearrange(x_heads, "... heads hidden2 -> ... (heads hidden2)")
record("x_merged_shape", x_merged.shape)
record("x_merged", x_merged)
assert x_merged.shape[2] == x.shape[2]  # -> merge_restores_width

# Bad patterns raise EinopsError, worded otherwise than the Rust messages.
try:
    rearrange(x, "... (heads hidden1) -> ... heads hidden1", heads=3)  # 8 is not 3 × anything
except EinopsError as e:
    wrong_split_error = str(e)  # -> wrong_split_error
try:
    rearrange(x, "batch (heads hidden1) -> batch heads hidden1", heads=2)  # 2 names, 3 dimensions
except EinopsError as e:
    shape_mismatch_error = str(e)  # -> shape_mismatch_error
try:
    rearrange(x, "... (heads hidden1) -> ... heads hidden2", heads=2)
except EinopsError as e:
    unknown_axis_error = str(e)  # -> unknown_axis_error
