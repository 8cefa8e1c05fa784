"""Schemathesis hooks for recd's OpenAPI document (loaded through SCHEMATHESIS_HOOKS=recd_formats).

The document names two string formats JSON Schema cannot state: titles and notes are limited in
user-perceived characters (grapheme clusters), which `maxLength` (code points) does not count.
These strategies generate values that are valid by recd's rules, so a refusal of one is a real
disagreement; the document's `pattern` (no control characters) still applies on top of them.
"""
from hypothesis import strategies as st

import schemathesis

# Every character but controls (Cc), surrogates (Cs) and the line/paragraph separators (which a
# title refuses as line breaks). Combining marks are in: they make graphemes of several code points.
_TEXT = st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp"))

# At most 40 code points is at most 40 graphemes, whatever they combine into.
schemathesis.openapi.format("recd-title", st.text(_TEXT, max_size=40))
# Notes keep line breaks (CRLF is stored as LF).
schemathesis.openapi.format(
    "recd-notes",
    st.lists(st.one_of(_TEXT, st.sampled_from(["\n", "\r\n"])), max_size=200).map("".join),
)
