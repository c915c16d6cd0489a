"""What the counts, the memory model and the lowering comparison read of a model: one structural record, torch-free.

``train.model_config.ModelConfig`` is one (it is built and validated on the training side, which imports torch); the
modules below train (counting, metrics) name the fields they read here instead of importing it, so a deploy box
counts and prices a model without torch.
"""

from __future__ import annotations

from typing import Protocol


class AttentionCore(Protocol):
    """What an attention variant is made of (``train.model_config.AttentionSpec``)."""

    @property
    def core(self) -> str: ...  # the token mixing's name in counting.CORES
    @property
    def lrf(self) -> bool: ...  # the local receptive field term (two depthwise dilated convs)
    @property
    def dendrites(self) -> int: ...  # k of the dendritic core, 0 for the others
    @property
    def causal(self) -> bool: ...


class ModelShape(Protocol):
    """A Spikformer (or its ViT baseline) by its shapes: what counting, metrics.memory and metrics.lowering_costs
    read of it."""

    @property
    def arch(self) -> str: ...  # spikformer | vit
    @property
    def T(self) -> int: ...  # time steps a sample
    @property
    def img_size(self) -> int: ...
    @property
    def in_channels(self) -> int: ...
    @property
    def num_classes(self) -> int: ...
    @property
    def embed_dim(self) -> int: ...  # D
    @property
    def depth(self) -> int: ...  # encoder blocks
    @property
    def num_heads(self) -> int: ...
    @property
    def num_dendrites(self) -> int: ...  # k of the dendritic core
    @property
    def mlp_ratio(self) -> float: ...
    @property
    def mlp(self) -> bool: ...
    @property
    def pool_stages(self) -> tuple[int, ...]: ...
    @property
    def layout(self) -> str: ...
    @property
    def attention(self) -> str: ...
    @property
    def lrf_dilations(self) -> tuple[int, ...]: ...
    @property
    def attention_spec(self) -> AttentionCore: ...
    @property
    def grid(self) -> tuple[int, int]: ...  # the token grid
    @property
    def num_tokens(self) -> int: ...
