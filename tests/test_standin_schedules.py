"""The stand-in's scheduled jobs and repo tags, through the real huggingface_hub client: what tunepack's remote loop
calls (create_scheduled_uv_job, trigger, suspend, delete, create_tag) answers as HfApi reads it."""

from __future__ import annotations

import pytest
from huggingface_hub import HfApi
from huggingface_hub.errors import HfHubHTTPError, RevisionNotFoundError

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def api(hub):
    return HfApi(endpoint=hub.endpoint, token=hub.state.token)


def test_a_scheduled_job_is_created_listed_triggered_suspended_and_deleted(hub, api):
    created = api.create_scheduled_uv_job("python", script_args=["-c", "print(1)"], schedule="@weekly",
                                          dependencies=["pyyaml"], secrets={"HF_TOKEN": "hf_x"}, flavor="a10g-small",
                                          timeout=600, labels={"tunepack_loop": "demo"}, name="loop-demo")
    assert created.schedule == "@weekly" and created.suspend is False and created.concurrency is False
    assert created.job_spec.command == ["uv", "run", "--with", "pyyaml", "python", "-c", "print(1)"]
    assert created.job_spec.secrets == {"HF_TOKEN": "<encrypted>"} and created.status.next_job_run_at is not None
    assert [s.id for s in api.list_scheduled_jobs(labels={"tunepack_loop": "demo"})] == [created.id]
    assert api.list_scheduled_jobs(labels={"tunepack_loop": "other"}) == []

    run = api.trigger_scheduled_job(scheduled_job_id=created.id)
    assert run.labels == {"tunepack_loop": "demo", "name": "loop-demo"} and run.flavor == "a10g-small"
    assert hub.state.jobs[run.id]["secrets"] == {"HF_TOKEN": "<encrypted>"}
    assert api.inspect_scheduled_job(scheduled_job_id=created.id).status.last_job.id == run.id
    with pytest.raises(HfHubHTTPError) as busy:  # the last run is still going and concurrency is off
        api.trigger_scheduled_job(scheduled_job_id=created.id)
    assert busy.value.response.status_code == 409
    hub.set_stage(run.id, "COMPLETED")
    again = api.trigger_scheduled_job(scheduled_job_id=created.id)
    assert again.id != run.id

    api.suspend_scheduled_job(scheduled_job_id=created.id)
    paused = api.inspect_scheduled_job(scheduled_job_id=created.id)
    assert paused.suspend is True and paused.status.next_job_run_at is None
    api.resume_scheduled_job(scheduled_job_id=created.id)
    assert api.update_scheduled_job_schedule(scheduled_job_id=created.id, schedule="0 3 * * 1").schedule == "0 3 * * 1"
    relabelled = api.update_scheduled_job_labels(scheduled_job_id=created.id, labels={"k": "v"})
    assert relabelled.job_spec.labels == {"k": "v", "name": "loop-demo"}
    with pytest.raises(HfHubHTTPError):
        api.create_scheduled_job(image="python:3.12", command=["true"], schedule="every tuesday")
    api.delete_scheduled_job(scheduled_job_id=created.id)
    with pytest.raises(HfHubHTTPError):
        api.inspect_scheduled_job(scheduled_job_id=created.id)
    assert [e["event"] for e in hub.state.schedule_events] == [
        "created", "triggered", "triggered", "suspended", "resumed", "rescheduled", "relabelled", "deleted"]


def test_a_tag_names_a_revision_until_it_is_deleted(hub, api):
    api.create_repo("alice/tagged")
    first = api.upload_file(path_or_fileobj=b"one", path_in_repo="a.txt", repo_id="alice/tagged").oid
    api.upload_file(path_or_fileobj=b"two", path_in_repo="a.txt", repo_id="alice/tagged")
    api.create_tag("alice/tagged", tag="current", revision=first)
    assert api.model_info("alice/tagged", revision="current").sha == first
    with pytest.raises(HfHubHTTPError) as taken:
        api.create_tag("alice/tagged", tag="current")
    assert taken.value.response.status_code == 409
    api.create_tag("alice/tagged", tag="current", exist_ok=True)
    api.delete_tag("alice/tagged", tag="current")
    with pytest.raises(RevisionNotFoundError):
        api.model_info("alice/tagged", revision="current")


def test_the_uv_shim_reads_with_as_uv_does():
    """`uv run --with "a>=1,<2"` is one requirement (astral-sh/uv#9089): huggingface_hub sends each dependency as its
    own --with, and tunepack's carry version ranges."""
    from support.standin.uv_shim import split_with

    assert split_with("mcp<3,>=2.3.0") == ["mcp<3,>=2.3.0"]
    assert split_with("flask, requests>=2.1,<3") == ["flask", "requests>=2.1,<3"]
