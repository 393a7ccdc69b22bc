"""Run tags: what a launcher writes for users to filter runs by (the launch itself is the run's config)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from awp_pipelines.core.decisions.next_launches import Launch
from awp_pipelines.core.decisions.policy import Target
from awp_pipelines.core.records import run_tags as tags
from awp_pipelines.core.records.run_tags import MODES

_value = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=1, max_size=40)


@given(packet_run=_value, provider=_value, account=st.none() | _value, model=st.none() | _value,
       mode=st.sampled_from(MODES), prompt=st.sampled_from(["01", "02", "10"]), number=st.integers(1, 99))
def test_tags_name_what_a_user_filters_on(packet_run: str, provider: str, account: str | None, model: str | None,
                                          mode: tags.Mode, prompt: str, number: int) -> None:
    launch = Launch(prompt, number, mode, "a reason", Target(provider, model, account, "high"), "parent-run")
    written = launch.run_tags(packet_run)
    # Only what a user filters runs on: the Attempt (its id, mode, target, reason, effort) lives in its
    # metadata, the parent run in Dagster's own tag (its launcher sets it).
    assert set(written) <= set(tags.RUN_TAGS)
    assert (written[tags.PACKET_RUN], written.get(tags.ACCOUNT)) == (packet_run, account)
    assert all(key.startswith(tags.PREFIX) for key in written)


def test_empty_values_are_left_out_and_long_ones_cut_to_one_line() -> None:
    written = tags.tag_values({tags.NOTE: "a note", tags.PACKET_RUN: "pr-1", tags.ACCOUNT: None, tags.PROVIDER: "",
                               tags.MODEL: "line one\nline two " + "x" * 300})
    assert set(written) == {tags.NOTE, tags.PACKET_RUN, tags.MODEL}
    assert "\n" not in written[tags.MODEL] and len(written[tags.MODEL]) == 120
    assert written[tags.MODEL].endswith("…")


def test_no_tag_value_holds_a_key_shaped_text() -> None:
    """Every tag value passes `short`: a text quoting a provider's message keeps no key, whole or cut."""
    key = "sk-ant-" + "api03-" + "K" * 24
    quoted = f"provider_auth_claim: 401 for key {key}"
    launch = Launch("01", 2, "retry", quoted, Target("simulated", "m", quoted))
    written = launch.run_tags("pr-1")
    assert all("K" * 8 not in value for value in written.values())
    assert tags.REASON not in written  # the reason is Attempt metadata now, not a tag
    assert "401 for key [REDACTED]" in tags.short(quoted)  # what any tag value passes
