"""Whether a line is plain: nothing subrosa.text's sanitizer would change in it.

Printable ASCII without a tag (`<`), an entity (`&`) or brackets that could join into a
link (`](`, `[[`) comes out of `subrosa.text.terminal_line` as it went in, so the hooks
and `subrosa search` print such a line without importing that module (~4 ms a process).
One rule for both, kept beside nothing else: standard library only, no imports at all.
"""

from __future__ import annotations


def is_plain(text: str) -> bool:
    """True when `text` holds nothing terminal_line would drop or escape."""
    return (
        text.isascii()
        and text.isprintable()
        and "<" not in text
        and "&" not in text
        and "](" not in text
        and "[[" not in text
    )
