"""The daemon's job for a registered pass that has a planner and no job function of its own: the
same driven pass its command runs (actions/driven_pass.py), under the job's lock, as one commit."""

from __future__ import annotations

from ..actions.driven_pass import run_driven_pass
from ..registry import pass_of_job
from .jobs import JobEnv, PassResult, listing, no_store, plural
from .scheduled_jobs import report_operation


def run_registered_pass(env: JobEnv, job: str, trigger: str) -> PassResult:
    waiting = no_store(env)
    if waiting is not None:
        return waiting
    entry = pass_of_job(job)
    with env.exclusive(job), env.git.operation(entry.name) as operation:
        report = run_driven_pass(env.store, entry, env.policy, env.clock, wait=0, apply=True)
        changed = report.changed
        operation.describe(*report.commit_message())
    for note in report.notes:
        env.activity.write(f"{entry.name}: {note}")
    report_operation(env, f"the {entry.name}", operation)
    if changed:
        env.activity.write(f"{entry.name}: wrote {listing(changed, 5)}", paths=changed)
        if env.worker is not None:  # check and measure the store as the pass left it
            env.worker.request("follow", f"after-{job}")
    if not report.ok:
        return PassResult(False, f"self-check failed after the {entry.name} (see `distilld {entry.name}`)")
    return PassResult(True, f"{plural(len(report.steps), 'step')}; {plural(len(changed), 'file')} written",
                      {"changed": bool(changed)})
