"""Fuzz of the two doors a browser's data comes in by: ``spec.resolve`` and ``Config.from_dict``.

Whatever JSON-like data arrives (valid, nearly valid, or junk), each call either returns a checked
value or raises ``SpecError`` naming a field, with a one-line message; never any other exception.
Much of the data is drawn from the real preset ids, parameter names, choices, environment flags
and Grappler switches, so a good share of the examples are valid or one field away from it.

Examples per test: profile "ci" (default, ~300) or "deep" (~5000), chosen by the environment:

    HYPOTHESIS_PROFILE=deep .venv/bin/python -m pytest tests/unit/test_spec_fuzz.py
"""

from __future__ import annotations

import json
import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.errors import SpecError
from explorer.model.catalog import PRESETS
from explorer.model.chain import ACTIVATIONS, BIASES, CONTRACTIONS, NORMS, Chain
from explorer.model.devices import DEVICES
from explorer.model.flags import ENV_FLAGS, GRAPPLER_SWITCHES, SWITCH_VALUES, Config
from explorer.model.spec import (
    MAX_MODEL_BYTES,
    MAX_TENSOR_BYTES,
    PARAMS,
    ModelSpec,
    itemsize,
    resolve,
)

# Profiles by name; not registered globally, so other tests keep their own settings.
PROFILES = {
    "ci": settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow]),
    "deep": settings(max_examples=5000, deadline=None, suppress_health_check=[HealthCheck.too_slow]),
}
PROFILE_NAME = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE_NAME not in PROFILES:
    raise pytest.UsageError(f"HYPOTHESIS_PROFILE={PROFILE_NAME!r}: use one of {sorted(PROFILES)}")
FUZZ = PROFILES[PROFILE_NAME]

# --- JSON-like junk -------------------------------------------------------------------------------

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)

# --- nearly valid pieces, drawn from the real vocabularies -----------------------------------------

def weighted(*pairs):
    """One of the strategies, picked with the given integer weights (st.one_of picks evenly)."""
    pool = [strategy for weight, strategy in pairs for _ in range(weight)]
    return st.sampled_from(range(len(pool))).flatmap(lambda i: pool[i])


CHOICE_WORDS = sorted({c for p in PARAMS.values() for c in p.choices}
                      | set(CONTRACTIONS) | set(BIASES) | set(NORMS) | set(ACTIVATIONS))
ODD_TEXT = st.sampled_from(["", " ", "\n", "a\nb", "\r\n", "\u2028", "\x85", "<b>x</b>", "$(id)", "{}", "NaN",
                            "1e3", "0x10", " 12 ", "1_000", "-0", "true", "on", "OFF", "\x00"])
REAL_NAME = st.sampled_from(sorted(PARAMS))
NAMEISH = weighted((6, REAL_NAME), (1, st.text(max_size=10)), (1, ODD_TEXT))

SMALL_INT = st.integers(min_value=1, max_value=64)
INT_LIKE = weighted(
    (6, SMALL_INT),
    (2, st.integers(min_value=-3, max_value=0)),
    (1, st.integers(min_value=-(2**40), max_value=2**40)),
    (2, st.sampled_from([8192, 8193, 65536, 65537, 1 << 20, (1 << 20) + 1, 2**31, 2**63])),
    (1, SMALL_INT.map(str)),
    (1, SMALL_INT.map(float)),  # 64.0: a whole number written as a float
    (1, st.floats(allow_nan=True, allow_infinity=True)),
)
CHOICE_LIKE = weighted((4, st.sampled_from(CHOICE_WORDS)), (2, st.booleans()),
                       (1, st.sampled_from(["yes", "no", "1", "0", "nhwc", "Float32"])))
VALUE = weighted((6, INT_LIKE), (4, CHOICE_LIKE), (1, ODD_TEXT), (1, JSON))


def value_for(name):
    """A value aimed at this parameter's kind (mostly), or anything."""
    param = PARAMS.get(name) if isinstance(name, str) else None
    if param is None:
        return VALUE
    if param.kind == "int":
        return weighted((5, INT_LIKE), (1, VALUE))
    if param.kind == "bool":
        return weighted((5, st.booleans() | st.sampled_from(["true", "off", "Yes", "2"])), (1, VALUE))
    return weighted((5, st.sampled_from(param.choices)), (1, VALUE))


@st.composite
def params_dicts(draw):
    names = draw(st.lists(NAMEISH, max_size=6, unique=True))
    return {name: draw(value_for(name)) for name in names}


@st.composite
def chain_dicts(draw):
    fields = {
        "contraction": st.sampled_from(CONTRACTIONS),
        "squeeze": st.booleans(),
        "bias": st.sampled_from(BIASES),
        "norm": st.sampled_from(NORMS),
        "side_add": st.booleans(),
        "activation": st.sampled_from(ACTIVATIONS),
    }
    data = {}
    for name, good in fields.items():
        if draw(st.booleans()):
            data[name] = draw(weighted((6, good), (1, VALUE)))
    if draw(st.sampled_from(range(8))) == 1:
        data[draw(st.text(max_size=6))] = draw(SCALARS)  # an unknown field
    return data


PRESET_ID = weighted((8, st.sampled_from(sorted(PRESETS))), (1, st.text(max_size=12) | ODD_TEXT), (1, SCALARS))


@st.composite
def spec_data(draw):
    shape = draw(st.sampled_from(["preset"] * 5 + ["chain"] * 3 + ["both", "json"]))
    if shape == "json":
        return draw(JSON)  # anything at all
    data = {}
    if shape in ("preset", "both"):
        data["preset"] = draw(PRESET_ID)
    if shape == "both":
        preset = PRESETS.get(data["preset"]) if isinstance(data["preset"], str) else None
        data["chain"] = preset.chain.to_dict() if preset and draw(st.booleans()) else draw(chain_dicts())
    if shape == "chain":
        data["chain"] = draw(weighted((6, chain_dicts()), (1, JSON)))
    params = draw(st.sampled_from(["dict"] * 7 + ["none", "absent", "json"]))
    if params == "dict":
        data["params"] = draw(params_dicts())
    elif params == "none":
        data["params"] = None
    elif params == "json":
        data["params"] = draw(JSON)
    if draw(st.sampled_from(range(10))) == 1:
        data[draw(st.sampled_from(["extra", "Preset", "param", ""]) | st.text(max_size=5))] = draw(SCALARS)
    return data


# Device names as typed: the plain ones, each with a ":suffix" (gpu-sim:PROFILE picks a simulated GPU).
DEVICE_NAMES = sorted(DEVICES) + [f"{d}:{s}" for d in sorted(DEVICES) for s in ("", "ampere", "x", ":")] + ["CPU", " cpu"]
FLAG_VALUES = sorted({v for f in ENV_FLAGS.values() for v in f.values}) + ["", "2"]


@st.composite
def config_data(draw):
    if draw(st.sampled_from(range(8))) == 1:
        return draw(JSON)
    data = {}
    if draw(st.booleans()):
        data["device"] = draw(weighted((6, st.sampled_from(DEVICE_NAMES)), (1, st.text(max_size=5)), (1, SCALARS)))
    if draw(st.booleans()):
        names = draw(st.lists(weighted((5, st.sampled_from(sorted(ENV_FLAGS))), (1, NAMEISH)), max_size=3, unique=True))
        data["env"] = {n: draw(weighted((6, st.sampled_from(FLAG_VALUES)), (1, VALUE))) for n in names}
        if draw(st.sampled_from(range(8))) == 1:
            data["env"] = draw(JSON)
    if draw(st.booleans()):
        names = draw(st.lists(weighted((5, st.sampled_from(sorted(GRAPPLER_SWITCHES))), (1, NAMEISH)),
                              max_size=4, unique=True))
        switch_values = st.sampled_from([*SWITCH_VALUES, "default", "", "ON", None]) | st.booleans()
        data["grappler"] = {n: draw(weighted((6, switch_values), (1, VALUE))) for n in names}
        if draw(st.sampled_from(range(8))) == 1:
            data["grappler"] = draw(JSON)
    if draw(st.sampled_from(range(10))) == 1:
        data[draw(st.text(max_size=5))] = draw(SCALARS)
    return data


# --- the properties ------------------------------------------------------------------------------

def one_line(text: str) -> bool:
    return isinstance(text, str) and len(text.splitlines()) <= 1


def check_refusal(error: SpecError) -> None:
    assert isinstance(error.field, str) and error.field.strip(), f"no field named: {error!r}"
    assert isinstance(error.message, str) and error.message.strip(), f"empty message: {error!r}"
    assert one_line(error.message), f"message spans lines: {error.message!r}"


def check_spec(spec: ModelSpec) -> None:
    """A spec that resolve accepted is complete, within the limits, and survives JSON."""
    assert isinstance(spec, ModelSpec)
    assert set(spec.p) == set(spec.chain.param_names())
    size = itemsize(spec.p.get("dtype", "int64"))
    shapes = spec.tensor_shapes()
    assert all(math.prod(s) * size <= MAX_TENSOR_BYTES for s in shapes.values())
    assert sum(math.prod(s) for s in shapes.values()) * size <= MAX_MODEL_BYTES
    assert resolve(json.loads(spec.to_json())) == spec


def call(fn, data):
    """fn(data) -> its value, or the SpecError it raised (any other exception fails the test)."""
    try:
        return fn(data)
    except SpecError as error:
        check_refusal(error)
        return error


@FUZZ
@given(spec_data())
def test_resolve_returns_a_spec_or_names_the_field(data):
    outcome = call(resolve, data)
    if not isinstance(outcome, SpecError):
        check_spec(outcome)


@FUZZ
@given(PRESET_ID, params_dicts())
def test_resolve_preset_with_random_params(preset, params):
    outcome = call(resolve, {"preset": preset, "params": params})
    if not isinstance(outcome, SpecError):
        check_spec(outcome)


@FUZZ
@given(config_data())
def test_config_from_dict_returns_a_config_or_names_the_field(data):
    outcome = call(Config.from_dict, data)
    if not isinstance(outcome, SpecError):
        assert isinstance(outcome, Config)
        assert Config.from_dict(json.loads(json.dumps(outcome.to_dict()))) == outcome
        assert outcome.device.partition(":")[0] in DEVICES
        assert Config.make(outcome.device, outcome.env_dict, outcome.grappler_dict) == outcome  # canonical
        assert all(value in ENV_FLAGS[name].values for name, value in outcome.env)
        assert all(name in GRAPPLER_SWITCHES and value in SWITCH_VALUES for name, value in outcome.grappler)


def test_the_generators_reach_valid_specs_and_configs():
    """Guard against a fuzz that only ever tests refusals: a fair share of examples must be valid."""
    seen = {"spec": 0, "config": 0, "total": 0}

    @settings(max_examples=200, deadline=None, derandomize=True, database=None)
    @given(spec_data(), config_data())
    def sample(spec, config):
        seen["total"] += 1
        seen["spec"] += not isinstance(call(resolve, spec), SpecError)
        seen["config"] += not isinstance(call(Config.from_dict, config), SpecError)

    sample()
    assert seen["spec"] >= seen["total"] // 10, seen
    assert seen["config"] >= seen["total"] // 5, seen


@pytest.mark.parametrize("fn,data", [
    (resolve, {"preset": "matmul_bias_relu", "params": {"m\nfake line": 1}}),
    (Config.from_dict, {"env": {"X\rY": "1"}}),
    (Config.from_dict, {"grappler": {"a\u2028b": "on"}}),
], ids=["param", "env", "grappler"])
def test_error_text_with_a_typed_name_stays_one_line(fn, data):
    with pytest.raises(SpecError) as info:
        fn(data)
    check_refusal(info.value)
    assert one_line(str(info.value)), repr(str(info.value))


def test_chain_from_dict_accepts_only_objects():
    for junk in (None, [], "MatMul", 3, 1.5, True):
        with pytest.raises(SpecError) as info:
            Chain.from_dict(junk)
        check_refusal(info.value)
