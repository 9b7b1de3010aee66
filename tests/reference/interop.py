#!/usr/bin/env python3
"""Files others can read, checked from Python with the reference packages (numpy, safetensors).

    interop.py check-checkpoint CHECKPOINT EXPECTED_JSON
        Loads a checkpoint written by the Rust tests with `safetensors.numpy.load_file` and checks
        every tensor's name, dtype, shape and values, and the step in its metadata, against the
        JSON the test wrote beside it. Prints one line per tensor, then "ok".
    interop.py write-npy FOLDER
        Writes token files with `np.save` (and one with `tofile`) for the Rust loader to read.

Run by tests/trace/python_interop.rs; `.ci/run` installs numpy and safetensors into a virtual
environment for it. Exit status 1 with a message on any mismatch.
"""
import json
import os
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file

DTYPES = {"F32": np.float32, "F16": np.float16, "I32": np.int32, "I64": np.int64}


def fail(msg):
    print(f"MISMATCH: {msg}")
    sys.exit(1)


def check_checkpoint(path, expected_path):
    with open(expected_path) as f:
        expected = json.load(f)
    tensors = load_file(path)
    if set(tensors) != set(expected["tensors"]):
        fail(f"tensor names {sorted(tensors)} != {sorted(expected['tensors'])}")
    for name, want in sorted(expected["tensors"].items()):
        got = tensors[name]
        dtype = DTYPES[want["dtype"]]
        if got.dtype != dtype:
            fail(f"{name}: dtype {got.dtype}, expected {np.dtype(dtype)}")
        if list(got.shape) != want["shape"]:
            fail(f"{name}: shape {list(got.shape)}, expected {want['shape']}")
        values = np.array(want["values"], dtype=dtype).reshape(want["shape"])
        if not np.array_equal(got, values):
            bad = int(np.argmax((got != values).ravel()))
            fail(f"{name}: element {bad} is {got.ravel()[bad]!r}, expected {values.ravel()[bad]!r}")
        print(f"{name}: {got.dtype} {list(got.shape)} equal")
    with safe_open(path, framework="numpy") as f:
        meta = f.metadata()
    for key, value in expected["metadata"].items():
        if meta.get(key) != value:
            fail(f"metadata {key} = {meta.get(key)!r}, expected {value!r}")
    print(f"ok: {len(tensors)} tensors, metadata {sorted(expected['metadata'])}")


def write_npy(folder):
    tokens = np.arange(1, 11)
    np.save(os.path.join(folder, "int32.npy"), tokens.astype(np.int32))
    np.save(os.path.join(folder, "uint16.npy"), np.array([0, 1, 50256, 65535], dtype=np.uint16))
    np.save(os.path.join(folder, "int64.npy"), tokens.astype(np.int64))
    np.save(os.path.join(folder, "int64_too_big.npy"), np.array([1, 2**40], dtype=np.int64))
    np.save(os.path.join(folder, "float32.npy"), tokens.astype(np.float32))
    np.save(os.path.join(folder, "fortran.npy"), np.asfortranarray(tokens.astype(np.int32).reshape(2, 5)))
    np.save(os.path.join(folder, "matrix.npy"), tokens.astype(np.int32).reshape(2, 5))
    tokens.astype(np.int32).tofile(os.path.join(folder, "raw.npy"))
    print("ok")


if __name__ == "__main__":
    if sys.argv[1:2] == ["check-checkpoint"] and len(sys.argv) == 4:
        check_checkpoint(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["write-npy"] and len(sys.argv) == 3:
        write_npy(sys.argv[2])
    else:
        sys.exit(__doc__)
