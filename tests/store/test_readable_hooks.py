"""Short hooks chosen by findability that still read as sentences (issue 24)."""

from __future__ import annotations

from distilld.store.readable_hooks import contributes, parse, readable_hook, trigger_of

HOOK = ("Alert fatigue limits: cache tenants; `alert_fatigue.yaml` controls replicas; 13 closed this month; "
        "avoid shards over alerts (kadorulgal, 84 dashboards); pages, queues, and batches stay small; retry "
        "releases over payloads [NON-NEGOTIABLE 2026-05-02]. Read before touching alert fatigue or `--alert-ttl`.")
WEIGHTS = {"kadorulgal": 20.0, "alert_fatigue": 9.0, "yaml": 1.0, "replicas": 1.0, "tenants": 0.5, "ttl": 3.0}


def test_a_short_hook_is_whole_units_in_order_with_its_marker_and_no_fragment() -> None:
    for limit in (60, 90, 140, 200, 260):
        hook = readable_hook([HOOK], limit, WEIGHTS)
        assert len(hook.encode()) <= limit, (limit, hook)
        assert "[NON-NEGOTIABLE 2026-05-02]" in hook  # a binding rule is known before the file is opened
        assert "\u2026" not in hook and "keywords:" not in hook
        for pair in ("()", "``"):
            assert hook.count(pair[0]) % 2 == 0 if pair[0] == pair[1] else hook.count(pair[0]) == hook.count(pair[1])
        assert hook.count("Read") <= 1
        units = [u.rstrip(".") for u in hook.replace(". Read", "; Read").split("; ")]
        body = [u for u in units if not u.startswith("Read")]
        positions = [HOOK.lower().find(u.lower().removesuffix(" [non-negotiable 2026-05-02]")) for u in body]
        assert all(p >= 0 for p in positions) and positions == sorted(positions), hook  # whole units, in order


def test_the_most_findable_units_are_kept_first() -> None:
    hook = readable_hook([HOOK], 210, WEIGHTS)
    assert "kadorulgal" in hook and "`alert_fatigue.yaml`" in hook


def test_a_comma_list_is_never_picked_apart() -> None:
    units = {f for u in parse(HOOK).units for f in u.forms}
    assert "queues" not in units and "batches stay small" not in units  # only whole lists or their prefixes
    assert "pages, queues" in units


def test_the_read_sentence_shrinks_to_its_trigger_words() -> None:
    assert trigger_of("Read before touching invoices or reconciliation.") == "invoices, reconciliation"
    assert trigger_of("Read when working in the beacon or delta repos.") == "beacon, delta"
    assert trigger_of("Read at session start.") == ""
    assert trigger_of("Read when: flame graphs, `--alert-ttl`.") == "flame graphs, `--alert-ttl`"  # read again
    assert readable_hook([HOOK], 70, WEIGHTS).endswith("Read when: alert fatigue, `--alert-ttl`.")


def test_a_merged_line_has_one_read_sentence_and_something_of_each_hook() -> None:
    one = "Beacon notification service: push fallback chain. Read when working in the beacon repo."
    two = "Delta webhook relay: retries and dead letters. Read when working in the delta repo."
    merged = readable_hook([one, two], 200, {})
    assert merged.count("Read") == 1 and merged.endswith("Read when: beacon, delta.")
    assert contributes(one, merged) and contributes(two, merged)


def test_a_hook_that_fits_is_left_as_it_is() -> None:
    assert readable_hook(["short hook. Read when it comes up."], 100, {}) == "short hook. Read when it comes up."
