#!/usr/bin/python3
"""A small JSON Schema validator (the subset Documentation/blamer-json-schema.json
uses: $ref to #/$defs, type, const, enum, properties, required,
additionalProperties, items, minItems, maxItems, minimum, pattern), so the
json-schema suite needs nothing from pip.

    jsonschema_lite.py SCHEMA FILE...   each FILE holds one JSON document per line
Prints one TAP line per document; exits 1 if any is invalid.
"""
import json
import re
import sys

TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def errors(schema, value, root, where="$"):
    """Yield one message per violation of schema by value."""
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError("unsupported $ref " + ref)
        yield from errors(root["$defs"][ref[len("#/$defs/"):]], value, root, where)
        return
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(TYPES[t](value) for t in types):
            yield f"{where}: {value!r:.60} is not {'/'.join(types)}"
            return
    if "const" in schema and value != schema["const"]:
        yield f"{where}: {value!r} is not {schema['const']!r}"
    if "enum" in schema and value not in schema["enum"]:
        yield f"{where}: {value!r} not one of {schema['enum']}"
    if "minimum" in schema and TYPES["number"](value) and value < schema["minimum"]:
        yield f"{where}: {value} < {schema['minimum']}"
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        yield f"{where}: {value!r} does not match {schema['pattern']}"
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                yield f"{where}: missing {key}"
        for key, v in value.items():
            if key in props:
                yield from errors(props[key], v, root, f"{where}.{key}")
            elif schema.get("additionalProperties") is False:
                yield f"{where}: unexpected property {key}"
            elif isinstance(schema.get("additionalProperties"), dict):
                yield from errors(schema["additionalProperties"], v, root, f"{where}.{key}")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            yield f"{where}: fewer than {schema['minItems']} items"
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            yield f"{where}: more than {schema['maxItems']} items"
        if "items" in schema:
            for i, v in enumerate(value):
                yield from errors(schema["items"], v, root, f"{where}[{i}]")


def main():
    schema = json.load(open(sys.argv[1]))
    bad = 0
    for path in sys.argv[2:]:
        for lineno, line in enumerate(open(path), 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
                errs = list(errors(schema, doc, schema))
            except ValueError as e:
                errs = [f"not JSON: {e}"]
            if errs:
                bad += 1
                print(f"# {path}:{lineno}: " + "\n# ".join(errs[:10]))
                print(f"invalid {path}:{lineno}")
            else:
                print(f"valid {path}:{lineno}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
