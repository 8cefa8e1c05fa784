"""Schemathesis hooks for recd's OpenAPI document (loaded through SCHEMATHESIS_HOOKS=recd_formats).

The document names two string formats JSON Schema cannot state: titles and notes are limited in
user-perceived characters (grapheme clusters), which `maxLength` (code points) does not count. They
are in request bodies and in an import's query (`title`, `notes`). These strategies generate values
that are valid by recd's rules, so a refusal of one is a real disagreement; the document's `pattern`
(no control characters, no bidirectional overrides or isolates) still applies on top of them.

Negative testing cannot use them the other way round. To violate a format it drops the keyword and
draws any string, and it judges every custom format as failed, since it has no checker for one: a
short note drawn that way is counted as "schema-violating" although recd's rule allows it, and recd
rightly accepts it. `filter_failure` below checks such a value by recd's rule (graphemes counted as
Swift counts them, `\\X` in the `regex` module) and drops the failure only when the value is valid.

The event stream (`GET /v1/events`) never ends. Schemathesis reads an event stream until the
request timeout passes, and that same timeout is its wait for the response's head: a one-second
timeout on the operation (how it was read before issue 46) failed the run whenever recd took over a
second to answer, as a loaded machine makes it (a compiler beside the test; seed 416016772). So the
head gets the timeout every operation gets (10 s), and `before_call` below gives each call a
response hook that, once the head is there, reads an event stream for `STREAM_SECONDS` only.
"""
import time
import unicodedata

import regex
from hypothesis import strategies as st
from urllib3.exceptions import ReadTimeoutError

import schemathesis
from schemathesis.core.failures import AcceptedNegativeData
from schemathesis.core.mutations import OperatorKind
from schemathesis.core.parameters import ParameterLocation

TITLE_MAX = 40   # MetadataLimits.titleMaxCharacters
NOTES_MAX = 200  # MetadataLimits.notesMaxCharacters

# The bidirectional overrides and isolates recd refuses as it refuses controls (MetadataRules).
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"

# Every character but controls (Cc), surrogates (Cs), the line/paragraph separators (which a title
# refuses as line breaks) and the bidirectional overrides and isolates. Combining marks are in: they
# make graphemes of several code points.
_TEXT = st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp"), exclude_characters=BIDI_CONTROLS)

# At most 40 code points is at most 40 graphemes, whatever they combine into.
schemathesis.openapi.format("recd-title", st.text(_TEXT, max_size=TITLE_MAX))
# Notes keep line breaks (CRLF is stored as LF).
schemathesis.openapi.format(
    "recd-notes",
    st.lists(st.one_of(_TEXT, st.sampled_from(["\n", "\r\n"])), max_size=NOTES_MAX).map("".join),
)

# The fields that carry a recd format, by property (body) or parameter (query) name.
_FORMATTED_FIELDS = ("title", "notes")
# Where they are: a body's properties, an import's query parameters.
_FORMATTED_LOCATIONS = (ParameterLocation.BODY, ParameterLocation.QUERY)


def graphemes(text: str) -> int:
    """User-perceived characters (extended grapheme clusters, UAX #29), as Swift's `String.count`."""
    return len(regex.findall(r"\X", text))


def _trimmed(text: str) -> str:
    # Foundation's CharacterSet.whitespaces: the space separators (Zs) and the tab.
    def blank(c: str) -> bool:
        return c == "\t" or unicodedata.category(c) == "Zs"

    start, end = 0, len(text)
    while start < end and blank(text[start]):
        start += 1
    while end > start and blank(text[end - 1]):
        end -= 1
    return text[start:end]


def within_format(field: str, value: object) -> bool:
    """Whether `value` keeps the length rule of the field's format, as MetadataRules.validate counts.

    Only the format's own rule: a draw that negated the format alone kept the pattern (controls, line
    breaks). A title is counted after trimming; notes after CRLF becomes LF.
    """
    if not isinstance(value, str):
        return False
    if field == "title":
        return graphemes(_trimmed(value)) <= TITLE_MAX
    if field == "notes":
        return graphemes(value.replace("\r\n", "\n")) <= NOTES_MAX
    return False


def formatted_field(mutation) -> str | None:
    """The title or notes (a body's property or a query parameter) whose `format` alone a mutation
    negated, else None."""
    if (
        mutation.operator != OperatorKind.NEGATE_CONSTRAINTS
        or tuple(mutation.keywords) != ("format",)
        or mutation.parameter_location not in _FORMATTED_LOCATIONS
    ):
        return None
    segments = mutation.schema_pointer.split("/")
    named = [segments[i + 1] for i, s in enumerate(segments[:-1]) if s == "properties"]
    return named[-1] if named and named[-1] in _FORMATTED_FIELDS else None


def only_valid_formats_negated(mutations, body, query=None) -> bool:
    """True when every mutation negated a recd format alone and the drawn value keeps that format."""
    if not mutations:
        return False
    for mutation in mutations:
        field = formatted_field(mutation)
        values = body if mutation.parameter_location == ParameterLocation.BODY else query
        if field is None or not isinstance(values, dict) or not within_format(field, values.get(field)):
            return False
    return True


@schemathesis.hook
def filter_failure(context, failure, case, response) -> bool:
    """Keeps every failure but "schema-violating request accepted" for a body or query whose only
    violation was a recd format that the value in fact keeps (see the module's comment)."""
    if not isinstance(failure, AcceptedNegativeData) or case.meta is None:
        return True
    mutations = getattr(case.meta.phase.data, "mutations", ())
    return not only_valid_formats_negated(mutations, case.body, case.query)


# How long an event stream is read once its head has come: its opening comment, and what events
# come in that time.
STREAM_SECONDS = 1.0


def read_stream_briefly(response, *args, **kwargs):
    """A requests response hook: an event stream's body ends `STREAM_SECONDS` after its head came (a
    read waits no longer than what is left, and then the body reads as ended). Other responses are
    left as they are."""
    if "text/event-stream" not in response.headers.get("Content-Type", ""):
        return response
    raw = response.raw
    sock = getattr(getattr(raw, "connection", None), "sock", None)
    if sock is None:
        return response
    deadline = time.monotonic() + STREAM_SECONDS
    read1 = raw.read1

    def read1_until_deadline(*a, **kw):
        left = deadline - time.monotonic()
        if left <= 0:
            return b""
        sock.settimeout(left)
        try:
            return read1(*a, **kw)
        except (ReadTimeoutError, TimeoutError):   # urllib3's, and the socket's own
            return b""

    raw.read1 = read1_until_deadline
    return response


@schemathesis.hook
def before_call(context, case, kwargs):
    """Every call carries the response hook that reads an event stream briefly (see the module's
    comment): requests calls it once the response's head has come, within the operation's timeout."""
    hooks = kwargs.setdefault("hooks", {})
    response_hooks = hooks.get("response", [])
    if callable(response_hooks):
        response_hooks = [response_hooks]
    if read_stream_briefly not in response_hooks:
        hooks["response"] = [*response_hooks, read_stream_briefly]
