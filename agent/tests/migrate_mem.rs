//! migrate_to / migrate_from over two in-memory nodes sharing one world: every row of the truth
//! table, interruptions at many points, deadlines, a target that is down, and the journal.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use highlander_agent::clock::{Clock, ManualClock};
use highlander_agent::hypervisor::{
    DomainInfo, DomainState, HvError, Hypervisor, JobInfo, MigrateRequest, Op, PauseReason,
    ProcessCheck, ShutdownModes,
};
use highlander_agent::log::Log;
use highlander_agent::mem::{Daemon, Fault, MemDomain, MemHypervisor, MemWorld};
use highlander_agent::{Deps, Outcome, journal, run_with};
use ocf_metadata::{OcfEnv, OcfExitCode};

const A: &str = "node1";
const B: &str = "node2";
const BUDGET_MS: u64 = 18_000; // of the 20 s timeout

struct Pair {
    clock: Arc<ManualClock>,
    world: MemWorld,
    dir: tempfile::TempDir,
    /// When set, node2's daemon answers this many state readings more, then hangs for them
    /// (every other call still answers): a daemon that stops answering in mid-action.
    target_state_answers: Option<Arc<AtomicUsize>>,
}

/// node2's hypervisor whose state readings stop answering after a count (see `Pair`).
struct StateHangsAfter {
    inner: MemHypervisor,
    answers: Arc<AtomicUsize>,
}

impl Hypervisor for StateHangsAfter {
    fn uri(&self) -> String {
        self.inner.uri()
    }
    fn state(&self, name: &str, timeout_ms: u64) -> Result<DomainState, HvError> {
        let left = self.answers.load(Ordering::SeqCst);
        if left == 0 {
            return Err(HvError::Timeout {
                op: Op::State,
                uri: self.uri(),
                timeout_ms,
            });
        }
        self.answers.store(left - 1, Ordering::SeqCst);
        self.inner.state(name, timeout_ms)
    }
    fn create(&self, xml: &str, timeout_ms: u64) -> Result<(), HvError> {
        self.inner.create(xml, timeout_ms)
    }
    fn shutdown(&self, name: &str, modes: &ShutdownModes, timeout_ms: u64) -> Result<(), HvError> {
        self.inner.shutdown(name, modes, timeout_ms)
    }
    fn destroy(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        self.inner.destroy(name, timeout_ms)
    }
    fn info(&self, name: &str, timeout_ms: u64) -> Result<DomainInfo, HvError> {
        self.inner.info(name, timeout_ms)
    }
    fn migrate(&self, name: &str, req: &MigrateRequest, timeout_ms: u64) -> Result<(), HvError> {
        self.inner.migrate(name, req, timeout_ms)
    }
    fn abort_job(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        self.inner.abort_job(name, timeout_ms)
    }
    fn resume(&self, name: &str, timeout_ms: u64) -> Result<(), HvError> {
        self.inner.resume(name, timeout_ms)
    }
    fn job_info(&self, name: &str, timeout_ms: u64) -> Result<JobInfo, HvError> {
        self.inner.job_info(name, timeout_ms)
    }
    fn emulator_processes(&self, name: &str) -> ProcessCheck {
        self.inner.emulator_processes(name)
    }
}

impl Pair {
    fn new() -> Self {
        let clock = Arc::new(ManualClock::new(1_000));
        let world = MemWorld::new(clock.clone());
        world.node(A);
        world.node(B);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("vm1.xml"),
            "<domain type='qemu'><name>vm1</name></domain>",
        )
        .unwrap();
        Pair {
            clock,
            world,
            dir,
            target_state_answers: None,
        }
    }
    fn rsctmp(&self, node: &str) -> PathBuf {
        self.dir.path().join(node)
    }
    fn run(&self, node: &str, action: &str, extra: &[(&str, &str)]) -> Outcome {
        let mut pairs: Vec<(String, String)> = vec![
            ("OCF_RESOURCE_INSTANCE".into(), "vm1".into()),
            (
                "OCF_RESKEY_config".into(),
                self.dir.path().join("vm1.xml").display().to_string(),
            ),
            ("OCF_RESKEY_hypervisor".into(), format!("mem://{node}")),
            ("OCF_RESKEY_remoteuri".into(), "mem://%n".into()),
            ("HA_RSCTMP".into(), self.rsctmp(node).display().to_string()),
            ("OCF_RESKEY_CRM_meta_timeout".into(), "20000".into()),
            ("OCF_RESKEY_CRM_meta_migrate_source".into(), A.into()),
            ("OCF_RESKEY_CRM_meta_migrate_target".into(), B.into()),
        ];
        for (k, v) in extra {
            pairs.retain(|(pk, _)| pk != k);
            pairs.push((k.to_string(), v.to_string()));
        }
        let env = OcfEnv::from_pairs(pairs).unwrap();
        let log = Log::memory();
        let world = self.world.clone();
        let answers = self.target_state_answers.clone();
        let connect = move |uri: Option<&str>| -> Box<dyn Hypervisor> {
            let uri = uri.expect("hypervisor is set");
            let node = uri.strip_prefix("mem://").unwrap_or(uri);
            match &answers {
                Some(a) if node == B => Box::new(StateHangsAfter {
                    inner: world.node(node),
                    answers: a.clone(),
                }),
                _ => Box::new(world.node(node)),
            }
        };
        let clock: &dyn Clock = self.clock.as_ref();
        let out = run_with(
            action,
            &env,
            &Deps {
                clock,
                log: &log,
                connect: &connect,
                cib: None,
            },
        );
        if out.code != OcfExitCode::Success && out.code != OcfExitCode::NotRunning {
            assert!(out.reason.is_some(), "{action} on {node}: no reason");
        }
        out
    }
    fn code(&self, node: &str, action: &str) -> OcfExitCode {
        self.run(node, action, &[]).code
    }
    fn migrations_called(&self) -> usize {
        self.world
            .calls(A)
            .iter()
            .filter(|c| c.starts_with("migrate"))
            .count()
    }
    /// Starts a migration outside the agent and "kills" the caller after `after_ms`.
    fn migration_left_in_flight(&self, after_ms: u64) {
        let r = self.world.node(A).migrate(
            "vm1",
            &MigrateRequest {
                target_uri: format!("mem://{B}"),
                ..MigrateRequest::default()
            },
            after_ms,
        );
        let _ = r;
    }
}

use OcfExitCode::*;

fn reason(o: &Outcome) -> String {
    o.reason.clone().unwrap_or_default()
}

#[test]
fn plain_migration_then_repeats_in_any_order() {
    let p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    assert_eq!(p.code(B, "monitor"), NotRunning, "probe on the target");
    assert_eq!(p.code(A, "migrate_to"), Success);
    assert_eq!(p.world.running_on("vm1"), vec![B]);
    assert_eq!(p.code(B, "migrate_from"), Success);
    assert_eq!(p.code(A, "migrate_to"), Success, "migrate_to twice");
    assert_eq!(p.code(B, "migrate_from"), Success, "migrate_from twice");
    assert_eq!(p.migrations_called(), 1, "one libvirt migration only");
    assert_eq!(
        p.code(A, "stop"),
        Success,
        "source stop after the migration"
    );
    assert_eq!(p.code(A, "monitor"), NotRunning);
    assert_eq!(p.code(B, "monitor"), Success);
    assert_eq!(p.world.running_on("vm1"), vec![B]);
    let phases: Vec<String> = journal::read(&p.rsctmp(A), "vm1")
        .iter()
        .map(|e| e["phase"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        &phases[..4],
        ["begin", "migrate-called", "migrate-returned", "answer"]
    );
    // migrate_from recorded the domain on the target, so its stop finds it without config.
    assert_eq!(
        highlander_agent::lock::read_record(&p.rsctmp(B), "vm1")
            .unwrap()
            .as_deref(),
        Some("vm1")
    );
}

#[test]
fn migrate_from_before_migrate_to_fails_fast_with_the_truth() {
    let p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    let t0 = p.clock.now_ms();
    let out = p.run(B, "migrate_from", &[]);
    assert_eq!(out.code, ErrGeneric);
    assert!(reason(&out).contains("still runs on the source"), "{out:?}");
    assert!(p.clock.now_ms() - t0 < 1_000, "no blind wait (W4)");
    assert_eq!(p.world.running_on("vm1"), vec![A]);
}

#[test]
fn already_on_the_target_is_success_without_work() {
    let p = Pair::new();
    p.world.put_domain(
        B,
        "vm1",
        MemDomain::running("<domain><name>vm1</name></domain>"),
    );
    assert_eq!(p.code(A, "migrate_to"), Success);
    assert_eq!(p.migrations_called(), 0);
}

#[test]
fn both_and_nowhere_are_distinct_failures_that_do_nothing() {
    let p = Pair::new();
    let xml = "<domain><name>vm1</name></domain>";
    p.world.put_domain(A, "vm1", MemDomain::running(xml));
    p.world.put_domain(B, "vm1", MemDomain::running(xml));
    // 7, not 1: 1 tells the planner the VM still runs on the source alone, which is not so here.
    let out = p.run(A, "migrate_to", &[]);
    assert_eq!(out.code, NotRunning);
    assert!(reason(&out).contains("runs on both"), "{out:?}");
    assert_eq!(p.migrations_called(), 0);
    let q = Pair::new();
    let out = q.run(A, "migrate_to", &[]);
    assert_eq!(out.code, NotRunning);
    assert!(reason(&out).contains("runs nowhere"), "{out:?}");
    let out = q.run(B, "migrate_from", &[]);
    assert!(reason(&out).contains("runs nowhere"), "{out:?}");
}

#[test]
fn deadline_shorter_than_the_migration_aborts_and_stays_on_the_source() {
    let p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    p.world.set_migration_ms(60_000);
    let t0 = p.clock.now_ms();
    let out = p.run(A, "migrate_to", &[]);
    assert!(p.clock.now_ms() - t0 <= BUDGET_MS, "within the budget");
    assert_eq!(out.code, ErrGeneric);
    assert!(reason(&out).contains("still runs on the source"), "{out:?}");
    assert_eq!(p.world.running_on("vm1"), vec![A]);
    assert_eq!(p.world.domain(B, "vm1"), None, "incoming copy gone");
    assert!(p.world.calls(A).iter().any(|c| c == "abort job vm1"));
    let phases: Vec<String> = journal::read(&p.rsctmp(A), "vm1")
        .iter()
        .map(|e| e["phase"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(phases.contains(&"abort".to_owned()), "{phases:?}");
    // And the VM keeps running: a later migrate with time enough works.
    p.world.set_migration_ms(500);
    assert_eq!(p.code(A, "migrate_to"), Success);
}

/// The readings before the migration used up the time its call had (the source's job reading
/// hung, every call slow): no migration is started that could not end within the budget; the
/// answer is 1, the guest still running on the source, and nothing moved.
#[test]
fn no_migration_starts_when_the_call_has_no_time_left() {
    let p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    p.world.set_call_ms(500);
    p.world.inject(A, Op::JobInfo, Fault::Hang);
    let t0 = p.clock.now_ms();
    let out = p.run(A, "migrate_to", &[]);
    assert!(p.clock.now_ms() - t0 <= BUDGET_MS, "within the budget");
    assert!(
        !p.world.calls(A).iter().any(|c| c == "migrate vm1"),
        "a migration was started without time for it: {:?}",
        p.world.calls(A)
    );
    assert_eq!(out.code, ErrGeneric, "{out:?}");
    assert!(reason(&out).contains("still runs on the source"), "{out:?}");
    assert_eq!(p.world.running_on("vm1"), vec![A]);
}

/// The source daemon takes the abort but does not answer it before its timeout (seen in CI under
/// load): the abort may use its own share of the budget only, and both sides are still read for
/// the answer, which is 1 with the guest on the source (not 7 "source unknown").
#[test]
fn an_abort_that_gets_no_answer_leaves_time_to_read_both_sides() {
    let p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    p.world.set_migration_ms(60_000);
    // Every call takes a moment (a loaded daemon), so a reading given no time cannot answer.
    p.world.set_call_ms(50);
    p.world.inject(A, Op::AbortJob, Fault::HangAfterEffect);
    let t0 = p.clock.now_ms();
    let out = p.run(A, "migrate_to", &[]);
    assert!(p.clock.now_ms() - t0 <= BUDGET_MS, "within the budget");
    assert!(p.world.calls(A).iter().any(|c| c == "abort job vm1"));
    assert_eq!(out.code, ErrGeneric, "{out:?}");
    assert!(reason(&out).contains("still runs on the source"), "{out:?}");
    assert!(!reason(&out).contains("unknown"), "{out:?}");
    assert_eq!(p.world.running_on("vm1"), vec![A]);
}

/// The abort neither takes effect nor answers: the job goes on and may complete after the agent
/// has answered, so the guest running on the source now is no proof it stays there. Not 1 ("no
/// migration, still on the source") but 7, and the planner probes both sides.
#[test]
fn an_abort_that_never_takes_effect_answers_location_unknown() {
    let p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    p.world.set_migration_ms(60_000);
    p.world.inject(A, Op::AbortJob, Fault::Hang);
    let t0 = p.clock.now_ms();
    let out = p.run(A, "migrate_to", &[]);
    assert!(p.clock.now_ms() - t0 <= BUDGET_MS, "within the budget");
    assert!(p.world.calls(A).iter().any(|c| c == "abort job vm1"));
    assert_eq!(out.code, NotRunning, "{out:?}");
    assert!(reason(&out).contains("still in flight"), "{out:?}");
    assert_eq!(p.world.running_on("vm1"), vec![A], "it still runs once");
}

/// The same on libvirt 9, where the target's incoming copy reads as paused "for a migration"
/// (outgoing, when no job answers) or paused for another reason: with the source's job still in
/// flight that copy is the migration's own, not a second run (CI on 461e131 answered "runs on
/// both"). Still 7 with the in-flight reason, and the guest still runs once.
#[test]
fn an_unaborted_job_with_a_paused_incoming_copy_is_not_a_double_run() {
    for shown in [
        DomainState::MigratingOut,
        DomainState::Paused(PauseReason::Other),
    ] {
        let p = Pair::new();
        assert_eq!(p.code(A, "start"), Success);
        p.world.set_migration_ms(60_000);
        p.world.set_incoming_reads_as(shown.clone());
        p.world.inject(A, Op::AbortJob, Fault::Hang);
        let out = p.run(A, "migrate_to", &[]);
        assert_eq!(
            p.world.node(B).state("vm1", 100),
            Ok(shown.clone()),
            "the knob shows the incoming copy as libvirt 9 does"
        );
        assert_eq!(out.code, NotRunning, "{shown:?}: {out:?}");
        assert!(
            reason(&out).contains("still in flight"),
            "{shown:?}: {out:?}"
        );
        assert!(!reason(&out).contains("runs on both"), "{shown:?}: {out:?}");
        assert_eq!(p.world.running_on("vm1"), vec![A], "it still runs once");
    }
}

/// cts-sim seed 40863: the migrate call and the abort never answer, and reading the source's job
/// fails, so the abort's end is taken as seen; the target still holds the incoming copy, and the
/// migration may complete after the answer. Not "still on the source" (1): location unknown (7).
#[test]
fn an_incoming_copy_left_on_the_target_answers_location_unknown() {
    let p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    p.world.set_migration_ms(60_000);
    p.world.inject(A, Op::Migrate, Fault::HangAfterEffect);
    p.world.inject(A, Op::AbortJob, Fault::Hang);
    // The first reading (a job left by an earlier invocation?) and the one after the abort fail.
    for _ in 0..2 {
        p.world
            .inject(A, Op::JobInfo, Fault::Error("job info failed".into()));
    }
    let out = p.run(A, "migrate_to", &[]);
    assert_eq!(
        p.world.domain(B, "vm1").map(|d| d.state),
        Some(DomainState::MigratingIn),
        "the incoming copy is still there"
    );
    assert_eq!(out.code, NotRunning, "{out:?}");
    // Since seed 1796074916208939 a failed job reading after a call that timed out is no end of
    // the job: the agent reads on, sees it in flight, and says so.
    assert!(reason(&out).contains("still in flight"), "{out:?}");
}

/// The same defence when the call returned: libvirt's migration call reports an error while the
/// move goes on, and reading the source's job fails (taken as a driver without job information):
/// the incoming copy on the target still makes the answer 7, not 1.
#[test]
fn an_incoming_copy_after_a_returned_call_answers_location_unknown() {
    let p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    p.world.set_migration_ms(60_000);
    p.world
        .inject(A, Op::Migrate, Fault::ErrorAfterEffect("lost".into()));
    for _ in 0..2 {
        p.world
            .inject(A, Op::JobInfo, Fault::Error("job info failed".into()));
    }
    let out = p.run(A, "migrate_to", &[]);
    assert_eq!(
        p.world.domain(B, "vm1").map(|d| d.state),
        Some(DomainState::MigratingIn),
        "the incoming copy is still there"
    );
    assert_eq!(out.code, NotRunning, "{out:?}");
    assert!(reason(&out).contains("incoming copy"), "{out:?}");
}

/// cts-sim seed 1796074916208939: the migrate call timed out with its job in flight, the next
/// reading of the source's job failed (not a daemon problem: taken for "no job information"), so
/// the job was neither waited for nor aborted; the target's daemon then hung, and the agent
/// answered 1 "still runs on the source". The move completed afterwards, and the planner started
/// the VM elsewhere. A job that cannot be read after a call that did not return is not ended.
#[test]
fn a_failed_job_reading_after_a_timed_out_migrate_call_is_not_the_jobs_end() {
    let mut p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    p.world.set_migration_ms(60_000);
    // The target answers the reading before the call, then hangs.
    p.target_state_answers = Some(Arc::new(AtomicUsize::new(1)));
    // The job reading before the call hangs (it eats most of the budget, as in the seed); the
    // one after the call fails.
    p.world.inject(A, Op::JobInfo, Fault::Hang);
    p.world
        .inject(A, Op::JobInfo, Fault::Error("job info failed".into()));
    // A 40 s timeout, so the call still has time after the hung reading (with 20 s, none is
    // started: `no_migration_starts_when_the_call_has_no_time_left`).
    let t0 = p.clock.now_ms();
    let out = p.run(A, "migrate_to", &[("OCF_RESKEY_CRM_meta_timeout", "40000")]);
    assert!(p.clock.now_ms() - t0 <= 2 * BUDGET_MS, "within the budget");
    assert!(
        p.world.calls(A).iter().any(|c| c == "migrate vm1"),
        "the migration is started: {:?}",
        p.world.calls(A)
    );
    // Whatever the answer, it must hold once the migration's time has passed.
    p.clock.advance_ms(120_000);
    let on = p.world.running_on("vm1");
    match out.code {
        ErrGeneric => assert_eq!(on, vec![A], "1 said still on the source: {out:?}"),
        NotRunning => {}
        other => panic!("unexpected answer {other:?}: {out:?}"),
    }
    assert!(
        p.world.calls(A).iter().any(|c| c == "abort job vm1"),
        "the job in flight is aborted: {:?}",
        p.world.calls(A)
    );
}

/// The call returned an error while the move goes on, the job cannot be read (taken for a driver
/// without job information) and the target's daemon hangs: nothing shows the move did not happen.
#[test]
fn no_job_read_and_no_target_read_is_not_still_on_the_source() {
    let mut p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    p.world.set_migration_ms(60_000);
    p.target_state_answers = Some(Arc::new(AtomicUsize::new(1)));
    p.world
        .inject(A, Op::Migrate, Fault::ErrorAfterEffect("lost".into()));
    for _ in 0..2 {
        p.world
            .inject(A, Op::JobInfo, Fault::Error("job info failed".into()));
    }
    let out = p.run(A, "migrate_to", &[]);
    assert_eq!(out.code, NotRunning, "{out:?}");
    p.clock.advance_ms(120_000);
    assert_eq!(p.world.running_on("vm1"), vec![B], "the move completed");
}

/// A job left in flight by an earlier invocation, and the first reading of the source's job
/// fails: the incoming copy on the target is that job's, not a stale one, and the move may still
/// complete. Not "still on the source" (1).
#[test]
fn an_unreadable_job_before_the_call_is_not_no_job() {
    let p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    p.world.set_migration_ms(60_000);
    p.migration_left_in_flight(100);
    p.world
        .inject(A, Op::JobInfo, Fault::Error("job info failed".into()));
    let out = p.run(A, "migrate_to", &[]);
    p.clock.advance_ms(120_000);
    let on = p.world.running_on("vm1");
    match out.code {
        Success => assert_eq!(on, vec![B], "{out:?}"),
        ErrGeneric => assert_eq!(on, vec![A], "1 said still on the source: {out:?}"),
        NotRunning => {}
        other => panic!("unexpected answer {other:?}: {out:?}"),
    }
}

#[test]
fn completed_migration_reported_as_error_is_a_success() {
    let p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    p.world.inject(
        A,
        Op::Migrate,
        Fault::ErrorAfterEffect("cgroup warning".into()),
    );
    assert_eq!(
        p.code(A, "migrate_to"),
        Success,
        "W2: libvirt's error is not the truth"
    );
    assert_eq!(p.world.running_on("vm1"), vec![B]);
}

#[test]
fn target_down_fails_fast() {
    let p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    p.world.set_daemon(B, Daemon::Down);
    let t0 = p.clock.now_ms();
    let out = p.run(A, "migrate_to", &[]);
    assert_eq!(out.code, ErrGeneric);
    assert!(reason(&out).contains("cannot be checked"), "{out:?}");
    assert!(p.clock.now_ms() - t0 < 1_000);
    assert_eq!(p.migrations_called(), 0);
    assert_eq!(p.world.running_on("vm1"), vec![A]);
}

#[test]
fn a_job_left_by_a_killed_invocation_is_waited_for() {
    let p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    p.world.set_migration_ms(5_000);
    p.migration_left_in_flight(100);
    assert_eq!(
        p.world.domain(B, "vm1").map(|d| d.state),
        Some(DomainState::MigratingIn)
    );
    assert_eq!(p.code(B, "monitor"), ErrGeneric, "incoming is not running");
    assert_eq!(
        p.code(B, "migrate_from"),
        Success,
        "waits for the incoming copy"
    );
    assert_eq!(
        p.code(A, "migrate_to"),
        Success,
        "answers from the finished job"
    );
    assert_eq!(p.migrations_called(), 1, "no second migration started");
}

/// The agent killed at many points of a migration (the caller of libvirt's migrate gives up after
/// `offset`), then migrate_to, migrate_from and monitor on both sides: the answers match where
/// the VM runs, and it runs on exactly one side.
#[test]
fn killed_at_spread_offsets_the_answers_match_the_truth() {
    let (mut source_count, mut target_count) = (0u32, 0u32);
    for trial in 0..60u64 {
        let p = Pair::new();
        assert_eq!(p.code(A, "start"), Success);
        // A third of the trials: a migration longer than any budget (it must be aborted); a
        // third: libvirt cancels the job when its client dies (client-managed migration).
        let long = trial % 3 == 1;
        p.world.set_migration_ms(if long { 120_000 } else { 3_000 });
        let offset = trial * 53; // 0 .. ~3.1 s: before, during and after completion
        p.migration_left_in_flight(offset);
        if trial % 3 == 2 {
            let _ = p.world.node(A).abort_job("vm1", 100);
        }
        // Some time passes before Pacemaker acts again.
        p.clock.advance_ms((trial % 7) * 400);
        // Each answer must match where the VM runs right after it, in either order.
        let check = |action: &str, node: &str| {
            let code = p.code(node, action);
            let running = p.world.running_on("vm1");
            assert_eq!(
                running.len(),
                1,
                "trial {trial} after {action}: {running:?}"
            );
            assert_eq!(
                code == Success,
                running[0] == B,
                "trial {trial}: {action} gave {code:?} with the VM on {running:?}"
            );
        };
        if trial % 2 == 0 {
            check("migrate_from", B);
            check("migrate_to", A);
        } else {
            check("migrate_to", A);
            check("migrate_from", B);
        }
        let running = p.world.running_on("vm1");
        let on_target = running[0] == B;
        let (ma, mb) = (p.code(A, "monitor"), p.code(B, "monitor"));
        assert_eq!(
            (ma, mb),
            if on_target {
                (NotRunning, Success)
            } else {
                (Success, NotRunning)
            },
            "trial {trial}"
        );
        assert!(p.migrations_called() <= 2, "trial {trial}");
        if on_target {
            target_count += 1;
        } else {
            source_count += 1;
        }
    }
    // Both outcomes occurred, so both halves of the truth table were exercised.
    assert!(
        source_count >= 10 && target_count >= 10,
        "{source_count} / {target_count}"
    );
}

#[test]
fn bad_migrate_options_are_refused_everywhere() {
    let p = Pair::new();
    let bad = [("OCF_RESKEY_migrate_options", "--p2p --bogus")];
    let out = p.run(A, "validate-all", &bad);
    assert_eq!(out.code, ErrConfigured);
    assert!(reason(&out).contains("--bogus"));
    assert_eq!(p.run(A, "start", &bad).code, ErrConfigured);
}

/// libvirt 9 leaves the target's copy "paused, starting up" when the client of a client-managed
/// migration dies, then tears it down (observed on real daemons).
#[test]
fn a_leftover_incoming_copy_is_not_running_and_is_waited_out() {
    let p = Pair::new();
    assert_eq!(p.code(A, "start"), Success);
    let leftover =
        MemDomain::running("<domain><name>vm1</name></domain>").with_state(DomainState::StartingUp);
    p.world.put_domain(B, "vm1", leftover.clone());
    assert_eq!(p.code(B, "monitor"), ErrGeneric, "not running, not stopped");
    let t0 = p.clock.now_ms();
    let out = p.run(B, "migrate_from", &[]);
    assert_eq!(out.code, ErrGeneric);
    assert!(reason(&out).contains("no migration in flight"), "{out:?}");
    assert!(p.clock.now_ms() - t0 < 1_000, "fails fast");
    // It never goes away: migrate_to refuses, the VM stays on the source.
    let out = p.run(A, "migrate_to", &[]);
    assert_eq!(out.code, ErrGeneric);
    assert!(reason(&out).contains("stale incoming copy"), "{out:?}");
    assert_eq!(p.migrations_called(), 0);
    assert_eq!(p.world.running_on("vm1"), vec![A]);
    // It goes away after a while: migrate_to waits it out and migrates.
    p.world.expire_domain(B, "vm1", 2_000);
    assert_eq!(p.code(A, "migrate_to"), Success);
    assert_eq!(p.world.running_on("vm1"), vec![B]);
}

/// The orphan of a migration whose client died after the switch-over began: the source paused
/// for the migration with no job, the target empty. migrate_to resumes it and migrates.
#[test]
fn an_orphaned_paused_source_is_resumed_by_migrate_to_then_migrated() {
    let p = Pair::new();
    let orphan = MemDomain::running("<domain><name>vm1</name></domain>")
        .with_state(DomainState::MigratingOut);
    p.world.put_domain(A, "vm1", orphan);
    assert_eq!(p.code(A, "migrate_to"), Success);
    assert_eq!(p.world.running_on("vm1"), vec![B]);
    assert!(
        p.world.calls(A).iter().any(|c| c.starts_with("resume")),
        "{:?}",
        p.world.calls(A)
    );
}

/// migrate_from on the target resumes the orphan on the source and fails with that reason.
#[test]
fn an_orphaned_paused_source_is_resumed_by_migrate_from_which_fails() {
    let p = Pair::new();
    let orphan = MemDomain::running("<domain><name>vm1</name></domain>")
        .with_state(DomainState::MigratingOut);
    p.world.put_domain(A, "vm1", orphan);
    let out = p.run(B, "migrate_from", &[]);
    assert_eq!(out.code, ErrGeneric);
    assert!(reason(&out).contains("resumed there"), "{out:?}");
    assert_eq!(
        p.world.domain(A, "vm1").map(|d| d.state),
        Some(DomainState::Running)
    );
}

/// A source paused for a migration while the target runs the guest is never resumed: the copy
/// there is the one that runs. It is the leftover of a migration that completed without
/// libvirt's confirm step (the client died between the target's finish and the source's
/// confirm): migrate_to answers 0 and destroys it, as the confirm step would have.
#[test]
fn a_paused_source_is_not_resumed_while_the_target_runs_the_guest() {
    let p = Pair::new();
    let xml = "<domain><name>vm1</name></domain>";
    p.world.put_domain(
        A,
        "vm1",
        MemDomain::running(xml).with_state(DomainState::MigratingOut),
    );
    p.world.put_domain(B, "vm1", MemDomain::running(xml));
    assert_eq!(p.code(B, "migrate_from"), Success);
    assert_eq!(p.code(A, "migrate_to"), Success);
    assert!(
        !p.world.calls(A).iter().any(|c| c.starts_with("resume")),
        "{:?}",
        p.world.calls(A)
    );
    assert!(
        p.world.calls(A).iter().any(|c| c.starts_with("destroy")),
        "{:?}",
        p.world.calls(A)
    );
    assert_eq!(p.world.running_on("vm1"), vec![B]);
    assert_eq!(p.migrations_called(), 0, "no second migration");
    assert_eq!(p.code(A, "monitor"), NotRunning);
}
