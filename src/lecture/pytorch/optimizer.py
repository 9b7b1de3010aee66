# One AdaGrad step, and what a training step costs in memory and FLOPs.
import copy

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode
from cruncher import Cruncher  # the custom_model panel's Cruncher: layers of x @ W, then a D×1 head

device = "cuda" if torch.cuda.is_available() else "cpu"


class AdaGrad(torch.optim.Optimizer):
    """g2 += g²; p -= lr · g / √(g2 + eps). (torch.optim.Adagrad adds eps after the square root,
    with eps=1e-10.)"""

    def __init__(self, params, lr=0.01, eps=1e-5):
        super().__init__(params, dict(lr=lr, eps=eps))
        # g2 allocated up front, as the Rust does (the lecture makes it on the first step).
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["g2"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:  # skipped, as in the Rust
                    continue
                g2 = self.state[p]["g2"]
                g2 += p.grad ** 2  # in place: the state keeps this tensor
                p -= group["lr"] * p.grad / torch.sqrt(g2 + group["eps"])


b, d, num_layers = record("batch_size", 2), record("d", 4), record("num_layers", 2)
model = Cruncher(d, num_layers).to(device)
lr = record("lr", 0.01)
optimizer = AdaGrad(model.parameters(), lr=lr)
record("eps", optimizer.defaults["eps"])
state = {name: p.detach().clone() for name, p in model.named_parameters()}  # -> state (before the step)

x = torch.randn(b, d, device=device)
targets = record("targets", [4.0, 5.0])
y = torch.tensor(targets, device=device)
# Count the matmul FLOPs of forward + backward, and keep what autograd saves for backward.
saved = []


def keep(t):  # autograd calls this with each tensor it saves for backward
    saved.append(t)
    return t


with FlopCounterMode(display=False) as step_flops:
    with torch.autograd.graph.saved_tensors_hooks(keep, lambda t: t):
        pred_y = model(x)
        loss = F.mse_loss(pred_y, y)  # -> loss
    loss.backward()
grads = {name: p.grad.clone() for name, p in model.named_parameters()}  # -> grads
with FlopCounterMode(display=False) as optimizer_flops:
    optimizer.step()
state = {name: p.detach().clone() for name, p in model.named_parameters()}  # -> state (after the step)
g2_after = {f"{n}.g2": optimizer.state[p]["g2"].clone() for n, p in model.named_parameters()}  # -> g2_after

# Memory, by the lecture's formula (float32 everywhere).
num_parameters = record("num_parameters", (d * d * num_layers) + d)
num_activations = record("num_activations", b * d * num_layers)
num_gradients = record("num_gradients", num_parameters)
num_optimizer_states = record("num_optimizer_states", num_parameters)
bytes_per_float32 = record("bytes_per_float32", torch.float32.itemsize)
total_memory = record("total_memory", bytes_per_float32 * (num_parameters + num_activations + num_gradients +
                                                            num_optimizer_states))

# Memory actually held. Autograd saves the weights too (they are the parameters, not counted
# again), and mse_loss saves its input and target where the Rust saves their difference: so
# saved_inputs is x and y here (40 bytes), x alone in the Rust (32).
params = {p.data_ptr() for p in model.parameters()}
activations = [t for t in saved if t.data_ptr() not in params | {x.data_ptr(), y.data_ptr()}]
measured_bytes = {  # -> measured_bytes
    "parameters": sum(p.nbytes for p in model.parameters()),
    "gradients": sum(g.nbytes for g in grads.values()),
    "optimizer_state": sum(s["g2"].nbytes for s in optimizer.state.values()),
    "saved_activations": sum(t.nbytes for t in activations),
    "saved_inputs": sum(t.nbytes for t in saved if t.data_ptr() in {x.data_ptr(), y.data_ptr()}),
}
record("measured_total_memory", sum(v for k, v in measured_bytes.items() if k != "saved_inputs"))
assert measured_bytes["parameters"] == num_parameters * bytes_per_float32  # -> parameters_as_formula
assert measured_bytes["gradients"] == num_gradients * bytes_per_float32  # -> gradients_as_formula
assert measured_bytes["optimizer_state"] == num_optimizer_states * bytes_per_float32  # -> optimizer_state_as_formula
saved_for_backward = [(list(t.shape), t.nbytes) for t in saved]  # -> saved_for_backward (weights included)

# Compute: 2 FLOPs per (data point, parameter) forward, 4 backward.
flop_per_parameter_datum = record("flop_per_parameter_datum", 6)
flops = record("flops", flop_per_parameter_datum * b * num_parameters)
record("counted_flops", step_flops.get_total_flops())
# x is data, so backward skips x.grad = h.grad @ W0ᵀ: 2·B·D·D fewer than the formula.
with FlopCounterMode(display=False) as counter:
    F.mse_loss(copy.deepcopy(model)(x.clone().requires_grad_()), y).backward()
counted_flops_x_requires_grad = record("counted_flops_x_requires_grad", counter.get_total_flops())
assert counted_flops_x_requires_grad == flops  # -> counter_meets_formula
# FlopCounterMode counts matmul-like ops only, so it finds 0 in the optimizer step; the Rust
# counts 7 FLOPs per parameter element.
counted_optimizer_flops = optimizer_flops.get_total_flops()  # -> counted_optimizer_flops
# set_to_none=True, the default since PyTorch 2.0 and what the Rust does: each .grad becomes None
# (its memory freed) rather than a tensor of zeros, and the next backward allocates it afresh.
optimizer.zero_grad()
gradient_bytes_after_zero_grad = record("gradient_bytes_after_zero_grad", sum(p.grad.nbytes for p in model.parameters() if p.grad is not None))
assert gradient_bytes_after_zero_grad == 0  # -> zero_grad_frees_gradients
