"""Training ops written in Tegula, each a custom op in the ``tegula``
namespace with its autograd formula: the forward and backward kernels are
Tegula kernels, and torch only allocates and reshapes around them (the mean
of ``cross_entropy`` is a torch reduction of the op's per-row losses).
See docs/torch.md."""

from .add_rms_norm import add_rms_norm
from .attention import attention
from .chain import fused_chain
from .cross_entropy import cross_entropy, cross_entropy_losses
from .layer_norm import layer_norm
from .linear_cross_entropy import linear_cross_entropy
from .rms_norm import rms_norm
from .rotary import rotary_embedding, rotary_qkv, rotary_tables
from .rotary_attention import rotary_attention
from .swiglu import silu_and_mul, swiglu

__all__ = ["add_rms_norm", "attention", "cross_entropy", "cross_entropy_losses", "fused_chain", "layer_norm", "linear_cross_entropy",
           "rms_norm", "rotary_attention", "rotary_embedding", "rotary_qkv", "rotary_tables", "silu_and_mul",
           "swiglu"]
