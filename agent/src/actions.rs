//! The OCF actions as plain functions of (hypervisor, clock, log, resolved parameters, deadline),
//! each returning an [`Outcome`]: `start`, `stop`, `monitor`/`status` and the level-10 part of
//! `validate-all`. Parameter resolution, locking and the start record are the caller's (`lib.rs`).
//!
//! # Monitor: domain state to OCF code
//!
//! | libvirt says | monitor / status | why |
//! |---|---|---|
//! | not defined, shut off | 7 | cleanly stopped here |
//! | running, blocked, idle | 0 | (then `monitor_scripts`; at `OCF_CHECK_LEVEL` >= 10 also a QEMU process must exist) |
//! | paused by user or other reason, pm-suspended | 0, warning logged | the guest still holds its memory and disks here; 7 would let Pacemaker start a second copy |
//! | in shutdown | 0, logged | still running; once off the next monitor says 7 |
//! | paused after an I/O error | 1 | failed: the guest cannot make progress |
//! | crashed | 1 | failed; the emulator may still hold the disks, so not 7 |
//! | incoming migration (paused on the target), or paused "starting up" | 1 | not running here yet, but not cleanly stopped either: a stop here cancels the incoming copy and the VM stays on the source |
//! | outgoing migration (paused on the source) | 0 | this is still the copy that counts |
//! | no state | asked again within the budget, then 1 | undetermined |
//! | libvirtd down or hung, no QEMU process names the domain (`/proc`) | 7 | provably not running here |
//! | libvirtd down or hung, a QEMU process names the domain | 0, warning logged | the guest runs; a libvirtd restart is no reason to recover it |
//! | libvirtd down or hung, processes cannot be checked (non-QEMU URI) | 1 | undetermined |
//!
//! Probes and recurring monitors give the same codes for the same state; they differ only when the
//! `config` file cannot be read (see `lib.rs`).
//!
//! # Stop
//! Graceful shutdown (with `shutdown_mode`) until half the budget (at most 30 s) is left, then
//! destroy, then confirm. `force_stop`, and any state a guest cannot shut down from (paused,
//! crashed, migrating), destroy at once. Success whenever the domain is provably not running here,
//! including libvirtd down or hung with no QEMU process for the domain in `/proc`. libvirt calls
//! end a third of the budget (at most 10 s) before the deadline; when libvirtd does not answer and
//! the domain's QEMU still runs, that time ends the process directly (`qemukill.rs`: a forced stop
//! at once, otherwise once the graceful phase is over), then the stop succeeds once no QEMU
//! process names the domain. A failed stop would get the node fenced, with every other guest.

use ocf_metadata::{CheckLevel, OcfExitCode};

use crate::Outcome;
use crate::clock::{Clock, Deadline};
use crate::hypervisor::{
    DomainState, HvError, Hypervisor, PauseReason, ProcessCheck, ShutdownModes,
};
use crate::log::Log;
use crate::scripts;

/// At most this long per state query, so that a hung daemon leaves time to look at `/proc` and
/// ask again.
pub const STATE_CALL_CAP_MS: u64 = 10_000;
const POLL_FIRST_MS: u64 = 100;
const POLL_MAX_MS: u64 = 1_000;
/// Time the stop keeps for destroy and confirmation at most.
pub const DESTROY_RESERVE_CAP_MS: u64 = 30_000;
/// Time the stop keeps, at most, to end the domain's QEMU process itself when libvirtd does not
/// answer (a third of the budget below that).
pub const KILL_RESERVE_CAP_MS: u64 = 10_000;

/// What every action works with.
pub struct Ctx<'a> {
    pub hv: &'a dyn Hypervisor,
    pub clock: &'a dyn Clock,
    pub log: &'a Log,
}

impl Ctx<'_> {
    fn state(&self, name: &str, deadline: Deadline) -> Result<DomainState, HvError> {
        let budget = deadline.remaining_ms(self.clock).min(STATE_CALL_CAP_MS);
        let r = self.hv.state(name, budget);
        self.log.debug(&format!("state {name}: {r:?}"));
        r
    }
}

/// Growing poll intervals: 100 ms doubling to 1 s.
struct Backoff(u64);

impl Backoff {
    fn new() -> Self {
        Self(POLL_FIRST_MS)
    }
    /// Sleeps the next interval within `deadline`; false when no time was left.
    fn sleep(&mut self, clock: &dyn Clock, deadline: Deadline) -> bool {
        let ms = self.0;
        self.0 = (self.0 * 2).min(POLL_MAX_MS);
        deadline.sleep_within(clock, ms)
    }
}

/// Time for a call that may legitimately be slow (create, destroy): three quarters of what is
/// left, so that a hung call still leaves time to look at what it did.
fn long_call_ms(ctx: &Ctx, deadline: Deadline) -> u64 {
    deadline.remaining_ms(ctx.clock) / 4 * 3
}

fn fail(code: OcfExitCode, reason: impl Into<String>) -> Outcome {
    Outcome::fail(code, reason)
}

/// The monitor's answer for a state (the table in the module doc).
pub fn monitor_code(name: &str, state: &DomainState) -> (OcfExitCode, Option<String>) {
    use OcfExitCode::*;
    match state {
        DomainState::Absent | DomainState::ShutOff => (NotRunning, None),
        DomainState::Running
        | DomainState::MigratingOut
        | DomainState::InShutdown
        | DomainState::PmSuspended
        | DomainState::Paused(PauseReason::User | PauseReason::Other) => (Success, None),
        DomainState::Paused(PauseReason::IoError) => (
            ErrGeneric,
            Some(format!("domain {name} is paused after an I/O error")),
        ),
        DomainState::Crashed => (ErrGeneric, Some(format!("domain {name} crashed"))),
        DomainState::MigratingIn | DomainState::StartingUp => (
            ErrGeneric,
            Some(format!("domain {name} is {state}: not running here yet")),
        ),
        DomainState::NoState => (
            ErrGeneric,
            Some(format!("libvirt reports no state for domain {name}")),
        ),
    }
}

/// Options of one monitor.
#[derive(Debug, Clone, Copy)]
pub struct MonitorOpts<'a> {
    pub level: CheckLevel,
    /// `status`: the state check only, no scripts.
    pub status_only: bool,
    pub scripts: &'a [String],
}

/// One state query (asked again only while libvirt says "no state"), mapped by the table.
pub fn monitor(ctx: &Ctx, name: &str, opts: MonitorOpts, deadline: Deadline) -> Outcome {
    // Keep a little time for the /proc fallback after a hung query.
    let reserve = (deadline.remaining_ms(ctx.clock) / 10).min(1_000);
    let query_deadline = deadline.minus(reserve);
    let mut backoff = Backoff::new();
    let state = loop {
        match ctx.state(name, query_deadline) {
            Ok(DomainState::NoState) if backoff.sleep(ctx.clock, query_deadline) => continue,
            Ok(s) => break s,
            Err(HvError::NoDomain { .. }) => break DomainState::Absent,
            Err(e) if e.daemon_unusable() => return judge_by_processes(ctx, name, &e),
            Err(e) => return fail(OcfExitCode::ErrGeneric, e.to_string()),
        }
    };
    let (code, reason) = monitor_code(name, &state);
    match &state {
        DomainState::Paused(_) | DomainState::PmSuspended | DomainState::InShutdown => {
            ctx.log.warn(&format!(
                "domain {name} is {state}; it still counts as active here"
            ))
        }
        DomainState::MigratingOut => ctx.log.info(&format!("domain {name}: {state}")),
        _ => {}
    }
    if code != OcfExitCode::Success {
        return Outcome {
            code,
            stdout: String::new(),
            reason,
        };
    }
    if state == DomainState::Running && opts.level >= CheckLevel::Local {
        if let ProcessCheck::Absent = ctx.hv.emulator_processes(name) {
            return fail(
                OcfExitCode::ErrGeneric,
                format!("libvirt reports domain {name} running but no QEMU process for it exists"),
            );
        }
    }
    if !opts.status_only && !opts.scripts.is_empty() && state == DomainState::Running {
        if let Err(e) = scripts::run_all(opts.scripts, deadline, ctx.clock) {
            return fail(OcfExitCode::ErrGeneric, e.to_string());
        }
    }
    Outcome::success()
}

/// The daemon cannot answer: the process table decides.
fn judge_by_processes(ctx: &Ctx, name: &str, e: &HvError) -> Outcome {
    match ctx.hv.emulator_processes(name) {
        ProcessCheck::Absent => {
            ctx.log.warn(&format!(
                "{e}; no QEMU process for domain {name} exists: not running here"
            ));
            Outcome::code_only(OcfExitCode::NotRunning)
        }
        ProcessCheck::Present(pids) => {
            ctx.log.warn(&format!(
                "{e}; QEMU process(es) {pids:?} of domain {name} exist: running here"
            ));
            Outcome::success()
        }
        ProcessCheck::Unknown(why) => fail(
            OcfExitCode::ErrGeneric,
            format!("{e}; and the domain's processes cannot be checked: {why}"),
        ),
    }
}

/// start: idempotent; creates the domain from its XML, waits until it runs and the monitor
/// scripts pass, all within `deadline`.
pub fn start(
    ctx: &Ctx,
    name: &str,
    xml: &str,
    scripts_list: &[String],
    deadline: Deadline,
) -> Outcome {
    let mut backoff = Backoff::new();
    let mut created = false;
    let mut last = String::from("no answer yet");
    loop {
        if deadline.passed(ctx.clock) {
            return fail(
                OcfExitCode::ErrGeneric,
                format!("start of domain {name} not complete before the deadline: {last}"),
            );
        }
        match ctx.state(name, deadline) {
            Ok(DomainState::Absent | DomainState::ShutOff) => {
                if created {
                    return fail(
                        OcfExitCode::ErrGeneric,
                        format!("domain {name} stopped right after it was created"),
                    );
                }
                match ctx.hv.create(xml, long_call_ms(ctx, deadline)) {
                    Ok(()) => {
                        ctx.log.info(&format!("domain {name} created"));
                        created = true;
                        continue;
                    }
                    Err(e) if e.daemon_unusable() => last = e.to_string(),
                    Err(e) => {
                        // Someone else may have started it meanwhile: look once more.
                        match ctx.state(name, deadline) {
                            Ok(s) if s.is_active() => {
                                ctx.log.warn(&format!("{e}; but domain {name} is now {s}"));
                                continue;
                            }
                            _ => return fail(OcfExitCode::ErrGeneric, e.to_string()),
                        }
                    }
                }
            }
            Ok(DomainState::Running | DomainState::MigratingOut) => break,
            Ok(
                s @ (DomainState::Paused(PauseReason::User | PauseReason::Other)
                | DomainState::PmSuspended),
            ) => {
                if !created {
                    ctx.log.warn(&format!(
                        "domain {name} is already active here but {s}; left as it is"
                    ));
                    return Outcome::success();
                }
                last = format!("domain {name} is {s} after create");
            }
            Ok(DomainState::Paused(PauseReason::IoError)) => {
                return fail(
                    OcfExitCode::ErrGeneric,
                    format!("domain {name} is paused after an I/O error"),
                );
            }
            Ok(DomainState::Crashed) => {
                ctx.log.warn(&format!(
                    "domain {name} crashed; destroying it before the start"
                ));
                match ctx.hv.destroy(name, long_call_ms(ctx, deadline)) {
                    Ok(()) => continue,
                    Err(e) => last = e.to_string(),
                }
            }
            Ok(DomainState::InShutdown) => {
                last = format!("domain {name} is still shutting down");
            }
            // Ours after create, or an incoming copy: wait until it runs or goes (bounded).
            Ok(DomainState::StartingUp) => last = format!("domain {name} is starting up"),
            Ok(DomainState::MigratingIn) => {
                return fail(
                    OcfExitCode::ErrGeneric,
                    format!(
                        "an incoming migration of domain {name} is in progress here; not starting a second copy"
                    ),
                );
            }
            Ok(DomainState::NoState) => last = format!("libvirt reports no state for {name}"),
            Err(e) => last = e.to_string(),
        }
        ctx.log.debug(&last);
        backoff.sleep(ctx.clock, deadline);
    }
    // Running: wait for the monitor scripts.
    let mut backoff = Backoff::new();
    loop {
        match scripts::run_all(scripts_list, deadline, ctx.clock) {
            Ok(()) => break,
            Err(e) => {
                ctx.log.debug(&e.to_string());
                if !backoff.sleep(ctx.clock, deadline) {
                    return fail(
                        OcfExitCode::ErrGeneric,
                        format!(
                            "domain {name} runs but its monitor scripts did not pass before the deadline: {e}"
                        ),
                    );
                }
            }
        }
    }
    ctx.log.info(&format!("domain {name} is running"));
    Outcome::success()
}

/// How to stop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopPlan {
    pub force: bool,
    pub modes: ShutdownModes,
    /// The action's whole budget, to split between graceful shutdown and destroy.
    pub budget_ms: u64,
}

/// stop: every named domain shut down or destroyed; success only when each provably does not run.
pub fn stop(ctx: &Ctx, names: &[String], plan: &StopPlan, deadline: Deadline) -> Outcome {
    let reserve = (plan.budget_ms / 2).min(DESTROY_RESERVE_CAP_MS);
    let kill_reserve = (plan.budget_ms / 3).min(KILL_RESERVE_CAP_MS);
    let phases = StopPhases {
        graceful_end: deadline.minus(reserve),
        daemon_end: deadline.minus(kill_reserve),
        deadline,
    };
    for name in names {
        if let Err(reason) = stop_one(ctx, name, plan, &phases) {
            return fail(OcfExitCode::ErrGeneric, reason);
        }
    }
    Outcome::success()
}

/// The time of a stop: graceful shutdown until `graceful_end`, then libvirt's destroy; libvirt
/// calls end by `daemon_end`, so that when the daemon does not answer, the rest is enough to end
/// the domain's QEMU process directly ([`kill_without_daemon`]).
struct StopPhases {
    graceful_end: Deadline,
    daemon_end: Deadline,
    deadline: Deadline,
}

impl StopPhases {
    /// Where a libvirt call must end: by `daemon_end`, or once that passed (the daemon answers but
    /// the domain is not yet stopped), by the deadline.
    fn call_end(&self, clock: &dyn Clock) -> Deadline {
        if self.daemon_end.passed(clock) {
            self.deadline
        } else {
            self.daemon_end
        }
    }
}

fn stop_one(ctx: &Ctx, name: &str, plan: &StopPlan, phases: &StopPhases) -> Result<(), String> {
    let mut destroying = plan.force;
    let mut shutdown_sent = false;
    let mut backoff = Backoff::new();
    let mut last = String::from("no answer yet");
    // The daemon's last failure to answer while QEMU process(es) of the domain exist.
    let mut unanswered: Option<HvError> = None;
    loop {
        if phases.deadline.passed(ctx.clock) {
            return Err(format!(
                "domain {name} not stopped before the deadline: {last}"
            ));
        }
        if let Some(e) = unanswered
            .as_ref()
            .filter(|_| phases.daemon_end.passed(ctx.clock))
        {
            return kill_without_daemon(ctx, name, e, phases.deadline);
        }
        let call_end = phases.call_end(ctx.clock);
        unanswered = None;
        match ctx.state(name, call_end) {
            Ok(DomainState::Absent | DomainState::ShutOff) | Err(HvError::NoDomain { .. }) => {
                ctx.log.info(&format!("domain {name} is stopped"));
                return Ok(());
            }
            Ok(state) => {
                last = format!("domain {name} is {state}");
                let can_shut_down = matches!(state, DomainState::Running | DomainState::InShutdown);
                if !destroying && (!can_shut_down || phases.graceful_end.passed(ctx.clock)) {
                    ctx.log.info(&format!(
                        "domain {name} is {state}; graceful shutdown {}: destroying it",
                        if can_shut_down {
                            "took too long"
                        } else {
                            "impossible"
                        }
                    ));
                    destroying = true;
                }
                let step = if destroying {
                    destroy_step(ctx, name, call_end)
                } else if !shutdown_sent {
                    shutdown_step(ctx, name, plan, phases.graceful_end, &mut shutdown_sent)
                } else {
                    Step::Wait
                };
                match step {
                    Step::Again => continue,
                    Step::Destroy => {
                        destroying = true;
                        continue;
                    }
                    Step::Wait => {}
                    Step::Failed(e) => {
                        last = e.to_string();
                        unanswered = e.daemon_unusable().then_some(e);
                    }
                }
            }
            Err(e) if e.daemon_unusable() => match ctx.hv.emulator_processes(name) {
                ProcessCheck::Absent => {
                    ctx.log.warn(&format!(
                        "{e}; no QEMU process for domain {name} exists: stopped"
                    ));
                    return Ok(());
                }
                ProcessCheck::Present(_) if destroying || phases.graceful_end.passed(ctx.clock) => {
                    return kill_without_daemon(ctx, name, &e, phases.deadline);
                }
                ProcessCheck::Present(pids) => {
                    last = format!("{e}; QEMU process(es) {pids:?} of domain {name} still exist");
                    unanswered = Some(e);
                }
                ProcessCheck::Unknown(why) => {
                    last = format!("{e}; and the domain's processes cannot be checked: {why}");
                }
            },
            Err(e) => last = e.to_string(),
        }
        ctx.log.debug(&last);
        // While shutting down gracefully, wake up at the end of that phase at the latest.
        let sleep_until = if destroying || phases.graceful_end.passed(ctx.clock) {
            phases.call_end(ctx.clock)
        } else {
            phases.graceful_end
        };
        backoff.sleep(ctx.clock, sleep_until);
    }
}

/// What a stop does after one destroy or shutdown request.
enum Step {
    /// Look at the state again at once.
    Again,
    /// Graceful shutdown is impossible: destroy.
    Destroy,
    /// Wait before looking again.
    Wait,
    /// The request failed.
    Failed(HvError),
}

fn destroy_step(ctx: &Ctx, name: &str, call_end: Deadline) -> Step {
    match ctx.hv.destroy(name, long_call_ms(ctx, call_end)) {
        Ok(()) => {
            ctx.log.info(&format!("domain {name} destroyed"));
            Step::Again
        }
        Err(HvError::NotRunning { .. } | HvError::NoDomain { .. }) => Step::Again,
        Err(e) => {
            ctx.log.warn(&e.to_string());
            Step::Failed(e)
        }
    }
}

fn shutdown_step(
    ctx: &Ctx,
    name: &str,
    plan: &StopPlan,
    graceful_end: Deadline,
    sent: &mut bool,
) -> Step {
    let timeout_ms = graceful_end.remaining_ms(ctx.clock).min(STATE_CALL_CAP_MS);
    match ctx.hv.shutdown(name, &plan.modes, timeout_ms) {
        Ok(()) => {
            ctx.log.info(&format!(
                "asked domain {name} to shut down (mode {})",
                plan.modes
            ));
            *sent = true;
            Step::Wait
        }
        Err(HvError::NotRunning { .. } | HvError::NoDomain { .. }) => Step::Again,
        Err(e) => {
            ctx.log.warn(&format!("{e}; destroying instead"));
            Step::Destroy
        }
    }
}

/// The daemon does not answer and QEMU process(es) of the domain exist: ends the domain's own
/// process directly (only one proven to be this domain's, see `qemukill.rs`), then confirms that
/// no QEMU process names the domain any more. The node keeps running: a failed stop would get it
/// fenced, with every other guest on it.
fn kill_without_daemon(
    ctx: &Ctx,
    name: &str,
    e: &HvError,
    deadline: Deadline,
) -> Result<(), String> {
    if ctx.hv.emulator_processes(name) == ProcessCheck::Absent {
        ctx.log.warn(&format!(
            "{e}; no QEMU process for domain {name} exists: stopped"
        ));
        return Ok(());
    }
    ctx.log.warn(&format!(
        "{e}; ending domain {name}'s QEMU process without libvirtd"
    ));
    let done = ctx
        .hv
        .kill_emulator(name, deadline.remaining_ms(ctx.clock))
        .map_err(|why| format!("{e}; domain {name}'s QEMU process was not ended: {why}"))?;
    match ctx.hv.emulator_processes(name) {
        ProcessCheck::Absent => {
            ctx.log.warn(&format!(
                "domain {name} stopped without libvirtd: {done}; no QEMU process names it any \
                 more. libvirtd, once it answers, shows it shut off"
            ));
            Ok(())
        }
        ProcessCheck::Present(pids) => Err(format!(
            "{e}; {done}, but QEMU process(es) {pids:?} still name domain {name}"
        )),
        ProcessCheck::Unknown(why) => Err(format!(
            "{e}; {done}, but the domain's processes cannot be checked: {why}"
        )),
    }
}

/// validate-all at `OCF_CHECK_LEVEL` >= 10: the hypervisor answers a state query.
pub fn validate_local(ctx: &Ctx, name: &str, deadline: Deadline) -> Outcome {
    match ctx.state(name, deadline) {
        Ok(s) => {
            ctx.log.debug(&format!("validate: domain {name} is {s}"));
            Outcome::success()
        }
        Err(e) if e.daemon_unusable() => fail(OcfExitCode::ErrInstalled, e.to_string()),
        Err(e) => fail(OcfExitCode::ErrGeneric, e.to_string()),
    }
}
