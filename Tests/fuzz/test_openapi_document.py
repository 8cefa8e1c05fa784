"""Static checks of the OpenAPI document (Sources/Server/openapi.yaml), in about a second, no daemon:

- it is YAML that every loader reads alike: anchors and aliases (the document says a repeated example
  once, `&name` … `*name`), no merge keys (`<<`, not YAML 1.2), every mapping key a string (YAML 1.1's
  `off` is a boolean to yaml.safe_load and a string to schemathesis);
- every `$ref` resolves;
- every object schema a response can hold has `additionalProperties: false` and `required` naming
  each of its properties (recd sends every key: `@Nullable` ones as null), so that schemathesis's
  response check in the live fuzz test (FuzzTests) fails when recd sends a key the document lacks or
  lacks one it has; the only keys recd omits are listed in OMITTED_WHEN_NIL;
- every object schema of a request body (the Swift `APIRequestBody` types, REQUEST_BODIES) has
  `additionalProperties: false` (recd refuses a key a body does not take: 400);
- every example (components/examples, the `examples` maps and `example` of media types, parameters
  and schemas) validates against its schema.

Run with the fuzz venv's python (scripts/install-deps.sh --test makes it): from Tests/fuzz,
`../../.build/fuzz-venv/bin/python -m unittest -v test_openapi_document`, or
`.build/fuzz-venv/bin/python -m pytest Tests/fuzz -q` from the package root. FuzzTests runs it with the
hooks' tests (test_recd_formats loads it)."""
import json
import pathlib
import re
import unittest

import jsonschema_rs
import yaml
from schemathesis.core.deserialization import deserialize_yaml

DOCUMENT = pathlib.Path(__file__).resolve().parents[2] / "Sources/Server/openapi.yaml"

# The request bodies: the Swift types that conform to APIRequestBody (Sources/RecdAPI). Their keys
# are optional, but a key not listed is refused.
REQUEST_BODIES = {
    "BackupRestoreRequest", "ListenRequest", "MarkerPatch", "MarkerRequest", "MetadataPatch",
    "PlayRequest", "SeekRequest", "SpeedRequest", "StartRecordingRequest", "StopRecordingRequest",
    "TrimRequest",
}
# Response keys recd leaves out when they have no value (plain Swift optionals, not `@Nullable`).
OMITTED_WHEN_NIL = {
    "ErrorDetail": {"matches", "offer"},  # APIError.Detail: only for ambiguous_id / device_unavailable
}

_text = DOCUMENT.read_text(encoding="utf-8")
DOC = deserialize_yaml(_text)  # as schemathesis reads it (YAML 1.2 booleans, dates kept as text)
SCHEMAS = DOC["components"]["schemas"]
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


def resolve(ref: str):
    if not ref.startswith("#/"):
        raise KeyError(f"{ref}: only references inside the document are used")
    node = DOC
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, dict) or part not in node:
            raise KeyError(ref)
        node = node[part]
    return node


def deref(node):
    seen = set()
    while isinstance(node, dict) and "$ref" in node:
        if node["$ref"] in seen:
            raise KeyError(f"{node['$ref']}: a reference to itself")
        seen.add(node["$ref"])
        node = resolve(node["$ref"])
    return node


def walk(node, path=""):
    """Every (path, mapping) in the document."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            yield from walk(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from walk(value, f"{path}/{i}")


def operations():
    for route, item in DOC["paths"].items():
        for method in HTTP_METHODS:
            if method in item:
                yield f"{method.upper()} {route}", item, item[method]


def media_types():
    """(where, media type object, is a response) of every request body and response."""
    for name, op_item, op in operations():
        body = op.get("requestBody")
        if body is not None:
            for mime, media in deref(body).get("content", {}).items():
                yield f"{name} request {mime}", media, False
        for status, response in op.get("responses", {}).items():
            for mime, media in deref(response).get("content", {}).items():
                yield f"{name} {status} {mime}", media, True


SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf")
SUBSCHEMA_MAPS = ("properties", "patternProperties")
# Not `not`: an object schema there says what a body may not be (StartRecordingRequest).
SUBSCHEMAS = ("items", "additionalProperties")


def object_schemas(schema, where, found):
    """Every schema with `properties` reachable from `schema`, by (where, schema) — a component once,
    by its name."""
    if not isinstance(schema, dict):
        return
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        if name not in found:
            found[name] = None  # a cycle stops here
            target = resolve(schema["$ref"])
            object_schemas(target, name, found)
            found[name] = target
        return
    if "properties" in schema and where not in found:
        found[where] = schema
    for key in SUBSCHEMA_LISTS:
        for i, sub in enumerate(schema.get(key, [])):
            object_schemas(sub, f"{where}/{key}/{i}", found)
    for key in SUBSCHEMA_MAPS:
        for name, sub in schema.get(key, {}).items():
            object_schemas(sub, f"{where}/{name}", found)
    for key in SUBSCHEMAS:
        object_schemas(schema.get(key), f"{where}/{key}", found)


def reachable(is_response: bool):
    """The object schemas of request bodies, or of everything else: responses, the events of
    `GET /v1/events` and every component schema no request body uses."""
    requests = {}
    for where, media, response in media_types():
        if not response and "schema" in media:
            object_schemas(media["schema"], where, requests)
    if not is_response:
        found = requests
    else:
        found = {}
        for where, media, response in media_types():
            if response and "schema" in media:
                object_schemas(media["schema"], where, found)
        for name in SCHEMAS:
            if name not in requests:
                object_schemas({"$ref": f"#/components/schemas/{name}"}, name, found)
    return {name: schema for name, schema in found.items() if schema is not None and "properties" in schema}


def to_json_schema(node):
    """OpenAPI 3.0's schema dialect as JSON Schema draft 7: `nullable: true` → null allowed too."""
    if isinstance(node, list):
        return [to_json_schema(x) for x in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("example", "examples", "nullable", "discriminator", "xml", "externalDocs") or key.startswith("x-"):
            continue
        if key in SUBSCHEMA_MAPS:
            out[key] = {name: to_json_schema(sub) for name, sub in value.items()}
        elif key in SUBSCHEMA_LISTS or key in SUBSCHEMAS or key == "not":
            out[key] = to_json_schema(value)
        else:
            out[key] = value
    # Draft 4's boolean exclusiveMinimum/exclusiveMaximum (OpenAPI 3.0) as draft 6's numbers.
    for bound, exclusive in (("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")):
        if out.get(exclusive) is True and bound in out:
            out[exclusive] = out.pop(bound)
        elif out.get(exclusive) is False:
            del out[exclusive]
    if node.get("nullable") is True:
        out = {"anyOf": [out, {"type": "null"}]}
    return out


JSON_SCHEMAS = {name: to_json_schema(schema) for name, schema in SCHEMAS.items()}


_validators = {}


def validator(schema):
    key = json.dumps(schema, sort_keys=True, default=str)
    if key not in _validators:
        root = {"$schema": "http://json-schema.org/draft-07/schema#",
                "components": {"schemas": JSON_SCHEMAS}, "allOf": [to_json_schema(schema)]}
        _validators[key] = jsonschema_rs.Draft7Validator(root, validate_formats=True)
    return _validators[key]


def examples():
    """(where, example value, schema) of every example the document gives."""
    def of(where, holder, schema):
        if "example" in holder:
            yield f"{where}/example", holder["example"], schema
        for name, ex in holder.get("examples", {}).items():
            ex_where = f"{where}/examples/{name}"
            if "$ref" in ex:
                ex_where += f" ({ex['$ref']})"
            ex = deref(ex)
            if "value" in ex:
                yield ex_where, ex["value"], schema

    for where, media, _ in media_types():
        # A text/event-stream, text/csv or binary example is the text itself; only JSON bodies are checked.
        if "schema" in media and where.endswith("json"):
            yield from of(where, media, media["schema"])
    for name, op_item, op in operations():
        for parameter in list(op_item.get("parameters", [])) + list(op.get("parameters", [])):
            parameter = deref(parameter)
            if "schema" in parameter:
                yield from of(f"{name} parameter {parameter['name']}", parameter, parameter["schema"])
        for status, response in op.get("responses", {}).items():
            for header, spec in deref(response).get("headers", {}).items():
                spec = deref(spec)
                if "schema" in spec:
                    yield from of(f"{name} {status} header {header}", spec, spec["schema"])
    for name, response in DOC["components"].get("responses", {}).items():
        for mime, media in response.get("content", {}).items():
            if "schema" in media and mime.endswith("json"):
                yield from of(f"components/responses/{name} {mime}", media, media["schema"])
    # Schema-level examples (a schema's own `example`, at any depth).
    for path, node in walk(SCHEMAS, "components/schemas"):
        if "example" in node and ("type" in node or "$ref" in node or "properties" in node
                                  or any(k in node for k in SUBSCHEMA_LISTS)):
            yield f"{path}/example", node["example"], node


class DocumentIsPlainYAML(unittest.TestCase):
    def test_safe_load_reads_what_schemathesis_reads(self):
        def keys(node, path=""):
            if isinstance(node, dict):
                for key, value in node.items():
                    self.assertIsInstance(key, str, f"{path}: the key {key!r} is not a string to yaml.safe_load (quote it)")
                    keys(value, f"{path}/{key}")
            elif isinstance(node, list):
                for i, value in enumerate(node):
                    keys(value, f"{path}/{i}")
        keys(yaml.safe_load(_text))

    def test_no_merge_keys(self):
        # `<<: *x` is YAML 1.1 only; OpenAPI asks for YAML 1.2 and several tools keep `<<` as a key.
        self.assertIsNone(re.search(r"^\s*(- )?<<\s*:", _text, re.MULTILINE), "a YAML merge key (<<)")

    def test_each_anchor_is_defined_once_and_used(self):
        anchors, aliases = [], set()
        for event in yaml.parse(_text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent):
                aliases.add(event.anchor)
            elif isinstance(event, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)) and event.anchor:
                anchors.append(event.anchor)
        self.assertEqual(sorted(a for a in set(anchors) if anchors.count(a) > 1), [], "an anchor defined twice")
        self.assertEqual(sorted(set(anchors) - aliases), [], "an anchor no alias uses")


class References(unittest.TestCase):
    def test_every_ref_resolves(self):
        for path, node in walk(DOC):
            ref = node.get("$ref")
            if isinstance(ref, str):
                with self.subTest(path=path):
                    try:
                        resolve(ref)
                    except KeyError:
                        self.fail(f"{path}: $ref {ref} does not resolve")

    def test_every_component_is_used(self):
        refs = {node["$ref"] for _, node in walk(DOC) if isinstance(node.get("$ref"), str)}
        for kind in ("examples", "responses", "parameters", "headers"):
            for name in DOC["components"].get(kind, {}):
                with self.subTest(component=f"{kind}/{name}"):
                    self.assertIn(f"#/components/{kind}/{name}", refs, "nothing refers to it")


class Schemas(unittest.TestCase):
    def test_the_request_bodies_are_the_api_request_body_types(self):
        named = {media["schema"]["$ref"].rsplit("/", 1)[-1] if "$ref" in media.get("schema", {}) else where
                 for where, media, response in media_types() if not response and where.endswith("json")}
        self.assertEqual(named, REQUEST_BODIES, "REQUEST_BODIES lists the APIRequestBody types; a request body's schema is one")
        self.assertFalse(REQUEST_BODIES & set(reachable(is_response=True)), "a schema both a request body and in a response")

    def test_request_bodies_lists_the_swift_api_request_body_types(self):
        swift = set()
        for source in (DOCUMENT.parents[2] / "Sources/RecdAPI").glob("*.swift"):
            swift |= set(re.findall(r"\bstruct (\w+)\s*:[^{]*\bAPIRequestBody\b", source.read_text(encoding="utf-8")))
        self.assertEqual(swift, REQUEST_BODIES)

    def test_response_objects_are_closed_and_every_key_is_required(self):
        found = reachable(is_response=True)
        self.assertGreater(len(found), 50)
        for name, schema in found.items():
            with self.subTest(schema=name):
                self.assertIs(schema.get("additionalProperties"), False,
                              f"{name}: additionalProperties: false is missing (a key recd sends that the document lacks would pass)")
                omitted = OMITTED_WHEN_NIL.get(name, set())
                self.assertEqual(set(schema.get("required", [])), set(schema["properties"]) - omitted,
                                 f"{name}: required is not every property (recd sends every key; OMITTED_WHEN_NIL lists the exceptions)")
                self.assertEqual(len(schema.get("required", [])), len(set(schema.get("required", []))), f"{name}: required repeats a key")
        for name, keys in OMITTED_WHEN_NIL.items():
            self.assertTrue(keys <= set(SCHEMAS[name]["properties"]), f"OMITTED_WHEN_NIL: {name} has no {keys}")

    def test_request_bodies_refuse_unknown_keys(self):
        for name, schema in reachable(is_response=False).items():
            with self.subTest(schema=name):
                self.assertIs(schema.get("additionalProperties"), False, f"{name}: additionalProperties: false is missing")
                self.assertTrue(set(schema.get("required", [])) <= set(schema["properties"]), f"{name}: requires a key it has not")

    def test_every_component_schema_is_valid_json_schema(self):
        for name in SCHEMAS:
            with self.subTest(schema=name):
                validator({"$ref": f"#/components/schemas/{name}"})


class Examples(unittest.TestCase):
    def test_every_example_fits_its_schema(self):
        count = 0
        for where, value, schema in examples():
            count += 1
            with self.subTest(example=where):
                errors = [f"{'/'.join(map(str, e.instance_path)) or '(root)'}: {e.message}"
                          for e in validator(schema).iter_errors(value)]
                self.assertEqual(errors, [], f"{where}")
        self.assertGreater(count, 100)

    def test_every_component_example_is_used(self):
        refs = {node["$ref"] for _, node in walk(DOC) if isinstance(node.get("$ref"), str)}
        for name in DOC["components"].get("examples", {}):
            self.assertIn(f"#/components/examples/{name}", refs)


if __name__ == "__main__":
    unittest.main()
