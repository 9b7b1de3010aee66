# Every source of randomness gets its own seed, so results can be reproduced one by one.
#
# The Rust draws from its own generator (ChaCha8, one stream per Rng::seed(s)), so its numbers
# are not torch's. Rng::seed(s) plays the part of torch.manual_seed(s), which seeds torch's
# global generator (CPU and every GPU); a separate stream is a torch.Generator of its own. numpy
# and Python's random have global generators too: set np.random.seed(s) and random.seed(s) as well
# (or use np.random.default_rng(s) and random.Random(s), the per-stream forms).
import random

import numpy as np
import torch

seed = 0
torch.manual_seed(seed)
np.random.seed(seed)  # the lecture seeds all three; this section draws from torch only
random.seed(seed)
x = torch.randn(4, 4)  # -> x_seed_0 (torch's draws: not the Rust's)
torch.manual_seed(seed)
x_again = torch.randn(4, 4)
torch.manual_seed(seed + 1)
x_other = torch.randn(4, 4)  # -> x_seed_1
# Compared as bits (view as int32): "identical" means identical.
same_seed_bit_identical = record("same_seed_bit_identical", torch.equal(x.view(torch.int32), x_again.view(torch.int32)))
assert same_seed_bit_identical  # -> same_seed_same_draw
different_seed_identical = record("different_seed_identical", torch.equal(x.view(torch.int32), x_other.view(torch.int32)))
assert not different_seed_identical  # -> other_seed_other_draw

# One stream shared by initialisation and data: drawing one more batch first changes the initial
# weights. Separate streams (seeded from one root) keep them apart.
torch.manual_seed(seed)
w = torch.randn(4)
torch.manual_seed(seed)
batch = torch.randn(4)
w_after_batch = torch.randn(4)
shared_stream_init_unchanged = record("shared_stream_init_unchanged", torch.equal(w.view(torch.int32), w_after_batch.view(torch.int32)))
assert not shared_stream_init_unchanged  # -> shared_stream_moves_init


def streams(seed):  # (initialisation, data), like the Rust's Rng::fork: each seeded from the root
    root = torch.Generator().manual_seed(seed)
    init_seed, data_seed = torch.randint(2**62, (2,), generator=root).tolist()
    return torch.Generator().manual_seed(init_seed), torch.Generator().manual_seed(data_seed)


init_gen, _ = streams(seed)
w = torch.randn(4, generator=init_gen)
init_gen, data_gen = streams(seed)
batch = torch.randn(4, generator=data_gen)
w_after_batch = torch.randn(4, generator=init_gen)
separate_streams_init_unchanged = record("separate_streams_init_unchanged", torch.equal(w.view(torch.int32), w_after_batch.view(torch.int32)))
assert separate_streams_init_unchanged  # -> own_stream_keeps_init
