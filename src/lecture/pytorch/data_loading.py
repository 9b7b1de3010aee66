# Data loading: token ids in a memory-mapped file, batches cut from random positions.
import os
import tempfile
import time

import numpy as np
import torch

device = "cuda" if torch.cuda.is_available() else "cpu"
record("llama_data_bytes", 2.8e12)  # LLaMA's training data: far more than memory
tmp = tempfile.TemporaryDirectory()
path = os.path.join(tmp.name, "data.npy")
first_token, last_token = record("first_token", 1), record("last_token", 10)
orig_data = np.arange(first_token, last_token + 1, dtype=np.int32)
orig_data.tofile(path)  # raw int32, no header (despite the name, not np.save's format)
data = np.memmap(path, dtype=np.int32)  # -> raw_format (read in place: pages load on demand)
record("data", data.tolist())
record("equal_to_original", bool(np.array_equal(data, orig_data)))

# A batch of B sequences of length L, starting at random positions (each leaves room for the
# next-token target: starts are drawn from 0..len-L-1).
batch_size, sequence_length = record("batch_size", 2), record("sequence_length", 4)
starts = torch.randint(len(data) - sequence_length, (batch_size,))  # -> starts
x = torch.from_numpy(np.stack([data[s:s + sequence_length] for s in starts.tolist()]))  # -> x (int32)
record("rows_consecutive", bool((x.diff(dim=1) == 1).all()))
if device == "cuda":  # -> pinned_memory (on the CPU: not applicable)
    # Pinned (page-locked) host memory: the GPU reads it directly and the copy can be async.
    x = x.pin_memory().to(device, non_blocking=True)
    h2d_bytes = record("h2d_bytes", 256 << 20)
    rates = {}
    for pinned in [False, True]:
        host = torch.ones(h2d_bytes, dtype=torch.uint8, pin_memory=pinned)
        host.to(device)  # warm-up
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(5):
            host.to(device, non_blocking=True)
        torch.cuda.synchronize()
        rates[pinned] = 5 * h2d_bytes / (time.perf_counter() - start)
    h2d_pageable_bytes_per_sec = rates[False]  # -> h2d_pageable_bytes_per_sec
    h2d_pinned_bytes_per_sec = rates[True]  # -> h2d_pinned_bytes_per_sec
    pinned_over_pageable = rates[True] / rates[False]  # -> pinned_over_pageable

# The same tokens as np.save writes them: magic bytes, a header (dtype, order, shape), the data.
saved_i4 = os.path.join(tmp.name, "saved_i4.npy")
np.save(saved_i4, orig_data)
with open(saved_i4, "rb") as f:
    record("npy_magic_bytes", repr(f.read(6))[2:-1])  # b'\x93NUMPY' without the b''
tokens_i4 = np.load(saved_i4, mmap_mode="r")  # -> npy_i4_format (<i4: a memmap read in place)
record("npy_i4_copied_into_memory", not isinstance(tokens_i4, np.memmap))
saved_u2 = os.path.join(tmp.name, "saved_u2.npy")
np.save(saved_u2, np.arange(1, 11, dtype=np.uint16))  # uint16 holds a GPT-2-sized vocabulary
# Converted to int32 whole, as the Rust does (one can instead keep the uint16 memmap and convert
# each batch).
tokens_u2 = np.load(saved_u2).astype(np.int32)  # -> npy_u2_format (a copy in memory)
record("npy_u2_copied_into_memory", not isinstance(tokens_u2, np.memmap))
record("npy_equal_to_original", bool(np.array_equal(tokens_i4, orig_data) and np.array_equal(tokens_u2, orig_data)))

# Bad input. numpy and torch raise their own errors, in other words than the Rust's.
odd = os.path.join(tmp.name, "odd.npy")
with open(odd, "wb") as f:
    f.write(bytes(10))
try:
    np.memmap(odd, dtype=np.int32)
except ValueError as e:
    odd_length_error = str(e)  # -> odd_length_error ("Size of available data is not a multiple of ...")
try:
    torch.randint(len(data) - 10, (batch_size,))
except RuntimeError as e:
    too_short_error = str(e)  # -> too_short_error ("random_ expects 'from' to be less than 'to'...")
# numpy reads a Fortran-order .npy without complaint (the Rust refuses it: read as a flat stream,
# its tokens come column by column), and floats too, unless we check.
fortran = os.path.join(tmp.name, "fortran.npy")
np.save(fortran, np.asfortranarray(orig_data.reshape(2, 5)))
tokens = np.load(fortran, mmap_mode="r")  # -> npy_fortran_error (no error here)
floats = os.path.join(tmp.name, "floats.npy")
np.save(floats, np.array([1.0, 2.0, 3.0], dtype=np.float32))
tokens = np.load(floats, mmap_mode="r")
if not np.issubdtype(tokens.dtype, np.integer):
    npy_dtype_error = f"{floats}: holds {tokens.dtype}, not token ids"  # -> npy_dtype_error
tmp.cleanup()
