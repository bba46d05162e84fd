//! The agent when libvirtd is down (killed) or hung (SIGSTOP), on a real daemon with real QEMU
//! guests: every action answers within its `CRM_meta_timeout`, and the answers are the truth the
//! agent documents (`agent/src/actions.rs`): a guest whose QEMU process exists is running (0), a
//! domain with no QEMU process is provably stopped (monitor 7, stop 0), a stop ends the guest's own
//! QEMU process itself (and no other) rather than fail, and nothing claims a start it could not do.
//!
//! The tests stop and restart their daemon, so they take turns (one lock) on a daemon of their own.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use test_cts::libvirt::{
    DomState, LibvirtDaemon, real_infra_or_skip, unique_name, write_tiny_guest,
};
use test_cts::ocf::{AgentRun, OcfResource, highlander_agent};
use test_cts::process::{self, ProcessError};

/// The timeout every action gets here, as Pacemaker would pass it.
const TIMEOUT_MS: u64 = 3_000;
/// Process start and exit on a loaded 2-core machine, on top of the agent's own timeout.
const GRACE: Duration = Duration::from_secs(4);

fn daemon() -> &'static LibvirtDaemon {
    static DAEMON: OnceLock<LibvirtDaemon> = OnceLock::new();
    DAEMON.get_or_init(|| LibvirtDaemon::start("deadline").expect("private libvirtd starts"))
}

/// One test at a time may take the daemon down.
fn turn() -> MutexGuard<'static, ()> {
    static TURN: Mutex<()> = Mutex::new(());
    TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

struct Guest {
    dir: PathBuf,
    name: String,
    resource: OcfResource,
}

impl Guest {
    fn new(prefix: &str) -> Self {
        let name = unique_name(prefix);
        let dir = std::env::temp_dir().join(format!("hl-deadline-{name}"));
        std::fs::create_dir_all(dir.join("rsctmp")).expect("scratch");
        let xml = write_tiny_guest(&dir, &name, 32).expect("guest xml");
        let agent = highlander_agent().unwrap_or_else(|e| panic!("the agent binary: {e}"));
        let mut resource = OcfResource::new(&agent, &name, &dir.join("rsctmp"))
            .param("config", xml.to_str().expect("utf-8"))
            .param("hypervisor", daemon().uri())
            .param("force_stop", "true")
            .env("OCF_RESKEY_CRM_meta_timeout", &TIMEOUT_MS.to_string());
        resource.timeout = Duration::from_millis(TIMEOUT_MS) + GRACE;
        Self {
            dir,
            name,
            resource,
        }
    }

    /// Runs `action`; fails the test if the agent overran its timeout (plus process grace).
    fn run(&self, action: &str) -> AgentRun {
        match self.resource.run(action) {
            Ok(run) => {
                eprintln!("timing: {} {}", self.name, run.describe());
                run
            }
            Err(ProcessError::Timeout { timeout_ms, .. }) => panic!(
                "{action} of {} overran its {TIMEOUT_MS} ms timeout (killed after {timeout_ms} ms)",
                self.name
            ),
            Err(e) => panic!("{action}: {e}"),
        }
    }

    fn expect(&self, action: &str, code: i32) -> AgentRun {
        let run = self.run(action);
        assert_eq!(run.code(), Some(code), "{}", run.describe());
        run
    }

    /// Starts the guest with Pacemaker's default 20 s timeout (the short one is for the actions
    /// under test) and checks that it really runs: a 0 must mean "running", not "starting".
    fn start_for_real(&self) -> u32 {
        let mut generous = self
            .resource
            .clone()
            .env("OCF_RESKEY_CRM_meta_timeout", "20000");
        generous.timeout = Duration::from_secs(20) + GRACE;
        let run = generous.run("start").expect("start runs");
        eprintln!("timing: {} {}", self.name, run.describe());
        assert_eq!(run.code(), Some(0), "{}", run.describe());
        assert_eq!(
            daemon().domstate(&self.name).expect("domstate"),
            Some(DomState::Running),
            "start answered 0, so the guest runs: {}",
            run.describe()
        );
        daemon().qemu_pid(&self.name).expect("QEMU pid")
    }

    fn recurring(&self) -> Self {
        Self {
            dir: self.dir.clone(),
            name: self.name.clone(),
            resource: self
                .resource
                .clone()
                .env("OCF_RESKEY_CRM_meta_interval", "10000"),
        }
    }
}

impl Drop for Guest {
    fn drop(&mut self) {
        // Only the original removes the scratch dir (clones share it).
        if !self
            .resource
            .env
            .iter()
            .any(|(n, _)| n == "OCF_RESKEY_CRM_meta_interval")
        {
            daemon().thaw_libvirtd();
            let _ = daemon().virsh(&["destroy", &self.name]);
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[test]
fn with_libvirtd_down_the_agent_answers_from_the_qemu_processes() {
    if !real_infra_or_skip(
        "with_libvirtd_down_the_agent_answers_from_the_qemu_processes",
        &[],
    ) {
        return;
    }
    let _turn = turn();
    let running = Guest::new("down-run");
    let stopped = Guest::new("down-off");
    let qemu = running.start_for_real();

    daemon().kill_libvirtd().expect("kill libvirtd");
    running.expect("monitor", 0);
    running.recurring().expect("monitor", 0);
    stopped.expect("monitor", 7);
    stopped.recurring().expect("monitor", 7);
    stopped.expect("stop", 0);
    let start = stopped.run("start");
    assert_ne!(
        start.code(),
        Some(0),
        "no start without libvirtd: {}",
        start.describe()
    );
    assert!(
        process::alive(qemu),
        "the agent did not touch the running guest"
    );

    daemon().restart_libvirtd().expect("libvirtd restarts");
    assert_eq!(
        daemon().domstate(&running.name).expect("domstate"),
        Some(DomState::Running),
        "libvirtd reattached the guest{}",
        daemon().log_tail()
    );
    running.expect("monitor", 0);
    running.expect("stop", 0);
    assert!(process::wait_gone(&[qemu], Duration::from_secs(5)));
    running.expect("monitor", 7);
}

#[test]
fn a_hung_libvirtd_never_makes_the_agent_overrun_its_timeout() {
    if !real_infra_or_skip(
        "a_hung_libvirtd_never_makes_the_agent_overrun_its_timeout",
        &[],
    ) {
        return;
    }
    let _turn = turn();
    let running = Guest::new("hung-run");
    let stopped = Guest::new("hung-off");
    let qemu = running.start_for_real();

    daemon().freeze_libvirtd().expect("SIGSTOP libvirtd");
    running.expect("monitor", 0);
    stopped.expect("monitor", 7);
    stopped.expect("stop", 0);
    let start = stopped.run("start");
    assert_ne!(
        start.code(),
        Some(0),
        "no start on a hung libvirtd: {}",
        start.describe()
    );
    // Stopping the running guest cannot go through libvirt: the agent ends its QEMU itself.
    let stop = running.run("stop");
    assert_eq!(stop.code(), Some(0), "{}", stop.describe());
    assert!(!process::alive(qemu), "stop said 0 but QEMU {qemu} runs");
    daemon().thaw_libvirtd();
    // The create the agent gave up on was still queued in the frozen daemon; libvirtd may now
    // carry it out. Clean it up, and say so: it is a double-run hazard when Pacemaker has
    // started the guest elsewhere meanwhile.
    if daemon()
        .wait_state(
            &stopped.name,
            Some(DomState::Running),
            Duration::from_secs(1),
        )
        .expect("domstate")
    {
        eprintln!(
            "NOTE: {} started after libvirtd resumed, from the start the agent had given up on",
            stopped.name
        );
        let _ = daemon().virsh(&["destroy", &stopped.name]);
    }
    // libvirtd, running again, notices that the QEMU it lost is gone.
    assert!(
        daemon()
            .wait_state(&running.name, None, Duration::from_secs(20))
            .expect("domstate"),
        "{}",
        daemon().log_tail()
    );
    running.expect("monitor", 7);
}

/// How libvirtd fails under a stop.
#[derive(Debug, Clone, Copy)]
enum Outage {
    /// Killed (SIGKILL), restarted afterwards.
    Dead,
    /// Hung (SIGSTOP), let run again afterwards.
    Frozen,
}

/// A stop while libvirtd is dead or hung and the guest still runs: the agent ends the guest's own
/// QEMU process (and no other), answers 0 within its timeout and says what it did; once libvirtd
/// answers again it shows the domain not running and the domain starts again.
fn stop_without_libvirtd(outage: Outage, force_stop: &str) {
    let _turn = turn();
    let victim = Guest::new("kill-me");
    let bystander = Guest::new("kill-not");
    let victim_qemu = victim.start_for_real();
    let bystander_qemu = bystander.start_for_real();
    match outage {
        Outage::Dead => daemon().kill_libvirtd().expect("kill libvirtd"),
        Outage::Frozen => drop(daemon().freeze_libvirtd().expect("SIGSTOP libvirtd")),
    }
    let stop = victim
        .resource
        .clone()
        .param("force_stop", force_stop)
        .run("stop")
        .unwrap_or_else(|e| panic!("stop overran its {TIMEOUT_MS} ms timeout: {e}"));
    eprintln!("timing: {outage:?} {}", stop.describe());
    assert_eq!(stop.code(), Some(0), "{}", stop.describe());
    assert!(
        stop.finished.stderr.contains("without libvirtd"),
        "the stop says what it did: {}",
        stop.describe()
    );
    assert!(
        !process::alive(victim_qemu),
        "stop said 0, so QEMU {victim_qemu} is gone"
    );
    assert!(
        process::alive(bystander_qemu),
        "the other guest's QEMU {bystander_qemu} was not touched"
    );
    victim.expect("monitor", 7);
    bystander.expect("monitor", 0);
    match outage {
        Outage::Dead => drop(daemon().restart_libvirtd().expect("libvirtd restarts")),
        Outage::Frozen => daemon().thaw_libvirtd(),
    }
    // A transient domain whose QEMU ended is no longer defined once libvirtd noticed.
    assert!(
        daemon()
            .wait_state(&victim.name, None, Duration::from_secs(20))
            .expect("domstate"),
        "libvirtd shows {} stopped: {:?}{}",
        victim.name,
        daemon().domstate(&victim.name),
        daemon().log_tail()
    );
    assert_eq!(
        daemon().domstate(&bystander.name).expect("domstate"),
        Some(DomState::Running)
    );
    assert_eq!(daemon().qemu_pid(&bystander.name), Some(bystander_qemu));
    let again = victim.start_for_real();
    assert_ne!(again, victim_qemu);
    victim.expect("stop", 0);
    assert!(process::wait_gone(&[again], Duration::from_secs(5)));
    bystander.expect("stop", 0);
}

#[test]
fn a_stop_with_libvirtd_dead_ends_only_the_guests_own_qemu() {
    if !real_infra_or_skip(
        "a_stop_with_libvirtd_dead_ends_only_the_guests_own_qemu",
        &[],
    ) {
        return;
    }
    // Not forced: the graceful half of the budget waits for a daemon that might come back.
    stop_without_libvirtd(Outage::Dead, "false");
}

#[test]
fn a_stop_with_libvirtd_hung_ends_only_the_guests_own_qemu() {
    if !real_infra_or_skip(
        "a_stop_with_libvirtd_hung_ends_only_the_guests_own_qemu",
        &[],
    ) {
        return;
    }
    stop_without_libvirtd(Outage::Frozen, "true");
}

/// Monitors fired at once per trial of [`a_hung_libvirtd_waking_as_the_agents_give_up_never_crashes_them`].
const WAKE_AGENTS: usize = 10;

/// Trials of that test: `$HIGHLANDER_WAKE_TRIALS`, default 8.
fn wake_trials() -> usize {
    std::env::var("HIGHLANDER_WAKE_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8)
}

/// A hung libvirtd (SIGSTOP) that wakes up just as the agents give up on it: the daemon's answers
/// reach the agents' libvirt threads while the agents answer from `/proc` and exit. An agent must
/// then end with its answer, never by a signal: it leaves by `_exit` once its output is written,
/// so no exit handler frees libvirt's state under a thread still inside libvirt (what killed one
/// monitor in the parallel load test with glibc's "malloc_consolidate(): invalid chunk size").
/// Per trial, [`WAKE_AGENTS`] monitors at once (a running guest and a stopped one, alternating),
/// the thaw at a point spread over 2 to 2.9 s, around where a 3 s monitor gives up on libvirt
/// (2.25 s after it started: its margin and the reserve for the `/proc` check).
#[test]
fn a_hung_libvirtd_waking_as_the_agents_give_up_never_crashes_them() {
    if !real_infra_or_skip(
        "a_hung_libvirtd_waking_as_the_agents_give_up_never_crashes_them",
        &[],
    ) {
        return;
    }
    let _turn = turn();
    let running = Guest::new("wake-run");
    let stopped = Guest::new("wake-off");
    running.start_for_real();
    let (running, stopped) = (running.recurring(), stopped.recurring());
    let trials = wake_trials();
    let mut answered = 0;
    for trial in 0..trials {
        let thaw_after = Duration::from_millis(2_000 + (trial % 8) as u64 * 125);
        daemon().freeze_libvirtd().expect("SIGSTOP libvirtd");
        let runs: Vec<(i32, Result<AgentRun, ProcessError>)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..WAKE_AGENTS)
                .map(|i| {
                    let (guest, code) = if i % 2 == 0 {
                        (&running, 0)
                    } else {
                        (&stopped, 7)
                    };
                    scope.spawn(move || (code, guest.resource.run("monitor")))
                })
                .collect();
            std::thread::sleep(thaw_after);
            daemon().thaw_libvirtd();
            handles
                .into_iter()
                .map(|h| h.join().expect("runner thread"))
                .collect()
        });
        for (code, run) in runs {
            let run = run.unwrap_or_else(|e| {
                panic!("trial {trial} (thaw after {thaw_after:?}): monitor overran: {e}")
            });
            eprintln!(
                "timing: trial {trial}, thaw after {thaw_after:?}: {}",
                run.describe()
            );
            assert_eq!(
                run.code(),
                Some(code),
                "trial {trial} (thaw after {thaw_after:?}): {}",
                run.describe()
            );
            answered += 1;
        }
    }
    eprintln!(
        "{trials} trials, {answered} monitors answered as a hung libvirtd woke up, none died of a signal"
    );
    assert_eq!(answered, trials * WAKE_AGENTS);
}
