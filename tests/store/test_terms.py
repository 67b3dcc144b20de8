"""What names a topic (store/terms.py): the rare terms of a split family's bodies, which a
shortened SPINE hook lists as keywords when its own words do not fit (store/hooks.py)."""

from __future__ import annotations

import pytest
from distilld.store.hooks import KEYWORDS, short_hook
from distilld.store.terms import StoreTerms, file_terms
from hypothesis import given, settings
from hypothesis import strategies as st
from maintenance_fixtures import QUILL_HOOK
from test_hooks import WORDS, check_readable

FRONTMATTER = "---\ndomain: craft\nscope: Ingest Lessons\nlast_updated: 2026-08-01\n---\n\n"


def doc(body: str, **frontmatter: str) -> bytes:
    extra = "".join(f"{k}: {v}\n" for k, v in frontmatter.items())
    return (FRONTMATTER.replace("---\n\n", extra + "---\n\n", 1) + body).encode()


def terms_of(raw: bytes) -> list[str]:
    return [term for term, _ in file_terms(raw)]


def test_a_file_names_its_identifiers_code_error_strings_and_names_but_not_its_frontmatter() -> None:
    raw = doc("# Ingest Lessons\n\n## Principles\n\n"
              "- Never batch the Kestrel loader; `kestrel --drain` first.\n"
              "  Why: \"lease expired\" meant the FENPO-131 bug in ingest.batch_size.\n"
              "  last_validated: 2026-08-01\n")
    found = terms_of(raw)
    assert {"Kestrel", "`kestrel --drain`", "\"lease expired\"", "FENPO-131", "ingest.batch_size"} <= set(found)
    assert "Lessons" not in found and "Ingest" not in found  # the heading and the scope only
    assert "Never" not in found and "Why" not in found  # a sentence's first word names nothing
    assert not any("2026" in term for term in found)  # stamps and dates


def test_a_capitalised_word_that_only_opens_a_sentence_or_a_marker_word_is_no_name() -> None:
    raw = doc("- Generic personas only. Real files in Temp folders [CORRECTED 2026-01-01].\n"
              "- NEVER retry; see Kafka at Acme Bank. Evidence: lots.\n"
              "Continued in `craft/x-2.md`.\n1. Output goes to Grafana.\n")
    assert terms_of(raw) == ["Temp", "Kafka", "Acme", "Bank", "Grafana"]


def test_numbered_siblings_count_once() -> None:
    files = {"ops/a.md": doc("- Incidents INC-4104, INC-4105 and INC-4106 hit Osprey.\n"),
             **{f"ops/pad{n}.md": doc(f"- Filler{n} text.\n") for n in range(30)}}
    ranked = StoreTerms(files, lambda path: path).keywords_for(["ops/a.md"])
    assert sorted(ranked) == ["INC-4104", "Osprey"], ranked


def test_terms_that_would_change_the_spine_or_unbalance_a_hook_are_never_kept() -> None:
    raw = doc("- See `[notes](craft/notes.md)` and craft/other.md, `<!-- x -->`, \"a `b` c\", `x | y`.\n"
              "- Keep `safe_term` and ZORB-1.\n")
    found = terms_of(raw)
    assert set(found) == {"`safe_term`", "ZORB-1"}, found


def test_a_term_with_an_invalid_byte_or_a_control_character_is_never_kept() -> None:
    raw = doc("") + (b"- `caf\xe9_mode`, `nul\x00byte`, `form\x0cfeed`, `tab\there`, \"line\xe2\x80\xa8sep\" "
                     b"and ZORB-2.\n")
    assert terms_of(raw) == ["ZORB-2"]


def test_crlf_and_a_missing_final_newline_read_the_same() -> None:
    body = "- The Kestrel loader pages ZORB-7.\n- `kestrel --drain` first."
    assert terms_of(doc(body)) == terms_of(doc(body.replace("\n", "\r\n")))


def family_of(children: dict[str, str]):  # type: ignore[no-untyped-def]
    return lambda path: children.get(path, path)


def test_rarest_first_and_a_split_family_counts_as_one_topic() -> None:
    files = {
        "craft/a.md": doc("- See Kestrel and Osprey, `a_only`.\n"),
        "craft/a-2.md": doc("- Use Kestrel again, `a_only` again, and Heron.\n", split_from="craft/a.md"),
        "craft/b.md": doc("- See Osprey and Heron, `b_only`.\n"),
        **{f"craft/pad{n}.md": doc(f"- Filler{n} text.\n") for n in range(40)},
    }
    terms = StoreTerms(files, family_of({"craft/a-2.md": "craft/a.md"}))
    assert terms.spread("Kestrel") == 1  # the parent and its child are one topic
    assert terms.spread("Osprey") == 2
    ranked = terms.keywords_for(["craft/a.md", "craft/a-2.md"])
    # names and code take turns, rarest first: Kestrel (1 topic, twice) before Heron (2 topics)
    assert ranked[:2] == ("Kestrel", "`a_only`"), ranked
    assert ranked.index("Kestrel") < ranked.index("Heron")


def test_a_merged_line_takes_turns_between_its_topics_and_shared_terms_are_common() -> None:
    files = {f"ops/t{n}.md": doc(f"- Both Topic{n}a and Topic{n}b mention Shared.\n") for n in range(30)}
    terms = StoreTerms(files, lambda path: path)
    assert terms.keywords_for(["ops/t1.md", "ops/t2.md"])[:2] == ("Topic1a", "Topic2a")
    assert "Shared" in terms.common() and "Shared" not in terms.keywords_for(["ops/t1.md"])


READ = "Read before touching the ingest loaders."
HOOK = ("Ingest loaders and their batching history across the three regions, kept for audits; "
        "retries are capped per region. " + READ)


def test_in_little_room_the_files_rare_names_stand_beside_the_read_clause() -> None:
    out = short_hook(HOOK, 90, (), frozenset(), ("FENPO-131", "`kestrel --drain`", "Osprey"))
    assert out == f"{KEYWORDS}FENPO-131, `kestrel --drain`, Osprey. {READ}"
    check_readable(HOOK, out)


def test_a_lead_clause_that_fits_with_room_to_spare_stays_ahead_of_the_keywords() -> None:
    out = short_hook(QUILL_HOOK, 200, ("pinned",), frozenset(), ("ZORB-9", "`quill_flush`"))
    assert out.startswith("Quill payments gateway")
    assert "ZORB-9" in out and len(out.encode()) <= 200
    check_readable(QUILL_HOOK, out, ("pinned",))


def test_without_room_for_more_than_the_read_clause_the_read_clause_wins() -> None:
    out = short_hook(HOOK, len(READ.encode()) + 3, (), frozenset(), ("FENPO-131",))
    assert out == READ


TERMS = [term for term, _ in file_terms(doc(
    "- Kestrel pages ZORB-7 when `kestrel --drain` hangs; \"lease expired\" in ingest.batch_size.\n"
    "- Osprey and HTTP 429 from OpenSearch; caf\u00e9.menu_v2 and the \u65e5\u672c Gateway.\n"))]


@pytest.mark.slow  # many examples: in the full run, not the default one
@settings(max_examples=300, deadline=None)
@given(clauses=st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join), min_size=1,
                        max_size=12),
       joins=st.lists(st.sampled_from(["; ", ", ", ". "]), min_size=12, max_size=12),
       read=st.booleans(), limit=st.integers(40, 260),
       terms=st.lists(st.sampled_from(TERMS), max_size=6, unique=True))
def test_hooks_that_draw_on_the_files_terms_still_follow_the_readability_rules(
        clauses: list[str], joins: list[str], read: bool, limit: int, terms: list[str]) -> None:
    hook = "".join(c + (joins[i] if i < len(clauses) - 1 else ".") for i, c in enumerate(clauses))
    if read:
        hook += " Read when the queue backs up."
    out = short_hook(hook, limit, ("pinned",), frozenset(), tuple(terms))
    assert len(out.encode()) <= limit or len(out.encode()) <= len(hook.encode())
    if len(hook.encode()) > limit and len(out.encode()) <= limit:
        check_readable(hook, out, ("pinned",))
        if read and limit >= len(" Read when the queue backs up.") + 10:
            assert out.endswith("Read when the queue backs up.")


def test_a_code_fence_gives_no_terms() -> None:
    raw = doc("- Deploys go through Osprey.\n\n```sh\ncurl https://user:Secret99@Vault.example/x\nKESTREL_TOKEN=abc\n```\n")
    assert terms_of(raw) == ["Osprey"]
