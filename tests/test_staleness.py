"""Document 002's staleness rules, as pure functions: no database, no files."""

from __future__ import annotations

from datetime import date, timedelta

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from subrosa.memory.staleness import (
    DORMANT_DAYS,
    OLD_DATE_DAYS,
    STATUS_WORDS,
    TERMINAL_WORDS,
    Verdict,
    assess,
    dates_in,
    hook_signals,
    leaf_signal,
    terminal_word,
)

TODAY = date(2026, 11, 29)
MONTH_NAMES = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def _verdict(
    hook: str = "A plain hook",
    leaf: str | None = "A plain body.",
    *,
    pinned: bool = False,
    hits: int = 3,
    changed: date = TODAY,
    today: date = TODAY,
) -> Verdict | None:
    return assess(
        hook=hook, leaf_text=leaf, pinned=pinned, hits=hits, last_changed=changed, today=today
    )


def _any_case(word: str) -> st.SearchStrategy[str]:
    return st.lists(st.booleans(), min_size=len(word), max_size=len(word)).map(
        lambda upper: "".join(c.upper() if u else c for c, u in zip(word, upper, strict=True))
    )


cased_terminal = st.sampled_from(TERMINAL_WORDS).flatmap(_any_case)
separators = st.text(alphabet=' \t;,.!?()#*"/=+', max_size=4)


# --- the hook: terminal words --------------------------------------------------


@given(word=cased_terminal, before=separators, after=separators)
def test_a_terminal_word_counts_as_a_whole_word_in_any_case(
    word: str, before: str, after: str
) -> None:
    assert terminal_word(f"Spike{before} {word}{after}") == word


@given(
    word=cased_terminal,
    glue_before=st.sampled_from(["", "un", "x", "9", "_", "pre-", "o'"]),
    glue_after=st.sampled_from(["", "ness", "s", "r", "1", "_x", "-source", "'s"]),
)
def test_a_terminal_word_inside_another_word_does_not_count(
    word: str, glue_before: str, glue_after: str
) -> None:
    assume(glue_before or glue_after)
    assert terminal_word(f"Spike {glue_before}{word}{glue_after} today") is None


@pytest.mark.parametrize(
    ("hook", "expected"),
    [
        ("Postgres search spike: Done 2026-09-01", "Done"),
        ("MIGRATION COMPLETE", "COMPLETE"),
        ("Ticket PROJ-12 closed; follow-up in PROJ-40", "closed"),
        ("Superseded by the v2 design", "Superseded"),
        ("Cancelled — budget moved", "Cancelled"),
        ("Not done yet: waiting on legal", None),
        ("isn't closed until the audit", None),
        ("Close the ticket once resolved", None),
        ("To be archived after the release", None),
        ("Almost finished, two tests left", None),
        ("Work never completed; see notes", None),
        ("Not now; Done with phase 1", "Done"),
        ("Undone changes are in the stash", None),
        ("We use a closed-source SDK", None),
        ("Completeness checks run nightly", None),
        ("done_flag is set by the worker", None),
        ("", None),
    ],
)
def test_terminal_word_examples(hook: str, expected: str | None) -> None:
    assert terminal_word(hook) == expected


# --- the hook: dates -----------------------------------------------------------


def _formats(day: date) -> list[str]:
    month = MONTH_NAMES[day.month - 1]
    return [
        day.isoformat(),
        day.strftime("%Y/%m/%d"),
        f"{month} {day.day}, {day.year}",
        f"{day.day} {month[:3]} {day.year}",
        f"{month[:3]}. {day.day}th {day.year}",
    ]


@given(
    day=st.dates(min_value=date(1000, 1, 1), max_value=date(9999, 12, 31)), form=st.integers(0, 4)
)
def test_every_date_form_is_found(day: date, form: int) -> None:
    assert dates_in(f"Next check: {_formats(day)[form]}; owner Ana") == [day]


@given(offset=st.integers(-400, 400))
def test_a_past_date_is_a_signal_and_more_than_30_days_makes_it_old(offset: int) -> None:
    day = TODAY - timedelta(days=offset)
    signals = hook_signals(f"Next check: {day.isoformat()}", TODAY)
    assert (signals.past_date is not None) == (offset > 0)
    assert signals.old_date == (offset > OLD_DATE_DAYS)
    assert signals.qualifies == (offset > OLD_DATE_DAYS)
    if offset > 0:
        assert signals.days_ago == offset


def test_the_latest_date_in_the_hook_decides() -> None:
    assert hook_signals("Done 2026-01-05, recheck 2027-01-05", TODAY).past_date is None
    assert hook_signals("Opened 2025-01-05, checked 2026-10-01", TODAY).past_date == date(
        2026, 10, 1
    )


@pytest.mark.parametrize(
    "hook",
    ["2026-02-30 release", "v1.2026-04-27", "build 12026-04-27", "2026-13-01", "20260427"],
)
def test_what_is_not_a_date(hook: str) -> None:
    assert dates_in(hook) == []


def test_a_date_with_a_time_still_counts() -> None:
    assert dates_in("deployed 2026-04-27T10:00Z") == [date(2026, 4, 27)]


# --- the leaf ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind", "evidence"),
    [
        ("# Spike\n\nStatus: Closed\n\n## Notes\n\nMore work.", "status", "Status: Closed"),
        ("**Status:** Done (2026-09-01)\n\nLater.", "status", "Status: Done (2026-09-01)"),
        ("- **Status**: resolved\n- Owner: Ana", "status", "Status: resolved"),
        ("## Status: Cancelled\n\nBudget moved.", "status", "Status: Cancelled"),
        ('> Status: "Done"\n', "status", "Status: Done"),
        ("---\nname: x\nstatus: archived\n---\n\nBody text.", "status", "status: archived"),
        ("# T\n\n## Outcome\n\nCompleted 2026-09-01: FTS5 is enough.", "outcome", None),
        ("## Results\n\nThe branch was merged and shipped.\n\n## Notes\n\nx", "outcome", None),
        ("## Outcome: done\n\nNotes follow.\n\n## Next\n\nNothing.", "outcome", None),
        ("Context.\n\nThe spike is done.", "closing", None),
        ("Context.\n\nIt's finished; nothing more to do.", "closing", None),
        ("Context.\n\nSuperseded by [[new_design]].", "closing", None),
        ("Context.\n\nThis is no longer relevant after the move.", "closing", None),
        ("Context.\n\nDone. The numbers are in the report.", "closing", None),
        ("Context.\n\nThe migration was completed on 2026-08-02.\n\n---\n", "closing", None),
        ("Context.\n\nThe spike is done.\n\nSee also [[search_design]].", "closing", None),
        ("Done.\n\n- [[a]]\n- [b](b.md)\n\nRelated: the RFC", "closing", None),
    ],
)
def test_the_leaf_confirms(text: str, kind: str, evidence: str | None) -> None:
    signal = leaf_signal(text)
    assert signal is not None and signal.kind == kind and signal.where == "leaf"
    if evidence is not None:
        assert signal.evidence == evidence


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Status: In progress (done: 3 of 5)",
        "Status: not done",
        "## Outcome\n\nTBD once the benchmark runs.",
        "## Outcome\n\nNot yet finished.\n\n## Notes\n\nThe spike is done.\n\nNext: ship it.",
        "The spike is done.\n\nBut the follow-up work continues next quarter.",
        "Context.\n\nThe spike is not done.",
        "Context.\n\nKeep polling until it is finished.",
        "Context.\n\nThe nightly build is done by the CI bot.",
        "Context.\n\nThe status is tracked on the board.",
        "Context.\n\nThe project is over budget.",
        "---\nname: x\ndescription: work is done\n---\n\nStill running the experiment.",
    ],
)
def test_the_leaf_does_not_confirm(text: str) -> None:
    assert leaf_signal(text) is None


@given(word=st.sampled_from(STATUS_WORDS).flatmap(_any_case))
def test_every_status_word_counts_in_any_case(word: str) -> None:
    signal = leaf_signal(f"# T\n\nStatus: {word}\n\nSome notes.")
    assert signal is not None and signal.kind == "status"


# --- the verdict ---------------------------------------------------------------

LEAVES = {
    "status": "# Spike\n\nStatus: Closed\n\nSome notes on it.",
    "outcome": "# Spike\n\n## Outcome\n\nCompleted after review.\n\n## Notes\n\nKeep it short.",
    "closing": "We measured it.\n\nThe work is finished.",
    None: "We use FTS5.\n\nIt is fast enough.",
}


@given(
    leaf=st.sampled_from(list(LEAVES)),
    word=st.none() | cased_terminal,
    days_before=st.none() | st.integers(-100, 400),
    pinned=st.booleans(),
    hits=st.integers(0, 3),
    unchanged=st.integers(-10, 400),
)
def test_the_verdict_follows_document_002(
    leaf: str | None,
    word: str | None,
    days_before: int | None,
    pinned: bool,
    hits: int,
    unchanged: int,
) -> None:
    parts = ["Search spike"]
    if word is not None:
        parts.append(word)
    if days_before is not None:
        parts.append(f"next check {(TODAY - timedelta(days=days_before)).isoformat()}")
    verdict = _verdict(
        " ".join(parts),
        LEAVES[leaf],
        pinned=pinned,
        hits=hits,
        changed=TODAY - timedelta(days=unchanged),
    )

    past = days_before is not None and days_before > 0
    old = days_before is not None and days_before > OLD_DATE_DAYS
    dormant = hits == 0 and unchanged >= DORMANT_DAYS
    high = leaf is not None and (word is not None or old)
    if high:
        assert verdict is not None and verdict.high_confidence
        assert verdict.level == ("flag" if pinned else "archive")
    elif leaf is not None or word is not None or past or dormant:
        assert verdict is not None and verdict.level == "flag" and not verdict.high_confidence
    else:
        assert verdict is None
    if verdict is not None and (leaf is not None or word is not None or past):
        # The reason names the leaf's signal and the hook's.
        assert verdict.reason.count("leaf: ") == 1 and verdict.reason.count("hook: ") == 1
        if word is not None:
            assert f'"{word}"' in verdict.reason


def test_the_example_spike_is_archived_with_both_signals_named() -> None:
    verdict = _verdict(
        "Postgres search spike: Done 2026-09-01, stay on FTS5",
        "# Postgres search spike\n\nStatus: Closed\n\n## Outcome\n\nCompleted 2026-09-01.",
    )
    assert verdict is not None and verdict.level == "archive"
    assert verdict.reason == (
        'leaf: "Status: Closed"; hook: "Done", dated 2026-09-01 (89 days before 2026-11-29)'
    )


def test_a_recent_date_with_a_confirming_leaf_is_only_flagged() -> None:
    verdict = _verdict("Next check: 2026-11-20", LEAVES["status"])
    assert verdict is not None and verdict.level == "flag"
    assert "9 days before 2026-11-29, within 30" in verdict.reason
    at_30_days = _verdict("Next check: 2026-10-30", LEAVES["status"])
    at_31_days = _verdict("Next check: 2026-10-29", LEAVES["status"])
    assert at_30_days is not None and at_30_days.level == "flag"
    assert at_31_days is not None and at_31_days.level == "archive"


def test_a_pinned_fact_that_qualifies_is_flagged_and_says_why() -> None:
    verdict = _verdict("Done", LEAVES["status"], pinned=True)
    assert verdict is not None and verdict.level == "flag" and verdict.high_confidence
    assert verdict.reason.startswith("pinned, so flagged instead of archived: leaf:")


def test_a_missing_leaf_is_never_archived() -> None:
    verdict = _verdict("Spike Done 2025-01-01", None)
    assert verdict is not None and verdict.level == "flag"
    assert verdict.reason.startswith("leaf: file missing or unreadable, so not archived; hook:")


def test_no_hits_and_no_change_for_90_days_is_a_flag() -> None:
    assert _verdict(hits=0, changed=TODAY - timedelta(days=89)) is None
    assert _verdict(hits=1, changed=TODAY - timedelta(days=400)) is None
    verdict = _verdict(hits=0, changed=TODAY - timedelta(days=90))
    assert verdict is not None and verdict.level == "flag"
    assert verdict.reason == (
        "no search hits and unchanged for 90 days (since 2026-08-31); "
        "leaf and hook show no terminal state"
    )


def test_strongest_first() -> None:
    verdicts = [
        _verdict(hits=0, changed=TODAY - timedelta(days=200)),
        _verdict("Next check: 2026-11-20"),
        _verdict("Done"),
        _verdict("Done 2026-01-01"),
        _verdict("Plain", LEAVES["status"]),
        _verdict("Done", LEAVES["status"], pinned=True),
    ]
    ordered = sorted((v for v in verdicts if v is not None), key=lambda v: v.sort_key)
    assert ordered[0].reason.startswith("pinned")
    assert ordered[-1].reason.startswith("no search hits")
    assert [v.strength for v in ordered[1:]] == sorted(
        (v.strength for v in ordered[1:]), reverse=True
    )


@given(
    hook=st.text(max_size=300),
    leaf=st.none() | st.text(max_size=2000),
    pinned=st.booleans(),
    hits=st.integers(-1, 10**6),
    changed=st.dates(),
    today=st.dates(),
)
def test_no_text_crashes_the_rules(
    hook: str, leaf: str | None, pinned: bool, hits: int, changed: date, today: date
) -> None:
    verdict = _verdict(hook, leaf, pinned=pinned, hits=hits, changed=changed, today=today)
    if verdict is not None:
        assert verdict.level in ("archive", "flag")
        assert "\n" not in verdict.reason
        assert not (pinned and verdict.level == "archive")
        if verdict.level == "archive":
            assert any(s.where == "leaf" and s.kind != "missing" for s in verdict.signals)
            assert leaf is not None


@given(
    text=st.text(
        alphabet=st.sampled_from("#*-:_ \n\tStatusOutcomeDone.2026-09-01[]'"), max_size=400
    )
)
def test_no_markdown_shaped_text_crashes_the_leaf_rule(text: str) -> None:
    signal = leaf_signal(text)
    assert signal is None or "\n" not in signal.evidence


@pytest.mark.parametrize(
    "text",
    [
        "Status" + " " * 100_000 + "x",
        "# " + " " * 100_000 + "x",
        "## Outcome\n" + "not done " * 10_000,
        "\t" * 100_000 + "Status:" + " " * 100_000,
        "---\n" + "a\n" * 50_000,
        "May 1 " * 20_000,
    ],
    ids=["status-spaces", "heading-spaces", "outcome-negations", "tabs", "open-fm", "months"],
)
def test_long_pathological_leaves_are_read_in_linear_time(text: str) -> None:
    # Regex backtracking on lines like these once made a leaf take minutes; now the
    # whole suite would stall if it came back.
    assert leaf_signal(text) is None
    assert hook_signals(text, TODAY).terminal is None
