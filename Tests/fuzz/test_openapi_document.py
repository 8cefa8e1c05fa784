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
  and schemas) validates against its schema, and each event of the text/event-stream examples is a
  RecdEvent;
- the API types are the schemas (issue 46): each public Codable struct of Sources/RecdAPI that is a
  component schema has that schema's keys, no more, no fewer (read from the Swift: stored properties,
  CodingKeys, a request body's `fields`); each String enum has the values the document lists for it;
  a property of an API type is a `$ref` to its schema;
- a Recording is written out in full in at most four examples; every other example says one of them
  again with a YAML alias, so that a field added to Recording is added in few places.

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


# --- The Swift API types (Sources/RecdAPI) as the document's schemas ---------------------------------
#
# A field is added in the Codable type and in its component schema; the tests below hold the two
# to the same keys. The Swift is read, not compiled: a small scanner finds each type's stored
# properties, its `CodingKeys` (raw values), whether it writes its own `encode(to:)`, the raw values of
# a String enum's cases, and a request body's `fields`.

SWIFT_SOURCES = DOCUMENT.parents[2] / "Sources/RecdAPI"

# Swift types whose component schema has another name (nested types, mostly). Any other type is
# looked up by its own (innermost) name.
SCHEMA_NAMES = {
    "APIErrorBody": "Error",
    "APIErrorBody.Detail": "ErrorDetail",
    "APIErrorBody.Offer": "ErrorOffer",
    "APIErrorCode": "ErrorCode",
    "AudioDeviceInfo.Capabilities": "AudioDeviceCapabilities",
    "CameraInfo.Format": "CameraFormat",
    "CameraInfo.Size": "CameraSize",
    "LibraryChangedEvent.Change": "LibraryChange",
    "ListenStatus.State": "ListenState",
    "MeterEvent.Source": "MeterSource",
    "PlaybackEnded.Reason": "PlaybackEndReason",
    "PlaybackInfo.State": "PlaybackState",
    "RecordingStoppedEvent.Reason": "RecordingStopReason",
}

# Types that write their own `encode(to:)`: the scanner does not read the function, so each names the
# keys that stand in for what it writes — its `CodingKeys` or its `fields` (a request body) — and says why.
HAND_ENCODED = {
    # {seq, at, type, data}: `payload` (an enum) is written as `type` and `data`. The schema is a
    # `oneOf` of one object per event type (MeterRecdEvent, …), each with those four keys; what
    # `data` holds is a type of its own, checked here.
    "RecdEvent": "CodingKeys",
    # Its CodingKeys, an absent field (PatchField) left out and a `.null` one written as null.
    "MetadataPatch": "fields",
    # Its own CodingKeys and MetadataPatch's: the metadata is written into the same object. Its
    # `fields` are both.
    "StartRecordingRequest": "fields",
    "StopRecordingRequest": "fields",
}

# Object schemas (with `properties`) that are not a RecdAPI type, and why.
NOT_SWIFT_TYPES = {
    "RecordingCounts": "DaemonStatus.counts, a [String: Int] with the states as keys",
    "Waveform": "audiowaveform's JSON, written by WaveformData.json() (not Codable)",
    "EventStream": "one event as the SSE lines id/event/data (the `data` line is a RecdEvent)",
}


def _blank(chars, start, end):
    for k in range(start, end):
        if chars[k] != "\n":
            chars[k] = " "


def swift_mask(src):
    """(code, masked), both as long as `src`, line for line: comments blanked in both, and the
    contents of string literals blanked in `masked` (so that braces and keywords in them do not count)."""
    code, masked = list(src), list(src)
    i, n = 0, len(src)
    while i < n:
        if src.startswith("//", i):
            end = src.find("\n", i)
            end = n if end < 0 else end
            _blank(code, i, end)
            _blank(masked, i, end)
            i = end
        elif src.startswith("/*", i):
            depth, end = 1, i + 2
            while end < n and depth:
                if src.startswith("/*", end):
                    depth, end = depth + 1, end + 2
                elif src.startswith("*/", end):
                    depth, end = depth - 1, end + 2
                else:
                    end += 1
            _blank(code, i, end)
            _blank(masked, i, end)
            i = end
        elif (m := re.match(r'(#*)("""|")', src[i:i + 16])) and (m.group(1) or src[i] == '"'):
            hashes, quote = m.group(1), m.group(2)
            close = quote + hashes
            start = end = i + len(hashes) + len(quote)
            while end < n and not src.startswith(close, end):
                end += 2 if src[end] == "\\" and not hashes else 1
            _blank(masked, start, end)
            i = end + len(close)
        else:
            i += 1
    return "".join(code), "".join(masked)


class SwiftType:
    def __init__(self, kind, name, inherits, modifiers, source):
        self.kind, self.name, self.source = kind, name, source  # name: qualified (Outer.Inner)
        self.inherits = {s.strip().split("<")[0].split(".")[-1] for s in inherits.split(",") if s.strip()}
        self.public = "public" in modifiers.split()
        self.stored = []        # (name, type text) of stored instance properties, in order
        self.cases = []         # (case name, raw value) of an enum
        self.hand_encoded = False
        self.fields = None      # the code of `static let fields = …`

    @property
    def encodable(self):
        return bool(self.inherits & {"Codable", "Encodable"})


TYPE_DECL = re.compile(r"^((?:@\w+(?:\([^)]*\))?\s+|\w+\s+)*?)(struct|enum|class|actor|extension)\s+([\w.]+)"
                       r"\s*(?:<[^{]*?>)?\s*(?::([^{]*?))?\s*(?:where\s[^{]*)?\{\}$", re.S)
PROPERTY = re.compile(r"^((?:@\w+(?:\([^)]*\))?\s+|(?:public|internal|private|fileprivate|open|package)(?:\(set\))?\s+"
                      r"|(?:static|class|lazy|final|nonisolated|weak|unowned)\s+)*)(?:var|let)\s+(\w+)\s*(.*)$", re.S)


def statements(masked, code, start, end):
    """The statements of masked[start:end] at brace depth 0, each as (masked text, code text, blocks):
    a `{…}` block in it collapsed to `{}`, its (start, end) inside the braces kept in `blocks`. A
    statement ends at a newline or `;` outside parentheses and brackets."""
    out, pieces, blocks, parens = [], [], [], 0
    piece_start, i = start, start

    def continued(newline):
        """The statement goes on past this line: it ends with `,`, or the next line opens its block."""
        return masked[piece_start:newline].rstrip().endswith(",") or masked[newline:end].lstrip().startswith("{")

    def flush(upto):
        pieces.append((piece_start, upto))
        text = "".join(masked[a:b] for a, b in pieces).strip()
        if text:
            out.append((text, "".join(code[a:b] for a, b in pieces).strip(), list(blocks)))
        pieces.clear()
        blocks.clear()

    while i < end:
        c = masked[i]
        if c in "([":
            parens += 1
        elif c in ")]":
            parens -= 1
        elif c == "{":
            close = swift_match_brace(masked, i)
            pieces.append((piece_start, i + 1))
            blocks.append((i + 1, close))
            piece_start = i = close
            continue
        elif parens == 0 and (c == ";" or c == "\n" and not continued(i)):
            flush(i)
            piece_start = i + 1
        i += 1
    flush(end)
    return out


def swift_match_brace(masked, at):
    depth = 0
    for k in range(at, len(masked)):
        if masked[k] == "{":
            depth += 1
        elif masked[k] == "}":
            depth -= 1
            if depth == 0:
                return k
    raise ValueError("unbalanced braces")


def scan_swift(types, masked, code, start, end, outer, source, extensions):
    """Adds what masked[start:end] declares (at depth 0 there) to `types`, by qualified name: at the top
    level its types (`extensions` false) or its extensions (true: a second pass, every type known),
    with their members."""
    current = types.get(outer) if outer else None
    for text, code_text, blocks in statements(masked, code, start, end):
        decl = TYPE_DECL.match(text)
        if decl:
            modifiers, kind, name, inherits = decl.group(1), decl.group(2), decl.group(3), decl.group(4) or ""
            if outer is None and extensions != (kind == "extension"):
                continue
            if kind == "extension":
                if name not in types:
                    continue  # a type of another module (String, KeyedDecodingContainer)
                qualified = name
                types[qualified].inherits |= SwiftType(kind, name, inherits, "", source).inherits
            else:
                qualified = f"{outer}.{name}" if outer else name
                types[qualified] = SwiftType(kind, qualified, inherits, modifiers, source)
            (block_start, block_end), = blocks[-1:]
            scan_swift(types, masked, code, block_start, block_end, qualified, source, False)
            continue
        if current is None:
            continue
        if re.search(r"\bfunc\s+encode\s*\(\s*to\b", text):
            current.hand_encoded = True
        elif re.match(r"^(?:indirect\s+)?case\s", text) and current.kind == "enum":
            for part in re.split(r",(?![^(]*\))", code_text.split("case", 1)[1]):
                # A keyword as a case name is written in backticks: RecordingSource's `import`.
                m = re.match(r'\s*`?(\w+)`?\s*(?:=\s*"((?:[^"\\]|\\.)*)")?\s*$', part)
                if m:
                    current.cases.append((m.group(1), m.group(2) if m.group(2) is not None else m.group(1)))
                else:
                    current.cases.append((part.strip(), None))  # an associated value, a number
        else:
            prop = PROPERTY.match(text)
            if not prop:
                continue
            modifiers, name, rest = prop.groups()
            if re.search(r"\b(static|class)\b", modifiers):
                if name == "fields":
                    current.fields = PROPERTY.match(code_text).group(3).split("=", 1)[1].strip()
                continue
            before_value = rest.split("=", 1)[0]
            if "{" in before_value:
                continue  # computed (`{ get }`, a body) or with observers
            current.stored.append((name, before_value.lstrip(":").strip()))


def swift_types():
    types = {}
    sources = [(path.name, *swift_mask(path.read_text(encoding="utf-8")))
               for path in sorted(SWIFT_SOURCES.glob("*.swift"))]
    for extensions in (False, True):
        for name, code, masked in sources:
            scan_swift(types, masked, code, 0, len(masked), None, name, extensions)
    return types


SWIFT = swift_types()


def schema_name(swift_name):
    return SCHEMA_NAMES.get(swift_name, swift_name.rsplit(".", 1)[-1])


def encoded_keys(t):
    """The keys a struct writes: its CodingKeys' raw values, or its stored properties' names (what the
    synthesized Encodable writes); for a HAND_ENCODED one, what stands in for them."""
    coding_keys = SWIFT.get(f"{t.name}.CodingKeys")
    if t.hand_encoded and HAND_ENCODED.get(t.name) == "fields":
        return request_fields(t)
    if coding_keys is not None:
        return {raw for _, raw in coding_keys.cases}
    return {name for name, _ in t.stored}


def request_fields(t):
    r"""A request body's `fields`: `CodingKeys.allCases.map(\.rawValue)`, `["a", "b"]`, `Other.fields`
    and sums of them."""
    keys = set()
    for term in re.split(r"\s\+\s", t.fields):
        term = term.strip()
        if term == r"CodingKeys.allCases.map(\.rawValue)":
            keys |= {raw for _, raw in SWIFT[f"{t.name}.CodingKeys"].cases}
        elif re.fullmatch(r"(\w+)\.fields", term):
            keys |= request_fields(SWIFT[term.split(".")[0]])
        elif re.fullmatch(r'\[\s*("[^"]*"\s*,\s*)*("[^"]*")?\s*\]', term):
            keys |= set(re.findall(r'"([^"]*)"', term))
        else:
            raise ValueError(f"{t.name}.fields: cannot read {term!r}")
    return keys


def object_alternatives(name):
    """The object schemas a component is: itself, or each alternative of its oneOf/anyOf (SeekRequest:
    `by` or `to`; RecdEvent: one per event type), by (where, schema)."""
    schema = SCHEMAS[name]
    if "properties" in schema:
        return [(name, schema)]
    found = []
    for key in ("oneOf", "anyOf"):
        for i, sub in enumerate(schema.get(key, [])):
            where = sub["$ref"].rsplit("/", 1)[-1] if "$ref" in sub else f"{name}/{key}/{i}"
            found.append((where, deref(sub)))
    return found if found and all("properties" in s for _, s in found) else []


def resolve_swift_type(type_text, scope):
    """The Swift type a property's type names (`Purpose?`, `[Marker]`, `State` inside PlaybackInfo),
    looked up from the property's type outwards; None for a standard type."""
    name = re.sub(r"[?!\[\]\s]", "", type_text)
    if not re.fullmatch(r"[\w.]+", name):
        return None  # a dictionary, a generic
    parts = scope.split(".")
    for depth in range(len(parts), -1, -1):
        qualified = ".".join(parts[:depth] + [name])
        if qualified in SWIFT:
            return SWIFT[qualified]
    return None


def enum_values(schema):
    """The `enum` values (null left out) a property's schema allows, through $ref, items, anyOf and
    oneOf; None when it lists none."""
    schema = deref(schema)
    if "enum" in schema:
        return {v for v in schema["enum"] if v is not None}
    if "items" in schema:
        return enum_values(schema["items"])
    found = [v for key in ("anyOf", "oneOf", "allOf") for sub in schema.get(key, [])
             if (v := enum_values(sub)) is not None]
    return set().union(*found) if found else None


def differences(name, swift_name, source, swift_keys, document_keys, what="keys"):
    missing, extra = sorted(swift_keys - document_keys), sorted(document_keys - swift_keys)
    if not missing and not extra:
        return None
    parts = [f"{name} (Swift {swift_name}, Sources/RecdAPI/{source}): the {what} differ."]
    if missing:
        parts.append(f"In the Swift type, not in the document: {', '.join(missing)}.")
    if extra:
        parts.append(f"In the document, not in the Swift type: {', '.join(extra)}.")
    return " ".join(parts)


def api_structs():
    """The public Encodable structs of Sources/RecdAPI that are component schemas, by Swift name."""
    return {name: t for name, t in SWIFT.items()
            if t.kind == "struct" and t.public and t.encodable and schema_name(name) in SCHEMAS}


def string_enums():
    return {name: t for name, t in SWIFT.items()
            if t.kind == "enum" and "String" in t.inherits and t.encodable}


def properties_of_types(types):
    """(Swift name, its type, where in the document, the object schema, property, its Swift type text,
    the property's type in `types`) for each stored property of an API struct whose type is one of
    `types` and which the schema has."""
    for swift_name, t in sorted(api_structs().items()):
        for where, schema in object_alternatives(schema_name(swift_name)):
            for prop, type_text in t.stored:
                target = resolve_swift_type(type_text, swift_name)
                if target is not None and target.name in types and prop in schema["properties"]:
                    yield swift_name, t, where, schema, prop, type_text, target


class SwiftTypesAreTheSchemas(unittest.TestCase):
    """Each public Codable struct of Sources/RecdAPI whose name (or SCHEMA_NAMES's) is a component schema
    has that schema's keys, no more and no fewer; each String enum has the values of its schema, or of
    the properties of that type."""

    def test_the_scanner_reads_the_sources(self):
        recording = SWIFT["Recording"]
        self.assertEqual([n for n, _ in recording.stored][:3], ["id", "type", "state"])
        self.assertIn("loudness", encoded_keys(recording))  # `@Nullable public var`
        self.assertEqual(SWIFT["RecordingType"].stored, [])  # computed: `var fileExtension: String { … }`
        self.assertNotIn("minimumSeconds", encoded_keys(SWIFT["TrimRequest"]))  # static
        self.assertIn(("wrongPassword", "wrong-password"), SWIFT["BackupFailure"].cases)  # raw values
        code, masked = swift_mask("public enum E: String, Codable { case a, `import`, c = \"see\" }")
        types = {}
        scan_swift(types, masked, code, 0, len(masked), None, "(here)", False)
        self.assertEqual(types["E"].cases, [("a", "a"), ("import", "import"), ("c", "see")])  # `keyword`
        self.assertIn("deleteAllRolledBack", encoded_keys(SWIFT["RecoveryReport"]))  # `var x = false`
        self.assertIn("sample_rate", encoded_keys(SWIFT["WaveformData"]))  # CodingKeys
        self.assertIn("DaemonStatus.ActiveRecording", SWIFT)  # nested
        self.assertTrue(SWIFT["RecdEvent"].hand_encoded)
        self.assertEqual(request_fields(SWIFT["StartRecordingRequest"]), {"title", "notes", "purpose", "type", "audio", "format"})
        self.assertGreater(len(api_structs()), 60)

    def test_every_api_struct_has_its_schemas_keys(self):
        problems = []
        for swift_name, t in sorted(api_structs().items()):
            name = schema_name(swift_name)
            if t.hand_encoded and swift_name not in HAND_ENCODED:
                problems.append(f"{swift_name} (Sources/RecdAPI/{t.source}) writes its own encode(to:): list it in "
                                "HAND_ENCODED with the keys that stand in for what it writes")
                continue
            alternatives = object_alternatives(name)
            if not alternatives:
                problems.append(f"{name} (Swift {swift_name}) is not an object schema (properties, or a oneOf of them)")
            for where, schema in alternatives:
                problems.append(differences(where, swift_name, t.source, encoded_keys(t), set(schema["properties"])))
            if t.fields is not None:  # a request body: the keys it takes
                for where, schema in alternatives:
                    problems.append(differences(where, swift_name, t.source, request_fields(t), set(schema["properties"]),
                                                "keys it takes (its `fields`)"))
        problems = [p for p in problems if p]
        if problems:
            self.fail("\n" + "\n".join(problems))

    def test_hand_encoded_lists_only_hand_encoded_types(self):
        for name, keys in HAND_ENCODED.items():
            with self.subTest(type=name):
                self.assertIn(name, SWIFT, "HAND_ENCODED names a type Sources/RecdAPI does not have")
                self.assertTrue(SWIFT[name].hand_encoded, f"{name} no longer writes its own encode(to:)")
                self.assertIn(keys, ("CodingKeys", "fields"))
                self.assertTrue(SWIFT[name].fields is not None if keys == "fields" else f"{name}.CodingKeys" in SWIFT)

    def test_every_object_schema_is_an_api_struct(self):
        structs = {schema_name(n) for n in api_structs()}
        alternatives = {where for n in structs for where, _ in object_alternatives(n)}
        for name, schema in SCHEMAS.items():
            if "properties" in schema and name not in structs | alternatives:
                with self.subTest(schema=name):
                    self.assertIn(name, NOT_SWIFT_TYPES,
                                  f"{name}: no public Codable struct of Sources/RecdAPI has this name (SCHEMA_NAMES "
                                  "maps a nested or renamed one); else list it in NOT_SWIFT_TYPES")
        for name in NOT_SWIFT_TYPES:
            self.assertIn("properties", SCHEMAS.get(name, {}), f"NOT_SWIFT_TYPES: {name} is not an object schema")
            self.assertNotIn(name, structs | alternatives, f"NOT_SWIFT_TYPES: {name} is a Swift type now")

    def test_properties_of_an_api_struct_type_refer_to_its_schema(self):
        """`PlaybackInfo.recording: Recording` is `$ref: …/Recording`, not a copy of its keys."""
        def refs(schema):
            found = {schema["$ref"].rsplit("/", 1)[-1]} if "$ref" in schema else set()
            for key in ("items", "additionalProperties"):
                if isinstance(schema.get(key), dict):
                    found |= refs(schema[key])
            for key in SUBSCHEMA_LISTS:
                for sub in schema.get(key, []):
                    found |= refs(sub)
            return found

        problems, checked = [], 0
        structs = api_structs()
        for swift_name, t, where, schema, prop, type_text, target in properties_of_types(structs):
            checked += 1
            if schema_name(target.name) not in refs(schema["properties"][prop]):
                problems.append(f"{where}.{prop} (Swift {swift_name}.{prop}: {type_text}, Sources/RecdAPI/{t.source}): "
                                f"not a $ref to #/components/schemas/{schema_name(target.name)}")
        self.assertGreater(checked, 40)
        if problems:
            self.fail("\n" + "\n".join(problems))

    def test_string_enums_that_are_schemas_have_their_values(self):
        problems, checked = [], 0
        for swift_name, t in sorted(string_enums().items()):
            name = schema_name(swift_name)
            if "enum" in SCHEMAS.get(name, {}):
                checked += 1
                problems.append(differences(name, swift_name, t.source, {raw for _, raw in t.cases},
                                            {v for v in SCHEMAS[name]["enum"] if v is not None}, "values"))
        self.assertGreater(checked, 15)
        problems = [p for p in problems if p]
        if problems:
            self.fail("\n" + "\n".join(problems))

    def test_properties_of_a_string_enum_type_have_its_values(self):
        """The enums the document spells inline (Recording.format: RecordingFormat), or by a $ref."""
        problems, checked = [], 0
        enums = string_enums()
        for swift_name, t, where, schema, prop, type_text, target in properties_of_types(enums):
            checked += 1
            values = enum_values(schema["properties"][prop])
            if values is None:
                problems.append(f"{where}.{prop} (Swift {swift_name}.{prop}: {target.name}, Sources/RecdAPI/"
                                f"{t.source}): the document lists no enum values")
            else:
                problems.append(differences(f"{where}.{prop}", f"{target.name}", target.source,
                                            {raw for _, raw in target.cases}, values, "values"))
        self.assertGreater(checked, 20)
        problems = [p for p in problems if p]
        if problems:
            self.fail("\n" + "\n".join(problems))

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

    def event_stream_examples(self):
        """(where, id, event, data) of each event in the text/event-stream examples."""
        for where, media, _ in media_types():
            if where.endswith("text/event-stream"):
                for name, example in media.get("examples", {}).items():
                    for block in deref(example)["value"].split("\n\n"):
                        fields = dict(line.split(": ", 1) for line in block.splitlines() if not line.startswith(":"))
                        if fields:
                            yield f"{where}/examples/{name} event {fields.get('id')}", fields

    def test_event_stream_examples_are_recd_events(self):
        count = 0
        for where, fields in self.event_stream_examples():
            count += 1
            with self.subTest(example=where):
                self.assertEqual(set(fields), {"id", "event", "data"})
                event = json.loads(fields["data"])
                errors = [f"{'/'.join(map(str, e.instance_path)) or '(root)'}: {e.message}"
                          for e in validator({"$ref": "#/components/schemas/RecdEvent"}).iter_errors(event)]
                self.assertEqual(errors, [])
                self.assertEqual((fields["id"], fields["event"]), (str(event["seq"]), event["type"]))
        self.assertGreater(count, 5)

    def test_a_recording_is_written_out_in_few_examples(self):
        """Adding a field to Recording means adding it to the schema and to these few example
        recordings; every other example says one of them again (a YAML alias, `*name`)."""
        keys = set(SCHEMAS["Recording"]["properties"])
        found = {}

        def visit(node, path):
            if isinstance(node, yaml.MappingNode):
                names = {k.value for k, _ in node.value}
                values = dict((k.value, v) for k, v in node.value)
                if names == keys and isinstance(values["id"], yaml.ScalarNode):
                    found.setdefault(id(node), f"line {node.start_mark.line + 1} ({path})")
                    return
                for k, v in node.value:
                    visit(v, f"{path}/{k.value}")
            elif isinstance(node, yaml.SequenceNode):
                for i, v in enumerate(node.value):
                    visit(v, f"{path}/{i}")

        visit(yaml.compose(_text, Loader=yaml.SafeLoader), "")
        for where, fields in self.event_stream_examples():
            data = json.loads(fields["data"]).get("data")
            for _, node in walk(data):
                if len(set(node) & keys) > len(keys) // 2:  # a Recording, even one missing a key
                    found[where] = f"{where} (a Recording as JSON text)"
        # Four: one being recorded, a silent video being recorded (its `format` and `loudness` are
        # null), one saved and played, and one just saved (playCount 0, lastPlayedAt null: what the
        # stop and save replies return). A reply that needs yet another (an import, a pending or a
        # missing recording, a video with sound) has no example rather than a wrong one.
        self.assertLessEqual(len(found), 4, "written out in full at:\n" + "\n".join(sorted(found.values())))


if __name__ == "__main__":
    unittest.main()
