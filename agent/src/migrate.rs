//! `migrate_to` and `migrate_from`: answers from where the domain runs, read on both sides, never
//! from the agent's own history. Re-running either action after any interruption gives the answer
//! that matches the truth.
//!
//! `migrate_to` (on the source, target from `CRM_meta_migrate_target`):
//!
//! | source | target | action | answer |
//! |---|---|---|---|
//! | not running | running | nothing | 0 (already migrated) |
//! | running | running | nothing | 7, "running on both" |
//! | not running | not running | nothing | 7, "running nowhere" |
//! | running, migration job in flight | any | wait for the job within the budget, abort it at the deadline | from both sides afterwards |
//! | running, no job | unreachable | nothing | 1 at once, the reason |
//! | running, no job | incoming copy | nothing | 1, stale incoming copy on the target |
//! | running, job unreadable | incoming copy | nothing | 7, it may be an earlier job's |
//! | running, no job | not running | live migration with a deadline; on timeout abort the job | from both sides afterwards: target running and source not = 0 whatever libvirt returned; 1 only if the job was seen to end or the target read |
//!
//! | paused by a migration, no job in flight | not running | resume it here (the orphan below), then migrate | as above |
//!
//! The exit code is the planner's evidence (pengine's atomic migration model): 0 means the VM runs
//! on the target and not here; 1 means no migration happened and the VM is where it was, here
//! (running, or crashed and not migrating); 7 means it does not run here alone: nowhere, on both,
//! or possibly on a target that cannot be read after libvirt moved it. After 7 the planner probes
//! both nodes before anything else.
//!
//! `migrate_from` (on the target): running here = 0; incoming migration here = wait within the
//! budget; not here = ask the source once and fail at once with what it shows (resuming an orphan
//! there first).
//!
//! The orphan: a migration whose client died after the switch-over began (the agent SIGKILLed)
//! can leave the source paused "for migration" with no job left, and the target without any copy:
//! the VM runs nowhere. `migrate_to` and `migrate_from` resume such a source (and only when the
//! target positively shows no copy and the source no job), so the VM runs once again, on the
//! source. `monitor` does not: it does not know the migration's peer, and a source paused while
//! the target's copy already runs (a client killed between the target's finish and the source's
//! confirm) must never be resumed; `monitor` reports the paused source as running (0), which is
//! where Pacemaker's next migrate_to or migrate_from resolves it.

use ocf_metadata::OcfExitCode;

use crate::Outcome;
use crate::actions::{Ctx, STATE_CALL_CAP_MS};
use crate::clock::Deadline;
use crate::hypervisor::{DomainState, HvError, Hypervisor, JobOperation, MigrateRequest};

const POLL_MS: u64 = 100;
const POLL_MAX_MS: u64 = 500;
/// The least time a migration call is started with; with less it could only be aborted.
const MIN_MIGRATE_CALL_MS: u64 = 1_000;

/// Where guest code runs (or ran and is held paused), as far as the migration is concerned. An
/// incoming or starting-up copy has not run yet; a crashed one runs no more.
fn runs(s: &DomainState) -> bool {
    matches!(
        s,
        DomainState::Running
            | DomainState::Paused(_)
            | DomainState::PmSuspended
            | DomainState::InShutdown
            | DomainState::MigratingOut
    )
}

/// On the target, a copy being torn down passes through "in shutdown" (observed with libvirt 9
/// after an aborted or orphaned incoming migration): wait for it like the transient states.
fn settling_target(s: &DomainState) -> bool {
    transient(s) || *s == DomainState::InShutdown
}

/// States that change by themselves within moments (a migration finishing or being torn down).
fn transient(s: &DomainState) -> bool {
    matches!(
        s,
        DomainState::NoState | DomainState::MigratingIn | DomainState::StartingUp
    )
}

fn gone(s: &DomainState) -> bool {
    matches!(s, DomainState::Absent | DomainState::ShutOff)
}

fn state_of(
    hv: &dyn Hypervisor,
    ctx: &Ctx,
    name: &str,
    deadline: Deadline,
) -> Result<DomainState, HvError> {
    let t = deadline.remaining_ms(ctx.clock).min(STATE_CALL_CAP_MS);
    match hv.state(name, t) {
        Err(HvError::NoDomain { .. }) => Ok(DomainState::Absent),
        other => other,
    }
}

fn show(r: &Result<DomainState, HvError>) -> String {
    match r {
        Ok(s) => s.to_string(),
        Err(e) => format!("unknown ({e})"),
    }
}

/// Steps reported to the caller's journal: (phase, detail).
pub type Journal<'a> = &'a dyn Fn(&str, &str);

/// One call's share of what is left before `deadline`.
fn call_ms(ctx: &Ctx, deadline: Deadline) -> u64 {
    deadline.remaining_ms(ctx.clock).min(STATE_CALL_CAP_MS)
}

/// Whether `source` holds the domain paused by a migration with no job in flight there: what
/// is left when a migration's client died after the switch-over began. Which of the two
/// leftovers it is (the guest runs nowhere, or it already runs on the target) is for the caller.
fn paused_by_migration_without_job(
    ctx: &Ctx,
    source: &dyn Hypervisor,
    name: &str,
    deadline: Deadline,
) -> bool {
    state_of(source, ctx, name, deadline).is_ok_and(|s| s == DomainState::MigratingOut)
        && source
            .job_info(name, call_ms(ctx, deadline))
            .is_ok_and(|j| !j.in_flight())
}

/// Resumes `source`'s copy when it is the orphan of a migration (see the module's doc): paused by
/// a migration, no job in flight there, and the target showing no copy. `None` when it is not an
/// orphan (nothing done), else the result of the resume.
fn resume_orphan(
    ctx: &Ctx,
    source: &dyn Hypervisor,
    target: &dyn Hypervisor,
    name: &str,
    deadline: Deadline,
) -> Option<Result<(), HvError>> {
    if !paused_by_migration_without_job(ctx, source, name, deadline)
        || !state_of(target, ctx, name, deadline).is_ok_and(|t| gone(&t))
    {
        return None;
    }
    let r = source.resume(name, call_ms(ctx, deadline));
    ctx.log.warn(&format!(
        "domain {name} was left paused by a migration that lost its client and the target has no copy: resuming it on {}: {}",
        source.uri(),
        match &r {
            Ok(()) => "resumed".to_owned(),
            Err(e) => e.to_string(),
        }
    ));
    Some(r)
}

/// Destroys `source`'s copy when it is the leftover of a migration that completed on the target
/// but lost its client before libvirt's confirm step (which would have killed it): paused by a
/// migration, no job in flight there, and the target running the guest. A post-copy migration
/// still in progress keeps its job (and a failed one leaves the target paused), so neither is
/// touched. `None` when it is not such a leftover (nothing done), else the result of the destroy.
fn destroy_completed_leftover(
    ctx: &Ctx,
    source: &dyn Hypervisor,
    target: &dyn Hypervisor,
    name: &str,
    deadline: Deadline,
) -> Option<Result<(), HvError>> {
    if !paused_by_migration_without_job(ctx, source, name, deadline)
        || state_of(target, ctx, name, deadline).ok()? != DomainState::Running
    {
        return None;
    }
    let r = source.destroy(name, call_ms(ctx, deadline));
    ctx.log.warn(&format!(
        "domain {name} runs on the target; its paused copy here is the leftover of a migration that completed without its confirm step: destroyed on {}: {}",
        source.uri(),
        match &r {
            Ok(()) => "done".to_owned(),
            Err(e) => e.to_string(),
        }
    ));
    Some(r)
}

/// What the agent knows of the source's migration job when it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Job {
    /// Read as ended or absent (or no migration was attempted).
    Idle,
    /// Its readings failed in a way taken for a driver without job information: no job seen, none
    /// proven absent either.
    Unread,
    /// In flight, or unknown after an abort whose end was never seen: the move may yet complete.
    InFlight,
}

/// The answer from both sides after a migration attempt (or none).
fn answer(
    ctx: &Ctx,
    target: &dyn Hypervisor,
    name: &str,
    libvirt: &str,
    deadline: Deadline,
    job: Job,
) -> Outcome {
    // Let transient states settle (an aborted incoming copy being torn down), for half the time
    // left at most: the readings the answer is made of start by then, so a state that does not
    // settle in time is answered as read, never as unreadable for want of time (seen on real
    // libvirt: a target copy still being torn down kept this loop reading until the deadline,
    // whose last readings, given 0 ms, made a guest running on the source "source unknown", 7).
    let settle = Deadline {
        at_ms: ctx.clock.now_ms() + deadline.remaining_ms(ctx.clock) / 2,
    };
    let mut sleep_ms = POLL_MS;
    let (s, t) = loop {
        let s = state_of(ctx.hv, ctx, name, deadline);
        let t = state_of(target, ctx, name, deadline);
        let unsettled = s.as_ref().is_ok_and(transient) || t.as_ref().is_ok_and(settling_target);
        if !unsettled || !settle.sleep_within(ctx.clock, sleep_ms) {
            break (s, t);
        }
        sleep_ms = (sleep_ms * 2).min(POLL_MAX_MS);
    };
    if matches!((&s, &t), (Ok(DomainState::MigratingOut), Ok(t)) if gone(t)) {
        if let Some(r) = resume_orphan(ctx, ctx.hv, target, name, deadline) {
            let (ss, ts) = (show(&s), show(&t));
            return Outcome::fail(
                OcfExitCode::ErrGeneric,
                match r {
                    Ok(()) => format!(
                        "migration of {name} did not complete: the source was left {ss} and the target {ts}; resumed on the source; libvirt: {libvirt}"
                    ),
                    Err(e) => format!(
                        "migration of {name} did not complete: the source was left {ss} and the target {ts}; resuming it failed: {e}; libvirt: {libvirt}"
                    ),
                },
            );
        }
    }
    let s = if matches!(
        (&s, &t),
        (Ok(DomainState::MigratingOut), Ok(DomainState::Running))
    ) && destroy_completed_leftover(ctx, ctx.hv, target, name, deadline)
        .is_some_and(|r| r.is_ok())
    {
        state_of(ctx.hv, ctx, name, deadline)
    } else {
        s
    };
    let (ss, ts) = (show(&s), show(&t));
    match (&s, &t) {
        (Ok(s), Ok(t)) if gone(s) && runs(t) => {
            ctx.log.info(&format!(
                "domain {name} runs on the target and no longer here (libvirt: {libvirt})"
            ));
            Outcome::success()
        }
        // (with the source's job still in flight, a copy paused on the target is that
        // migration's incoming copy, which libvirt 9 shows paused "for a migration": answered by
        // the in-flight arm below, not as a second run; seen in CI when the abort did not answer)
        (Ok(s), Ok(t))
            if runs(s)
                && runs(t)
                && !(job == Job::InFlight
                    && matches!(t, DomainState::Paused(_) | DomainState::MigratingOut)) =>
        {
            Outcome::fail(
                OcfExitCode::NotRunning,
                format!("domain {name} runs on both source ({ss}) and target ({ts}); nothing done"),
            )
        }
        (Ok(s), Ok(t)) if gone(s) && gone(t) => Outcome::fail(
            OcfExitCode::NotRunning,
            format!("domain {name} runs nowhere (source {ss}, target {ts}); libvirt: {libvirt}"),
        ),
        // An abort that neither took effect nor answered leaves the source's job running: the
        // guest runs on the source now but may yet complete its move, so not "still on the
        // source" (1) but location unknown (7), and the planner probes both.
        (Ok(s), _) if runs(s) && job == Job::InFlight => Outcome::fail(
            OcfExitCode::NotRunning,
            format!(
                "migration of {name} could not be aborted: its job is still in flight on the source ({ss}, target {ts}), it may yet complete; libvirt: {libvirt}"
            ),
        ),
        // An incoming copy still waits on the target: the move may yet complete (cts-sim seed
        // 40863: the source's job information failed, the abort's end was taken as seen, and the
        // migration completed after the agent answered "still on the source").
        (Ok(s), Ok(DomainState::MigratingIn)) if runs(s) => Outcome::fail(
            OcfExitCode::NotRunning,
            format!(
                "migration of {name} did not end: it runs on the source ({ss}) and an incoming copy waits on the target ({ts}), it may yet complete; libvirt: {libvirt}"
            ),
        ),
        // No job was read and the target cannot be read: nothing shows the move did not happen
        // (cts-sim seed 1796074916208939 in general form). 7, the planner probes both.
        (Ok(s), Err(_)) if runs(s) && job == Job::Unread => Outcome::fail(
            OcfExitCode::NotRunning,
            format!(
                "migration of {name}: it runs on the source ({ss}), but neither its job here nor the target ({ts}) could be read, so it may yet have moved; libvirt: {libvirt}"
            ),
        ),
        (Ok(s), _) if runs(s) => Outcome::fail(
            OcfExitCode::ErrGeneric,
            format!(
                "migration of {name} did not complete, it still runs on the source (target {ts}); libvirt: {libvirt}"
            ),
        ),
        // The source does not show it running (or cannot be read) and the target cannot be read:
        // it may have moved (seed 10285: libvirt returned success, the target's daemon was down).
        // Not "still on the source": 7, so the planner probes both.
        _ => Outcome::fail(
            OcfExitCode::NotRunning,
            format!("domain {name}: source {ss}, target {ts}; libvirt: {libvirt}"),
        ),
    }
}

/// Waits while the source has a migration job in flight; [`Job::InFlight`] if it still is (or
/// cannot be read) at `until`. `call_returned`: the migration call itself returned (success or
/// libvirt's refusal), so a job reading that fails for a reason other than the daemon is taken for
/// a driver without job information ([`Job::Unread`]). After a call that did not return (it timed
/// out, or its connection was lost) the job may go on: a failed reading is then no end of it
/// (cts-sim seed 1796074916208939: taken for the end, the job was neither waited for nor aborted,
/// the agent answered 1 "still on the source", and the move completed afterwards).
fn wait_for_job(ctx: &Ctx, name: &str, until: Deadline, call_returned: bool) -> Job {
    let mut sleep_ms = POLL_MS;
    loop {
        let t = until.remaining_ms(ctx.clock).min(STATE_CALL_CAP_MS);
        match ctx.hv.job_info(name, t) {
            Ok(job) if job.in_flight() => {}
            // No job, a finished job, or no domain left here: nothing to wait for.
            Ok(_) | Err(HvError::NoDomain { .. } | HvError::NotRunning { .. }) => return Job::Idle,
            // A daemon that does not answer now may again in a moment.
            Err(e) if e.daemon_unusable() => ctx.log.debug(&format!("job info: {e}")),
            // A driver without job information has no job to wait for.
            Err(e) if call_returned => {
                ctx.log.debug(&format!("job info: {e}"));
                return Job::Unread;
            }
            // The job may still run: read again until `until`.
            Err(e) => ctx.log.debug(&format!("job info: {e}")),
        }
        if !until.sleep_within(ctx.clock, sleep_ms) {
            return Job::InFlight;
        }
        sleep_ms = (sleep_ms * 2).min(POLL_MAX_MS);
    }
}

/// One reading of the source's job, after an abort whose end was not seen in its share of the
/// budget (it may have taken effect and not answered): true if a job is in flight, or if that
/// cannot be read (then the move may yet complete).
fn job_in_flight(ctx: &Ctx, name: &str, deadline: Deadline) -> bool {
    let t = deadline.remaining_ms(ctx.clock).min(STATE_CALL_CAP_MS) / 2;
    match ctx.hv.job_info(name, t) {
        Ok(job) => job.in_flight(),
        Err(HvError::NoDomain { .. } | HvError::NotRunning { .. }) => false,
        Err(e) => {
            ctx.log.debug(&format!("job info after the abort: {e}"));
            true
        }
    }
}

/// One of the two shares of the budget kept after the migration call: the first for aborting a
/// job still in flight and waiting for it to end, the second, last, for reading both sides for the
/// answer. A fifth of the budget each (1 s to 10 s, at most a quarter). Separate so that a daemon
/// slow to answer the abort can never eat the time the answer needs (seen in CI with a 6 s
/// timeout: the abort took the one shared reserve, both final readings got 0 ms, and the agent
/// answered 7 "source unknown" while the guest still ran on the source).
fn reserve_ms(budget_ms: u64) -> u64 {
    (budget_ms / 5).clamp(1_000, 10_000).min(budget_ms / 4)
}

/// Aborts the source's job and waits for it to end, both by `until` (which leaves the answer its
/// share of the budget), as [`wait_for_job`] says.
fn abort(ctx: &Ctx, name: &str, until: Deadline, journal: Journal, call_returned: bool) -> Job {
    let t = until.remaining_ms(ctx.clock).min(5_000);
    let r = ctx.hv.abort_job(name, t);
    let detail = match &r {
        Ok(()) => "aborted".to_owned(),
        Err(e) => e.to_string(),
    };
    ctx.log
        .warn(&format!("aborting the migration job of {name}: {detail}"));
    journal("abort", &detail);
    wait_for_job(ctx, name, until, call_returned)
}

/// The job after a migration call (or an earlier job seen in flight): waited for until
/// `call_deadline`, aborted and waited for until `abort_deadline`, read once more at the end.
fn settle_job(
    ctx: &Ctx,
    name: &str,
    (call_deadline, abort_deadline, deadline): (Deadline, Deadline, Deadline),
    journal: Journal,
    call_returned: bool,
) -> Job {
    match wait_for_job(ctx, name, call_deadline, call_returned) {
        Job::InFlight => match abort(ctx, name, abort_deadline, journal, call_returned) {
            Job::InFlight if !job_in_flight(ctx, name, deadline) => Job::Idle,
            job => job,
        },
        job => job,
    }
}

/// migrate_to on the source.
pub fn migrate_to(
    ctx: &Ctx,
    target: &dyn Hypervisor,
    name: &str,
    req: &MigrateRequest,
    budget_ms: u64,
    deadline: Deadline,
    journal: Journal,
) -> Outcome {
    // Time kept after the migration call: for an abort, then for the final reading of both sides
    // (which has the time from `abort_deadline` to `deadline` to itself).
    let reserve = reserve_ms(budget_ms);
    let abort_deadline = deadline.minus(reserve);
    let call_deadline = abort_deadline.minus(reserve);
    let s = state_of(ctx.hv, ctx, name, deadline);
    let t = state_of(target, ctx, name, deadline);
    let (ss, ts) = (show(&s), show(&t));
    journal("begin", &format!("source {ss}, target {ts}"));
    let src = match s {
        Ok(s) => s,
        Err(e) => {
            // The source cannot answer; the target may show the migration already happened.
            if let Ok(t) = &t {
                if runs(t) && e.daemon_unusable() {
                    return answer(ctx, target, name, "source unreachable", deadline, Job::Idle);
                }
            }
            return Outcome::fail(
                OcfExitCode::ErrGeneric,
                format!("state of {name} on the source unknown: {e}"),
            );
        }
    };
    if gone(&src) {
        return answer(
            ctx,
            target,
            name,
            "no migration attempted",
            deadline,
            Job::Idle,
        );
    }
    // Observed on libvirt 9: a leftover incoming copy being torn down passes through "in
    // shutdown" and, for a moment, paused for another reason, or paused "for a migration" (the
    // reason libvirt gives both sides; without a job to ask it reads as outgoing): while the VM
    // runs here with no job, such a copy never ran and is waited on below (if it stays, the answer
    // comes from both sides).
    let leftover = |t: &DomainState| {
        settling_target(t) || matches!(t, DomainState::Paused(_) | DomainState::MigratingOut)
    };
    if let Ok(t) = &t {
        if src == DomainState::MigratingOut && *t == DomainState::Running {
            // Completed on the target without its confirm step: answer() cleans up and says 0.
            return answer(
                ctx,
                target,
                name,
                "earlier migration completed",
                deadline,
                Job::Idle,
            );
        }
        if runs(t) && !leftover(t) {
            return Outcome::fail(
                OcfExitCode::NotRunning,
                format!("domain {name} runs on both source ({ss}) and target ({ts}); nothing done"),
            );
        }
    }
    // A job already in flight (an earlier invocation was killed or timed out): wait for it.
    let job = ctx.hv.job_info(
        name,
        deadline.remaining_ms(ctx.clock).min(STATE_CALL_CAP_MS),
    );
    if let Ok(job) = &job {
        if job.in_flight() && job.operation != Some(JobOperation::MigrationIn) {
            ctx.log.info(&format!(
                "a migration job of {name} is already in flight; waiting for it"
            ));
            journal("wait-existing-job", &format!("{job:?}"));
            // A job seen in flight whose later readings fail has not been seen to end.
            let deadlines = (call_deadline, abort_deadline, deadline);
            let job = settle_job(ctx, name, deadlines, journal, false);
            return answer(ctx, target, name, "earlier migration job", deadline, job);
        }
    }
    let mut tgt = match t {
        Ok(t) => t,
        Err(e) => {
            return Outcome::fail(
                OcfExitCode::ErrGeneric,
                format!("target hypervisor of {name} cannot be checked: {e}; not migrating"),
            );
        }
    };
    // A leftover incoming copy (an earlier client died mid-migration) is torn down by libvirt
    // within moments: give it up to half the time before giving up.
    let settle = Deadline {
        at_ms: ctx.clock.now_ms() + call_deadline.remaining_ms(ctx.clock) / 2,
    };
    let mut sleep_ms = POLL_MS;
    while leftover(&tgt) && settle.sleep_within(ctx.clock, sleep_ms) {
        sleep_ms = (sleep_ms * 2).min(POLL_MAX_MS);
        match state_of(target, ctx, name, deadline) {
            Ok(t) => tgt = t,
            Err(e) => ctx.log.debug(&format!("target state: {e}")),
        }
    }
    if runs(&tgt) {
        return answer(
            ctx,
            target,
            name,
            "no migration attempted",
            deadline,
            Job::Idle,
        );
    }
    // The source's job could not be read: the incoming copy may be an earlier migration's, still
    // in flight, which may yet complete. Not "still on the source" (1): 7, the planner probes both.
    let job_unread = match &job {
        Ok(_) | Err(HvError::NoDomain { .. } | HvError::NotRunning { .. }) => None,
        Err(e) => Some(e),
    };
    if let (true, Some(e)) = (transient(&tgt), job_unread) {
        return Outcome::fail(
            OcfExitCode::NotRunning,
            format!(
                "an incoming copy of {name} waits on the target ({tgt}) and the job here cannot be read ({e}): an earlier migration may still be in flight; not migrating"
            ),
        );
    }
    if transient(&tgt) {
        return Outcome::fail(
            OcfExitCode::ErrGeneric,
            format!(
                "a stale incoming copy of {name} exists on the target and no migration job runs here; not migrating"
            ),
        );
    }
    // The orphan of an earlier migration (no job here, checked above; no copy there): it must run
    // once, here, before anything else.
    let src = if src == DomainState::MigratingOut && gone(&tgt) {
        match resume_orphan(ctx, ctx.hv, target, name, deadline) {
            Some(Ok(())) => {
                journal("resume-orphan", &format!("source was {src}, target {tgt}"));
                DomainState::Running
            }
            Some(Err(e)) => {
                return Outcome::fail(
                    OcfExitCode::NotRunning,
                    format!(
                        "domain {name} was left paused by a lost migration and runs nowhere; resuming it here failed: {e}"
                    ),
                );
            }
            None => src,
        }
    } else {
        src
    };
    if !matches!(
        src,
        DomainState::Running | DomainState::Paused(_) | DomainState::PmSuspended
    ) {
        return Outcome::fail(
            OcfExitCode::ErrGeneric,
            format!("domain {name} is {src} on the source; not migrating"),
        );
    }
    let timeout_ms = call_deadline.remaining_ms(ctx.clock);
    if timeout_ms < MIN_MIGRATE_CALL_MS {
        // The readings above used up the call's time: a migration started now could only be
        // aborted. None is started; the answer comes from both sides as they are.
        journal(
            "not-migrated",
            &format!("{timeout_ms} ms left for the call"),
        );
        let job = if job_unread.is_some() {
            Job::Unread
        } else {
            Job::Idle
        };
        let why = format!("no migration started: {timeout_ms} ms left of the migration's time");
        return answer(ctx, target, name, &why, deadline, job);
    }
    journal(
        "migrate-called",
        &format!("to {} within {timeout_ms} ms", req.target_uri),
    );
    ctx.log.info(&format!(
        "live-migrating {name} to {} (at most {timeout_ms} ms)",
        req.target_uri
    ));
    let r = ctx.hv.migrate(name, req, timeout_ms);
    let libvirt = match &r {
        Ok(()) => "migration returned success".to_owned(),
        Err(e) => e.to_string(),
    };
    journal("migrate-returned", &libvirt);
    // Never answer while a job is in flight (the call may have returned early with an error, or
    // timed out): wait for it within the call's time, then abort it.
    let call_returned = !matches!(&r, Err(e) if e.daemon_unusable());
    let deadlines = (call_deadline, abort_deadline, deadline);
    let job = settle_job(ctx, name, deadlines, journal, call_returned);
    answer(ctx, target, name, &libvirt, deadline, job)
}

/// migrate_from on the target. `source` is `None` when its URI cannot be built.
pub fn migrate_from(
    ctx: &Ctx,
    source: Option<&dyn Hypervisor>,
    name: &str,
    deadline: Deadline,
) -> Outcome {
    let mut sleep_ms = POLL_MS;
    let mut last = String::from("no answer yet");
    loop {
        if deadline.passed(ctx.clock) {
            return Outcome::fail(
                OcfExitCode::ErrGeneric,
                format!("domain {name} not running here before the deadline: {last}"),
            );
        }
        match state_of(ctx.hv, ctx, name, deadline) {
            // "In shutdown" here is how libvirt 9 shows an incoming copy being torn down after
            // its migration was cut off: judged with the source like an incoming copy.
            // Paused "for a migration" here is the incoming side that has not taken over yet
            // (libvirt reports the same pause reason on both sides): also judged with the source.
            Ok(s)
                if runs(&s)
                    && !matches!(s, DomainState::InShutdown | DomainState::MigratingOut) =>
            {
                ctx.log.info(&format!("domain {name} runs here ({s})"));
                return Outcome::success();
            }
            Ok(s) if settling_target(&s) || s == DomainState::MigratingOut => {
                // An incoming copy: wait, unless the source shows it is a leftover (the VM runs
                // there and no migration job is in flight).
                if let Some(src) = source {
                    let t = deadline.remaining_ms(ctx.clock).min(STATE_CALL_CAP_MS);
                    if let Ok(ss) = state_of(src, ctx, name, deadline) {
                        let job = src.job_info(name, t);
                        let in_flight = job.as_ref().map_or(true, |j| j.in_flight());
                        if runs(&ss) && ss != DomainState::MigratingOut && !in_flight {
                            return Outcome::fail(
                                OcfExitCode::ErrGeneric,
                                format!(
                                    "domain {name} is {s} here, but it runs on the source ({ss}) with no migration in flight"
                                ),
                            );
                        }
                    }
                }
                last = format!("domain {name} is {s} here");
            }
            Ok(_) => {
                // Not here: the source tells whether it is still there; no blind wait.
                let Some(src) = source else {
                    return Outcome::fail(
                        OcfExitCode::ErrGeneric,
                        format!(
                            "domain {name} is not running here (source not checked: no URI for it)"
                        ),
                    );
                };
                let mut s = state_of(src, ctx, name, deadline);
                let mut resumed = String::new();
                if s == Ok(DomainState::MigratingOut) {
                    match resume_orphan(ctx, src, ctx.hv, name, deadline) {
                        Some(Ok(())) => {
                            resumed =
                                "; it was left paused by a lost migration and is resumed there"
                                    .into();
                            s = state_of(src, ctx, name, deadline);
                        }
                        Some(Err(e)) => {
                            resumed = format!(
                                "; it was left paused by a lost migration and resuming it failed: {e}"
                            );
                        }
                        None => {}
                    }
                }
                // The migration may have finished between the two readings.
                if let Ok(here) = state_of(ctx.hv, ctx, name, deadline) {
                    if runs(&here) {
                        return Outcome::success();
                    }
                }
                return Outcome::fail(
                    OcfExitCode::ErrGeneric,
                    match &s {
                        Ok(s) if runs(s) => {
                            format!(
                                "domain {name} is not here; it still runs on the source ({s}){resumed}"
                            )
                        }
                        Ok(s) => {
                            format!(
                                "domain {name} runs nowhere (here not running, source {s}){resumed}"
                            )
                        }
                        Err(e) => {
                            format!("domain {name} is not here; the source cannot be checked: {e}")
                        }
                    },
                );
            }
            Err(e) => last = e.to_string(),
        }
        ctx.log.debug(&last);
        if !deadline.sleep_within(ctx.clock, sleep_ms) {
            continue;
        }
        sleep_ms = (sleep_ms * 2).min(POLL_MAX_MS);
    }
}
