# reduce: the axes missing from the output are aggregated (sum, mean, max, min).
import torch
from einops import reduce

x = torch.ones(2, 3, 4)  # batch seq hidden
record("x_shape", x.shape)
y_old = x.mean(dim=-1)  # old way
y = record("y_mean", reduce(x, "... hidden -> ...", "mean"))  # new way
y_mean_equals_old_way = record("y_mean_equals_old_way", torch.equal(y, y_old))
assert y_mean_equals_old_way  # -> reduce_is_the_mean
y = record("y_sum", reduce(x, "... hidden -> ...", "sum"))  # 4 ones per row
