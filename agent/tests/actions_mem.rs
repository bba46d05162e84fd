//! Every action and error path of the agent over the in-memory hypervisor and a manual clock:
//! the whole dispatch (`run_with`) from an OCF environment to an exit code and reason.

use std::path::PathBuf;
use std::sync::Arc;

use highlander_agent::clock::{Clock, ManualClock};
use highlander_agent::hypervisor::{DomainState, Hypervisor, Op, PauseReason, ShutdownMode};
use highlander_agent::log::Log;
use highlander_agent::mem::{Daemon, Fault, GuestShutdown, MemDomain, MemWorld};
use highlander_agent::{Deps, Outcome, lock, run_with};
use ocf_metadata::{OcfEnv, OcfExitCode};

const NODE: &str = "node1";
const TIMEOUT_MS: u64 = 20_000;

struct Node {
    clock: Arc<ManualClock>,
    world: MemWorld,
    dir: tempfile::TempDir,
}

fn xml(name: &str) -> String {
    format!(
        "<domain type='qemu'><name>{name}</name><memory unit='MiB'>32</memory>\
         <description>secret-marker-42</description></domain>"
    )
}

impl Node {
    fn new() -> Self {
        let clock = Arc::new(ManualClock::new(1_000));
        let world = MemWorld::new(clock.clone());
        world.node(NODE);
        let dir = tempfile::tempdir().unwrap();
        let n = Node { clock, world, dir };
        n.write_config("vm1");
        n
    }
    fn config(&self) -> PathBuf {
        self.dir.path().join("vm1.xml")
    }
    fn rsctmp(&self) -> PathBuf {
        self.dir.path().join("rsc")
    }
    fn write_config(&self, name: &str) {
        std::fs::write(self.config(), xml(name)).unwrap();
    }
    fn env(&self, extra: &[(&str, &str)]) -> OcfEnv {
        let config = self.config().display().to_string();
        let rsctmp = self.rsctmp().display().to_string();
        let timeout = TIMEOUT_MS.to_string();
        let mut pairs: Vec<(String, String)> = vec![
            ("OCF_RESOURCE_INSTANCE".into(), "vm1".into()),
            ("OCF_RESKEY_config".into(), config),
            ("HA_RSCTMP".into(), rsctmp),
            ("OCF_RESKEY_CRM_meta_timeout".into(), timeout),
        ];
        for (k, v) in extra {
            pairs.retain(|(pk, _)| pk != k);
            if !v.is_empty() || !k.starts_with("OCF_RESKEY_config") {
                pairs.push((k.to_string(), v.to_string()));
            }
        }
        OcfEnv::from_pairs(pairs).unwrap()
    }
    /// Runs one action; checks the API's rule that every failure carries a reason.
    fn run_logged(&self, action: &str, extra: &[(&str, &str)]) -> (Outcome, Vec<String>) {
        let log = Log::memory();
        let world = self.world.clone();
        let connect =
            move |_uri: Option<&str>| -> Box<dyn Hypervisor> { Box::new(world.node(NODE)) };
        let clock: &dyn Clock = self.clock.as_ref();
        let out = run_with(
            action,
            &self.env(extra),
            &Deps {
                clock,
                log: &log,
                connect: &connect,
                cib: None,
            },
        );
        if !matches!(out.code, OcfExitCode::Success | OcfExitCode::NotRunning) {
            assert!(
                out.reason.as_deref().is_some_and(|r| !r.is_empty()),
                "{action} gave {:?} without a reason",
                out.code
            );
        }
        let lines = log.lines();
        for l in &lines {
            assert!(!l.contains("secret-marker-42"), "domain XML logged: {l}");
        }
        (out, lines)
    }
    fn run(&self, action: &str, extra: &[(&str, &str)]) -> Outcome {
        self.run_logged(action, extra).0
    }
    fn code(&self, action: &str, extra: &[(&str, &str)]) -> OcfExitCode {
        self.run(action, extra).code
    }
    fn state(&self, name: &str) -> Option<DomainState> {
        self.world.domain(NODE, name).map(|d| d.state)
    }
    fn creates(&self) -> usize {
        self.world
            .calls(NODE)
            .iter()
            .filter(|c| c.starts_with("create"))
            .count()
    }
}

const RECURRING: (&str, &str) = ("OCF_RESKEY_CRM_meta_interval", "10000");

use OcfExitCode::*;

#[test]
fn ocft_cycle_start_monitor_stop_twice() {
    let n = Node::new();
    assert_eq!(n.code("monitor", &[]), NotRunning, "probe before start");
    assert_eq!(n.code("start", &[]), Success);
    assert_eq!(n.state("vm1"), Some(DomainState::Running));
    assert_eq!(n.code("monitor", &[RECURRING]), Success);
    assert_eq!(n.code("monitor", &[]), Success, "probe while running");
    assert_eq!(n.code("status", &[]), Success);
    let again = n.run("start", &[]);
    assert_eq!(again.code, Success, "double start: {:?}", again.reason);
    assert_eq!(n.creates(), 1, "a second start creates nothing");
    assert_eq!(
        lock::read_record(&n.rsctmp(), "vm1").unwrap().as_deref(),
        Some("vm1")
    );
    assert_eq!(n.code("stop", &[]), Success);
    assert_eq!(n.state("vm1"), None, "transient domain gone");
    assert!(
        n.world.calls(NODE).iter().any(|c| c == "shutdown vm1"),
        "graceful first"
    );
    assert!(!n.world.calls(NODE).iter().any(|c| c == "destroy vm1"));
    assert_eq!(n.code("monitor", &[RECURRING]), NotRunning);
    assert_eq!(n.code("stop", &[]), Success, "double stop");
    assert_eq!(n.code("monitor", &[]), NotRunning);
    assert_eq!(lock::read_record(&n.rsctmp(), "vm1").unwrap(), None);
}

#[test]
fn missing_config_file_is_5_for_start_and_validate() {
    let n = Node::new();
    std::fs::remove_file(n.config()).unwrap();
    let out = n.run("start", &[]);
    assert_eq!(out.code, ErrInstalled);
    assert!(out.reason.unwrap().contains("vm1.xml"));
    assert_eq!(n.code("validate-all", &[]), ErrInstalled);
    assert_eq!(
        n.code("monitor", &[]),
        NotRunning,
        "probe: heartbeat's answer"
    );
    assert_eq!(n.code("monitor", &[RECURRING]), ErrGeneric);
    assert_eq!(
        n.code("stop", &[]),
        Success,
        "nothing known, nothing to stop"
    );
    assert_eq!(n.creates(), 0);
}

#[test]
fn no_config_parameter_is_6_but_stop_succeeds() {
    let n = Node::new();
    let none = [("OCF_RESKEY_config", "")];
    for action in ["start", "validate-all", "monitor", "status", "reload-agent"] {
        let out = n.run(action, &none);
        assert_eq!(out.code, ErrConfigured, "{action}");
        assert!(out.reason.unwrap().contains("config"), "{action}");
    }
    assert_eq!(n.code("stop", &none), Success);
}

#[test]
fn action_names() {
    let n = Node::new();
    assert_eq!(n.code("frobnicate", &[]), ErrUnimplemented);
    assert_eq!(n.code("", &[]), ErrUnimplemented);
    // ocf-tester sets no CRM_meta_migrate_* (resource-agents #816): a reason, not a guess.
    let out = n.run("migrate_to", &[]);
    assert_eq!(out.code, ErrGeneric);
    assert!(out.reason.unwrap().contains("CRM_meta_migrate_target"));
    let out = n.run("migrate_from", &[]);
    assert!(out.reason.unwrap().contains("CRM_meta_migrate_source"));
    assert_eq!(n.code("notify", &[]), ErrUnimplemented);
    assert_eq!(n.code("promote", &[]), ErrUnimplemented);
    let usage = n.run("usage", &[]);
    assert_eq!(usage.code, Success);
    assert!(usage.stdout.contains("start|stop|monitor"));
    let md = n.run("meta-data", &[]);
    assert_eq!(md.code, Success);
    assert!(md.stdout.contains("<resource-agent name=\"VirtualDomain\""));
    assert!(
        n.world.calls(NODE).is_empty(),
        "none of these touched the hypervisor"
    );
    assert_eq!(n.code("validate-all", &[]), Success);
    assert_eq!(n.code("reload-agent", &[]), Success);
    assert!(n.world.calls(NODE).is_empty(), "level 0 validate is local");
    assert_eq!(
        n.code("validate-all", &[("OCF_CHECK_LEVEL", "10")]),
        Success
    );
    assert_eq!(n.world.calls(NODE), vec!["domain state vm1"]);
    n.world.set_daemon(NODE, Daemon::Down);
    assert_eq!(
        n.code("validate-all", &[("OCF_CHECK_LEVEL", "10")]),
        ErrInstalled
    );
}

#[test]
fn unimplemented_parameters_are_refused_by_name() {
    let n = Node::new();
    let p = [("OCF_RESKEY_copyindirs", "/srv/inject")];
    for action in ["start", "validate-all", "monitor"] {
        let out = n.run(action, &p);
        assert_eq!(out.code, ErrConfigured, "{action}");
        assert!(out.reason.unwrap().contains("copyindirs"), "{action}");
    }
    let out = n.run("start", &[("OCF_RESKEY_stateless", "true")]);
    assert_eq!(out.code, ErrConfigured);
    assert!(out.reason.unwrap().contains("without a backing file"));
    // Defaults of the same parameters are fine.
    assert_eq!(
        n.code("start", &[("OCF_RESKEY_stateless", "false")]),
        Success
    );
    // A stop with a refused parameter still stops (by destroy).
    assert_eq!(n.code("stop", &p), Success);
    assert_eq!(n.state("vm1"), None);
    assert!(n.world.calls(NODE).iter().any(|c| c == "destroy vm1"));
}

/// `save_config_on_stop`: the running domain's XML replaces `config` when it differs, before a
/// graceful stop and after a monitor that finds it running; never for a forced stop; a csync2 that
/// cannot run (`sync_config_on_stop`) is a warning only.
#[test]
fn save_config_on_stop_writes_the_running_xml_back() {
    let n = Node::new();
    let save = [("OCF_RESKEY_save_config_on_stop", "true")];
    assert_eq!(n.code("start", &save), Success);
    let changed = xml("vm1").replace("secret-marker-42", "changed-while-running");
    n.world
        .update_domain(NODE, "vm1", |d| d.xml = changed.clone());
    assert_eq!(n.code("monitor", &save), Success);
    assert_eq!(std::fs::read_to_string(n.config()).unwrap(), changed);
    let changed_again = changed.replace("changed-while-running", "changed-again");
    n.world
        .update_domain(NODE, "vm1", |d| d.xml = changed_again.clone());
    let (out, logs) = n.run_logged("stop", &save);
    assert_eq!(out.code, Success, "{logs:?}");
    assert_eq!(std::fs::read_to_string(n.config()).unwrap(), changed_again);
    assert!(
        logs.iter().any(|l| l.contains("saved domain vm1")),
        "{logs:?}"
    );
    // Forced: no save.
    assert_eq!(n.code("start", &save), Success);
    n.world.update_domain(NODE, "vm1", |d| d.xml = xml("vm1"));
    let forced = [save[0], ("OCF_RESKEY_force_stop", "true")];
    assert_eq!(n.code("stop", &forced), Success);
    assert_eq!(std::fs::read_to_string(n.config()).unwrap(), changed_again);
    // XML naming another domain is never written.
    assert_eq!(n.code("start", &save), Success);
    n.world.update_domain(NODE, "vm1", |d| d.xml = xml("vm2"));
    let (out, logs) = n.run_logged("stop", &save);
    assert_eq!(out.code, Success);
    assert_eq!(std::fs::read_to_string(n.config()).unwrap(), changed_again);
    assert!(logs.iter().any(|l| l.contains("not vm1")), "{logs:?}");
    // sync_config_on_stop implies saving; csync2 missing from PATH: a warning, the stop succeeds.
    assert_eq!(n.code("start", &[]), Success);
    n.world.update_domain(NODE, "vm1", |d| d.xml = xml("vm1"));
    let (out, logs) = n.run_logged("stop", &[("OCF_RESKEY_sync_config_on_stop", "true")]);
    assert_eq!(out.code, Success, "{logs:?}");
    assert_eq!(std::fs::read_to_string(n.config()).unwrap(), xml("vm1"));
    assert!(logs.iter().any(|l| l.contains("csync2")), "{logs:?}");
}

/// `start_resources`: the pools and networks the XML names are started before the domain; one
/// that cannot be started fails the start, naming it, and the domain is not created.
#[test]
fn start_resources_starts_pools_and_networks_first() {
    let n = Node::new();
    let with = xml("vm1").replace(
        "</domain>",
        "<devices><disk type='volume'><source pool='p1' volume='v'/></disk>\
         <interface type='network'><source network='n1'/></interface></devices></domain>",
    );
    std::fs::write(n.config(), &with).unwrap();
    n.world.put_resource(NODE, "pool", "p1", false);
    n.world.put_resource(NODE, "network", "n1", false);
    let on = [("OCF_RESKEY_start_resources", "true")];
    assert_eq!(n.code("start", &on), Success);
    assert_eq!(n.world.resource_active(NODE, "pool", "p1"), Some(true));
    assert_eq!(n.world.resource_active(NODE, "network", "n1"), Some(true));
    let calls = n.world.calls(NODE);
    let pool_at = calls.iter().position(|c| c == "storage pool p1").unwrap();
    let create_at = calls.iter().position(|c| c == "create vm1").unwrap();
    assert!(pool_at < create_at, "{calls:?}");
    assert_eq!(n.code("stop", &on), Success);
    // A network that does not exist: 1 naming it, nothing created.
    std::fs::write(n.config(), with.replace("'n1'", "'n2'")).unwrap();
    let out = n.run("start", &on);
    assert_eq!(out.code, ErrGeneric);
    assert!(out.reason.unwrap().contains("virtual network n2"));
    assert_eq!(n.state("vm1"), None);
    // Off (the default): nothing is asked.
    n.world.put_resource(NODE, "pool", "p1", false);
    std::fs::write(n.config(), &with).unwrap();
    assert_eq!(n.code("start", &[]), Success);
    assert_eq!(n.world.resource_active(NODE, "pool", "p1"), Some(false));
}

/// `snapshot`: stop saves the memory state (no shutdown), start restores it and only then removes
/// the file; a restore that fails keeps the file and fails the start; a file found while the
/// domain runs is stale and removed; with force_stop, or a relative path: 6.
#[test]
fn snapshot_saves_on_stop_and_restores_on_start() {
    let n = Node::new();
    let snap = n.dir.path().join("snap");
    std::fs::create_dir_all(&snap).unwrap();
    let dir = snap.display().to_string();
    let on = [("OCF_RESKEY_snapshot", dir.as_str())];
    let file = snap.join("vm1.state");
    assert_eq!(n.code("start", &on), Success);
    let (out, logs) = n.run_logged("stop", &on);
    assert_eq!(out.code, Success, "{logs:?}");
    assert!(file.is_file(), "{logs:?}");
    assert!(!snap.join("vm1.state.partial").exists());
    let calls = n.world.calls(NODE);
    assert!(calls.iter().any(|c| c == "save vm1"), "{calls:?}");
    assert!(
        !calls.iter().any(|c| c.starts_with("shutdown")),
        "{calls:?}"
    );
    assert_eq!(n.state("vm1"), None);
    let (out, logs) = n.run_logged("start", &on);
    assert_eq!(out.code, Success, "{logs:?}");
    assert!(logs.iter().any(|l| l.contains("restored from")), "{logs:?}");
    assert!(!file.exists(), "removed after the restore");
    assert_eq!(n.state("vm1"), Some(DomainState::Running));
    let creates = n.world.calls(NODE);
    let creates = creates.iter().filter(|c| *c == "create vm1").count();
    assert_eq!(creates, 1, "only the first start created it");
    // A file that cannot be restored: 1, kept.
    assert_eq!(n.code("stop", &on), Success);
    std::fs::write(&file, "garbage").unwrap();
    let out = n.run("start", &on);
    assert_eq!(out.code, ErrGeneric);
    assert!(out.reason.unwrap().contains("failed to restore"));
    assert!(file.is_file());
    // Running already (started without snapshot): the file is stale and goes.
    assert_eq!(n.code("start", &[]), Success);
    let (out, logs) = n.run_logged("start", &on);
    assert_eq!(out.code, Success);
    assert!(!file.exists(), "{logs:?}");
    // Refused combinations.
    let forced = [on[0], ("OCF_RESKEY_force_stop", "true")];
    assert_eq!(n.code("validate-all", &forced), ErrConfigured);
    let relative = [("OCF_RESKEY_snapshot", "snap")];
    assert_eq!(n.code("validate-all", &relative), ErrConfigured);
    // A stop with the refused combination still stops (by destroy, nothing saved).
    assert_eq!(n.code("stop", &forced), Success);
    assert!(!file.exists());
}

#[test]
fn hung_hypervisor_answers_within_the_deadline() {
    let n = Node::new();
    assert_eq!(n.code("start", &[]), Success);
    n.world.set_daemon(NODE, Daemon::Hung);
    for (action, extra, expected) in [
        ("monitor", &[RECURRING][..], Success), // QEMU process still there
        ("monitor", &[][..], Success),
        ("start", &[][..], ErrGeneric),
        (
            "validate-all",
            &[("OCF_CHECK_LEVEL", "10")][..],
            ErrInstalled,
        ),
        ("stop", &[][..], Success), // the QEMU process is ended without libvirtd
        ("monitor", &[RECURRING][..], NotRunning),
        ("stop", &[][..], Success),
    ] {
        let t0 = n.clock.now_ms();
        let out = n.run(action, extra);
        let spent = n.clock.now_ms() - t0;
        assert_eq!(out.code, expected, "{action}: {:?}", out.reason);
        assert!(
            spent <= 18_000,
            "{action} spent {spent} ms of a {TIMEOUT_MS} ms timeout"
        );
    }
    let kills = n.world.calls(NODE);
    let kills: Vec<_> = kills.iter().filter(|c| c.starts_with("kill")).collect();
    assert_eq!(kills, ["kill emulator vm1"], "once, by the first stop");
}

#[test]
fn daemon_down_on_stop_ends_the_qemu_process_itself() {
    let n = Node::new();
    assert_eq!(n.code("start", &[]), Success);
    n.world.set_daemon(NODE, Daemon::Down);
    let t0 = n.clock.now_ms();
    let (out, logs) = n.run_logged("stop", &[]);
    assert_eq!(out.code, Success, "{logs:?}");
    let spent = n.clock.now_ms() - t0;
    // Not at once: the graceful half of the budget is left to a daemon coming back.
    assert!((9_000..=18_000).contains(&spent), "{spent} ms");
    assert!(
        logs.iter().any(|l| l.contains("without libvirtd")),
        "{logs:?}"
    );
    assert_eq!(n.code("monitor", &[]), NotRunning);
    n.world.set_daemon(NODE, Daemon::Up);
    assert_eq!(n.state("vm1"), None, "the daemon shows it stopped");
    assert_eq!(n.code("start", &[]), Success, "and it starts again");
}

#[test]
fn daemon_down_on_a_forced_stop_ends_the_qemu_process_at_once() {
    let n = Node::new();
    assert_eq!(n.code("start", &[]), Success);
    n.world.set_daemon(NODE, Daemon::Down);
    let t0 = n.clock.now_ms();
    let out = n.run("stop", &[("OCF_RESKEY_force_stop", "true")]);
    assert_eq!(out.code, Success, "{:?}", out.reason);
    assert!(n.clock.now_ms() - t0 < 1_000, "no wait when forced");
    assert_eq!(n.code("monitor", &[]), NotRunning);
}

#[test]
fn force_stop_destroys_without_shutdown() {
    let n = Node::new();
    assert_eq!(n.code("start", &[]), Success);
    assert_eq!(
        n.code("stop", &[("OCF_RESKEY_force_stop", "true")]),
        Success
    );
    let calls = n.world.calls(NODE);
    assert!(calls.iter().any(|c| c == "destroy vm1"));
    assert!(!calls.iter().any(|c| c.starts_with("shutdown")));
}

#[test]
fn shutdown_mode_is_really_applied() {
    let n = Node::new();
    assert_eq!(n.code("start", &[]), Success);
    n.world
        .update_domain(NODE, "vm1", |d| d.guest_shutdown = GuestShutdown::Ignore);
    let t0 = n.clock.now_ms();
    let mode = [("OCF_RESKEY_shutdown_mode", "agent,acpi")];
    assert_eq!(n.code("stop", &mode), Success);
    let spent = n.clock.now_ms() - t0;
    assert!(spent <= 18_000, "{spent}");
    assert!(
        spent >= 9_000,
        "waited for the graceful phase first: {spent}"
    );
    let calls = n.world.calls(NODE);
    let shutdown = calls.iter().position(|c| c == "shutdown vm1").unwrap();
    let destroy = calls.iter().position(|c| c == "destroy vm1").unwrap();
    assert!(shutdown < destroy);
    // The mode reached the hypervisor (heartbeat's W9: it never did).
    let mut d = MemDomain::running(&xml("vm1"));
    d.persistent = true;
    n.world.put_domain(NODE, "vm1", d);
    assert_eq!(n.code("stop", &mode), Success);
    let d = n.world.domain(NODE, "vm1").unwrap();
    assert_eq!(d.state, DomainState::ShutOff);
    assert_eq!(
        d.last_shutdown_modes.map(|m| m.0),
        Some(vec![ShutdownMode::Agent, ShutdownMode::Acpi])
    );
}

#[test]
fn slow_and_failing_destroy() {
    let n = Node::new();
    assert_eq!(n.code("start", &[]), Success);
    n.world
        .inject(NODE, Op::Destroy, Fault::Error("device busy".into()));
    assert_eq!(
        n.code("stop", &[("OCF_RESKEY_force_stop", "1")]),
        Success,
        "one failed destroy is retried"
    );
    assert_eq!(n.code("start", &[]), Success);
    // One hung destroy leaves time to try again.
    n.world.inject(NODE, Op::Destroy, Fault::Hang);
    let t0 = n.clock.now_ms();
    assert_eq!(n.code("stop", &[("OCF_RESKEY_force_stop", "1")]), Success);
    assert!(n.clock.now_ms() - t0 <= 18_000);
    assert_eq!(n.code("start", &[]), Success);
    // Every destroy hangs: libvirtd does not answer it, so the stop ends the QEMU process itself
    // in the time it kept for that.
    for _ in 0..20 {
        n.world.inject(NODE, Op::Destroy, Fault::Hang);
    }
    let t0 = n.clock.now_ms();
    let (out, logs) = n.run_logged("stop", &[("OCF_RESKEY_force_stop", "1")]);
    assert_eq!(out.code, Success, "{logs:?}");
    assert!(n.clock.now_ms() - t0 <= 18_000);
    assert!(n.world.calls(NODE).iter().any(|c| c == "kill emulator vm1"));
    // Every destroy fails (libvirt answers, with an error): a bounded failure, nothing killed.
    let n = Node::new();
    assert_eq!(n.code("start", &[]), Success);
    for _ in 0..200 {
        n.world
            .inject(NODE, Op::Destroy, Fault::Error("device busy".into()));
    }
    let t0 = n.clock.now_ms();
    let out = n.run("stop", &[("OCF_RESKEY_force_stop", "1")]);
    assert_eq!(out.code, ErrGeneric, "{:?}", n.world.calls(NODE));
    assert!(n.clock.now_ms() - t0 <= 18_000);
    assert!(
        out.reason
            .unwrap()
            .contains("not stopped before the deadline")
    );
    let calls = n.world.calls(NODE);
    assert!(!calls.iter().any(|c| c.starts_with("kill")), "{calls:?}");
}

#[test]
fn monitor_maps_every_state() {
    // Expected codes written out independently of actions::monitor_code.
    let cases = [
        (DomainState::Running, Success),
        (DomainState::ShutOff, NotRunning),
        (DomainState::Paused(PauseReason::User), Success),
        (DomainState::Paused(PauseReason::Other), Success),
        (DomainState::Paused(PauseReason::IoError), ErrGeneric),
        (DomainState::InShutdown, Success),
        (DomainState::Crashed, ErrGeneric),
        (DomainState::PmSuspended, Success),
        (DomainState::MigratingIn, ErrGeneric),
        (DomainState::StartingUp, ErrGeneric),
        (DomainState::MigratingOut, Success),
        (DomainState::NoState, ErrGeneric),
    ];
    for (state, expected) in cases {
        for extra in [&[][..], &[RECURRING][..]] {
            let n = Node::new();
            let mut d = MemDomain::running(&xml("vm1")).with_state(state.clone());
            d.persistent = true;
            n.world.put_domain(NODE, "vm1", d);
            let out = n.run("monitor", extra);
            assert_eq!(out.code, expected, "{state} {extra:?}: {:?}", out.reason);
        }
    }
}

#[test]
fn start_handles_odd_states() {
    // Crashed: destroyed, then created anew.
    let n = Node::new();
    let mut d = MemDomain::running(&xml("vm1")).with_state(DomainState::Crashed);
    d.persistent = true;
    n.world.put_domain(NODE, "vm1", d);
    assert_eq!(n.code("start", &[]), Success);
    assert_eq!(n.state("vm1"), Some(DomainState::Running));
    // Incoming migration: never a second copy.
    let n = Node::new();
    n.world.put_domain(
        NODE,
        "vm1",
        MemDomain::running(&xml("vm1")).with_state(DomainState::MigratingIn),
    );
    let out = n.run("start", &[]);
    assert_eq!(out.code, ErrGeneric);
    assert!(out.reason.unwrap().contains("incoming migration"));
    assert_eq!(n.creates(), 0);
    // Create hangs after taking effect: the state check finds it running.
    let n = Node::new();
    n.world.inject(NODE, Op::Create, Fault::HangAfterEffect);
    assert_eq!(n.code("start", &[]), Success);
    // Create refused: 1 with libvirt's message.
    let n = Node::new();
    n.world.inject(
        NODE,
        Op::Create,
        Fault::Error("unsupported configuration".into()),
    );
    let out = n.run("start", &[]);
    assert_eq!(out.code, ErrGeneric);
    assert!(out.reason.unwrap().contains("unsupported configuration"));
    // Daemon down throughout: bounded failure.
    let n = Node::new();
    n.world.set_daemon(NODE, Daemon::Down);
    let t0 = n.clock.now_ms();
    let out = n.run("start", &[]);
    assert_eq!(out.code, ErrGeneric);
    assert!(out.reason.unwrap().contains("unreachable"));
    assert!(n.clock.now_ms() - t0 <= 18_000);
}

#[test]
fn monitor_scripts_gate_start_and_monitor() {
    let n = Node::new();
    let ok = [("OCF_RESKEY_monitor_scripts", "/bin/true /bin/true")];
    let bad = [("OCF_RESKEY_monitor_scripts", "/bin/true /bin/false")];
    assert_eq!(n.code("start", &ok), Success);
    assert_eq!(n.code("monitor", &ok), Success);
    let out = n.run("monitor", &bad);
    assert_eq!(out.code, ErrGeneric);
    assert!(out.reason.unwrap().contains("/bin/false"));
    assert_eq!(n.code("status", &bad), Success, "status is the state only");
    assert_eq!(n.code("stop", &[]), Success);
    let t0 = n.clock.now_ms();
    let out = n.run("start", &[("OCF_RESKEY_CRM_meta_timeout", "3000"), bad[0]]);
    assert_eq!(out.code, ErrGeneric);
    assert!(out.reason.unwrap().contains("monitor scripts"));
    assert!(n.clock.now_ms() - t0 <= 3_000);
}

#[test]
fn check_level_10_wants_a_process() {
    let n = Node::new();
    assert_eq!(n.code("start", &[]), Success);
    n.world.update_domain(NODE, "vm1", |d| d.process = false);
    assert_eq!(
        n.code("monitor", &[RECURRING]),
        Success,
        "level 0: state only"
    );
    let out = n.run("monitor", &[RECURRING, ("OCF_CHECK_LEVEL", "10")]);
    assert_eq!(out.code, ErrGeneric);
    assert!(out.reason.unwrap().contains("no QEMU process"));
}

#[test]
fn lock_serializes_one_resource() {
    let n = Node::new();
    let clock: &dyn Clock = n.clock.as_ref();
    let held = lock::acquire(
        &n.rsctmp(),
        "vm1",
        highlander_agent::clock::Deadline::after(clock, 10),
        clock,
    )
    .unwrap();
    let t0 = n.clock.now_ms();
    let out = n.run("start", &[]);
    assert_eq!(out.code, ErrGeneric);
    assert!(out.reason.unwrap().contains("holds"));
    assert!(n.clock.now_ms() - t0 <= 18_000);
    assert_eq!(n.code("monitor", &[]), NotRunning, "monitor takes no lock");
    assert_eq!(
        n.code("start", &[("OCF_RESOURCE_INSTANCE", "vm2")]),
        Success,
        "other resource"
    );
    drop(held);
    assert_eq!(n.code("start", &[]), Success);
}

#[test]
fn stop_finds_a_renamed_or_unreadable_domain_by_its_record() {
    let n = Node::new();
    assert_eq!(n.code("start", &[]), Success);
    n.write_config("vm1-renamed");
    assert_eq!(n.code("stop", &[]), Success);
    assert_eq!(
        n.state("vm1"),
        None,
        "the domain actually started was stopped"
    );
    n.write_config("vm1");
    assert_eq!(n.code("start", &[]), Success);
    std::fs::remove_file(n.config()).unwrap();
    let (out, logs) = n.run_logged("monitor", &[RECURRING]);
    assert_eq!(out.code, Success, "recurring monitor follows the record");
    assert!(
        logs.iter()
            .any(|l| l.contains("which this resource started here"))
    );
    assert_eq!(n.code("monitor", &[]), Success, "probe too");
    assert_eq!(n.code("stop", &[]), Success);
    assert_eq!(n.state("vm1"), None);
}

#[test]
fn debug_logs_only_with_ha_debug_and_never_the_xml() {
    let n = Node::new();
    let (_, logs) = n.run_logged("start", &[]);
    assert!(
        logs.iter().any(|l| l.contains("DEBUG")),
        "memory log keeps debug"
    );
    assert!(logs.iter().any(|l| l.contains("domain vm1 is running")));
    // The stderr logger drops debug lines unless HA_debug=1 (checked through the binary in
    // tests/binary.rs).
}
