# Checkpointing: save model, optimizer state and step; load them into a fresh model; training
# continues exactly as if it had never stopped.
import os
import tempfile

import torch
import torch.nn.functional as F
from torch import nn
from cruncher import Cruncher  # the custom_model panel's Cruncher: layers of x @ W, then a D×1 head

device = "cuda" if torch.cuda.is_available() else "cpu"


d, num_layers, b, lr = record("d", 64), record("num_layers", 3), 16, 0.01
total_steps, save_at = 20, 10
true_w = torch.randn(d, device=device)
init_seed, data_seed = 0, 1  # the Rust draws both from the run's stream: other values


def fresh(seed):
    # torch.optim.Adagrad divides by √g2 + eps (eps=1e-10); the Rust's AdaGrad by √(g2 + 1e-5).
    torch.manual_seed(seed)
    model = Cruncher(d, num_layers).to(device)
    return model, torch.optim.Adagrad(model.parameters(), lr=lr)


def train(model, optimizer, steps):
    losses = []
    for step in steps:
        # Each step's batch depends on the step alone, so a resumed run sees the same batches.
        x = torch.randn(b, d, generator=torch.Generator().manual_seed(data_seed + step)).to(device)
        loss = F.mse_loss(model(x), x @ true_w)
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return losses


# Uninterrupted: all steps in one go.
model, optimizer = fresh(init_seed)
losses_uninterrupted = train(model, optimizer, range(total_steps))  # -> losses_uninterrupted

# Interrupted: train, save, and throw the model away.
tmp = tempfile.TemporaryDirectory()
path = os.path.join(tmp.name, "model_checkpoint.pt")
model, optimizer = fresh(init_seed)
losses_resumed = train(model, optimizer, range(save_at))
# torch.save pickles into a zip archive; the Rust writes a safetensors file with a checksum.
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": save_at}, path)
saved = [t.clone() for t in model.state_dict().values()] + [s["sum"].clone() for s in optimizer.state.values()]

# A model initialised differently, so only the checkpoint can make it right.
new_model, new_optimizer = fresh(init_seed + 1)
checkpoint = torch.load(path)  # weights_only=True, the default since 2.6: tensors, dicts, numbers
new_model.load_state_dict(checkpoint["model"])
new_optimizer.load_state_dict(checkpoint["optimizer"])
step = record("loaded_step", checkpoint["step"])
loaded = list(new_model.state_dict().values()) + [s["sum"] for s in new_optimizer.state.values()]
loaded_bit_identical = record("loaded_bit_identical", all(torch.equal(a.view(torch.int32), c.view(torch.int32))
                                                           for a, c in zip(saved, loaded)))
assert loaded_bit_identical  # -> loads_what_it_saved
losses_resumed += train(new_model, new_optimizer, range(step, total_steps))  # -> losses_resumed
resumed_bit_identical = record("resumed_bit_identical", losses_uninterrupted == losses_resumed)  # Python floats: equal means bit-equal
assert resumed_bit_identical  # -> resumes_as_if_never_stopped

# The file: a zip of pickled structure and raw tensor bytes; optimizer state is keyed by the
# parameter's index (state[0]["sum"], state[0]["step"]), not by name as in the Rust's file.
checkpoint_bytes = os.path.getsize(path)  # -> checkpoint_bytes
tensors = {f"model.{n}": t for n, t in checkpoint["model"].items()}
tensors |= {f"optimizer.state.{i}.sum": s["sum"] for i, s in checkpoint["optimizer"]["state"].items()}
checkpoint_tensors = [(n, list(t.shape), t.dtype) for n, t in tensors.items()]  # -> checkpoint_tensors
checkpoint_metadata = {"step": step, **checkpoint["optimizer"]["param_groups"][0]}  # -> checkpoint_metadata

# Damaged files and the wrong model. torch.load and load_state_dict raise their own errors.
with open(path, "rb") as f:
    data = f.read()
truncated = os.path.join(tmp.name, "truncated.pt")
with open(truncated, "wb") as f:
    f.write(data[: len(data) // 2])
try:
    torch.load(truncated)
except (RuntimeError, OSError) as e:
    truncated_error = str(e)  # -> truncated_error (this torch: "[Errno 22] Invalid argument")
# One bit flipped in the tensors' bytes: torch.load does not check the zip's CRCs, so this loads
# without complaint (the Rust's last byte is tensor data; here it would be the zip's directory).
corrupt = os.path.join(tmp.name, "corrupt.pt")
middle = len(data) // 2
with open(corrupt, "wb") as f:
    f.write(data[:middle] + bytes([data[middle] ^ 0x40]) + data[middle + 1:])
try:
    torch.load(corrupt)
    corrupt_error = "no error"  # -> corrupt_error
except (RuntimeError, OSError) as e:
    corrupt_error = str(e)
small_model = Cruncher(d // 2, num_layers).to(device)
try:
    small_model.load_state_dict(checkpoint["model"])
except RuntimeError as e:
    shape_mismatch_error = str(e)  # -> shape_mismatch_error ("size mismatch for layers.0.weight: ...")
tmp.cleanup()
