# Napkin math: days to train a 70B model on 15T tokens on 1024 H100s; the largest model 8 H100s hold with AdamW.
import math
import os

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"

# Training cost: 6 FLOPs per parameter per token (2 forward + 4 backward).
model_parameters = record("model_parameters", 70e9)
num_tokens = record("num_tokens", 15e12)
forward_flop_per_parameter_token = record("forward_flop_per_parameter_token", 2.0)
backward_flop_per_parameter_token = record("backward_flop_per_parameter_token", 4.0)
flop_per_parameter_token = record("flop_per_parameter_token", forward_flop_per_parameter_token + backward_flop_per_parameter_token)
total_flops = record("total_flops", flop_per_parameter_token * model_parameters * num_tokens)

h100_flop_per_sec = record("h100_flop_per_sec", 989.5e12)  # datasheet, bf16 dense (no sparsity)
mfu = record("mfu", 0.5)
num_gpus = record("num_gpus", 1024)
flops_per_day = record("flops_per_day", h100_flop_per_sec * mfu * num_gpus * 60 * 60 * 24)
days = record("days", total_flops / flops_per_day)

# Memory: parameters, gradients and AdamW's two moments, all float32 (the 2025 answer).
memory_num_gpus = record("memory_num_gpus", 8)
h100_bytes = record("h100_bytes", 80e9)
bytes_per_float32 = record("bytes_per_float32", torch.tensor(0.0, dtype=torch.float32).element_size())
bytes_per_parameter = record("bytes_per_parameter", bytes_per_float32 + bytes_per_float32 + (bytes_per_float32 + bytes_per_float32))
num_parameters = record("num_parameters", (memory_num_gpus * h100_bytes) / bytes_per_parameter)
# The 2026 answer: bf16 parameters and gradients, AdamW's moments still float32.
param_grad_bytes = record("param_grad_bytes", torch.tensor(0.0, dtype=torch.bfloat16).element_size())
mixed_bytes_per_parameter = record("mixed_bytes_per_parameter", param_grad_bytes + param_grad_bytes + (bytes_per_float32 + bytes_per_float32))
record("mixed_num_parameters", math.floor((memory_num_gpus * h100_bytes) / mixed_bytes_per_parameter))
# Turned round: the first question's model needs this much memory for its training state.
training_state_bytes = record("training_state_bytes", bytes_per_parameter * model_parameters)
record("gpus_for_training_state", math.ceil(training_state_bytes / h100_bytes))

# The same question for this machine's device (activations still ignored); on a CPU, its RAM.
if device == "cuda":
    this_device_bytes = torch.cuda.get_device_properties(0).total_memory  # -> this_device_bytes
else:
    this_device_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")  # -> this_device_bytes
this_device_num_parameters = this_device_bytes / bytes_per_parameter  # -> this_device_num_parameters
