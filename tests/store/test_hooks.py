"""The short-hook writer (store/hooks.py) on real-looking SPINE entries.

A short hook must still read as sentences (the issue): it is made of whole clauses of the old
hook, in their order (a clause runs to a top-level ";", ", " or sentence end); a parenthetical
aside is dropped first; the "Read when…" clause, markers and "pinned" are kept; brackets,
quotes and backticks stay balanced; only the lead clause may be cut, with an ellipsis; the
distinctive names that do not fit in whole clauses go into a trailing "keywords:" list.
Exact outputs are pinned for a few entries, so a change of behaviour is seen.
"""

from __future__ import annotations

import re

import pytest
from distilld.store.hook_clauses import Clause, split_clauses
from distilld.store.hooks import ELLIPSIS, KEYWORDS, MARKER_TEXT_RE, short_entry, short_hook
from distilld.store.spine import Spine
from hypothesis import given, settings
from hypothesis import strategies as st
from maintenance_fixtures import QUILL_HOOK, SAFFRON_HOOK, SAFFRON_WRAP

EM = "\u2014"

BEACON_HOOK = ("Beacon notification service: the push-provider fallback chain (APNs, then FCM, then SMS via "
               "Twilio), the `beacon.retry.max_attempts` setting, rate limits per tenant, the dead-letter topic "
               "beacon-dlq, and the 2026-05 outage where HTTP 429 from FCM looked like a network error. "
               "Read when working in the beacon repo or on any push notification.")
DELTA_HOOK = ("Delta webhook relay; retries with exponential backoff capped at 15 minutes; signatures checked "
              "with HMAC-SHA256 over the raw body; see ops/runbooks/delta.md for the replay tool; the "
              "\"signature mismatch\" error nearly always means a proxy re-encoded the body. "
              "Read before touching webhook delivery.")
# The upstream fixture's shapes that came out as fragments before (the issue quotes them).
TESTING_HOOK = ("contract tests over mocks (mocks drift from the carrier API); failing test BEFORE the fix; flaky = "
                "hypothesis, never retry; no sleep-based waits; JSON fixtures never use colleagues' names (generic "
                "personas only) [NON-NEGOTIABLE]; CI runs the shipped script, not a copy. Read before writing or "
                "reviewing any test.")
HOOKS = [QUILL_HOOK, SAFFRON_HOOK + " " + SAFFRON_WRAP, BEACON_HOOK, DELTA_HOOK, TESTING_HOOK]


def read_clause(hook: str) -> str:
    return hook[hook.rindex("Read "):]


def balanced(text: str) -> bool:
    depth = {"(": 0, "[": 0}
    for char in re.sub(r"`[^`]*`", "", text):
        if char in "([":
            depth[char] += 1
        elif char in ")]":
            depth["(" if char == ")" else "["] -= 1
            if min(depth.values()) < 0:
                return False
    return all(v == 0 for v in depth.values()) and text.count("`") % 2 == 0 and text.count('"') % 2 == 0


def clause_forms(hook: str) -> list[tuple[int, set[str]]]:
    return [(c.index, {c.text, c.aside_free}) for c in split_clauses(hook)]


def check_readable(hook: str, out: str, must_keep: tuple[str, ...] = ()) -> None:
    """The mechanical readability rules, on one short hook: balanced delimiters, then the text
    read left to right is whole clauses of the old hook (or their aside-free forms) in their
    order, the must-keep extras, a cut lead clause ending with an ellipsis, the keywords list
    and the Read clause."""
    assert balanced(out), out
    body = out
    read = read_clause(hook) if "Read " in hook and hook.rindex("Read ") > 0 else ""
    if read and out.endswith(read):
        body = out[:-len(read)].rstrip()
    if KEYWORDS in body:
        body, keywords = body.split(KEYWORDS, 1)
        assert keywords.endswith(".") or not read
    extras = set(MARKER_TEXT_RE.findall(hook)) | set(must_keep)
    forms = clause_forms(hook)
    assert _reads_as_clauses(body, 0, -1, tuple(forms), frozenset(extras), read), (body, out)


def _reads_as_clauses(body: str, at: int, last: int, forms: tuple[tuple[int, set[str]], ...],
                      extras: frozenset[str], read: str) -> bool:
    """Can ``body[at:]`` be read as clauses of the hook after clause ``last``, in order (with
    the extras anywhere, and only the lead clause, or a Read clause over the room, cut)?"""
    while at < len(body) and body[at] in ";,. ":
        at += 1
    if at >= len(body):
        return True
    options = [(i, t) for i, texts in forms if i > last for t in texts if t and body.startswith(t, at)]
    options += [(last, e) for e in extras if body.startswith(e, at)]
    if ELLIPSIS in body[at:]:
        cut = body[at:body.index(ELLIPSIS, at)]
        lead = at == 0 and forms and any(f.startswith(cut) for f in forms[0][1] if f)
        if lead or read.startswith(cut):
            end = body.index(ELLIPSIS, at) + 1
            while end < len(body) and body[end] in ")]}\"`\u201d":  # a cut inside a pair closes it
                end += 1
            options.append((max(last, 0), body[at:end]))
    return any(_reads_as_clauses(body, at + len(text), index, forms, extras, read)
               for index, text in sorted(options, key=lambda o: (-len(o[1]), o[0])))


# -- exact examples: before -> after ----------------------------------------------------------------

def test_a_long_payments_hook_keeps_its_lead_markers_pinned_and_the_read_clause() -> None:
    entry = short_entry("[Quill](projects/quill.md)", QUILL_HOOK, 200, ("pinned",))
    assert entry == (
        f"- [Quill](projects/quill.md) {EM} Quill payments gateway: the `POST /v2/charges` idempotency keys; "
        "[NON-NEGOTIABLE]; pinned; keywords: SFTP. Read before changing anything in quill-api or quill-recon.")
    assert len(entry.encode()) <= 200


def test_at_a_looser_limit_the_names_that_do_not_fit_whole_go_to_keywords() -> None:
    out = short_hook(QUILL_HOOK, 250, ("pinned",))
    assert out == ("Quill payments gateway: the `POST /v2/charges` idempotency keys; [NON-NEGOTIABLE]; pinned; "
                   "keywords: \"card_declined\", \"processor_unavailable\", Acme Bank, SFTP, 02:00 UTC, PCI, HSM. "
                   "Read before changing anything in quill-api or quill-recon.")


def test_the_upstream_testing_hook_reads_as_whole_clauses() -> None:
    out = short_hook(TESTING_HOOK, 170)
    assert out == ("contract tests over mocks; failing test BEFORE the fix; CI runs the shipped script; "
                   "[NON-NEGOTIABLE]; keywords: API, JSON. Read before writing or reviewing any test.")


def test_a_parenthetical_aside_goes_first() -> None:
    assert short_hook(BEACON_HOOK, 170).startswith(
        "Beacon notification service: the push-provider fallback chain (APNs, then FCM, then SMS via Twilio).")
    out = short_hook(BEACON_HOOK, 160)  # the whole lead clause no longer fits: its aside goes
    assert out.startswith("Beacon notification service: the push-provider fallback chain;")
    assert "(APNs" not in out and "keywords: APNs, FCM" in out
    check_readable(BEACON_HOOK, out)


def test_a_relay_hook_keeps_the_error_string_and_the_runbook_path() -> None:
    out = short_hook(DELTA_HOOK, 170)
    assert out == ("Delta webhook relay; see ops/runbooks/delta.md for the replay tool; keywords: HMAC-SHA256, "
                   "\"signature mismatch\", 15. Read before touching webhook delivery.")


def test_a_pinned_file_whose_hook_never_says_pinned_gets_the_word() -> None:
    out = short_hook("Tundra cold-storage archiver; moves after 30 days; restores take four hours. "
                     "Read when restoring from cold storage.", 80, ("pinned",))
    assert out == "Tundra cold-storage archiver; pinned. Read when restoring from cold storage."


def test_only_a_lead_clause_longer_than_the_room_is_cut_and_it_says_so() -> None:
    hook = ("Kestrel streaming ingestion from the three regional Kafka clusters into the lakehouse bronze layer; "
            "backfills. Read when working on ingestion.")
    out = short_hook(hook, 80)
    assert out.endswith(f"{ELLIPSIS} Read when working on ingestion.") and out.startswith("Kestrel streaming")
    check_readable(hook, out)


# -- the rules, over real-looking entries and random ones -------------------------------------------

def test_every_short_hook_reads_as_whole_clauses_in_order_with_balanced_delimiters() -> None:
    for hook in HOOKS:
        for limit in range(60, len(hook.encode()) + 1, 5):
            for must in ((), ("pinned",)):
                out = short_hook(hook, limit, must)
                assert len(out.encode()) <= limit, (limit, out)
                check_readable(hook, out, must)


def test_markers_pinned_and_the_read_clause_survive_every_limit_that_can_hold_them() -> None:
    read = read_clause(QUILL_HOOK)
    for limit in range(len(read) + len(" [NON-NEGOTIABLE]; pinned.") + 1, 400):
        out = short_hook(QUILL_HOOK, limit, ("pinned",))
        assert out.endswith(read), limit
        assert "[NON-NEGOTIABLE]" in out and re.search(r"\bpinned\b", out), limit


WORDS = ["Kafka", "queue", "retries", "`x --flag`", "\"timeout\"", "(an aside, with commas)", "v2.3", "ops/run.md",
         "the", "never", "Acme Bank", "[IMPORTANT]", "e.g. this", "\u00e9t\u00e9", "\U0001f642"]


@pytest.mark.slow  # many examples: in the full run, not the default one
@settings(max_examples=300, deadline=None)
@given(clauses=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join), min_size=1,
                        max_size=12),
       joins=st.lists(st.sampled_from(["; ", ", ", ". "]), min_size=12, max_size=12),
       read=st.booleans(), limit=st.integers(40, 260))
def test_generated_hooks_follow_the_readability_rules(clauses: list[str], joins: list[str], read: bool,
                                                     limit: int) -> None:
    hook = "".join(c + (joins[i] if i < len(clauses) - 1 else ".") for i, c in enumerate(clauses))
    if read:
        hook += " Read when the queue backs up."
    out = short_hook(hook, limit, ("pinned",))
    assert len(out.encode()) <= limit or len(out.encode()) <= len(hook.encode())
    if len(hook.encode()) > limit and len(out.encode()) <= limit:
        check_readable(hook, out, ("pinned",))
        if read and limit >= len(" Read when the queue backs up.") + 10:
            assert out.endswith("Read when the queue backs up.")


def test_clauses_split_only_at_top_level() -> None:
    found = split_clauses('A (x, y; z), b `p; q` "r, s"; c. D e.g. f, v2.3 g')
    assert [c.text for c in found] == ['A (x, y; z)', 'b `p; q` "r, s"', "c", "D e.g. f", "v2.3 g"]
    assert isinstance(found[0], Clause) and found[0].aside_free == ""  # "A" alone is no clause
    assert split_clauses("the retry ladder (APNs, then FCM) for payments")[0].aside_free == \
        "the retry ladder for payments"


def test_a_link_in_a_hook_is_never_dropped() -> None:
    """A `](x.md)` on an entry line is a pointer (C2): dropping it could orphan a file."""
    hook = ("Shared retry rules; see [the backoff notes](craft/backoff.md) for the jitter formula and "
            "the per-tenant overrides that the platform team keeps. Read before tuning retries.")
    out = short_hook(hook, 60)
    assert "[the backoff notes](craft/backoff.md)" in out


def test_within_the_limit_the_hook_is_left_exactly_as_it_was() -> None:
    assert short_hook(DELTA_HOOK, len(DELTA_HOOK.encode())) == DELTA_HOOK


def test_the_shortened_entry_is_still_one_entry_with_its_pointer_group() -> None:
    group = "[Tundra](projects/tundra.md) + [Vireo](projects/vireo.md)"
    entry = short_entry(group, BEACON_HOOK, 200)
    parsed = Spine((entry + "\n").encode()).entries
    assert len(parsed) == 1 and [p.path for p in parsed[0].leading_group] == ["projects/tundra.md", "projects/vireo.md"]


@settings(max_examples=200, deadline=None)
@given(text=st.lists(st.sampled_from(list("ab Zé日🙂`;,.[]()\"/_-") + ["NON-NEGOTIABLE", "Read when", "x.md", " "]),
                    max_size=120).map("".join),
       limit=st.integers(0, 320))
def test_never_inside_a_utf8_character_and_always_deterministic(text: str, limit: int) -> None:
    out = short_hook(text, limit)
    raw = out.encode("utf-8")
    assert raw.decode("utf-8") == out
    if not re.search(r"\[[^\]\n]*\]\([^)\n]*\)", text):  # only links may overflow the limit
        assert len(raw) <= max(limit, 0) or len(text.encode()) <= limit
    assert short_hook(text, limit) == out


def test_a_link_in_a_long_single_clause_hook_still_lets_the_entry_fit_its_cap() -> None:
    """A link must stay (it may be another file's pointer); the room it needs is kept for it."""
    entry = short_entry("[A](craft/a.md)", "kafka helm " * 60 + "tail [s](craft/s.md).", 400)
    assert len(entry.encode()) <= 400
    assert "[s](craft/s.md)" in entry and balanced(entry)
