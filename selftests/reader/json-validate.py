#!/usr/bin/python3
"""Validate blamer's JSON documents with Debian's python3-jsonschema.

    json-validate.py SCHEMA FILE...   each FILE holds one JSON document per line
    json-validate.py --schema SCHEMA  check the schema itself

Prints "valid FILE:LINE" or the errors then "invalid FILE:LINE" per
document; exits 1 if any is invalid. A document (or the schema) with a
key twice in one object is invalid: JSON parsers keep one of the two
silently, so the other would say something nobody reads.
"""
import json
import sys

import jsonschema


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError("duplicate keys " + ", ".join(dup))
    return dict(pairs)


def load(text):
    return json.loads(text, object_pairs_hook=no_duplicates)


def walk(node):
    """Every object of a schema, depth first."""
    if isinstance(node, dict):
        yield node
        for v in node.values():
            yield from walk(v)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v)


def check_schema(path):
    schema = load(open(path).read())
    jsonschema.Draft202012Validator.check_schema(schema)
    # members may be added within a version: nothing may forbid them
    closed = [o for o in walk(schema) if o.get("additionalProperties") is False]
    if closed:
        raise ValueError(f"{len(closed)} objects forbid additional properties")
    described = [o for o in walk(schema) if "description" in o]
    if described != [schema]:
        raise ValueError("the schema has one description, at the top")
    return schema


def main():
    if sys.argv[1] == "--schema":
        check_schema(sys.argv[2])
        print("valid schema " + sys.argv[2])
        return 0
    validator = jsonschema.Draft202012Validator(check_schema(sys.argv[1]))
    bad = 0
    for path in sys.argv[2:]:
        for lineno, raw in enumerate(open(path, "rb"), 1):
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")      # strict: JSON is UTF-8
                errs = [f"{'/'.join(map(str, e.absolute_path)) or '$'}: {e.message[:200]}"
                        for e in validator.iter_errors(load(line))]
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
