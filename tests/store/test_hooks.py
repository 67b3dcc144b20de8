"""The short-hook writer (store/hooks.py) on real-looking SPINE entries.

What a short hook must keep for retrieval (the issue): the pointers and titles, the "Read
when…" clause, and the distinctive words of the old hook in their order: names, identifiers,
`code`, paths, "error strings", markers such as [NON-NEGOTIABLE], and "pinned" for a pinned
file. Cuts fall at clause and word boundaries, never inside a UTF-8 character; the result is
deterministic. Exact outputs are pinned for a few entries, so a change of behaviour is seen.
"""

from __future__ import annotations

import re

from distilld.store.hooks import is_distinctive, short_entry, short_hook
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


def words(text: str) -> list[str]:
    return text.split()


def in_order(needles: list[str], haystack: str) -> bool:
    at = 0
    for needle in needles:
        found = haystack.find(needle, at)
        if found < 0:
            return False
        at = found + len(needle)
    return True


# -- exact examples: before -> after ----------------------------------------------------------------

def test_a_long_payments_hook_keeps_code_errors_markers_pinned_and_the_read_clause() -> None:
    entry = short_entry("[Quill](projects/quill.md)", QUILL_HOOK, 200, ("pinned",))
    assert entry == (
        f"- [Quill](projects/quill.md) {EM} Quill `POST /v2/charges` \"card_declined\" \"processor_unavailable\", "
        "Acme Bank SFTP, [NON-NEGOTIABLE]; pinned Read before changing anything in quill-api or quill-recon.")
    assert len(entry.encode()) <= 200


def test_at_a_looser_limit_more_whole_clauses_stay_in_their_order() -> None:
    entry = short_entry("[Quill](projects/quill.md)", QUILL_HOOK, 300, ("pinned",))
    assert entry == (
        f"- [Quill](projects/quill.md) {EM} Quill payments gateway: the `POST /v2/charges` idempotency keys, "
        "the retry ladder for \"card_declined\" and \"processor_unavailable\", Acme Bank SFTP, 02:00 UTC, PCI HSM "
        "[NON-NEGOTIABLE]; pinned Read before changing anything in quill-api or quill-recon.")


def test_a_wrapped_search_hook_keeps_its_names_and_the_path_it_mentions() -> None:
    hook = SAFFRON_HOOK + " " + SAFFRON_WRAP
    entry = short_entry("[Saffron](projects/saffron.md)", hook, 200)
    assert entry == (
        f"- [Saffron](projects/saffron.md) {EM} Saffron search indexer; Elasticsearch 8 mappings, "
        "`saffron-compact` 30 GB, ECONNRESET API config/synonyms.txt. Read when touching search relevance "
        "or the indexer.")


def test_a_notification_hook_keeps_providers_settings_and_status_codes() -> None:
    out = short_hook(BEACON_HOOK, 160)
    assert out == ("Beacon notification\u2026 (APNs, FCM, SMS Twilio), `beacon.retry.max_attempts` "
                   "2026-05 HTTP 429 Read when working in the beacon repo or on any push notification.")
    assert in_order(["Beacon", "APNs", "FCM", "`beacon.retry.max_attempts`", "429", "Read when"], out)


def test_a_relay_hook_keeps_the_error_string_and_the_runbook_path() -> None:
    out = short_hook(DELTA_HOOK, 150)
    assert out == ("Delta webhook relay; 15 HMAC-SHA256 see ops/runbooks/delta.md for the replay tool; "
                   "\"signature mismatch\" Read before touching webhook delivery.")


# -- the rules, over real-looking entries ----------------------------------------------------------

HOOKS = [QUILL_HOOK, SAFFRON_HOOK + " " + SAFFRON_WRAP, BEACON_HOOK, DELTA_HOOK]


def distinctive_words(hook: str) -> list[str]:
    found = []
    for word in words(hook):
        if is_distinctive(word, False) and not word.startswith("Read"):
            found.append(word.rstrip(",;:."))
    return found


def test_every_kept_word_is_a_word_of_the_old_hook_in_the_old_order() -> None:
    for hook in HOOKS:
        for limit in range(60, len(hook.encode()) + 1, 7):
            out = short_hook(hook, limit)
            assert len(out.encode()) <= limit
            kept = [w.rstrip("\u2026") for w in words(out)]
            assert in_order(kept, hook), (limit, out)


def test_markers_and_the_read_clause_survive_every_limit_that_can_hold_them() -> None:
    read = "Read before changing anything in quill-api or quill-recon."
    for limit in range(len(read) + len(" [NON-NEGOTIABLE] pinned") + 1, 400):
        out = short_hook(QUILL_HOOK, limit, ("pinned",))
        assert out.endswith(read), limit
        assert "[NON-NEGOTIABLE]" in out and "pinned" in words(out), limit


def test_when_they_all_fit_every_distinctive_word_stays() -> None:
    for hook in HOOKS:
        read = hook[hook.rindex("Read "):]
        lead = hook.split(", ")[0].split("; ")[0]
        wanted = distinctive_words(hook[:hook.rindex("Read ")])
        room = len((lead + " " + " ".join(wanted) + " " + read).encode()) + 10
        for limit in range(room, len(hook.encode()), 9):
            out = short_hook(hook, limit)
            assert all(w in out for w in wanted), (limit, out, [w for w in wanted if w not in out])


def test_a_link_in_a_hook_is_never_dropped() -> None:
    """A `](x.md)` on an entry line is a pointer (C2): dropping it could orphan a file."""
    hook = ("Shared retry rules; see [the backoff notes](craft/backoff.md) for the jitter formula and "
            "the per-tenant overrides that the platform team keeps. Read before tuning retries.")
    out = short_hook(hook, 60)
    assert "[the backoff notes](craft/backoff.md)" in out


def test_a_pinned_file_whose_hook_never_says_pinned_gets_the_word() -> None:
    out = short_hook("Tundra cold-storage archiver; moves after 30 days; restores take four hours. "
                     "Read when restoring from cold storage.", 70, ("pinned",))
    assert out == "Tundra\u2026 30 pinned Read when restoring from cold storage."


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
