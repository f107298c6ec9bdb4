"""Environment flags, Grappler switches, devices, and the configuration they make together.

A *configuration* is what decides which worker process runs a model: the device and the
environment flags (several are read once per process, so each distinct set needs its own
process, started with the environment in place before TensorFlow is imported), plus the Grappler
switches (set per call inside the worker).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field

from ..errors import SpecError
from . import json_text
from .devices import Device
from .schemas import CONFIG

# "Leave TensorFlow's default" for an env flag or a Grappler switch: one value (a sidebar choice, a link's env flag,
# a matrix axis's value). "default", how the page spelled it before, is still read where it was (a Config's switch).
UNSET = "unset"
FORMER_UNSET = "default"
UNSET_SPELLINGS = (UNSET, FORMER_UNSET)
UNSET_WORDS = {"env": "unset", "grappler": "default"}  # how a comparison says it (compare's "remapping: default → off")


@dataclass(frozen=True)
class EnvFlag:
    name: str
    values: tuple[str, ...]  # accepted values; "" is never one of them (unset = leave TF's default)
    device: str  # where it matters: "cpu", "gpu" or "any"
    meaning: str  # one line for a learner
    default_note: str  # what TF does when the variable is unset


ENV_FLAGS: dict[str, EnvFlag] = {
    f.name: f
    for f in (
        EnvFlag(
            "TF_ENABLE_ONEDNN_OPTS", ("0", "1"), "cpu",
            "Use oneDNN (Intel MKL-DNN) kernels and fusions on x86 CPUs; unlocks the GELU, "
            "Swish, LayerNorm ... fusions and renames fused ops to _MklNative*.",
            "on for x86 Linux CPUs with AVX-512 VNNI/BF16 or AMX, off otherwise",
        ),
        EnvFlag(
            "TF_USE_CUBLASLT", ("0", "1"), "gpu",
            "Let the remapper fuse MatMul+BiasAdd(+Relu/GELU) into one cuBLASLt call on GPU.",
            "off",
        ),
        EnvFlag(
            "TF_CUDNN_USE_RUNTIME_FUSION", ("0", "1"), "gpu",
            "Allow cuDNN runtime-compiled fusions (Conv/MatMul with Relu6, Elu, LeakyRelu, "
            "exact GELU) on GPUs of compute capability 8.0 and newer, in float16.",
            "off",
        ),
        EnvFlag(
            "TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT", ("0", "1"), "gpu",
            "Allow the fused BatchNorm(+Add)+Relu and its gradient in training mode on GPU "
            "(float16, NHWC, channels a multiple of 4).",
            "off",
        ),
        EnvFlag(
            "TF_MATMUL_AUTOTUNE_ENABLE", ("0", "1"), "gpu",
            "Autotune the algorithm of fused cuBLASLt/cuDNN matmuls on GPU.",
            "off",
        ),
        EnvFlag(
            "TF_CUDNN_USE_FRONTEND", ("0", "1"), "gpu",
            "Use the cuDNN frontend API, which runtime fusion needs.",
            "on when built with cuDNN 8.2 or newer",
        ),
        EnvFlag(
            "TF_CUDNN_USE_AUTOTUNE", ("0", "1"), "gpu",
            "Autotune cuDNN convolution algorithms, fused ones included.",
            "on",
        ),
        EnvFlag(
            "TF_XLA_FLAGS",
            ("--tf_xla_auto_jit=2", "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"),
            "any",
            "XLA auto-clustering: with it on, the remapper leaves GPU fusions (and with "
            "`--tf_xla_cpu_global_jit`, CPU fusions) to XLA.",
            "XLA auto-clustering off",
        ),
    )
}


@dataclass(frozen=True)
class GrapplerSwitch:
    name: str  # key of tf.config.optimizer.set_experimental_options
    meaning: str


# Passes in the order the meta-optimizer runs them by default.
GRAPPLER_SWITCHES: dict[str, GrapplerSwitch] = {
    s.name: s
    for s in (
        GrapplerSwitch("debug_stripper", "Remove debug ops (Assert, Print, CheckNumerics)."),
        GrapplerSwitch("disable_model_pruning", "When on, keep nodes that do not affect the outputs (on = pruning disabled)."),
        GrapplerSwitch("function_optimization", "Inline and specialise function calls."),
        GrapplerSwitch("constant_folding", "Evaluate sub-graphs whose inputs are all constant; turns x/c into x*(1/c)."),
        GrapplerSwitch("shape_optimization", "Simplify shape computations."),
        GrapplerSwitch("arithmetic_optimization", "Algebraic rewrites; on CPU turns Pow(x, 3) into Square(x)*x."),
        GrapplerSwitch("layout_optimizer", "Change data layout (NHWC/NCHW) to suit the device."),
        GrapplerSwitch("remapping", "The remapper: replace op chains with fused ops such as _FusedMatMul."),
        GrapplerSwitch("loop_optimization", "Hoist loop invariants, remove dead branches."),
        GrapplerSwitch("dependency_optimization", "Remove redundant control dependencies and identity nodes."),
        GrapplerSwitch("memory_optimization", "Swap or recompute to save memory (off by default)."),
        GrapplerSwitch("pin_to_host_optimization", "Keep small integer ops on the host."),
        GrapplerSwitch("implementation_selector", "Pick a function implementation per device."),
        GrapplerSwitch("auto_mixed_precision", "Cast eligible ops to float16 (GPU; off by default)."),
        GrapplerSwitch("scoped_allocator_optimization", "Merge allocations of collective ops."),
        GrapplerSwitch("disable_meta_optimizer", "When on, Grappler does nothing at all."),
    )
}

SWITCH_VALUES = ("on", "off")

def parse_assignment(text: str, what: str) -> tuple[str, str]:
    """Split 'NAME=VALUE' as typed on a command line; ``what`` names the option for messages."""
    if "=" not in text:
        raise SpecError(what, f"expected NAME=VALUE, got {text!r}")
    name, value = text.split("=", 1)
    name = name.strip()
    if not name:
        raise SpecError(what, f"missing NAME in {text!r}")
    return name, value.strip()


def parse_env_assignments(text: str, what: str) -> dict[str, str]:
    """'NAME=VALUE NAME=VALUE' (a shell's words) as checked env flags; ``what`` names the source in messages."""
    try:
        words = shlex.split(text or "")
    except ValueError as exc:
        raise SpecError(what, f"cannot read {text!r}: {exc}") from None
    env = dict(parse_assignment(word, what) for word in words)
    Config.make("cpu", env)  # every name and value checked as the sidebar and --env check them
    return env


# Flags every new session of the page starts with, set by whoever starts the server (e.g. a class on a CPU whose
# default leaves oneDNN off: EXPLORER_DEFAULT_ENV="TF_ENABLE_ONEDNN_OPTS=1"); the command line's --link reads it
# too, so that its links open the same experiment on that server.
DEFAULT_ENV_VARIABLE = "EXPLORER_DEFAULT_ENV"


def server_env_defaults() -> tuple[dict[str, str], str | None]:
    """The server's default flags, and what is wrong with the setting if it cannot be read."""
    try:
        return parse_env_assignments(os.environ.get(DEFAULT_ENV_VARIABLE, ""), DEFAULT_ENV_VARIABLE), None
    except SpecError as exc:
        return {}, str(exc)


@dataclass(frozen=True)
class Config:
    """Device + environment flags + Grappler switches. Hashable, so it can key caches and pools."""

    device: str = "cpu"
    env: tuple[tuple[str, str], ...] = ()  # sorted (name, value) pairs; absent = TF's default
    grappler: tuple[tuple[str, str], ...] = field(default=())  # sorted (switch, "on"|"off")

    @staticmethod
    def make(device: object = "cpu", env: dict | None = None, grappler: dict | None = None) -> "Config":
        device = str(Device.parse(device))  # canonical: a simulated GPU always names its profile
        env_items = []
        for name, value in (env or {}).items():
            flag = ENV_FLAGS.get(name)
            if flag is None:
                raise SpecError(f"env.{name}", f"unknown flag; known flags: {', '.join(ENV_FLAGS)}")
            if value in (None, ""):
                continue
            value = str(value)
            if value not in flag.values:
                raise SpecError(f"env.{name}", f"value {value!r} not accepted; use one of {list(flag.values)}")
            env_items.append((name, value))
        sw_items = []
        for name, value in (grappler or {}).items():
            if name not in GRAPPLER_SWITCHES:
                raise SpecError(f"grappler.{name}", f"unknown Grappler switch; known: {', '.join(GRAPPLER_SWITCHES)}")
            if isinstance(value, bool):
                value = "on" if value else "off"
            if value in (None, "", FORMER_UNSET):
                continue
            if value not in SWITCH_VALUES:
                raise SpecError(f"grappler.{name}", f"value {value!r} not accepted; use on or off")
            sw_items.append((name, value))
        return Config(device, tuple(sorted(env_items)), tuple(sorted(sw_items)))

    @staticmethod
    def from_dict(data: dict) -> "Config":
        if isinstance(data, dict):  # an empty value of any kind ("", [], false) means no flags
            data = {**data, **{part: data[part] or None for part in ("env", "grappler") if part in data}}
        json_text.validate(data, CONFIG, root="config")
        return Config.make(data.get("device", "cpu"), data.get("env") or {}, data.get("grappler") or {})

    @staticmethod
    def coerce(config: "ConfigLike") -> "Config":
        """A Config as every entry point takes one: a Config, its dict, or None (the CPU, TF's defaults)."""
        if isinstance(config, Config):
            return config
        return Config() if config is None else Config.from_dict(config)

    def to_dict(self) -> dict:
        return {"device": self.device, "env": dict(self.env), "grappler": dict(self.grappler)}

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)

    @property
    def grappler_dict(self) -> dict[str, str]:
        return dict(self.grappler)

    def process_key(self) -> tuple:
        """What must be equal for two runs to share a worker process."""
        return (self.device, self.env)

    def with_env(self, name: str, value: object) -> "Config":
        env: dict[str, object] = dict(self.env)
        if value in (None, ""):
            env.pop(name, None)
        else:
            env[name] = value
        return Config.make(self.device, env, self.grappler_dict)

    def with_switch(self, name: str, value: object) -> "Config":
        sw: dict[str, object] = dict(self.grappler)
        if value in (None, "", FORMER_UNSET):
            sw.pop(name, None)
        else:
            sw[name] = value
        return Config.make(self.device, self.env_dict, sw)

    def shell_env(self) -> str:
        """The environment assignments, as a person would type them in a shell."""
        return " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env)

    def cli_args(self) -> list[str]:
        args = ["--device", self.device]
        for k, v in self.env:
            args += ["--env", f"{k}={v}"]
        for k, v in self.grappler:
            args += ["--grappler", f"{k}={v}"]
        return args


# A configuration as every entry point takes one (``Config.coerce``): a Config, its dict, or None (the CPU, TF's defaults).
ConfigLike = Config | dict | None
