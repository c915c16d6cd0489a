"""The official Spikformer recipe's augmentations with PIL and torch only (no torchvision, no timm).

Per sample (in the DataLoader): RandomResizedCrop (image folders), horizontal flip, the official code's
*restricted* RandAugment (cifar10/aa_snn.py: one op per image from {Equalize, Rotate, ShearX,
TranslateXRel, TranslateYRel}, each applied with p = 0.5; 'rand-m9-n1-mstd0.4-inc1'), then ToTensor,
Normalize and random erasing ('const' mode: the erased box is 0 after normalization). Per batch (in the
loop): mixup / cutmix with label smoothing folded into the soft targets (timm's ``Mixup``, 'batch' mode).

All randomness comes from Python's ``random`` module (per sample; seeded per epoch by the loop and per
worker by the DataLoader) and a ``random.Random`` owned by the loop (per batch), so runs are reproducible from the seed.
The official ImageNet run used timm's full RandAugment op list; only the restricted subset is implemented.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
import torch

from spikeport.data.images import image_chw, resize_center_crop
from spikeport.errors import ConfigError, unknown_choice

if TYPE_CHECKING:
    from PIL import Image

RAND_OPS = ("Equalize", "Rotate", "ShearX", "TranslateXRel", "TranslateYRel")


class RandAugmentSpec(TypedDict):
    magnitude: float
    num_ops: int
    magnitude_std: float


def parse_randaugment(spec: str) -> RandAugmentSpec:
    """'rand-m9-n1-mstd0.4-inc1' -> {magnitude 9, num_ops 1, magnitude_std 0.4} (timm's grammar)."""
    parts = spec.split("-")
    if parts[0] != "rand":
        raise ConfigError(f"randaugment {spec!r}: expected 'rand-m<M>[-n<N>][-mstd<S>][-inc<0|1>]'")
    out = RandAugmentSpec(magnitude=10.0, num_ops=2, magnitude_std=0.0)
    for part in parts[1:]:
        m = re.fullmatch(r"(mstd|inc|m|n)(\d+(?:\.\d+)?)", part)
        if not m:
            raise ConfigError(f"randaugment {spec!r}: unknown section {part!r}; expected m, n, mstd or inc")
        key, val = m.groups()
        if key == "m":
            out["magnitude"] = float(val)
        elif key == "n":
            out["num_ops"] = int(float(val))
        elif key == "mstd":
            out["magnitude_std"] = float(val)
        # 'inc': the increasing-severity variants; for the five restricted ops they are the same ops
    return out


def float_pair(value: object, name: str) -> tuple[float, float]:
    """``value`` (a tuple, or a YAML list) as two floats; a ConfigError naming the field if it is not two numbers."""
    if not isinstance(value, (list, tuple)) or len(value) != 2:
        raise ConfigError(f"{name} = {value!r}: expected two numbers")
    return float(value[0]), float(value[1])


@dataclass
class AugmentConfig:
    hflip: float = 0.0  # probability of a horizontal flip (official: 0.5)
    randaugment: str | None = None  # timm-style spec, e.g. "rand-m9-n1-mstd0.4-inc1" (official CIFAR)
    reprob: float = 0.0  # random-erasing probability (official: 0.25)
    shift: int = 0  # random translation by up to this many pixels (the 'light' profile)
    crop_scale: tuple[float, float] = (1.0, 1.0)  # RandomResizedCrop area range (image folders; ImageNet 0.08..1)
    mixup: float = 0.0  # mixup Beta(alpha, alpha); 0 = off (official CIFAR: 0.5)
    cutmix: float = 0.0  # cutmix alpha; 0 = off (official ImageNet: 1.0)
    mixup_prob: float = 1.0  # probability of mixing a batch at all
    mixup_switch_prob: float = 0.5  # with both mixup and cutmix on: probability of cutmix
    mixup_off_epoch: int = 0  # epoch from which mixing stops (official CIFAR: 200); 0 = never

    def __post_init__(self) -> None:
        self.crop_scale = float_pair(self.crop_scale, "augment.crop_scale")
        for name in ("hflip", "reprob", "mixup_prob", "mixup_switch_prob"):
            if not 0.0 <= float(getattr(self, name)) <= 1.0:
                raise ConfigError(f"augment.{name} = {getattr(self, name)}: expected a probability in [0, 1]")
        if self.randaugment:
            parse_randaugment(self.randaugment)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["crop_scale"] = list(self.crop_scale)
        return d


AUGMENT_PROFILES = {
    "none": AugmentConfig(),
    "light": AugmentConfig(shift=1),
    # cifar10/cifar10.yml of the official code
    "cifar": AugmentConfig(
        hflip=0.5, randaugment="rand-m9-n1-mstd0.4-inc1", reprob=0.25, mixup=0.5, mixup_prob=1.0, mixup_off_epoch=200
    ),
    # imagenet/imagenet.yml (with the restricted op list, see the module docstring)
    "imagenet": AugmentConfig(
        hflip=0.5, randaugment="rand-m9-mstd0.5-inc1", reprob=0.25, mixup=0.8, cutmix=1.0, crop_scale=(0.08, 1.0)
    ),
}


def augment_config(spec: str | dict | AugmentConfig | None) -> AugmentConfig:
    """A profile name, or a dict ``{profile: NAME, <field>: value, ...}`` of overrides, or a config."""
    if isinstance(spec, AugmentConfig):
        return spec
    if spec is None or isinstance(spec, str):
        name = spec or "none"
        if name not in AUGMENT_PROFILES:
            raise unknown_choice("augment profile", name, AUGMENT_PROFILES)
        return AugmentConfig(**AUGMENT_PROFILES[name].to_dict())
    if not isinstance(spec, dict):
        raise ConfigError(f"augment: expected a profile name or a mapping, got {type(spec).__name__}")
    spec = dict(spec)
    base = augment_config(spec.pop("profile", "none")).to_dict()
    known = {f.name for f in fields(AugmentConfig)}
    unknown = sorted(set(spec) - known)
    if unknown:
        raise ConfigError(f"unknown augment keys {unknown}; valid keys: profile, {', '.join(sorted(known))}")
    base.update(spec)
    return AugmentConfig(**base)


# ------------------------------------------------------------------------------------ RandAugment (PIL)
class RandAugment:
    """The official restricted RandAugment: ``num_ops`` ops drawn with replacement, each applied with
    p = 0.5 at magnitude ~ N(m, mstd) clipped to [0, 10] (timm's AugmentOp)."""

    def __init__(self, spec: str, fill: tuple[int, ...] | int, interpolation: str = "bicubic"):
        from PIL import Image

        self.spec, self.fill = spec, fill
        self.resample = {"bicubic": Image.Resampling.BICUBIC, "bilinear": Image.Resampling.BILINEAR}[interpolation]
        parsed = parse_randaugment(spec)
        self.num_ops, self.magnitude = parsed["num_ops"], parsed["magnitude"]
        self.magnitude_std = parsed["magnitude_std"]

    def __call__(self, img: Image.Image) -> Image.Image:
        for _ in range(self.num_ops):
            op = random.choice(RAND_OPS)
            if random.random() > 0.5:
                continue
            mag = self.magnitude
            if self.magnitude_std > 0:
                mag = random.gauss(mag, self.magnitude_std)
            img = self.apply(img, op, max(0.0, min(10.0, mag)) / 10.0)
        return img

    def apply(self, img: Image.Image, op: str, level: float) -> Image.Image:
        from PIL import Image, ImageOps

        sign = -1.0 if random.random() > 0.5 else 1.0
        kw: dict[str, Any] = dict(resample=self.resample, fillcolor=self.fill)
        if op == "Equalize":
            return ImageOps.equalize(img)
        if op == "Rotate":
            return img.rotate(sign * level * 30.0, **kw)
        if op == "ShearX":
            return img.transform(img.size, Image.Transform.AFFINE, (1, sign * level * 0.3, 0, 0, 1, 0), **kw)
        dx = sign * level * 0.45 * (img.size[0] if op == "TranslateXRel" else img.size[1])
        coeffs = (1, 0, dx, 0, 1, 0) if op == "TranslateXRel" else (1, 0, 0, 0, 1, dx)
        return img.transform(img.size, Image.Transform.AFFINE, coeffs, **kw)


# ------------------------------------------------------------------------------ per-sample transforms
def random_resized_crop(
    img: Image.Image, size: int, scale: tuple[float, float], ratio: tuple[float, float] = (3 / 4, 4 / 3)
) -> Image.Image:
    """timm's RandomResizedCropAndInterpolation (bicubic), 10 attempts then a central crop."""
    from PIL import Image

    w, h = img.size
    area = w * h
    for _ in range(10):
        target = random.uniform(*scale) * area
        aspect = math.exp(random.uniform(math.log(ratio[0]), math.log(ratio[1])))
        cw, ch = int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))
        if 0 < cw <= w and 0 < ch <= h:
            left, top = random.randint(0, w - cw), random.randint(0, h - ch)
            return img.resize((size, size), Image.Resampling.BICUBIC, box=(left, top, left + cw, top + ch))
    side = min(w, h)
    left, top = (w - side) // 2, (h - side) // 2
    return img.resize((size, size), Image.Resampling.BICUBIC, box=(left, top, left + side, top + side))


def random_erase(x: torch.Tensor, p: float) -> torch.Tensor:
    """timm RandomErasing, 'const' mode (erased box = 0 after normalization), area 2%..1/3, aspect 0.3..3.3."""
    if p <= 0 or random.random() > p:
        return x
    _, h, w = x.shape
    for _ in range(10):
        target = random.uniform(0.02, 1 / 3) * h * w
        aspect = math.exp(random.uniform(math.log(0.3), math.log(1 / 0.3)))
        eh, ew = int(round(math.sqrt(target * aspect))), int(round(math.sqrt(target / aspect)))
        if ew < w and eh < h:
            top, left = random.randint(0, h - eh), random.randint(0, w - ew)
            x = x.clone()
            x[:, top : top + eh, left : left + ew] = 0.0
            break
    return x


def random_shift(x: torch.Tensor, pixels: int, fill: torch.Tensor) -> torch.Tensor:
    """Translate [C, H, W] by up to ``pixels`` in each direction; uncovered pixels take ``fill``."""
    if pixels <= 0:
        return x
    dy, dx = random.randint(-pixels, pixels), random.randint(-pixels, pixels)
    _, h, w = x.shape
    out = fill.expand_as(x).clone()
    out[:, max(dy, 0) : h + min(dy, 0), max(dx, 0) : w + min(dx, 0)] = x[
        :, max(-dy, 0) : h + min(-dy, 0), max(-dx, 0) : w + min(-dx, 0)
    ]
    return out


class SampleTransform:
    """One image -> normalized float tensor [C, H, W]; ``kind`` is the input form: 'tensor' (float CHW in
    [0, 1], digits), 'pil' (uint8 HWC arrays, CIFAR) or 'pil-crop' (PIL images of any size, ImageNet)."""

    def __init__(
        self, cfg: AugmentConfig | None, kind: str, mean: Sequence[float], std: Sequence[float], size: int, train: bool
    ) -> None:
        self.cfg, self.kind, self.size, self.train = cfg or AugmentConfig(), kind, size, train
        self.mean = torch.tensor(mean, dtype=torch.float32)[:, None, None]
        self.std = torch.tensor(std, dtype=torch.float32)[:, None, None]
        fill = tuple(min(255, round(255 * m)) for m in mean)
        self.randaug = (
            RandAugment(self.cfg.randaugment, fill if len(fill) > 1 else fill[0])
            if train and self.cfg.randaugment
            else None
        )

    def __call__(self, img: Any) -> torch.Tensor:  # a PIL image, a uint8 HWC or float CHW array
        from PIL import Image

        cfg = self.cfg
        if self.kind == "pil-crop":
            img = (
                random_resized_crop(img, self.size, cfg.crop_scale)
                if self.train
                else resize_center_crop(img, self.size)
            )
        elif self.kind == "pil":
            img = Image.fromarray(np.asarray(img))
        elif self.randaug is not None:  # float CHW in [0, 1] -> PIL only when RandAugment needs it
            arr = np.asarray(img)
            img = Image.fromarray(
                np.round(arr[0] * 255).astype(np.uint8)
                if arr.shape[0] == 1
                else np.round(arr.transpose(1, 2, 0) * 255).astype(np.uint8)
            )
        if self.train and cfg.hflip and random.random() < cfg.hflip:
            img = img.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if isinstance(img, Image.Image) else np.flip(img, -1)
        if self.randaug is not None:
            img = self.randaug(img)
        x = to_tensor(img)
        x = (x - self.mean) / self.std
        if self.train:
            x = random_shift(x, cfg.shift, -self.mean / self.std)
            x = random_erase(x, cfg.reprob)
        return x


def to_tensor(img: Any) -> torch.Tensor:
    """PIL image (uint8) -> float [C, H, W] in [0, 1]; a float CHW array passes through."""
    return torch.from_numpy(image_chw(img))


def build_train_transform(
    cfg: AugmentConfig, kind: str, mean: Sequence[float], std: Sequence[float], size: int
) -> SampleTransform:
    return SampleTransform(cfg, kind, mean, std, size, train=True)


def build_eval_transform(kind: str, mean: Sequence[float], std: Sequence[float], size: int) -> SampleTransform:
    return SampleTransform(None, kind, mean, std, size, train=False)


# ------------------------------------------------------------------------------------ per batch: mixup
class Mixup:
    """timm's ``Mixup`` in 'batch' mode: one lambda per batch, the batch mixed with its reverse; targets
    are label-smoothed one-hot vectors mixed with the same lambda (also when mixing is off)."""

    def __init__(self, cfg: AugmentConfig, num_classes: int, smoothing: float):
        self.cfg, self.num_classes, self.smoothing = cfg, num_classes, smoothing

    @property
    def active(self) -> bool:
        return bool(self.cfg.mixup > 0 or self.cfg.cutmix > 0)

    def targets(self, y: torch.Tensor, lam: float) -> torch.Tensor:
        off = self.smoothing / self.num_classes
        one_hot = torch.full((len(y), self.num_classes), off, device=y.device)
        one_hot.scatter_(1, y[:, None], 1.0 - self.smoothing + off)
        return one_hot * lam + one_hot.flip(0) * (1.0 - lam)

    def __call__(
        self, x: torch.Tensor, y: torch.Tensor, epoch: int, rng: random.Random
    ) -> tuple[torch.Tensor, torch.Tensor]:
        cfg, lam, use_cutmix = self.cfg, 1.0, False
        enabled = self.active and (not cfg.mixup_off_epoch or epoch < cfg.mixup_off_epoch)
        if enabled and rng.random() < cfg.mixup_prob:
            use_cutmix = cfg.cutmix > 0 and (cfg.mixup <= 0 or rng.random() < cfg.mixup_switch_prob)
            alpha = cfg.cutmix if use_cutmix else cfg.mixup
            lam = rng.betavariate(alpha, alpha)
        if lam < 1.0:
            if use_cutmix:
                x, lam = _cutmix(x, lam, rng)
            else:
                x = x * lam + x.flip(0) * (1.0 - lam)
        return x, self.targets(y, lam)


def _cutmix(x: torch.Tensor, lam: float, rng: random.Random) -> tuple[torch.Tensor, float]:
    """Paste a box of the reversed batch; lambda corrected to the pasted area (timm's rand_bbox)."""
    h, w = x.shape[-2:]
    cut = math.sqrt(1.0 - lam)
    ch, cw = int(h * cut), int(w * cut)
    cy, cx = rng.randrange(h), rng.randrange(w)
    top, bottom = max(cy - ch // 2, 0), min(cy + ch // 2, h)
    left, right = max(cx - cw // 2, 0), min(cx + cw // 2, w)
    x = x.clone()
    x[..., top:bottom, left:right] = x.flip(0)[..., top:bottom, left:right]
    return x, 1.0 - (bottom - top) * (right - left) / float(h * w)
