"""The structure of the explorer's JSON documents, declared once as JSON Schemas (checked by ``json_text.validate``
with jsonschema before any field is used): each field's type, the fields an object may have, the lengths and
counts, the number ranges. What a value means (a preset that exists, a flag's accepted values, a link that reads)
is checked afterwards by the module that reads the document (``experiment.py``, ``lesson.py``).

A schema node's ``messages`` (per rule) or ``message`` replaces the generic sentence; ``{extra}`` in a message
is the list of unknown fields (the field named is then the object's), ``{allowed}`` the fields it may have,
``{value}`` the value refused (its repr; ``{said}`` cut at 60 characters). ``"format": "printable"`` is text
without control characters. Schemas made from a module's own tables live beside them, built with ``record``:
an op chain's (``chain.SCHEMA``), a layer stack's (``stack.STACK``, ``stack.BLOCK``) and each layer type's
(``layers.LAYER_SCHEMAS``, from ``layers.LAYER_TYPES``).
"""

from __future__ import annotations

NAME = {"type": "string", "maxLength": 200}  # an id or a word: its own check says which


def _nullable(schema: dict) -> dict:
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    return dict(schema, type=[*kinds, "null"])


def _text(limit: int) -> dict:
    return {"type": "string", "maxLength": limit}


def choice(values) -> dict:
    return {"enum": list(values), "message": f"{{value}} is not one of {list(values)}"}


FLAG = {"type": "boolean", "message": "expected true or false, got {value}"}


def record(properties: dict, required=(), message: str | None = None, type_message: str | None = None,
           **extra) -> dict:
    """An object of these fields only; ``message`` refuses another field, ``type_message`` a value not an object."""
    schema = {"type": "object", "properties": properties, "additionalProperties": False, **extra}
    if required:
        schema["required"] = list(required)
    schema["messages"] = {rule: said for rule, said in (("additionalProperties", message), ("type", type_message))
                          if said}
    return schema


# A whole number, or a link's text of one: the reader converts it and states its range (json_text.whole_number).
_COUNT = {"type": ["integer", "number", "string"], "maxLength": 24}


_FLAGS = {"type": "object", "maxProperties": 64, "propertyNames": {"maxLength": 64},
          "additionalProperties": {"type": ["string", "null"], "maxLength": 64}}

# A model spec of a preset or an op chain (spec.parse_model; the chain's own fields: chain.SCHEMA).
SPEC = record({"preset": {}, "chain": {}, "params": {"type": ["object", "null"],
                                                     "message": "expected an object of name: value"}},
              message="unknown field(s) {extra}", type_message="expected an object with 'preset' or 'chain', and 'params'")

# A configuration as Config.from_dict takes it (each flag's name and value: flags.Config.make).
CONFIG = record({"device": {}, "env": {"type": ["object", "null"], "message": "expected an object of NAME: VALUE"},
                 "grappler": {"type": ["object", "null"], "message": "expected an object of switch: on|off"}},
                message="unknown field(s) {extra}", type_message="expected an object with device, env and grappler")

EXPERIMENT = record({
    "experiment": {},  # the format's version: experiment.py says which it reads
    "model": {"type": "object", "maxProperties": 8},
    "config": _nullable(record({"device": {"type": "string", "maxLength": 64}, "env": _nullable(_FLAGS),
                                 "grappler": _nullable(_FLAGS)}, message="unknown field(s) {extra}")),
    "compiler": {"type": "string", "maxLength": 40},
    "view": _nullable(record({"tab": _nullable(NAME), "stages": NAME, "graph": NAME,
                               "fold": {"type": "boolean", "message": "expected true or false"},
                               "present": {"type": "boolean", "message": "expected true or false"}},
                              message="unknown field(s) {extra}; allowed: {allowed}")),
    "bench": _nullable(record({"reps": _COUNT, "warmup": _COUNT,
                                "seconds": _COUNT, "processes": _COUNT},
                               message="unknown field(s) {extra}; allowed: {allowed}")),
    "lesson": _nullable(record({"id": _nullable(NAME), "step": _COUNT},
                                message="unknown field(s) {extra}; allowed: {allowed}")),
    "link": {"type": "string", "maxLength": 100_000},
    "results": {},  # carried for a reader, never read back
}, required=("experiment",), message="unknown field(s) {extra}")
EXPERIMENT["messages"].update(type='expected an experiment file: a JSON object with "experiment": 1',
                              required='expected an experiment file: a JSON object with "experiment": 1')

MAX_STEPS = 40
MAX_TITLE, MAX_TEXT, MAX_ASK, MAX_NODES = 120, 1500, 400, 24
STAGE_KEYS = ("traced", "optimized", "executed", "any")  # where look.nodes and expect.has/lacks look
_NODES = {"type": "object", "propertyNames": {"maxLength": 40},
          "messages": {"type": f"expected an object: a stage ({', '.join(STAGE_KEYS)}) -> a list of names"},
          "additionalProperties": {"type": "array", "maxItems": MAX_NODES,
                                   "message": f"expected a list of at most {MAX_NODES} names"}}
_LESSON_FIELDS = "not a field of a lesson here; allowed: {allowed}"

_STEP = record({
    "title": _text(MAX_TITLE), "experiment": _text(8192),
    "text": _text(MAX_TEXT), "ask": _text(MAX_ASK),
    "look": _nullable(record({"tab": _nullable(NAME), "stages": _nullable(NAME), "nodes": _nullable(_NODES)},
                              message=_LESSON_FIELDS)),
    "expect": _nullable(record({
        "fusions": _nullable({"type": "integer", "minimum": 0, "maximum": 10_000}),
        "made": _nullable({"type": "array", "maxItems": MAX_NODES,
                           "items": {"type": "string", "minLength": 1, "maxLength": 200}}),
        "has": _nullable(_NODES), "lacks": _nullable(_NODES), "verdict": _nullable(NAME)}, message=_LESSON_FIELDS)),
}, required=("title", "experiment", "text"), message=_LESSON_FIELDS,
    type_message="expected an object with title, experiment, text")

LESSON = record({
    "lesson": {}, "id": NAME, "title": _text(MAX_TITLE), "summary": _text(MAX_TEXT), "source": _text(MAX_TITLE * 4),
    "steps": {"type": "array", "minItems": 1, "maxItems": MAX_STEPS, "items": _STEP,
              "message": f"expected a list of 1..{MAX_STEPS} steps"},
}, required=("lesson", "id", "title", "steps"), message=_LESSON_FIELDS,
    type_message='expected a lesson file: a JSON object with "lesson": 1 (docs/lessons.md)')


# An imported model's options ({"import": {...}}); imported.py fills the absent fields with their defaults first.
IMPORT_FORMATS = ("graphdef", "savedmodel", "keras")
IMPORT_FIELDS = ("path", "format", "digest", "name", "signature", "unknown_dim", "outputs", "fixed_dims")
MAX_UNKNOWN_DIM = 4096  # a value for a dimension the model leaves open (batch, sequence length...)
MAX_OUTPUTS = 64
IMPORT = record({
    "format": choice(IMPORT_FORMATS),
    "digest": {"type": "string", "pattern": r"^[0-9a-f]{64}\Z",
               "message": "expected the sha256 of the model's content (64 hex digits)"},
    "path": {"type": ["string", "null"], "minLength": 1, "pattern": r"^[^\x00]*\Z",
             "message": "expected a file or directory path"},
    "name": {"type": "string", "maxLength": 200, "format": "printable", "message": "expected a short printable file name"},
    "signature": {"type": ["string", "null"], "minLength": 1, "maxLength": 200, "format": "printable",
                  "message": "expected a signature name such as 'serving_default'"},
    "unknown_dim": {"type": "integer", "minimum": 1, "maximum": MAX_UNKNOWN_DIM,
                    "message": f"{{value}} is out of range; allowed 1..{MAX_UNKNOWN_DIM}"},
    "outputs": {"type": ["array", "null"], "maxItems": MAX_OUTPUTS,  # a name that is not one: said of the list
                "not": {"type": "array", "contains": {"not": {"type": "string", "pattern": r"^[A-Za-z0-9_.\-/>]+(:[0-9]+)?\Z"}}},
                "message": f"expected up to {MAX_OUTPUTS} node names such as 'dense/BiasAdd'"},
    "fixed_dims": FLAG,
}, message=f"unknown field(s) {{extra}}; allowed: {', '.join(IMPORT_FIELDS)}",
    type_message="expected an object with 'format', 'digest' and 'path'",
    # what only one format has, refused before its own form is checked
    allOf=[{"if": {"properties": {"format": {"const": fmt}}}, "then": {"properties": {
        **({"signature": {"type": "null", "message": f"only a SavedModel has signatures, not a {fmt}"}}
           if fmt != "savedmodel" else {}),
        **({"outputs": {"type": "null", "message": f"output nodes are chosen for a GraphDef only; a {fmt} has its own"}}
           if fmt != "graphdef" else {})}}} for fmt in IMPORT_FORMATS])
IMPORT = {"allOf": IMPORT.pop("allOf"), **IMPORT}  # checked first, as the reader did
