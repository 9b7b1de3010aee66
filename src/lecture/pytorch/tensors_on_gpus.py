# Tensors start in CPU memory; using a GPU means copying them there, and the allocator counts the cost.
import torch

x = torch.zeros(32, 32)  # on the CPU, like every new tensor
record("x_device", x.device)
record("x_shape", x.shape)
record("elements", x.numel())
record("bytes_per_float", x.element_size())
# What the allocator should count for x's copy and a second tensor like it.
expected_bytes = record("expected_bytes", 2 * x.numel() * x.element_size())

cuda_available = torch.cuda.is_available()  # -> cuda_available
if not cuda_available:
    # torch gives no reason; the Rust reports why it could not load the CUDA driver.
    cuda_unavailable_reason = "torch built without CUDA" if torch.version.cuda is None else "no CUDA driver or device"  # -> cuda_unavailable_reason
else:
    num_gpus = torch.cuda.device_count()  # -> num_gpus
    p = torch.cuda.get_device_properties(0)
    properties = {  # -> properties
        "name": p.name, "total_memory": p.total_memory, "multi_processor_count": p.multi_processor_count,
        "compute_capability": f"{p.major}.{p.minor}", "l2_cache_size": p.L2_cache_size,
    }

    # What the allocator counts (bytes held by live tensors), and what the driver reports free.
    memory_allocated = torch.cuda.memory_allocated()  # -> memory_allocated
    driver_free_before, _ = torch.cuda.mem_get_info()

    y = x.to("cuda")  # move the CPU tensor to the GPU (a copy)
    z = torch.zeros(32, 32, device="cuda")  # create one directly there
    y_device = str(y.device)  # -> y_device  (cuda:0)
    z_device = str(z.device)  # -> z_device
    new_memory_allocated = torch.cuda.memory_allocated()  # -> new_memory_allocated
    memory_used = new_memory_allocated - memory_allocated  # -> memory_used  (2 x 32 x 32 x 4 bytes)
    assert memory_used == expected_bytes  # -> allocator_counts_the_shapes (on a GPU)

    # torch's caching allocator takes 2 MiB segments for small tensors and keeps them after `del`;
    # the Rust uses the driver's stream-ordered pool, so the driver's counts differ.
    driver_free_after, driver_total_memory = torch.cuda.mem_get_info()  # -> driver_total_memory
    driver_memory_used = driver_free_before - driver_free_after  # -> driver_memory_used
    driver_over_allocator = driver_memory_used / memory_used  # -> driver_over_allocator
    stream_ordered_pool = torch.cuda.get_allocator_backend() == "cudaMallocAsync"  # -> stream_ordered_pool  (False by default)
    del y, z
    memory_allocated_after_free = torch.cuda.memory_allocated()  # -> memory_allocated_after_free
