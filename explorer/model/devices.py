"""Devices a model can run on: the CPU, a real GPU, or a simulated GPU of a named profile.

Plain data and a probe of the NVIDIA driver (no CUDA, no TensorFlow), so the page and the command
line can offer and check a device before any worker starts.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

from ..errors import SpecError
from .gpu_profiles import every_name

DEVICES = {
    "cpu": "The machine's CPU (x86-64 here; oneDNN decides many fusions).",
    "gpu": "A real CUDA GPU visible to TensorFlow.",
    "gpu-sim": "A simulated GPU: Grappler's real GPU decisions on a virtual device (no run, no timing). "
               "Write gpu-sim:PROFILE to pick a GPU.",
}


@dataclass(frozen=True)
class Device:
    """A device as one value: its kind ("cpu", "gpu" or "gpu-sim") and, for a simulated GPU, its profile. Written
    as text ``kind[:profile]`` (a Config's device, a link's ``device=``); ``parse`` is where that text is read."""

    kind: str = "cpu"
    profile: str | None = None

    @staticmethod
    def parse(text) -> "Device":
        """The device a text names, checked (a simulated GPU without a profile gets DEFAULT_PROFILE)."""
        if not isinstance(text, str):
            raise SpecError("device", f"expected a device name, got {text!r}")
        kind, _, profile = text.partition(":")
        if kind not in DEVICES or (profile and kind != "gpu-sim"):
            raise SpecError("device", f"unknown device {text!r}; choose cpu, gpu or gpu-sim[:PROFILE]")
        if kind != "gpu-sim":
            return Device(kind)
        profile = profile or DEFAULT_PROFILE
        if profile not in GPU_PROFILES:
            raise SpecError("device", f"unknown GPU profile {profile!r}; choose one of {', '.join(GPU_PROFILES)}")
        return Device(kind, profile)

    @staticmethod
    def of(text: str | None) -> "Device":
        """The device of a text already checked (a Config's, a result's), read without checking it again."""
        kind, _, profile = (text or "cpu").partition(":")
        return Device(kind, profile or None)

    @property
    def simulated(self) -> bool:
        return self.kind == "gpu-sim"

    def __str__(self) -> str:
        return f"{self.kind}:{self.profile}" if self.profile else self.kind


def is_simulated(device: str) -> bool:
    return Device.of(device).simulated


# What a simulated GPU cannot do, and why: one set of words for the engine (which refuses before any
# process starts), the worker (which refuses a request that reaches it anyway) and the matrix.
NOTHING_TO_TIME = "a simulated GPU runs nothing, so there is nothing to time"
SIMULATED_REFUSALS = {
    "bench": f"{NOTHING_TO_TIME}; benchmark on the CPU, or on a real GPU",
    "xla": "a simulated GPU has no XLA compiler behind it: XLA's GPU fusions need a real GPU; choose the CPU to "
           "see XLA's CPU fusions",
    "import": "the simulated GPU builds presets and op chains only; run an imported model on the CPU (or a real GPU)",
}


def refuse_simulated(device: str, what: str) -> None:
    """SpecError("device", why) when ``device`` is a simulated GPU, which cannot do ``what``
    (a key of SIMULATED_REFUSALS: "bench", "xla", "import")."""
    if is_simulated(device):
        raise SpecError("device", SIMULATED_REFUSALS.get(what, f"a simulated GPU cannot show {what}"))


# The profiles (model.gpu_profiles), by the GPUs' names and by the three former names kept as aliases.
# ``compute_capability`` is what TensorFlow puts in DeviceProperties.environment["architecture"] for a
# real GPU; num_sms is the number of SMs, as TensorFlow reports it.
GPU_PROFILES: dict[str, dict] = every_name()
DEFAULT_PROFILE = "ampere"  # the A100 (a100), by the name links and lessons were written with


# Where the NVIDIA kernel driver shows its GPUs; read without CUDA, so without starting TensorFlow.
NVIDIA_DRIVER_GPUS = "/proc/driver/nvidia/gpus"

INSTALL_CUDA = 'pip install "tensorflow[and-cuda]==2.21.0" (in the .venv), then restart the explorer'


def nvidia_gpus_present() -> bool:
    """Whether the NVIDIA driver shows a GPU (TensorFlow may still see none without CUDA's libraries)."""
    return bool(os.path.isdir(NVIDIA_DRIVER_GPUS) and os.listdir(NVIDIA_DRIVER_GPUS)) or bool(glob.glob("/dev/nvidia[0-9]*"))


def no_gpu_words(driver_present: bool) -> str:
    """Why TensorFlow sees no GPU, and what to do about it."""
    if driver_present:
        return ("An NVIDIA GPU is on this machine but TensorFlow sees none: it needs the CUDA libraries. "
                f"Install them with {INSTALL_CUDA}.")
    return "This machine shows no NVIDIA GPU (no GPU device from an NVIDIA driver)."
