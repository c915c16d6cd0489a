"""Which dataset a checkpoint belongs to (the tensors themselves: ``spikeport.train.data.split_tensors``)."""
from __future__ import annotations


def dataset_of(ckpt: dict, override: str | None = None) -> str:
    """The dataset a checkpoint was trained on (its train config), unless the user names one."""
    if override:
        return override
    name = (ckpt.get("train_config") or {}).get("dataset")
    if name:
        return name
    size = (ckpt.get("model_config") or {}).get("img_size")
    return {8: "digits", 32: "cifar10", 224: "imagenet"}.get(size, "digits")

