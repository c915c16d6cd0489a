"""input: pixels as graded spikes, x = clip(round(pixel * 2**frac_bits), +-(2**(bits-1) - 1)) every t
(16 bits by default); with attribute kind='spikes' (netx imports) 0/1 spikes [B, T, ...] per t, with kind='graded'
(netx SDNN imports: the integers a Delta encoder reads) signed integers [B, T, ...] per t, as given."""

from __future__ import annotations

from typing import Any

from spikeport.fixedpoint import Array
from spikeport.ir.graph import Graph, Node
from spikeport.ir.kernels import KERNELS
from spikeport.ir.kernels.base import Attr, Kernel, OpSpec, PlanOptions, Step, between, floor_log2
from spikeport.value_kinds import ANALOG, GRADED, SPIKES

KINDS = (SPIKES, GRADED)  # what a netx import's input may carry instead of pixels


def _step(ctx: Step, node: Node, ins: list[Array], state: dict[str, Any], extra: dict[str, Any]) -> Array:
    a = node.attrs
    if ctx.t < 0:  # the pipeline's fill before the first step: no input yet
        return ctx.ops.zeros((ctx.images.shape[0], *node.shape), like=ctx.images)
    if a.get("kind") in KINDS:  # images are spikes or integers [B, T, ...]
        return ctx.ops.asint(ctx.images[:, ctx.t])
    lim = 2 ** (a["bits"] - 1) - 1
    return ctx.ops.clip(ctx.ops.round(ctx.images * 2.0 ** a["frac_bits"]), -lim, lim)


def _plan(graph: Graph, node: Node, options: PlanOptions) -> None:
    bits = int(options.input_bits)
    node.attrs["bits"] = bits
    node.attrs["frac_bits"] = max(-8, min(24, floor_log2((2 ** (bits - 1) - 1) / options.input_range)))


KERNELS.add(
    "input",
    Kernel(
        OpSpec(
            "input",
            (),
            (0, 0),
            ANALOG,
            (
                Attr("frac_bits", int, True, between(-8, 24)),
                Attr("bits", int, True, between(2, 24)),
                # netx imports: what the file's input is (absent: analog pixels)
                Attr("kind", str, check=lambda v: None if v in KINDS else f"must be {'|'.join(KINDS)}", optional=True),
            ),
            infer_shape=lambda node, shapes: node.shape,
            doc=__doc__ or "",
        ),
        step=_step,
        plan=_plan,
    ),
)
