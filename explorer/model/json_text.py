"""The one reader of every small JSON document the explorer accepts: an experiment file, a lesson file, a layer
stack (``--spec``, the sidebar's editor), a link's JSON part.

Every door reads the same way, and refuses in one line (a SpecError naming the input and the limit):

- a file (``read_file``): a regular file only, its size checked before a byte is read (a named pipe, a device
  such as /dev/zero or a directory is refused without being opened to wait on), opened without blocking and
  read no further than its limit;
- the text (``load``): at most its size, UTF-8, nested at most MAX_DEPTH levels and at most MAX_VALUES values
  (both counted before Python's parser recurses or allocates), numbers as JSON numbers of at most MAX_DIGITS
  digits and finite (no NaN, no 10^5000);
- the structure (``validate``): a JSON Schema declared in ``schemas.py`` (jsonschema), its first error named
  by its path (``steps[2].look.tab``) with the schema's own message, or a generic one stating the limit
  (``refusal``: that error's path and message, for a reader that names places its own way, as a stack does).

``whole_number`` reads a number that may come as text (a link's ``step=3``): ASCII digits only, bounded.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat

from ..errors import SpecError, shown
from .limits import bytes_text

MAX_DEPTH = 32  # objects and lists inside each other: no document of the explorer comes near
MAX_VALUES = 200_000  # values in one document (a 4 MiB experiment file with its results stays far below)
MAX_DIGITS = 18  # digits of a JSON number: any count or size the explorer takes, and int64's range
_KINDS = {stat.S_IFIFO: "a named pipe", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
          stat.S_IFDIR: "a directory", stat.S_IFSOCK: "a socket", stat.S_IFLNK: "a symbolic link"}
_STRINGS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_STRUCTURE = re.compile(r"[^\[\]{},]+")
_WHOLE = re.compile(r"[+-]?[0-9]{1,%d}" % MAX_DIGITS)
_VALIDATORS: dict[int, tuple] = {}


def read_file(path, field: str, what: str, max_bytes: int) -> bytes:
    """The bytes of the file at ``path``: a regular file of at most ``max_bytes`` (checked with its size before
    it is read, and again as it is read: a file may grow); ``what`` names it in a refusal ("a lesson")."""
    name = shown(os.fspath(path), 300)
    try:
        info = os.stat(path)
    except (OSError, ValueError) as exc:
        raise SpecError(field, f"cannot read {name}: {getattr(exc, 'strerror', None) or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise SpecError(field, f"{name} is {_KINDS.get(stat.S_IFMT(info.st_mode), 'not a file')}, not a regular "
                               f"file; {what} is a JSON file of at most {bytes_text(max_bytes)}")
    _check_size(info.st_size, max_bytes, field, what, name)
    try:  # O_NONBLOCK: a file swapped for a pipe after the stat is not waited on
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise SpecError(field, f"cannot read {name}: {exc.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise SpecError(field, f"{name} changed while it was opened; {what} is a regular file")
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise SpecError(field, f"cannot read {name}: {exc.strerror}") from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    _check_size(len(data), max_bytes, field, what, name, grew=True)
    return data


def load(text: str | bytes, field: str, what: str, max_bytes: int | None = None, schema: dict | None = None):
    """The parsed JSON of ``text``; ``field`` names the input in the error, ``what`` says what it should be
    ("an experiment", "a lesson"), ``max_bytes`` bounds its size, ``schema`` (``schemas.py``) its structure."""
    if isinstance(text, bytes):
        if max_bytes is not None:
            _check_size(len(text), max_bytes, field, what)
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise SpecError(field, f"not a text file ({what} is JSON)") from None
    elif not isinstance(text, str):
        raise SpecError(field, f"expected {what} as JSON text, got {type(text).__name__}")
    elif max_bytes is not None and len(text) > max_bytes:
        _check_size(len(text.encode("utf-8", "surrogatepass")), max_bytes, field, what)
    _check_shape(text, field)
    try:
        data = json.loads(text, parse_int=lambda s: _int(s, field), parse_float=lambda s: _float(s, field),
                          parse_constant=lambda s: _constant(s, field))
    except json.JSONDecodeError as exc:
        raise SpecError(field, f"not valid JSON: {exc}") from None
    except RecursionError:  # the count above makes this unreachable; kept so that no traceback is
        raise SpecError(field, f"nested more than {MAX_DEPTH} levels deep") from None
    if schema is not None:
        validate(data, schema, field)
    return data


def validate(data, schema: dict, field: str = "", root: str = "document", in_order: bool = False) -> None:
    """SpecError naming the first place ``data`` breaks ``schema`` (its path below ``field``; ``root`` names the
    document itself), with the schema node's message when it has one, otherwise a sentence stating the limit."""
    found = refusal(data, schema, in_order)
    if found is not None:
        where = field
        for part in found[0]:
            where += f"[{part}]" if isinstance(part, int) else (f".{shown(part, 40)}" if where else shown(part, 40))
        raise SpecError(where or root, found[1])


def refusal(data, schema: dict, in_order: bool = False) -> tuple[list, str] | None:
    """The first place ``data`` breaks ``schema``: its path (keys and indexes, ending with the unknown or missing
    field's name) and the message; None when it holds. The shallowest error comes first (among equals, the first
    by path), or with ``in_order`` the first a reader meets who checks each object, then its fields in the
    order the schema declares them (an unknown field: the first in the document)."""
    errors = _validator(schema).iter_errors(data)
    if in_order:  # a missing field is refused where it would have been read
        ordered = sorted(errors, key=lambda e: _ranks(schema, [*e.path, *_missing(e)[:1]]))
    else:
        ordered = sorted(errors, key=lambda e: (len(e.path), list(map(str, e.path))))
    if not ordered:
        return None
    error = _deepest(ordered[0])
    path = list(error.absolute_path)
    if error.validator == "additionalProperties" and "{extra}" not in _template(error):
        extra = [name for name in error.instance if name not in error.schema.get("properties", {})]
        path += (extra if in_order else sorted(extra, key=str))[:1]
    return path + _missing(error)[:1], _message(error)


def whole_number(value, field: str, low: int, high: int, what: str = "a whole number") -> int:
    """``value`` as an int in low..high: an int, a float without a fraction, or text of ASCII digits ('3', not
    '²', '٣' or 5,000 digits); SpecError stating the range otherwise."""
    number = value
    if isinstance(value, str) and _WHOLE.fullmatch(value.strip()):
        number = int(value.strip())
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    if isinstance(number, bool) or not isinstance(number, int) or not low <= number <= high:
        said = number if isinstance(number, int) and not isinstance(number, bool) else value
        raise SpecError(field, f"expected {what} {low}..{high}, got {shown(repr(said), 40)}")
    return number


def number_or_text(text: str):
    """A link's value: an int when it is one written in ASCII digits (within MAX_DIGITS), else the text, for the
    field's own check to refuse by name."""
    return int(text.strip()) if isinstance(text, str) and _WHOLE.fullmatch(text.strip()) else text


# ---- the parts ---------------------------------------------------------------------------------------------

def _check_size(size: int, max_bytes: int, field: str, what: str, name: str = "", grew: bool = False) -> None:
    if size <= max_bytes:
        return
    said = bytes_text(size)
    if said == bytes_text(max_bytes):  # 4 MiB and a byte is not "4 MiB"
        said = f"{size:,} bytes"
    if grew:
        said = f"more than {said} (it grew while read)"
    article = what if what.startswith(("a ", "an ")) else f"a {what}"
    raise SpecError(field, f"{name + ' is ' if name else ''}{said}; {article} file is at most {bytes_text(max_bytes)}")


def _check_shape(text: str, field: str) -> None:
    """Depth and count of values, from the brackets and commas outside strings (no recursion, no objects)."""
    structure = _NOT_STRUCTURE.sub("", _STRINGS.sub('""', text))
    if structure.count(",") >= MAX_VALUES:
        raise SpecError(field, f"more than {MAX_VALUES:,} values; a document here holds fewer")
    depth = 0
    for char in structure:
        if char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                raise SpecError(field, f"nested more than {MAX_DEPTH} levels deep; a document here is flatter")
        elif char in "]}":
            depth -= 1


def _int(text: str, field: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise SpecError(field, f"a number of {len(text.lstrip('-')):,} digits; numbers here have at most {MAX_DIGITS}")
    return int(text)


def _float(text: str, field: str) -> float:
    value = float(text)
    if not math.isfinite(value) or len(text) > 64:
        raise SpecError(field, f"the number {shown(text, 40)} is out of range; numbers here are finite, at most "
                               f"{MAX_DIGITS} digits")
    return value


def _constant(text: str, field: str):
    raise SpecError(field, f"{text} is not a JSON number (JSON has no NaN or Infinity)")


def _deepest(error):
    """Of a oneOf/anyOf error, the alternative that got furthest (the sentence a person can act on)."""
    while error.context:
        error = max(error.context, key=lambda e: len(e.path))
    return error


def prepare() -> None:
    """Import jsonschema now (~0.15 s): a worker pays it while it starts, not in its first request."""
    import jsonschema  # noqa: F401


def _validator(schema: dict):
    """The schema's validator, made once (the schemas are the modules' constants)."""
    from jsonschema import Draft202012Validator, FormatChecker  # on first use: the page's start does not wait

    made = _VALIDATORS.get(id(schema))
    if made is None:
        if len(_VALIDATORS) > 1000:  # not the constants this is made for: no growing without end
            _VALIDATORS.clear()
        printable = FormatChecker(())
        printable.checks("printable")(lambda value: not isinstance(value, str) or value.isprintable())
        made = _VALIDATORS[id(schema)] = (schema, Draft202012Validator(schema, format_checker=printable))
    return made[1]  # the schema kept beside it: its id is not reused


def _missing(error) -> list:
    return [name for name in error.validator_value if name not in error.instance] if error.validator == "required" \
        else []


def _ranks(schema: dict, path) -> list[int]:
    """Where each step of ``path`` comes in the schema: a field's place among its object's fields, an index."""
    ranks, node = [], schema
    for part in path:
        names = list(node.get("properties", {}))
        ranks.append(part if isinstance(part, int) else names.index(part) if part in names else len(names))
        node = (node.get("items") if isinstance(part, int) else node.get("properties", {}).get(part)
                or node.get("additionalProperties")) or {}
    return ranks


_JSON_TYPES = {"object": "an object", "array": "a list", "string": "text", "integer": "a whole number",
               "number": "a number", "boolean": "true or false", "null": "null"}


def _json_type(value) -> str:
    for name, kind in (("null", type(None)), ("true or false", bool), ("a whole number", int), ("a number", float),
                       ("text", str), ("a list", list), ("an object", dict)):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _template(error) -> str:
    return error.schema.get("messages", {}).get(error.validator) or error.schema.get("message") or ""


def _message(error) -> str:
    schema, value, rule, limit = error.schema, error.instance, error.validator, error.validator_value
    template = _template(error)
    if template:
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(map(str, set(value) - set(allowed))) if isinstance(value, dict) else []
        said = {"extra": shown(extra, 200), "allowed": ", ".join(allowed), "value": repr(value),
                "said": shown(repr(value), 60)}
        return re.sub(r"\{(extra|allowed|value|said)\}", lambda m: said[m[1]], template)
    if rule == "type":
        kinds = [limit] if isinstance(limit, str) else limit
        return f"expected {' or '.join(_JSON_TYPES.get(k, k) for k in kinds)}, got {_json_type(value)}"
    if rule == "additionalProperties":
        return f"not a field here; allowed: {', '.join(sorted(schema.get('properties', {})))}"
    if rule == "required":
        return "missing"
    if rule in ("maxLength", "minLength"):
        return f"{len(value):,} characters; {'at most' if rule == 'maxLength' else 'at least'} {limit}"
    if rule in ("maxItems", "minItems"):
        return f"{len(value):,} items; {'at most' if rule == 'maxItems' else 'at least'} {limit}"
    if rule in ("maxProperties",):
        return f"{len(value):,} fields; at most {limit}"
    if rule in ("minimum", "maximum"):
        low, high = schema.get("minimum", "…"), schema.get("maximum", "…")
        return f"expected {low}..{high}, got {shown(repr(value), 40)}"
    if rule in ("enum", "const"):
        allowed = limit if rule == "enum" else [limit]
        return f"{shown(repr(value), 40)} is not one of {', '.join(map(str, allowed))}"
    if rule == "pattern":
        return f"{shown(repr(value), 40)} is not in the expected form"
    return shown(error.message, 200)
