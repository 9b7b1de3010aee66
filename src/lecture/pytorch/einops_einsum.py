# einsum: name every dimension of the inputs and say which survive; the others are summed.
import torch
from einops import EinopsError, einsum
from torch.utils.flop_counter import FlopCounterMode

x = torch.ones(2, 3, 4)  # batch seq1 hidden
y = torch.ones(2, 3, 4)  # batch seq2 hidden
record("x_shape", x.shape)
z_matmul = x @ y.transpose(-2, -1)  # old way
with FlopCounterMode(display=False) as counter:
    # einops puts the pattern last.
    z = einsum(x, y, "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2")  # new way
record("z", z)  # hidden is not in the output: summed over, 4 ones
assert (z == x.shape[2]).all()  # -> entries_count_hidden
z_equals_matmul = record("z_equals_matmul", torch.equal(z, z_matmul))
assert z_equals_matmul  # -> einsum_is_the_matmul
# It runs as one batched matmul (aten.bmm), so it costs 2 · batch · seq1 · seq2 · hidden.
z_flops = record("z_flops", counter.get_total_flops())
batch, seq1, hidden = x.shape
seq2 = y.shape[1]
z_flops_formula = record("z_flops_formula", 2 * batch * seq1 * seq2 * hidden)
assert z_flops == z_flops_formula  # -> z_flops_as_formula

# `...` stands for any number of leading dimensions.
z_ellipsis = record("z_ellipsis", einsum(x, y, "... seq1 hidden, ... seq2 hidden -> ... seq1 seq2"))
z_ellipsis_equals_z = record("z_ellipsis_equals_z", torch.equal(z_ellipsis, z))
assert z_ellipsis_equals_z  # -> ellipsis_is_the_same
x4 = torch.ones(5, 2, 3, 4)  # batch1 batch2 seq1 hidden
record("x_broadcast_shape", x4.shape)
z = einsum(x4, y, "... seq1 hidden, ... seq2 hidden -> ... seq1 seq2")  # y broadcasts
record("z_ellipsis_broadcast_shape", z.shape)

# A pattern that does not fit is an error (einops and torch word them otherwise than the Rust).
try:
    einsum(x, y, "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq3")
except EinopsError as e:
    unknown_axis_error = str(e)  # -> unknown_axis_error
y5 = torch.ones(2, 3, 5)
try:
    einsum(x, y5, "batch seq1 hidden, batch seq2 hidden -> batch seq1 seq2")
except RuntimeError as e:  # raised by torch.einsum, which names the axis by letter
    axis_size_error = str(e)  # -> axis_size_error
