"""Diacritics folded as the SQLite archive's tokenizer folds them, for a PostgreSQL server.

FTS5's `unicode61 remove_diacritics 2` (subrosa.schema) folds a Latin letter with a
diacritic to its plain letter in the index and in the query: `cafe` finds café, `é*` is
`e*`, `über` is `uber`; ß, æ, ł and ø stay as they are. A server's `words` vector
(to_tsvector 'simple') kept them, so the two engines found other messages for the same
query (docs/team.md, "Diacritics"). Since migration 0021 the server folds the text and
terms its words are cut from with this table (the SQL function `subrosa_fold(text)`,
IMMUTABLE, in the generated column), and its queries fold their words with it in
Python (`fold()`).

The table is FTS5's own: every code point whose token under `remove_diacritics 2`
differs from its token under `remove_diacritics 0`, read from FTS5
(tests/test_fold.py builds it again from the running SQLite and compares). Every
letter folds to one ASCII letter; MARKS, the combining marks FTS5 drops from a token
(`e` followed by U+0301 is `e`), fold to nothing. unicode61 is frozen at Unicode 6.1, so
the table does not move with SQLite's version.
"""

from __future__ import annotations

from functools import cache

FOLDS = {
    "a": (
        "\xc0\xc1\xc2\xc3\xc4\xc5\xe0\xe1\xe2\xe3\xe4\xe5\u0100\u0101\u0102\u0103\u0104"
        "\u0105\u01cd\u01ce\u01de\u01df\u01fa\u01fb\u0200\u0201\u0202\u0203\u0226\u0227"
        "\u1e00\u1e01\u1ea0\u1ea1\u1ea2\u1ea3\u1ea4\u1ea5\u1ea6\u1ea7\u1ea8\u1ea9\u1eaa"
        "\u1eab\u1eac\u1ead\u1eae\u1eaf\u1eb0\u1eb1\u1eb2\u1eb3\u1eb4\u1eb5\u1eb6\u1eb7"
        "\u212b"
    ),
    "b": "\u1e02\u1e03\u1e04\u1e05\u1e06\u1e07",
    "c": "\xc7\xe7\u0106\u0107\u0108\u0109\u010a\u010b\u010c\u010d\u1e08\u1e09",
    "d": "\u010e\u010f\u1e0a\u1e0b\u1e0c\u1e0d\u1e0e\u1e0f\u1e10\u1e11\u1e12\u1e13",
    "e": (
        "\xc8\xc9\xca\xcb\xe8\xe9\xea\xeb\u0112\u0113\u0114\u0115\u0116\u0117\u0118"
        "\u0119\u011a\u011b\u0204\u0205\u0206\u0207\u0228\u0229\u1e14\u1e15\u1e16\u1e17"
        "\u1e18\u1e19\u1e1a\u1e1b\u1e1c\u1e1d\u1eb8\u1eb9\u1eba\u1ebb\u1ebc\u1ebd\u1ebe"
        "\u1ebf\u1ec0\u1ec1\u1ec2\u1ec3\u1ec4\u1ec5\u1ec6\u1ec7"
    ),
    "f": "\u1e1e\u1e1f",
    "g": ("\u011c\u011d\u011e\u011f\u0120\u0121\u0122\u0123\u01e6\u01e7\u01f4\u01f5\u1e20\u1e21"),
    "h": (
        "\u0124\u0125\u021e\u021f\u1e22\u1e23\u1e24\u1e25\u1e26\u1e27\u1e28\u1e29\u1e2a\u1e2b\u1e96"
    ),
    "i": (
        "\xcc\xcd\xce\xcf\xec\xed\xee\xef\u0128\u0129\u012a\u012b\u012c\u012d\u012e"
        "\u012f\u0130\u01cf\u01d0\u0208\u0209\u020a\u020b\u1e2c\u1e2d\u1e2e\u1e2f\u1ec8"
        "\u1ec9\u1eca\u1ecb"
    ),
    "j": "\u0134\u0135\u01f0",
    "k": "\u0136\u0137\u01e8\u01e9\u1e30\u1e31\u1e32\u1e33\u1e34\u1e35",
    "l": ("\u0139\u013a\u013b\u013c\u013d\u013e\u1e36\u1e37\u1e38\u1e39\u1e3a\u1e3b\u1e3c\u1e3d"),
    "m": "\u1e3e\u1e3f\u1e40\u1e41\u1e42\u1e43",
    "n": (
        "\xd1\xf1\u0143\u0144\u0145\u0146\u0147\u0148\u01f8\u01f9\u1e44\u1e45\u1e46"
        "\u1e47\u1e48\u1e49\u1e4a\u1e4b"
    ),
    "o": (
        "\xd2\xd3\xd4\xd5\xd6\xf2\xf3\xf4\xf5\xf6\u014c\u014d\u014e\u014f\u0150\u0151"
        "\u01a0\u01a1\u01d1\u01d2\u01ea\u01eb\u01ec\u01ed\u020c\u020d\u020e\u020f\u022a"
        "\u022b\u022c\u022d\u022e\u022f\u0230\u0231\u1e4c\u1e4d\u1e4e\u1e4f\u1e50\u1e51"
        "\u1e52\u1e53\u1ecc\u1ecd\u1ece\u1ecf\u1ed0\u1ed1\u1ed2\u1ed3\u1ed4\u1ed5\u1ed6"
        "\u1ed7\u1ed8\u1ed9\u1eda\u1edb\u1edc\u1edd\u1ede\u1edf\u1ee0\u1ee1\u1ee2\u1ee3"
    ),
    "p": "\u1e54\u1e55\u1e56\u1e57",
    "r": (
        "\u0154\u0155\u0156\u0157\u0158\u0159\u0210\u0211\u0212\u0213\u1e58\u1e59\u1e5a"
        "\u1e5b\u1e5c\u1e5d\u1e5e\u1e5f"
    ),
    "s": (
        "\u015a\u015b\u015c\u015d\u015e\u015f\u0160\u0161\u0218\u0219\u1e60\u1e61\u1e62"
        "\u1e63\u1e64\u1e65\u1e66\u1e67\u1e68\u1e69\u1e9b"
    ),
    "t": (
        "\u0162\u0163\u0164\u0165\u021a\u021b\u1e6a\u1e6b\u1e6c\u1e6d\u1e6e\u1e6f\u1e70\u1e71\u1e97"
    ),
    "u": (
        "\xd9\xda\xdb\xdc\xf9\xfa\xfb\xfc\u0168\u0169\u016a\u016b\u016c\u016d\u016e"
        "\u016f\u0170\u0171\u0172\u0173\u01af\u01b0\u01d3\u01d4\u01d5\u01d6\u01d7\u01d8"
        "\u01d9\u01da\u01db\u01dc\u0214\u0215\u0216\u0217\u1e72\u1e73\u1e74\u1e75\u1e76"
        "\u1e77\u1e78\u1e79\u1e7a\u1e7b\u1ee4\u1ee5\u1ee6\u1ee7\u1ee8\u1ee9\u1eea\u1eeb"
        "\u1eec\u1eed\u1eee\u1eef\u1ef0\u1ef1"
    ),
    "v": "\u1e7c\u1e7d\u1e7e\u1e7f",
    "w": "\u0174\u0175\u1e80\u1e81\u1e82\u1e83\u1e84\u1e85\u1e86\u1e87\u1e88\u1e89\u1e98",
    "x": "\u1e8a\u1e8b\u1e8c\u1e8d",
    "y": (
        "\xdd\xfd\xff\u0176\u0177\u0178\u0232\u0233\u1e8e\u1e8f\u1e99\u1ef2\u1ef3\u1ef4"
        "\u1ef5\u1ef6\u1ef7\u1ef8\u1ef9"
    ),
    "z": "\u0179\u017a\u017b\u017c\u017d\u017e\u1e90\u1e91\u1e92\u1e93\u1e94\u1e95",
}
MARKS = (
    "\u0300\u0301\u0302\u0303\u0304\u0306\u0307\u0308\u0309"
    "\u030a\u030b\u030c\u030f\u0311\u031b\u0323\u0324\u0325\u0326\u0327\u0328\u032d\u032e\u0330\u0331"
)


# translate()'s two strings: each letter of FROM becomes the letter at its place in TO;
# FROM's characters past TO's length (the marks) are dropped.
FROM = "".join(FOLDS.values()) + MARKS
TO = "".join(letter * len(variants) for letter, variants in FOLDS.items())


@cache
def _tables() -> tuple[dict[int, int | None], dict[int, int]]:
    """str.translate()'s tables: letters folded and marks dropped; letters alone. Made
    when a text past ASCII first asks (~0.2 ms: `subrosa search` imports this module,
    and most of what it folds is ASCII)."""
    return str.maketrans(FROM[: len(TO)], TO, MARKS), str.maketrans(FROM[: len(TO)], TO)


def fold(word: str) -> str:
    """A word with its diacritics folded as FTS5 folds them (`Élan` and `élan` -> `elan`,
    `über` -> `uber`); characters outside the table are kept as they are."""
    return word.translate(_tables()[0]) if not word.isascii() else word


def fold_text(text: str) -> tuple[str, list[int] | None]:
    """`text` folded as the index folds it (its letters folded, its marks dropped), and
    where each of its characters is in `text` (then len(text)), for marking where a
    message matched a folded word (`cafe` in `Café`); None for the places when they
    are the same (no mark dropped: most texts)."""
    if text.isascii():
        return text, None
    if not any(mark in text for mark in MARKS):
        return text.translate(_tables()[1]), None
    kept = [i for i, char in enumerate(text) if char not in MARKS]
    folded = "".join(text[i] for i in kept).translate(_tables()[1])
    return folded, [*kept, len(text)]
