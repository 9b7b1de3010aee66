# Mixed-precision training: float32, pure bfloat16, and bfloat16 compute on float32 master
# weights, trained on the same data from the same start.
import math

import torch
import torch.nn.functional as F
from torch import nn
from cruncher import Cruncher  # the custom_model panel's Cruncher: layers of x @ W, then a D×1 head

device = "cuda" if torch.cuda.is_available() else "cpu"


lr = record("lr", 0.01)  # a given: `lecture --set mixed_precision_training.lr=…` changes it
d, num_layers, b, steps = 32, 2, 32, 300
setup = record("setup", {"dim": d, "num_layers": num_layers, "batch_size": b, "lr": lr, "steps": steps,
                         "optimizer": "sgd"})
# Unit-scale targets: true weights ~ N(0, 1/D), so y = x @ true_w ~ N(0, 1).
true_w = torch.randn(d, device=device) / math.sqrt(d)
init_seed, data_seed = 0, 1  # our RNG is not torch's: other weights, other batches, other losses


def run(precision, lr):
    """SGD for `steps` steps; the losses, and the fraction of weights the last update left unchanged."""
    torch.manual_seed(init_seed)  # the same initial weights (rounded to bf16 in the bf16 run)
    model = Cruncher(d, num_layers).to(device)
    if precision == "bf16":
        model = model.to(torch.bfloat16)  # weights, gradients and updates all in bf16
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    data_gen = torch.Generator().manual_seed(data_seed)  # the same batches
    losses = []
    for step in range(steps):
        x = torch.randn(b, d, generator=data_gen).to(device)
        y = x @ true_w
        if precision == "fp32":
            loss = F.mse_loss(model(x), y)
        elif precision == "bf16":
            loss = F.mse_loss(model(x.bfloat16()), y.bfloat16())  # the loss itself in bf16 too
        else:
            # autocast runs each matmul in bf16 (inputs and fp32 weights cast on the fly; the
            # casts are differentiable, so gradients arrive in fp32 on the fp32 master weights);
            # the output goes back to fp32 for the loss, as the Rust's forward_in does. Unlike
            # float16, bfloat16 needs no GradScaler: its exponent range is float32's.
            with torch.autocast(device_type=device, dtype=torch.bfloat16):
                pred_y = model(x)
            loss = F.mse_loss(pred_y.float(), y)
        losses.append(loss.item())
        if step == steps - 1:
            before = [p.detach().clone() for p in model.parameters()]
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    same = sum((p == q).sum().item() for p, q in zip(model.parameters(), before))
    return {"losses": losses, "updates_lost": same / sum(p.numel() for p in model.parameters())}


def tail_mean(losses):  # mean of the last 20 steps: single-batch losses are noisy
    return sum(losses[-20:]) / len(losses[-20:])


fp32 = run("fp32", lr)
losses_fp32 = fp32["losses"]  # -> losses_fp32
final_loss_fp32 = tail_mean(fp32["losses"])  # -> final_loss_fp32
updates_lost_fp32 = fp32["updates_lost"]  # -> updates_lost_fp32
bf16 = run("bf16", lr)
losses_bf16 = bf16["losses"]  # -> losses_bf16
final_loss_bf16 = tail_mean(bf16["losses"])  # -> final_loss_bf16
updates_lost_bf16 = bf16["updates_lost"]  # -> updates_lost_bf16
mixed = run("mixed", lr)
losses_mixed = mixed["losses"]  # -> losses_mixed
final_loss_mixed = tail_mean(mixed["losses"])  # -> final_loss_mixed
updates_lost_mixed = mixed["updates_lost"]  # -> updates_lost_mixed

# A 5× larger learning rate: updates stay above bf16's spacing for longer.
high_lr = record("high_lr", 5 * lr)
high_lr_results = {}  # -> high_lr_results
for precision in ["fp32", "bf16", "mixed"]:
    r = run(precision, high_lr)
    high_lr_results[precision] = {"final_loss": tail_mean(r["losses"]), "updates_lost": r["updates_lost"]}
