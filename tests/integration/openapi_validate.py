#!/usr/bin/python3
"""Checks recorded HTTP answers against the responses docs/openapi.yaml gives.

    openapi_validate.py SPEC CASES

SPEC is an OpenAPI 3.1 description (its schemas are JSON Schema 2020-12).
CASES is a JSON list of answers, each
    {"name": …, "method": "get", "path": "/clicks", "status": 200,
     "content_type": "application/json", "body_file": "/tmp/…/clicks.body"}
For each, the spec must describe that status of that path and method, with
the answer's media type (parameters such as charset aside), and the body
must match the schema given for it: parsed as JSON for application/json,
as text otherwise (application/octet-stream bodies are bytes: not checked). $refs resolve within SPEC.

Prints "ok NAME" or "FAIL NAME: why" per case; exits 0 when every case
matches, 1 when any does not, 2 when SPEC or CASES cannot be used.
Needs Debian's python3-yaml and python3-jsonschema.
"""

import json
import sys
import warnings

import jsonschema
import yaml


def fail_usage(message):
    print(f"openapi_validate: {message}", file=sys.stderr)
    sys.exit(2)


def resolve(spec, node):
    """Follows a local $ref ("#/components/responses/X") to its target."""
    seen = set()
    while isinstance(node, dict) and "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/") or ref in seen:
            raise ValueError(f"cannot follow $ref {ref!r}")
        seen.add(ref)
        node = spec
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
    return node


def media_type(content_type):
    return content_type.split(";", 1)[0].strip().lower()


def templated_path(spec, path):
    """The path item whose template ("/delete/{id}") matches path, segment by segment."""
    parts = path.split("/")
    for template, item in spec.get("paths", {}).items():
        t = template.split("/")
        if len(t) == len(parts) and all(a == b or (a.startswith("{") and a.endswith("}") and b) for a, b in zip(t, parts)):
            return item
    return None


def check(spec, resolver, case):
    """None when the answer matches its description, else why not."""
    path_item = spec.get("paths", {}).get(case["path"]) or templated_path(spec, case["path"])
    if path_item is None:
        return f"the spec has no path {case['path']}"
    operation = path_item.get(case["method"].lower())
    if operation is None:
        return f"the spec has no {case['method'].upper()} {case['path']}"
    responses = operation.get("responses", {})
    status = str(case["status"])
    response = responses.get(status) or responses.get(status[0] + "XX") or responses.get("default")
    if response is None:
        return f"the spec gives no response {status} for {case['method'].upper()} {case['path']}"
    response = resolve(spec, response)
    content = response.get("content", {})
    wanted = media_type(case["content_type"])
    media = next((m for k, m in content.items() if media_type(k) == wanted), None)
    if media is None:
        return f"Content-Type {case['content_type']!r} is not among {sorted(content)} for status {status}"
    with open(case["body_file"], "rb") as f:
        raw = f.read()
    if wanted == "application/octet-stream":
        return None  # bytes as they are: there is no structure to check
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"the body is not UTF-8: {e}"
    if wanted == "application/json" or wanted.endswith("+json"):
        try:
            instance = json.loads(text)
        except ValueError as e:
            return f"the body is not JSON: {e}"
    else:
        instance = text
    schema = media.get("schema")
    if schema is None:
        return None
    validator = jsonschema.Draft202012Validator(schema, resolver=resolver)
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    lines = []
    for e in errors[:5]:
        where = "/".join(str(p) for p in e.absolute_path) or "(the body)"
        lines.append(f"at {where}: {e.message}")
        # Under oneOf/anyOf: the deepest reasons of the alternatives say most.
        for sub in sorted(e.context, key=lambda s: -len(s.absolute_path))[:3]:
            inner = "/".join(str(p) for p in sub.absolute_path) or "(the body)"
            lines.append(f"  alternative {list(sub.schema_path)[:1]}, at {inner}: {sub.message}")
    return "\n    ".join(lines)


def main(argv):
    if len(argv) != 3:
        fail_usage("usage: openapi_validate.py SPEC CASES")
    try:
        with open(argv[1], encoding="utf-8") as f:
            spec = yaml.safe_load(f)
        with open(argv[2], encoding="utf-8") as f:
            cases = json.load(f)
    except (OSError, ValueError, yaml.YAMLError) as e:
        fail_usage(str(e))
    version = str(spec.get("openapi", "")) if isinstance(spec, dict) else ""
    if not version.startswith("3.1"):
        fail_usage(f"{argv[1]}: OpenAPI {version or '?'}; expected 3.1 (schemas are JSON Schema 2020-12)")
    if not isinstance(cases, list) or not cases:
        fail_usage(f"{argv[2]}: no cases")
    # $refs in schemas ("#/components/schemas/X") resolve against the spec.
    # RefResolver is what python3-jsonschema 4.10 (Debian 12) offers; newer
    # releases keep it, deprecated.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        resolver = jsonschema.RefResolver(base_uri="", referrer=spec)
    failed = 0
    for case in cases:
        try:
            why = check(spec, resolver, case)
        except (KeyError, ValueError, OSError, jsonschema.exceptions.RefResolutionError) as e:
            why = f"cannot check: {e!r}"
        if why is None:
            print(f"ok {case['name']}")
        else:
            failed += 1
            print(f"FAIL {case['name']}: {why}")
    print(f"{len(cases) - failed} of {len(cases)} answers match {argv[1]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
