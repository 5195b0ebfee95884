"""Chinese, Japanese and Korean text in the full-text index. Standard library only.

FTS5's unicode61 tokenizer makes a whole run of CJK characters (a sentence without
spaces) one token, so no word inside it could be found. The archive therefore keeps a
second indexed column holding each message's CJK characters one per token, and a
CJK query becomes a phrase of single characters in that column: any part of the
text, one character long or more, is found. (Why not the trigram tokenizer:
docs/search.md.)
"""

from __future__ import annotations

from subrosa.lazyre import compile_lazily

# CJK ideographs, kana, hangul (and their compatibility/extension blocks).
_CJK = compile_lazily(
    "[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u1100-\u11ff"
    "\u3130-\u318f\uf900-\ufaff\uff66-\uff9f\U00020000-\U0002fa1f]+"
)
# Joins CJK runs in the index column so that a phrase cannot match across two runs.
RUN_BREAK = " zzcjkbreak "
# For the index: runs that only spaces keep apart on one line are one run, their
# characters one per token as if the spaces were not there. Korean writes a space
# between words, and where is a matter of habit ("두 번" or "두번", "할 수" or "할수"):
# a query typed either way finds the other. Punctuation, other letters, digits and line
# ends still keep runs apart (a phrase never matches across "東京。大阪").
_SPACED = compile_lazily(_CJK.pattern + "(?:[ \t\u3000]+" + _CJK.pattern + ")*")
_SPACES = compile_lazily("[ \t\u3000]+")


def cjk_runs(text: str) -> list[str]:
    """The runs of CJK characters in `text`."""
    return [] if text.isascii() else _CJK.findall(text)


def has_cjk(text: str) -> bool:
    return not text.isascii() and _CJK.search(text) is not None


def cjk_index_text(text: str) -> str | None:
    """The CJK characters of `text` one per token, or None when there are none (runs
    apart only by spaces on one line are one run: _SPACED)."""
    runs = [] if text.isascii() else _SPACED.findall(text)
    if not runs:
        return None
    return RUN_BREAK.join(" ".join(_SPACES.sub("", run)) for run in runs)
