//! One node's executor: runs one resource operation with the agent's own action functions
//! (`highlander_agent::actions`) against that node's hypervisor, inside the operation's timeout,
//! as pacemaker-execd runs the agent binary. The agent's per-resource lock and start record live
//! in files (`lib.rs`); the simulator calls the actions below that layer, so they are not run here.
//!
//! `migrate_to` and `migrate_from` are not in the agent yet (issue 4): [`migrate_to`] and
//! [`migrate_from`] are a thin adapter written from design.md's description of them (decide from
//! the truth on both sides, wait for a job left by a killed invocation, abort at the deadline, then
//! answer from what is seen). Replace them with the agent's functions when issue 4 lands.

use highlander_agent::Outcome;
use highlander_agent::actions::{self, Ctx, MonitorOpts, StopPlan};
use highlander_agent::clock::Deadline;
use highlander_agent::config::margin_ms;
use highlander_agent::hypervisor::{
    DomainState, HvError, JobOperation, MigrateRequest, ShutdownModes,
};
use highlander_agent::log::Log;
use ocf_metadata::{CheckLevel, OcfExitCode};

use super::kernel::SimClock;
use super::world::{RemoteHv, SimHv, domain_xml};

/// What the executor is asked to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpKind {
    Start,
    Stop,
    /// A probe (interval 0) or one run of a recurring monitor.
    Monitor,
    MigrateTo {
        target: String,
    },
    MigrateFrom {
        source: String,
    },
}

impl OpKind {
    pub fn task(&self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Stop => "stop",
            Self::Monitor => "monitor",
            Self::MigrateTo { .. } => "migrate_to",
            Self::MigrateFrom { .. } => "migrate_from",
        }
    }
}

/// Runs one operation to its end (on a kernel task).
pub fn run(
    hv: SimHv,
    remote: Option<RemoteHv>,
    clock: SimClock,
    vm: &str,
    op: &OpKind,
    timeout_ms: u64,
) -> Outcome {
    let log = Log::memory();
    let ctx = Ctx {
        hv: &hv,
        clock: &clock,
        log: &log,
    };
    let budget_ms = timeout_ms.saturating_sub(margin_ms(timeout_ms));
    let deadline = Deadline::after(&clock, budget_ms);
    match op {
        OpKind::Start => actions::start(&ctx, vm, &domain_xml(vm), &[], deadline),
        OpKind::Stop => {
            let plan = StopPlan {
                force: false,
                modes: ShutdownModes::default(),
                budget_ms,
            };
            actions::stop(&ctx, &[vm.to_owned()], &plan, deadline)
        }
        OpKind::Monitor => {
            let opts = MonitorOpts {
                level: CheckLevel::Basic,
                status_only: false,
                scripts: &[],
            };
            actions::monitor(&ctx, vm, opts, deadline)
        }
        OpKind::MigrateTo { target } => match remote {
            Some(r) => migrate_to(&ctx, &r, vm, target, deadline),
            None => Outcome::fail(OcfExitCode::ErrGeneric, "no target hypervisor"),
        },
        OpKind::MigrateFrom { source } => migrate_from(&ctx, vm, source, deadline),
    }
}

const POLL_MS: u64 = 200;
const STATE_CAP_MS: u64 = 5_000;

fn state(ctx: &Ctx, vm: &str, deadline: Deadline) -> Result<DomainState, HvError> {
    let t = deadline.remaining_ms(ctx.clock).clamp(1, STATE_CAP_MS);
    ctx.hv.state(vm, t)
}

/// Adapter (see the module doc): the whole live migration, from the source.
pub fn migrate_to(
    ctx: &Ctx,
    target_hv: &RemoteHv,
    vm: &str,
    target: &str,
    deadline: Deadline,
) -> Outcome {
    let fail = |reason: String| Outcome::fail(OcfExitCode::ErrGeneric, reason);
    let here = match state(ctx, vm, deadline) {
        Ok(s) => s,
        Err(e) => return fail(format!("cannot read domain {vm} on the source: {e}")),
    };
    if !here.is_active() {
        let cap = deadline.remaining_ms(ctx.clock).clamp(1, STATE_CAP_MS);
        return match target_hv.state(vm, cap) {
            Ok(DomainState::Running) => Outcome::success(),
            Ok(s) => fail(format!(
                "domain {vm} runs neither here nor on {target} (there: {s})"
            )),
            Err(e) => fail(format!(
                "domain {vm} is not here, and {target} does not answer: {e}"
            )),
        };
    }
    // Leave time to abort the job and look at both sides.
    let reserve_ms = (deadline.remaining_ms(ctx.clock) / 5).clamp(1, 10_000);
    let migrate_by = deadline.minus(reserve_ms);
    let cap = STATE_CAP_MS.min(deadline.remaining_ms(ctx.clock).max(1));
    let in_flight = ctx
        .hv
        .job_info(vm, cap)
        .is_ok_and(|j| j.in_flight() && j.operation == Some(JobOperation::MigrationOut));
    let mut last = String::new();
    if in_flight {
        // An earlier invocation was killed; its job goes on. Wait for it, within our own time.
        loop {
            let cap = STATE_CAP_MS.min(migrate_by.remaining_ms(ctx.clock).max(1));
            match ctx.hv.job_info(vm, cap) {
                Ok(j) if j.in_flight() => {}
                _ => break,
            }
            if !migrate_by.sleep_within(ctx.clock, POLL_MS) {
                let _ = ctx.hv.abort_job(
                    vm,
                    STATE_CAP_MS.min(deadline.remaining_ms(ctx.clock).max(1)),
                );
                last = "an earlier migration job did not finish in time; aborted".into();
                break;
            }
        }
    } else {
        let req = MigrateRequest {
            target_uri: target.to_owned(),
            ..MigrateRequest::default()
        };
        match ctx
            .hv
            .migrate(vm, &req, migrate_by.remaining_ms(ctx.clock).max(1))
        {
            Ok(()) => {}
            Err(e @ HvError::Timeout { .. }) => {
                let cap = STATE_CAP_MS.min(deadline.remaining_ms(ctx.clock).max(1));
                let _ = ctx.hv.abort_job(vm, cap);
                last = format!("{e}; job aborted");
            }
            Err(e) => last = e.to_string(),
        }
    }
    // Answer from the truth on both sides.
    loop {
        let cap = deadline.remaining_ms(ctx.clock).clamp(1, STATE_CAP_MS);
        let there = target_hv.state(vm, cap);
        if let Ok(DomainState::Running) = there {
            return Outcome::success();
        }
        let here = state(ctx, vm, deadline);
        match (&here, &there) {
            (Ok(DomainState::Running), Ok(DomainState::Absent | DomainState::ShutOff)) => {
                return fail(format!(
                    "migration of {vm} to {target} failed, it still runs here: {last}"
                ));
            }
            (Ok(s), Ok(t)) if !s.is_active() && !t.is_active() => {
                return fail(format!(
                    "domain {vm} is neither here nor running on {target}: {last}"
                ));
            }
            _ => {}
        }
        if !deadline.sleep_within(ctx.clock, POLL_MS) {
            return fail(format!(
                "migration of {vm} to {target} undetermined at the deadline (here {here:?}, there {there:?}): {last}"
            ));
        }
    }
}

/// Adapter (see the module doc): confirms on the target that the domain runs here.
pub fn migrate_from(ctx: &Ctx, vm: &str, source: &str, deadline: Deadline) -> Outcome {
    loop {
        match state(ctx, vm, deadline) {
            Ok(DomainState::Running) => return Outcome::success(),
            Ok(DomainState::MigratingIn) => {}
            Ok(s) => {
                return Outcome::fail(
                    OcfExitCode::ErrGeneric,
                    format!(
                        "domain {vm} is {s} here; the migration from {source} did not bring it"
                    ),
                );
            }
            Err(e) if !e.daemon_unusable() => {
                return Outcome::fail(OcfExitCode::ErrGeneric, e.to_string());
            }
            Err(_) => {}
        }
        if !deadline.sleep_within(ctx.clock, POLL_MS) {
            return Outcome::fail(
                OcfExitCode::ErrGeneric,
                format!("domain {vm} not running here from {source} before the deadline"),
            );
        }
    }
}
