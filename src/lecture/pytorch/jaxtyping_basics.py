# jaxtyping writes dimension names into the type; inside a jaxtyped context the first tensor binds
# each name to a size and every later check must agree.
import torch
from einops import parse_shape
from jaxtyping import Float, jaxtyped

x = torch.ones(2, 2, 1, 3)  # old way: batch seq heads hidden, in a comment
with jaxtyped("context"):
    assert isinstance(x, Float[torch.Tensor, "batch seq heads hidden"])  # new way: checked
    # The sizes it bound (jaxtyping.print_bindings() prints them; parse_shape gives them as a dict).
    dims = record("dims", parse_shape(x, "batch seq heads hidden"))

    # A hidden size that disagrees, and a tensor with too few dimensions, fail the check. Here
    # isinstance just says False; a function decorated @jaxtyped(typechecker=beartype) raises a
    # TypeCheckError, worded otherwise than the Rust message.
    y = torch.ones(2, 2, 1, 4)
    mismatch = not isinstance(y, Float[torch.Tensor, "batch seq heads hidden"])  # -> mismatch_error
    y = torch.ones(2, 2, 3)
    wrong_ndim = not isinstance(y, Float[torch.Tensor, "batch seq heads hidden"])  # -> ndim_error

# Size by name. PyTorch's experimental named tensors (x.size("hidden")) are gone from recent
# releases; the tensor does not carry its names, the pattern does.
hidden = record("hidden", parse_shape(x, "batch seq heads hidden")["hidden"])
