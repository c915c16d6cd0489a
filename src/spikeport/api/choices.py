"""The choices a parameter takes, as types (a type checker refuses a misspelt name; tests/test_api_types.py holds each
equal to the registry it names)."""

from __future__ import annotations

from typing import Literal

Backend = Literal["reference", "reference-torch", "lava", "loihi2"]  # runtime.targets.TARGETS
Attention = Literal["ssa", "lrf_ssa", "lrf_causal", "lrf_dyn"]  # train.model_config.ATTENTIONS
Dataset = Literal["digits", "cifar10", "cifar100", "imagenet"]  # data.images.DATASETS
InputDriveName = Literal["spikes", "bias", "graded"]  # netx.drive.InputDrive: what feeds a netx network
ChipDriveName = Literal["bias", "adapter"]  # runtime.loihi2.drive.ChipDrive: how the hardware plan's input is fed
Drive = Literal["spikes", "bias", "graded", "adapter"]  # either's name: the command line's --input-drive
InputLayout = Literal["spikeport", "slayer", "netx"]  # netx.inputs: the axis order of netx inputs
IntegerInputs = Literal["value_acs", "event_macs"]  # metrics.energy_records.INTEGER_RULES
Precision = Literal["fp32", "fp16", "int32", "int8"]  # metrics.energy_records.PRECISIONS
AttentionForm = Literal["parallel", "recurrent"]  # the attention's GPU form or its token-by-token one
