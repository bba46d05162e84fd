//! The real-libvirt harness proves itself: a private daemon runs a tiny QEMU guest, two daemons
//! live-migrate it, the watcher stays quiet through a migration and catches a double start, and
//! teardown by PID leaves nothing behind, whether by `Drop` or after the owner is SIGKILLed.
//!
//! Needs root, libvirtd with the QEMU driver, qemu-system-x86_64, tini, unshare (tools/deps.sh).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use test_cts::libvirt::{
    DomState, LibvirtDaemon, pair, real_infra_or_skip, tiny_guest_xml, unique_name,
    write_tiny_guest,
};
use test_cts::process;
use test_cts::watcher::Watcher;

/// One migration pair shared by the tests of this binary. Statics are never dropped: the
/// daemons' guards tear them down when this process exits (the orphan path tested below).
fn shared_pair() -> &'static (LibvirtDaemon, LibvirtDaemon) {
    static PAIR: OnceLock<(LibvirtDaemon, LibvirtDaemon)> = OnceLock::new();
    PAIR.get_or_init(|| {
        let started = Instant::now();
        let (a, b) = pair().expect("two private libvirtds start");
        report_timings("pair", started.elapsed(), &[&a, &b]);
        (a, b)
    })
}

fn report_timings(what: &str, wall: Duration, daemons: &[&LibvirtDaemon]) {
    for d in daemons {
        let t = d.timings();
        eprintln!(
            "timing: {what} daemon {}: socket {:.3} s, first call {:.3} s, caps pre-warmed {}",
            d.label(),
            t.socket.as_secs_f64(),
            t.first_call.as_secs_f64(),
            t.caps_prewarmed
        );
    }
    eprintln!(
        "timing: {what} ready after {:.3} s wall",
        wall.as_secs_f64()
    );
}

/// A scratch directory for guest XML, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("hl-xml-{name}"));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Self(dir)
    }
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn create_guest(daemon: &LibvirtDaemon, xml: &Path, extra: &[&str]) {
    let path = xml.to_str().expect("utf-8 path");
    let mut args = vec!["create", path];
    args.extend_from_slice(extra);
    daemon
        .virsh_ok(&args)
        .unwrap_or_else(|e| panic!("{e}{}", daemon.log_tail()));
}

#[test]
fn tiny_guest_lifecycle_then_drop_tears_down_daemon_and_guest() {
    if !real_infra_or_skip(
        "tiny_guest_lifecycle_then_drop_tears_down_daemon_and_guest",
        &[],
    ) {
        return;
    }
    let started = Instant::now();
    let daemon = LibvirtDaemon::start("single").expect("private libvirtd starts");
    report_timings("single", started.elapsed(), &[&daemon]);
    let name = unique_name("life");
    let scratch = Scratch::new(&name);
    let xml = write_tiny_guest(scratch.path(), &name, 32).expect("guest xml");

    let cycle = Instant::now();
    daemon
        .virsh_ok(&["define", xml.to_str().expect("utf-8")])
        .expect("define");
    assert_eq!(
        daemon.domstate(&name).expect("domstate"),
        Some(DomState::ShutOff)
    );
    daemon.virsh_ok(&["start", &name]).expect("start");
    assert_eq!(
        daemon.domstate(&name).expect("domstate"),
        Some(DomState::Running)
    );
    let qemu = daemon
        .qemu_pid(&name)
        .expect("libvirt writes the QEMU pid file");
    assert!(process::alive(qemu), "QEMU {qemu} runs");
    daemon.virsh_ok(&["destroy", &name]).expect("destroy");
    assert_eq!(
        daemon.domstate(&name).expect("domstate"),
        Some(DomState::ShutOff)
    );
    assert!(
        process::wait_gone(&[qemu], Duration::from_secs(5)),
        "destroy ends QEMU {qemu}"
    );
    daemon.virsh_ok(&["undefine", &name]).expect("undefine");
    assert_eq!(daemon.domstate(&name).expect("domstate"), None);
    eprintln!(
        "timing: define+start+destroy+undefine {:.3} s",
        cycle.elapsed().as_secs_f64()
    );

    // libvirtd crashes (SIGKILL) under a running guest: the guest survives, libvirt is
    // unreachable, and a restarted libvirtd finds the guest again.
    create_guest(&daemon, &xml, &[]);
    let qemu = daemon.qemu_pid(&name).expect("QEMU pid file");
    let old = daemon.libvirtd_pid().expect("libvirtd runs");
    daemon.kill_libvirtd().expect("kill libvirtd");
    assert!(!process::alive(old), "libvirtd {old} is gone");
    assert!(process::alive(qemu), "the guest outlives libvirtd");
    assert!(daemon.domstate(&name).is_err(), "no libvirtd, no answer");
    let took = daemon.restart_libvirtd().expect("libvirtd restarts");
    eprintln!("timing: libvirtd restart {:.3} s", took.as_secs_f64());
    assert_ne!(daemon.libvirtd_pid(), Some(old));
    assert_eq!(
        daemon.domstate(&name).expect("domstate"),
        Some(DomState::Running)
    );
    assert_eq!(
        daemon.qemu_pid(&name),
        Some(qemu),
        "the same QEMU, reattached"
    );

    // A hung libvirtd (SIGSTOP): calls time out until it is thawed.
    let frozen = daemon.freeze_libvirtd().expect("SIGSTOP libvirtd");
    assert_eq!(process::stat(frozen).map(|s| s.state), Some('T'));
    let hung = daemon.virsh_with_timeout(&["domstate", &name], Duration::from_millis(300));
    assert!(
        matches!(
            hung,
            Err(test_cts::libvirt::LibvirtError::Process(
                process::ProcessError::Timeout { .. }
            ))
        ),
        "a frozen libvirtd does not answer: {hung:?}"
    );
    daemon.thaw_libvirtd();
    assert_eq!(
        daemon.domstate(&name).expect("domstate"),
        Some(DomState::Running)
    );

    // A guest left running when the daemon is dropped dies with it, and so does every process.
    let mut pids = daemon.pids();
    pids.push(daemon.reaper_pid());
    assert!(
        pids.contains(&qemu),
        "the guest is below the daemon's subreaper: {pids:?}"
    );
    assert!(pids.len() >= 4, "tini, guard, libvirtd, QEMU: {pids:?}");
    let work = daemon.work_dir().to_path_buf();
    let dropping = Instant::now();
    drop(daemon);
    eprintln!("timing: drop {:.3} s", dropping.elapsed().as_secs_f64());
    let left: Vec<u32> = pids
        .iter()
        .copied()
        .filter(|&p| process::alive(p))
        .collect();
    assert!(left.is_empty(), "still alive after drop: {left:?}");
    assert!(!work.exists(), "{} removed", work.display());
}

#[test]
fn live_migration_moves_the_guest_and_the_watcher_sees_no_double_run() {
    if !real_infra_or_skip(
        "live_migration_moves_the_guest_and_the_watcher_sees_no_double_run",
        &[],
    ) {
        return;
    }
    let (a, b) = shared_pair();
    assert_ne!(a.host_uuid(), b.host_uuid());
    let name = unique_name("mig");
    let scratch = Scratch::new(&name);
    let xml = write_tiny_guest(scratch.path(), &name, 32).expect("guest xml");
    create_guest(a, &xml, &[]);
    assert_eq!(a.domstate(&name).expect("A"), Some(DomState::Running));
    assert_eq!(b.domstate(&name).expect("B"), None);

    let watcher = Watcher::start(&name, &[a, b]).expect("watcher starts");
    let t = Instant::now();
    let out = a
        .virsh(&["migrate", "--live", &name, b.uri()])
        .expect("virsh migrate runs");
    assert!(out.status.success(), "migrate A -> B: {}", out.stderr);
    eprintln!(
        "timing: virsh migrate --live A -> B {:.3} s",
        t.elapsed().as_secs_f64()
    );
    assert_eq!(
        a.domstate(&name).expect("A"),
        None,
        "a transient guest leaves A"
    );
    assert_eq!(b.domstate(&name).expect("B"), Some(DomState::Running));

    // And back, peer-to-peer: the source daemon dials the target's socket itself.
    let t = Instant::now();
    let out = b
        .virsh(&["migrate", "--live", "--p2p", &name, a.uri()])
        .expect("virsh migrate runs");
    assert!(out.status.success(), "migrate B -> A (p2p): {}", out.stderr);
    eprintln!(
        "timing: virsh migrate --live --p2p B -> A {:.3} s",
        t.elapsed().as_secs_f64()
    );
    let report = watcher.finish();
    eprintln!(
        "watcher: {} samples in {:.3} s{}",
        report.samples,
        report.watched_for.as_secs_f64(),
        report.render_timeline()
    );
    report.assert_never_both();
    assert!(report.saw_executing_on(0), "the watcher saw the guest on A");
    assert!(report.saw_executing_on(1), "the watcher saw the guest on B");
    assert!(report.samples >= 3, "{} samples", report.samples);
    assert_eq!(a.domstate(&name).expect("A"), Some(DomState::Running));
    assert_eq!(b.domstate(&name).expect("B"), None);
    a.virsh_ok(&["destroy", &name]).expect("destroy");
}

#[test]
fn watcher_ignores_a_paused_copy_and_reports_two_running_copies() {
    if !real_infra_or_skip(
        "watcher_ignores_a_paused_copy_and_reports_two_running_copies",
        &[],
    ) {
        return;
    }
    let (a, b) = shared_pair();
    let name = unique_name("twice");
    let scratch = Scratch::new(&name);
    let xml = write_tiny_guest(scratch.path(), &name, 32).expect("guest xml");
    create_guest(a, &xml, &[]);
    // A paused copy, as an incoming migration is: not running.
    create_guest(b, &xml, &["--paused"]);
    assert_eq!(b.domstate(&name).expect("B"), Some(DomState::Paused));

    let watcher = Watcher::start(&name, &[a, b]).expect("watcher starts");
    std::thread::sleep(Duration::from_millis(60));
    let quiet = watcher.finish();
    quiet.assert_never_both();
    assert!(quiet.samples >= 2, "{} samples", quiet.samples);
    assert!(quiet.saw_executing_on(0));
    assert!(!quiet.saw_executing_on(1), "paused on B is not executing");

    // The same domain started on both daemons: the checker must fail.
    let watcher = Watcher::start(&name, &[a, b]).expect("watcher starts");
    b.virsh_ok(&["resume", &name]).expect("resume on B");
    assert!(
        b.wait_state(&name, Some(DomState::Running), Duration::from_secs(5))
            .expect("domstate B")
    );
    let report = watcher.finish();
    let _ = a.virsh(&["destroy", &name]);
    let _ = b.virsh(&["destroy", &name]);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(
        report.violation_count >= 1,
        "two running copies must be reported{}",
        report.render_timeline()
    );
    let first = &report.violations[0];
    assert!(
        first
            .states
            .iter()
            .all(|(_, x, y)| *x == Some(DomState::Running) && *y == Some(DomState::Running)),
        "{first:?}"
    );
    let verdict = std::panic::catch_unwind(|| report.assert_never_both());
    assert!(
        verdict.is_err(),
        "assert_never_both must fail on a double run"
    );
}

#[test]
fn daemons_of_a_killed_owner_are_torn_down_by_their_guard() {
    if !real_infra_or_skip(
        "daemons_of_a_killed_owner_are_torn_down_by_their_guard",
        &[],
    ) {
        return;
    }
    let mut owner = Command::new(env!("CARGO_BIN_EXE_hl-libvirtd"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("hl-libvirtd starts");
    let stdout = owner.stdout.take().expect("stdout");
    let mut uri = String::new();
    let mut work = PathBuf::new();
    let mut pids: Vec<u32> = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read hl-libvirtd");
        if let Some(v) = line.strip_prefix("URI0=") {
            uri = v.to_string();
        } else if let Some(v) = line.strip_prefix("WORK0=") {
            work = PathBuf::from(v);
        } else if let Some(v) = line.strip_prefix("PIDS=") {
            pids = v
                .split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect();
        } else if line == "READY" {
            break;
        }
    }
    assert!(
        !uri.is_empty() && !pids.is_empty(),
        "hl-libvirtd reported its daemon"
    );
    let name = unique_name("orphan");
    let xml_path = std::env::temp_dir().join(format!("{name}.xml"));
    std::fs::write(&xml_path, tiny_guest_xml(&name, 32)).expect("xml");
    let out = process::run_bounded(
        Command::new("virsh")
            .args(["-q", "-c", &uri, "create"])
            .arg(&xml_path),
        Duration::from_secs(60),
    )
    .expect("virsh");
    let _ = std::fs::remove_file(&xml_path);
    assert!(out.status.success(), "create: {}", out.stderr);
    let qemu =
        process::read_pid_file(&work.join(format!("run/qemu/{name}.pid"))).expect("QEMU pid file");
    assert!(process::alive(qemu));
    pids.push(qemu);

    owner.kill().expect("SIGKILL the owner");
    let _ = owner.wait();
    let t = Instant::now();
    let gone = process::wait_gone(&pids, Duration::from_secs(20));
    let left: Vec<u32> = pids
        .iter()
        .copied()
        .filter(|&p| process::alive(p))
        .collect();
    assert!(gone, "alive 20 s after the owner died: {left:?}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while work.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!work.exists(), "the guard removes {}", work.display());
    eprintln!(
        "timing: guard teardown after owner SIGKILL {:.3} s",
        t.elapsed().as_secs_f64()
    );
}

/// A daemon restarted under the watcher ends its session: the watcher opens a new one and keeps
/// the gap. Restarting the daemon where the guest runs, with no copy elsewhere, proves nothing
/// wrong; restarting the other daemon while the guest executes makes the check fail (the blind
/// daemon could have run a copy), never pass.
#[test]
fn watcher_bridges_a_daemon_restart_and_fails_closed_while_blind() {
    if !real_infra_or_skip(
        "watcher_bridges_a_daemon_restart_and_fails_closed_while_blind",
        &[],
    ) {
        return;
    }
    // A pair of its own: the shared one keeps serving the other tests meanwhile.
    let (a, b) = pair().expect("two private libvirtds start");
    let name = unique_name("blind");
    let scratch = Scratch::new(&name);
    let xml = write_tiny_guest(scratch.path(), &name, 32).expect("guest xml");
    create_guest(&a, &xml, &[]);

    let watcher = Watcher::start(&name, &[&a, &b]).expect("watcher starts");
    a.restart_libvirtd().expect("A's libvirtd restarts");
    assert!(
        a.wait_state(&name, Some(DomState::Running), Duration::from_secs(20))
            .expect("domstate A"),
        "the guest still runs on A after the restart"
    );
    let report = watcher.finish();
    eprintln!("restart of A: gaps {:?}", report.gaps);
    report.assert_never_both();
    assert!(report.saw_executing_on(0), "the guest was seen on A");
    let last = report.timeline.last().map(|(_, s)| s.clone());
    assert_eq!(
        last,
        Some(vec![Some(DomState::Running), None]),
        "read again after the restart{}",
        report.render_timeline()
    );

    let watcher = Watcher::start(&name, &[&a, &b]).expect("watcher starts");
    b.restart_libvirtd().expect("B's libvirtd restarts");
    let report = watcher.finish();
    eprintln!(
        "restart of B: gaps {:?}, unproven {}",
        report.gaps, report.unproven_count
    );
    let _ = a.virsh(&["destroy", &name]);
    assert!(
        report.gaps.iter().any(|(label, ..)| label == b.label()),
        "B's restart ended its session: {:?}",
        report.gaps
    );
    assert!(report.unproven_count >= 1, "{report:?}");
    assert!(
        report.check_never_both().is_err(),
        "blind on B while the guest ran on A must not pass"
    );
}
