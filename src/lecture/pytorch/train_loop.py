# The training loop: a linear model trained on data from a known linear function, with SGD and
# AdaGrad at several learning rates.

import torch
import torch.nn.functional as F
from torch import nn
from cruncher import Cruncher  # the custom_model panel's Cruncher: layers of x @ W, then a D×1 head

device = "cuda" if torch.cuda.is_available() else "cpu"


d = record("d", 16)
true_w = torch.arange(d, dtype=torch.float32, device=device)  # weights 0, 1, …, D−1
b, num_layers, num_train_steps = record("batch_size", 4), 0, record("num_train_steps", 10)
# The same initial weights and the same batches for every run: only the optimizer differs.
init_seed, data_seed = 0, 1  # the Rust forks two streams from the run's seed; its draws differ


def train(optimizer_class, lr, num_train_steps):
    """The lecture's train, honouring lr: a fresh batch each step, forward, backward, step."""
    torch.manual_seed(init_seed)
    model = Cruncher(d, num_layers).to(device)
    optimizer = optimizer_class(model.parameters(), lr=lr)
    data_gen = torch.Generator().manual_seed(data_seed)
    losses = []
    for step in range(num_train_steps):
        x = torch.randn(b, d, generator=data_gen).to(device)
        y = x @ true_w
        loss = F.mse_loss(model(x), y)  # -> loss (each step's loss before its update)
        losses.append(loss.item())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()  # set_to_none=True by default
    return losses, model


losses_lr_0_01, _ = train(torch.optim.SGD, 0.01, num_train_steps)  # -> losses_lr_0_01
losses_lr_0_1, _ = train(torch.optim.SGD, 0.1, num_train_steps)  # -> losses_lr_0_1

# Longer runs: convergence, and SGD against AdaGrad. torch.optim.Adagrad divides by √g2 + eps
# (eps=1e-10); the lecture's and the Rust's AdaGrad by √(g2 + 1e-5).
long = record("long_num_train_steps", 300)
longer_runs = {}  # -> longer_runs
for name, optimizer_class, lr in [
    ("sgd_lr_0_01", torch.optim.SGD, 0.01),
    ("sgd_lr_0_1", torch.optim.SGD, 0.1),
    ("adagrad_lr_0_1", torch.optim.Adagrad, 0.1),
    ("adagrad_lr_1", torch.optim.Adagrad, 1.0),
]:
    losses, model = train(optimizer_class, lr, long)
    err = (model.final.weight.squeeze(-1) - true_w).abs().max().item()
    longer_runs[name] = {"optimizer": "sgd" if optimizer_class is torch.optim.SGD else "adagrad", "lr": lr,
                         "losses": losses, "final_loss": losses[-1], "max_weight_error": err}
