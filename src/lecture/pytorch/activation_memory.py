# What the forward pass keeps for backward, layer by layer, and what checkpointing trades for it.
import torch
from torch.utils.checkpoint import checkpoint_sequential
from torch.utils.flop_counter import FlopCounterMode

device = "cuda" if torch.cuda.is_available() else "cpu"
B, D, num_layers = record("batch_size", 64), record("d", 256), record("num_layers", 16)


class Linear(torch.nn.Module):  # the lecture's bias-free layer: x @ W, W stored in_dim x out_dim
    def __init__(self, d_in, d_out):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(d_in, d_out) / d_in**0.5)

    def forward(self, x):
        return x @ self.weight


layers = torch.nn.ModuleList(Linear(D, D) for _ in range(num_layers)).to(device)
final = Linear(D, 1).to(device)
x, y = torch.randn(B, D, device=device), torch.randn(B, device=device)

# saved_tensors_hooks sees every tensor autograd saves for backward. Count the bytes of those that
# are neither parameters nor the data (each storage once), as the Rust's kept_bytes does.
held = {p.untyped_storage().data_ptr() for p in [*layers.parameters(), *final.parameters()]}
held |= {x.untyped_storage().data_ptr(), y.untyped_storage().data_ptr()}
kept = {}


def pack(t):
    ptr = t.untyped_storage().data_ptr()
    if ptr not in held:
        kept[ptr] = t.untyped_storage().nbytes()
    return t


allocated_before = torch.cuda.memory_allocated() if device == "cuda" else None
kept_per_layer, kept_so_far = [], 0
with FlopCounterMode(display=False) as plain, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    h = x
    for i, layer in enumerate(layers):
        h = layer(h)
        kept_per_layer.append({"layer": f"layers.{i}", "bytes": sum(kept.values()) - kept_so_far})
        kept_so_far = sum(kept.values())
    loss = torch.nn.functional.mse_loss(final(h).squeeze(-1), y)
    kept_per_layer.append({"layer": "final and loss", "bytes": sum(kept.values()) - kept_so_far})
    record("kept_per_layer", kept_per_layer)
    kept_for_backward = record("kept_for_backward", sum(kept.values()))
    if allocated_before is not None:
        allocated_by_forward = torch.cuda.memory_allocated() - allocated_before  # -> allocated_by_forward
    bytes_per_float32 = record("bytes_per_float32", 4)
    activation_bytes_per_layer = record("activation_bytes_per_layer", B * D * bytes_per_float32)
    formula_kept_for_backward = record("formula_kept_for_backward", (num_layers * B * D + B) * bytes_per_float32)
    assert kept_for_backward == formula_kept_for_backward  # -> kept_as_formula
    loss.backward()
plain_matmul_flops = record("plain_matmul_flops", plain.get_total_flops())
plain_grads = [p.grad.clone() for p in [*layers.parameters(), *final.parameters()]]

# Checkpointing: torch.utils.checkpoint keeps each segment's input, runs the last segment normally
# and recomputes the others during backward, as the Rust does by hand.
segment_layers = record("segment_layers", 4)
num_segments = num_layers // segment_layers
for p in [*layers.parameters(), *final.parameters()]:
    p.grad = None  # zero_grad(set_to_none=True): free the gradients, not just zero them
with FlopCounterMode(display=False) as checkpointed:
    h = checkpoint_sequential(torch.nn.Sequential(*layers), num_segments, x, use_reentrant=False)
    torch.nn.functional.mse_loss(final(h).squeeze(-1), y).backward()
# PyTorch's non-reentrant checkpoint stops recomputing a segment as soon as it has every tensor
# backward saved, so it skips each recomputed segment's last layer: the Rust recomputes whole
# segments, so these two differ from the run's.
checkpoint_matmul_flops = checkpointed.get_total_flops()  # -> checkpoint_matmul_flops
recomputed = checkpoint_matmul_flops - plain_matmul_flops  # -> recomputed_matmul_flops
assert recomputed == 2 * B * D * D * (num_segments - 1) * (segment_layers - 1)
# The Rust reads the peak from its graph, segment by segment; on a GPU,
# torch.cuda.max_memory_allocated() shows it.  # -> checkpoint_peak_kept
record("checkpoint_boundaries", num_segments - 1)
record("formula_checkpoint_peak", ((num_segments - 1 + segment_layers) * B * D + B) * bytes_per_float32)
record("formula_recomputed_flops", 2 * B * D * D * (num_layers - segment_layers))
recomputed_fraction = recomputed / plain_matmul_flops  # -> recomputed_fraction
hfu_over_mfu = checkpoint_matmul_flops / plain_matmul_flops  # -> hfu_over_mfu (HFU counts recomputation)
same_gradients = all(torch.equal(a, p.grad) for a, p in zip(plain_grads, [*layers.parameters(), *final.parameters()]))
record("same_gradients", same_gradients)
