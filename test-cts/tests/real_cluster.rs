//! Ring 3: a real corosync + Pacemaker cluster on this machine drives a real QEMU guest.
//!
//! Each scenario builds its own cluster (test_cts::cluster), one at a time, and a watcher polls
//! every node's libvirtd throughout: the domain running on two nodes fails the scenario. The VM
//! agent is ours, `ocf:highlander:VirtualDomain` (`VirtualDomain` and `VirtualDomain-libvirt`,
//! built for the running profile, or from `$HIGHLANDER_AGENT_DIR`);
//! `HIGHLANDER_CLUSTER_AGENT=heartbeat` runs the same scenarios with the stock agent. Run: `cargo test --release -p test-cts --test real_cluster`
//! (add `-- --nocapture` to see each scenario's report; `HIGHLANDER_KEEP_CLUSTER_DIR=1` keeps
//! the nodes' logs under /tmp/hlc<pid>-<n>).
//!
//! The interrupted-migration scenarios (ban cleared mid-migrate_to, agent killed
//! mid-migrate_to, target put in standby mid-migrate_to, preference flipped twice) run twice, under Pacemaker 2.1.5's own scheduler and under
//! `highlander-schedulerd` (built from this workspace and bound over
//! `/usr/lib/pacemaker/pacemaker-schedulerd` in each node's mount namespace), and print the
//! outcomes side by side. Both must keep the guest running exactly once. Pacemaker's scheduler
//! answers a partial migration whose target is no longer preferred by stopping both sides and
//! booting the guest again (the corpus case `testdata/pacemaker-2.1.5/xml/migrate-partial-2.xml`
//! without its cli-prefer constraint; `pengine/scenarios/migration/regen.sh` checks it): that is
//! printed, not asserted.
//! Under Highlander's scheduler the atomic model (`docs/atomic-migration.md`) runs the real
//! cluster, and the guest must end on the original QEMU or the one that received the live
//! migration: a fresh boot fails the test.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use test_cts::cluster::{
    Cluster, ClusterSpec, Scheduler, Timeline, VmAgent, Watcher, unsupported_reason,
};

/// Clusters share 2 cores: scenarios run one after another.
static SERIAL: Mutex<()> = Mutex::new(());

const VM: &str = "vm1";

/// Builds a cluster, or returns `None` after saying loudly why this machine cannot (and
/// panicking instead under CI, where a skip would hide a broken suite).
fn cluster(scenario: &str, nodes: usize) -> Option<Cluster> {
    cluster_with(scenario, nodes, default_scheduler())
}

/// The scheduler of the scenarios that do not choose one: Pacemaker's, or Highlander's with
/// `HIGHLANDER_CLUSTER_SCHEDULER=highlander` (the whole suite under highlander-schedulerd).
fn default_scheduler() -> Scheduler {
    match std::env::var("HIGHLANDER_CLUSTER_SCHEDULER").as_deref() {
        Ok("highlander") => Scheduler::Highlander(workspace_binary(
            "highlander-schedulerd",
            "highlander-schedulerd",
        )),
        Ok("pacemaker") | Err(_) => Scheduler::Pacemaker,
        Ok(other) => {
            panic!("HIGHLANDER_CLUSTER_SCHEDULER={other}: expected pacemaker or highlander")
        }
    }
}

/// As `cluster`, with the given scheduler daemon in every node.
fn cluster_with(scenario: &str, nodes: usize, scheduler: Scheduler) -> Option<Cluster> {
    if let Some(reason) = unsupported_reason() {
        let msg = format!("SKIPPED real_cluster::{scenario}: {reason}");
        assert!(std::env::var_os("CI").is_none(), "{msg}; CI must not skip");
        eprintln!("{msg}");
        return None;
    }
    let agent = VmAgent::from_env().expect("HIGHLANDER_CLUSTER_AGENT");
    let label = scheduler.label();
    let highlander = matches!(scheduler, Scheduler::Highlander(_));
    let cluster = Cluster::start(ClusterSpec::new(nodes, agent.clone()).with_scheduler(scheduler))
        .unwrap_or_else(|e| panic!("{scenario}: cluster did not come up: {e}"));
    // HIGHLANDER_SCHEDULER_MODE=shadow|trusted|guarded sets highlander-schedulerd's mode as an
    // administrator would (a cluster property); `shadow` shows the no-reboot checks failing.
    if let (true, Ok(mode)) = (highlander, std::env::var("HIGHLANDER_SCHEDULER_MODE")) {
        cluster
            .cli(&[
                "crm_attribute",
                "--type",
                "crm_config",
                "--name",
                "highlander-scheduler-mode",
                "--update",
                &mode,
            ])
            .unwrap_or_else(|e| panic!("{scenario}: setting the scheduler mode: {e}"));
        println!("[{scenario}] highlander-scheduler-mode={mode}");
    }
    let timings: Vec<String> = cluster
        .timings
        .iter()
        .map(|(step, d)| format!("{step} {:.2}s", d.as_secs_f64()))
        .collect();
    println!(
        "[{scenario}] {nodes}-node cluster {} with {:?}, {label}'s scheduler: {}",
        cluster.name(),
        agent.provider(),
        timings.join(", ")
    );
    Some(cluster)
}

fn lock() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Fails unless the timeline never confirmed the domain on two nodes; prints the timeline.
fn assert_never_twice(scenario: &str, cluster: &Cluster, watcher: Watcher) -> Timeline {
    let timeline = watcher.finish();
    println!(
        "[{scenario}] watcher: {} rounds, every {} ms on average; changes:",
        timeline.samples.len(),
        timeline.mean_round_ms()
    );
    for line in timeline.changes() {
        println!("[{scenario}]   {line}");
    }
    let doubles = timeline.double_runs();
    assert!(
        doubles.is_empty(),
        "{scenario}: {} ran on two nodes at once: {:?}\n{}",
        timeline.domain,
        doubles,
        cluster.diagnostics()
    );
    assert!(
        timeline.samples.len() > 5,
        "{scenario}: the watcher polled only {} times",
        timeline.samples.len()
    );
    timeline
}

fn secs(d: Duration) -> String {
    format!("{:.2}s", d.as_secs_f64())
}

/// Starts the VM preferring `node` and waits for it to run there.
fn start_vm(scenario: &str, c: &Cluster, node: &str) {
    let t = Instant::now();
    c.add_vm(VM, node).expect("add vm");
    c.wait_started_on(VM, node, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    assert_eq!(
        c.virsh_state(node, VM).expect("virsh").as_deref(),
        Some("running"),
        "{scenario}: Pacemaker says started, libvirt on {node} disagrees"
    );
    println!(
        "[{scenario}] {VM} started on {node} in {}",
        secs(t.elapsed())
    );
}

/// A move the scenario made: when (watcher clock), what, and where to.
struct Move {
    label: String,
    mark_ms: u64,
}

/// Moves the VM with crm_resource --move and checks it was a live migration.
fn live_migrate(scenario: &str, c: &Cluster, w: &Watcher, source: &str, target: &str) -> Move {
    let source_pid = c
        .qemu_pid(source, VM)
        .expect("pid")
        .expect("QEMU on source");
    let before = migration_counts(c);
    let mark_ms = w.now_ms();
    let t = Instant::now();
    c.move_resource(VM, target).expect("crm_resource --move");
    c.wait_started_on(VM, target, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    let took = t.elapsed();
    c.clear_resource(VM).expect("crm_resource --clear");
    assert_migrated(scenario, c, source, target, source_pid, &before);
    println!(
        "[{scenario}] {VM} live-migrated {source} -> {target}: Pacemaker done in {}",
        secs(took)
    );
    Move {
        label: format!("{source} -> {target}"),
        mark_ms,
    }
}

/// How many successful migrate_to and migrate_from of the VM each node's log shows, keyed by
/// (operation, node): taken before a move, so `assert_migrated` can check they grew.
type MigrationCounts = BTreeMap<(String, String), usize>;

fn migration_counts(c: &Cluster) -> MigrationCounts {
    let mut counts = MigrationCounts::new();
    for node in c.node_names() {
        for op in ["migrate_to", "migrate_from"] {
            let needle = format!("Result of {op} operation for {VM} on {node}: ok");
            counts.insert(
                (op.to_owned(), node.clone()),
                c.grep_pacemaker_logs(&needle).len(),
            );
        }
    }
    counts
}

/// Asserts the VM on `target` arrived by live migration from `source`: the history shows
/// migrate_to on the source and migrate_from on the target, the source's QEMU is gone, and
/// the target's QEMU was started to receive a migration (`-incoming`), not booted.
fn assert_migrated(
    scenario: &str,
    c: &Cluster,
    source: &str,
    target: &str,
    source_pid: u32,
    before: &MigrationCounts,
) {
    let target_pid = c.qemu_pid(target, VM).expect("pid").unwrap_or_else(|| {
        panic!(
            "{scenario}: no QEMU for {VM} on {target}\n{}",
            c.diagnostics()
        )
    });
    let cmdline = Cluster::process_cmdline(target_pid);
    assert!(
        cmdline.contains("-incoming"),
        "{scenario}: QEMU {target_pid} on {target} was booted, not migrated into: {cmdline}"
    );
    assert!(
        c.qemu_pid(source, VM).expect("pid").is_none(),
        "{scenario}: QEMU {source_pid} still runs on {source}"
    );
    // The controller logs each result; crm_mon keeps no history of a node that left.
    for (op, node) in [("migrate_to", source), ("migrate_from", target)] {
        let needle = format!("Result of {op} operation for {VM} on {node}: ok");
        let seen = c.grep_pacemaker_logs(&needle).len();
        assert!(
            seen > before
                .get(&(op.to_owned(), node.to_owned()))
                .copied()
                .unwrap_or(0),
            "{scenario}: no new `{needle}` in the logs\n{}",
            c.diagnostics()
        );
    }
    let field = |name: &str| {
        c.completed_job_field(target, VM, name)
            .unwrap_or_else(|| "(not reported)".into())
    };
    println!(
        "[{scenario}] {target}: QEMU {target_pid} was started with -incoming; libvirt's job: \
         total downtime {}, time elapsed {}",
        field("Total downtime"),
        field("Time elapsed")
    );
}

/// Prints each move's outage as the watcher saw it (between this move and the next one, or
/// `end_ms` for the last).
fn report_moves(scenario: &str, timeline: &Timeline, moves: &[Move], end_ms: u64) {
    for (i, m) in moves.iter().enumerate() {
        let until = moves.get(i + 1).map_or(end_ms, |n| n.mark_ms);
        match timeline.longest_outage_ms(m.mark_ms, until) {
            Some(ms) => println!(
                "[{scenario}] {}: watcher saw the VM down for ~{ms} ms",
                m.label
            ),
            None => println!(
                "[{scenario}] {}: watcher never saw the VM down (outage below one round, ~{} ms)",
                m.label,
                timeline.mean_round_ms()
            ),
        }
    }
}

/// Where the VM's QEMU runs now, checked against the node Pacemaker names.
fn assert_vm_only_on(scenario: &str, c: &Cluster, node: &str) {
    for other in c.node_names() {
        if c.state(&other).expect("state") == test_cts::cluster::NodeState::Down {
            continue;
        }
        let state = c.virsh_state(&other, VM).expect("virsh");
        if other == node {
            assert_eq!(
                state.as_deref(),
                Some("running"),
                "{scenario}: {VM} not running on {node}"
            );
        } else {
            assert_ne!(
                state.as_deref(),
                Some("running"),
                "{scenario}: {VM} also runs on {other}"
            );
        }
    }
}

#[test]
fn vm_starts_is_monitored_and_live_migrates_back_and_forth() {
    let _serial = lock();
    let scenario = "vm_live_migration";
    let Some(c) = cluster(scenario, 2) else {
        return;
    };
    let w = c.watch(VM);
    start_vm(scenario, &c, "node1");
    c.wait_for(
        "a recurring monitor of vm1 on node1",
        Duration::from_secs(30),
        |c| {
            Ok(c.operation_history(VM, "node1")?
                .iter()
                .any(|o| o == "monitor:5000"))
        },
    )
    .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    let moves = vec![
        live_migrate(scenario, &c, &w, "node1", "node2"),
        live_migrate(scenario, &c, &w, "node2", "node1"),
    ];
    c.wait_idle(Duration::from_secs(30)).expect("idle");
    assert_vm_only_on(scenario, &c, "node1");
    let timeline = assert_never_twice(scenario, &c, w);
    report_moves(scenario, &timeline, &moves, u64::MAX);
}

#[test]
fn vm_migrates_away_from_a_node_stopped_cleanly_which_then_rejoins() {
    let _serial = lock();
    let scenario = "vm_node_stop_start";
    let Some(mut c) = cluster(scenario, 2) else {
        return;
    };
    let w = c.watch(VM);
    start_vm(scenario, &c, "node1");
    let source_pid = c
        .qemu_pid("node1", VM)
        .expect("pid")
        .expect("QEMU on node1");
    let before = migration_counts(&c);
    let mark_ms = w.now_ms();
    let stopped = c
        .stop_node("node1")
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    println!(
        "[{scenario}] node1's pacemakerd and corosync stopped cleanly in {}",
        secs(stopped)
    );
    c.wait_started_on(VM, "node2", Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    assert_migrated(scenario, &c, "node1", "node2", source_pid, &before);
    let started = c
        .start_node("node1")
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    println!(
        "[{scenario}] node1 started again, online in {}",
        secs(started)
    );
    c.wait_idle(Duration::from_secs(30)).expect("idle");
    assert!(
        c.status().expect("status").started_only_on(VM, "node2"),
        "{scenario}: {VM} moved when node1 rejoined\n{}",
        c.diagnostics()
    );
    assert_vm_only_on(scenario, &c, "node2");
    let timeline = assert_never_twice(scenario, &c, w);
    report_moves(
        scenario,
        &timeline,
        &[Move {
            label: "node1 (stopping) -> node2".into(),
            mark_ms,
        }],
        u64::MAX,
    );
}

/// Crashes or isolates the VM's node and checks it is fenced and the VM recovers on node1.
fn fence_and_recover(scenario: &str, corosync_only: bool) {
    let _serial = lock();
    let Some(mut c) = cluster(scenario, 2) else {
        return;
    };
    let w = c.watch(VM);
    start_vm(scenario, &c, "node2");
    let victim_qemu = c
        .qemu_pid("node2", VM)
        .expect("pid")
        .expect("QEMU on node2");
    let fenced_before = c.fence_count("node2");
    let mark_ms = w.now_ms();
    let t = Instant::now();
    let killed = if corosync_only {
        c.kill_corosync("node2").expect("kill corosync")
    } else {
        c.crash_node("node2").expect("crash node2")
    };
    println!(
        "[{scenario}] node2 {}: SIGKILL to {:?}",
        if corosync_only {
            "lost corosync"
        } else {
            "crashed"
        },
        killed
    );
    let fenced = c
        .wait_fenced("node2", fenced_before, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    assert!(
        !test_cts::cluster::Cluster::process_cmdline(victim_qemu).contains("qemu"),
        "{scenario}: node2's QEMU {victim_qemu} survived the fence"
    );
    c.wait_started_on(VM, "node1", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    let recovered = t.elapsed();
    let pid = c
        .qemu_pid("node1", VM)
        .expect("pid")
        .expect("QEMU on node1");
    assert!(
        !Cluster::process_cmdline(pid).contains("-incoming"),
        "{scenario}: the recovered VM should be a fresh boot on node1"
    );
    assert_vm_only_on(scenario, &c, "node1");
    let restarted = c
        .start_node("node2")
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    c.wait_idle(Duration::from_secs(30)).expect("idle");
    assert_vm_only_on(scenario, &c, "node1");
    let timeline = assert_never_twice(scenario, &c, w);
    let up_again = timeline
        .first_running_only_on("node1", mark_ms)
        .map_or("?".into(), |at| format!("{} ms", at - mark_ms));
    println!(
        "[{scenario}] node2 fenced {} after the fault ({}); {VM} running on node1 {} after \
         it (watcher: {up_again}); node2 back online in {}",
        secs(fenced),
        c.fence_log().lines().last().unwrap_or("").trim(),
        secs(recovered),
        secs(restarted)
    );
}

#[test]
fn vm_on_a_crashed_node_is_fenced_and_recovers_on_the_survivor() {
    fence_and_recover("vm_crash_fence", false);
}

#[test]
fn vm_on_a_node_that_lost_corosync_is_fenced_before_it_starts_elsewhere() {
    fence_and_recover("vm_corosync_loss_fence", true);
}

#[test]
fn dummy_crashed_node_is_fenced_and_its_resource_recovers() {
    let _serial = lock();
    let scenario = "dummy_crash_fence";
    let Some(mut c) = cluster(scenario, 2) else {
        return;
    };
    c.add_dummy("dummy1", "node2").expect("add dummy");
    c.wait_started_on("dummy1", "node2", Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    let fenced_before = c.fence_count("node2");
    let t = Instant::now();
    let killed = c.crash_node("node2").expect("crash node2");
    println!(
        "[{scenario}] crashed node2: SIGKILL to {} processes",
        killed.len()
    );
    let fenced = c
        .wait_fenced("node2", fenced_before, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    c.wait_started_on("dummy1", "node1", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    let recovered = t.elapsed();
    let history = c
        .cli(&["stonith_admin", "--history", "node2"])
        .expect("stonith_admin --history");
    assert!(
        history.contains("node2") && history.contains("successful"),
        "{scenario}: Pacemaker's fencing history has no successful fence of node2: {history}"
    );
    println!(
        "[{scenario}] node2 fenced {} after the crash; dummy1 recovered on node1 after {}",
        secs(fenced),
        secs(recovered)
    );
    println!("[{scenario}] {}", history.trim());
    let restarted = c.start_node("node2").expect("start node2 again");
    println!("[{scenario}] node2 back online in {}", secs(restarted));
}

#[test]
fn three_nodes_live_migrate_then_the_target_crashes_and_is_fenced() {
    let _serial = lock();
    let scenario = "three_node_migrate_crash";
    let Some(mut c) = cluster(scenario, 3) else {
        return;
    };
    let w = c.watch(VM);
    start_vm(scenario, &c, "node1");
    let moves = vec![live_migrate(scenario, &c, &w, "node1", "node3")];
    let fenced_before = c.fence_count("node3");
    let mark_ms = w.now_ms();
    let t = Instant::now();
    c.crash_node("node3").expect("crash node3");
    let fenced = c
        .wait_fenced("node3", fenced_before, Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    let survivor = c
        .wait_for(
            "vm1 recovered on a survivor",
            Duration::from_secs(60),
            |c| {
                let s = c.status()?;
                Ok(["node1", "node2"].iter().any(|n| s.started_only_on(VM, n)))
            },
        )
        .map(|_| {
            let s = c.status().expect("status");
            s.locations(VM).first().cloned().unwrap_or_default()
        })
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    let recovered = t.elapsed();
    assert_vm_only_on(scenario, &c, &survivor);
    let timeline = assert_never_twice(scenario, &c, w);
    report_moves(scenario, &timeline, &moves, mark_ms);
    let seen = timeline
        .first_running_only_on(&survivor, mark_ms)
        .map_or("?".into(), |at| format!("{} ms", at - mark_ms));
    println!(
        "[{scenario}] node3 crashed; fenced after {}; {VM} running on {survivor} after {} \
         (watcher: {seen})",
        secs(fenced),
        secs(recovered)
    );
}

#[test]
fn vm_keeps_running_once_while_its_libvirtd_is_dead_and_is_reattached() {
    let _serial = lock();
    let scenario = "vm_libvirtd_killed";
    let Some(mut c) = cluster(scenario, 2) else {
        return;
    };
    let w = c.watch(VM);
    start_vm(scenario, &c, "node2");
    let qemu = c
        .qemu_pid("node2", VM)
        .expect("pid")
        .expect("QEMU on node2");
    let fenced_before = c.fence_count("node2");
    let killed = c.kill_libvirtd("node2").expect("kill libvirtd");
    println!("[{scenario}] libvirtd on node2 SIGKILLed ({killed:?}); QEMU {qemu} left running");
    // Two monitor intervals (5 s each) and then some: the agent must neither report the VM
    // stopped (Pacemaker would start a second copy) nor get node2 fenced for it.
    std::thread::sleep(Duration::from_secs(12));
    let s = c.status().expect("status");
    assert!(
        s.started_only_on(VM, "node2"),
        "{scenario}: with libvirtd dead Pacemaker lost track of {VM}: {:?}\n{}",
        s.resources.get(VM),
        c.diagnostics()
    );
    assert_eq!(
        c.fence_count("node2"),
        fenced_before,
        "{scenario}: node2 was fenced"
    );
    assert!(
        Cluster::process_cmdline(qemu).contains("qemu"),
        "{scenario}: QEMU {qemu} died with libvirtd"
    );
    let back = c.restart_libvirtd("node2").expect("restart libvirtd");
    assert_eq!(
        c.virsh_state("node2", VM).expect("virsh").as_deref(),
        Some("running"),
        "{scenario}: the restarted libvirtd does not see the guest"
    );
    assert_eq!(
        c.qemu_pid("node2", VM).expect("pid"),
        Some(qemu),
        "{scenario}: the guest is not the same QEMU process"
    );
    c.wait_idle(Duration::from_secs(30)).expect("idle");
    assert_vm_only_on(scenario, &c, "node2");
    assert_never_twice(scenario, &c, w);
    println!(
        "[{scenario}] 12 s without libvirtd: {VM} stayed Started on node2, no fence; libvirtd \
         back in {} and reattached QEMU {qemu}",
        secs(back)
    );
}

/// The 2013 case: a ban starts a live migration, and the ban is removed while migrate_to
/// still runs. The VM must end up running exactly once, under either scheduler; under
/// Highlander's it must also never be rebooted (Pacemaker 2.1.5's own scheduler reboots it: that
/// outcome is printed beside Highlander's, not asserted).
#[test]
fn ban_removed_while_migrate_to_runs_leaves_the_vm_running_once() {
    let _serial = lock();
    let scenario = "ban_cleared_mid_migration";
    let mut rows = Vec::new();
    for scheduler in schedulers() {
        let label = scheduler.label();
        let Some(mut c) = cluster_with(scenario, 2, scheduler) else {
            return;
        };
        let run = interrupted_migration(
            scenario,
            &mut c,
            |c| c.ban_resource(VM, "node1").expect("crm_resource --ban"),
            |c| c.clear_resource(VM).expect("crm_resource --clear"),
            |_| {},
        );
        println!(
            "[{scenario}] {label}: ban at 0 s, cleared mid-migrate_to at {}, settled at {}: {}",
            secs(run.interrupted_at),
            secs(run.settled_at),
            run.outcome.how
        );
        rows.push((label, run.outcome, scheduler_report(&c)));
    }
    side_by_side(scenario, &rows);
}

/// Pacemaker's scheduler, then Highlander's (`highlander-schedulerd` built from this
/// workspace and bound over Pacemaker's in each node).
fn schedulers() -> Vec<Scheduler> {
    vec![
        Scheduler::Pacemaker,
        Scheduler::Highlander(workspace_binary(
            "highlander-schedulerd",
            "highlander-schedulerd",
        )),
    ]
}

/// What the scheduler daemon said in the nodes' Pacemaker logs (Highlander's only: how many
/// transitions it planned, and which graph each took).
fn scheduler_report(c: &Cluster) -> String {
    let lines = c.grep_pacemaker_logs("highlander-schedulerd[");
    let planned: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("Calculated transition"))
        .collect();
    if planned.is_empty() {
        return "Pacemaker's pacemaker-schedulerd".into();
    }
    let by_source = |needle: &str| lines.iter().filter(|l| l.contains(needle)).count();
    let diverged = lines.iter().filter(|l| l.contains("diverges")).count();
    format!(
        "highlander-schedulerd: {} transitions ({} Highlander plans, {} Pacemaker graphs), {diverged} divergences",
        planned.len(),
        by_source("graph from highlander"),
        by_source("graph from pacemaker")
    )
}

/// Prints the outcomes of one scenario under each scheduler, then asserts Highlander's kept the
/// guest's QEMU (the original or the one that received the migration): no fresh boot.
fn side_by_side(scenario: &str, rows: &[(&str, Outcome, String)]) {
    println!("[{scenario}] outcome by scheduler:");
    for (label, o, sched) in rows {
        println!(
            "[{scenario}]   {label:<10} fresh boots: {}  double runs: 0  ends on {} as {}  outage {}  ({sched})",
            u8::from(o.rebooted),
            o.node,
            o.qemu,
            o.outage
        );
    }
    for (label, o, sched) in rows {
        if *label == "highlander" {
            assert!(
                !o.rebooted,
                "{scenario}: under Highlander's scheduler the guest was rebooted: {} ({sched})",
                o.how
            );
        }
    }
}

/// The target is put in standby while migrate_to runs (and back online once the cluster has
/// settled). Under either scheduler the VM runs once; under Highlander's it is never rebooted.
#[test]
fn target_put_in_standby_while_migrate_to_runs_leaves_the_vm_running_once() {
    let _serial = lock();
    let scenario = "target_standby_mid_migration";
    let standby = |c: &Cluster, value: &str| {
        c.cli(&[
            "crm_attribute",
            "--node",
            "node2",
            "--name",
            "standby",
            "--update",
            value,
        ])
        .unwrap_or_else(|e| panic!("{scenario}: standby {value}: {e}"));
    };
    let mut rows = Vec::new();
    for scheduler in schedulers() {
        let label = scheduler.label();
        let Some(mut c) = cluster_with(scenario, 2, scheduler) else {
            return;
        };
        let run = interrupted_migration(
            scenario,
            &mut c,
            |c| c.move_resource(VM, "node2").expect("crm_resource --move"),
            |c| {
                c.clear_resource(VM).expect("crm_resource --clear");
                standby(c, "on");
            },
            |c| standby(c, "off"),
        );
        println!(
            "[{scenario}] {label}: move at 0 s, node2 in standby mid-migrate_to at {}, settled at {}: {}",
            secs(run.interrupted_at),
            secs(run.settled_at),
            run.outcome.how
        );
        rows.push((label, run.outcome, scheduler_report(&c)));
    }
    side_by_side(scenario, &rows);
}

/// The preference flips twice during one migration: moved to node2, then back to node1 and to
/// node2 again while migrate_to still runs. The VM runs once; under Highlander's scheduler it
/// is never rebooted.
#[test]
fn preference_flipped_twice_during_migrate_to_leaves_the_vm_running_once() {
    let _serial = lock();
    let scenario = "preference_flipped_twice";
    let mut rows = Vec::new();
    for scheduler in schedulers() {
        let label = scheduler.label();
        let Some(mut c) = cluster_with(scenario, 2, scheduler) else {
            return;
        };
        let run = interrupted_migration(
            scenario,
            &mut c,
            |c| c.move_resource(VM, "node2").expect("crm_resource --move"),
            |c| {
                // --force: crm_resource refuses a move to where it sees the resource active.
                for node in ["node1", "node2"] {
                    c.cli(&["crm_resource", "--move", "-r", VM, "-N", node, "--force"])
                        .unwrap_or_else(|e| panic!("{scenario}: move to {node}: {e}"));
                }
            },
            |c| c.clear_resource(VM).expect("crm_resource --clear"),
        );
        println!(
            "[{scenario}] {label}: move at 0 s, flipped to node1 and back mid-migrate_to at {}, settled at {}: {}",
            secs(run.interrupted_at),
            secs(run.settled_at),
            run.outcome.how
        );
        rows.push((label, run.outcome, scheduler_report(&c)));
    }
    side_by_side(scenario, &rows);
}

/// What an interrupted migration scenario measured.
struct Interrupted<T> {
    /// What the interruption returned.
    value: T,
    interrupted_at: Duration,
    settled_at: Duration,
    /// Where and as which QEMU the VM ends.
    outcome: Outcome,
}

/// How an interrupted migration ended.
struct Outcome {
    node: String,
    /// "original QEMU <pid>", "migrated QEMU <pid>" or "FRESH BOOT <pid>".
    qemu: String,
    rebooted: bool,
    outage: String,
    /// One sentence.
    how: String,
}

/// The shape the interrupted-migration scenarios share: the VM starts on node1, migrations from
/// node1 are throttled so that migrate_to takes seconds, `begin` makes Pacemaker migrate the VM
/// to node2, `interrupt` runs once node2's incoming QEMU exists (paused), then the cluster settles
/// with the VM started somewhere, `finish` runs, and the outcome is checked and described.
fn interrupted_migration<T>(
    scenario: &str,
    c: &mut Cluster,
    begin: impl FnOnce(&Cluster),
    interrupt: impl FnOnce(&mut Cluster) -> T,
    finish: impl FnOnce(&Cluster),
) -> Interrupted<T> {
    let w = c.watch(VM);
    start_vm(scenario, c, "node1");
    let original = c
        .qemu_pid("node1", VM)
        .expect("pid")
        .expect("QEMU on node1");
    // About 0.5 MiB at 1 Mbit/s: the migration stream takes some seconds.
    c.throttle_migrations_from("node1", 1000).expect("tc");
    let mark_ms = w.now_ms();
    let t = Instant::now();
    begin(c);
    c.wait_for("the incoming QEMU on node2", Duration::from_secs(30), |c| {
        Ok(c.virsh_state("node2", VM)?.as_deref() == Some("paused"))
    })
    .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    let value = interrupt(c);
    let interrupted_at = t.elapsed();
    c.wait_idle(Duration::from_secs(90))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    c.wait_for("vm1 started somewhere", Duration::from_secs(60), |c| {
        let s = c.status()?;
        Ok(["node1", "node2"].iter().any(|n| s.started_only_on(VM, n)))
    })
    .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    let settled_at = t.elapsed();
    finish(c);
    let outcome = report_outcome(scenario, c, w, original, mark_ms);
    Interrupted {
        value,
        interrupted_at,
        settled_at,
        outcome,
    }
}

/// After an interrupted migration has settled: checks the VM runs on exactly one node and
/// never ran on two, prints the VM's operations and how it ends (the original QEMU, the one
/// that received the migration, or a fresh boot).
fn report_outcome(scenario: &str, c: &Cluster, w: Watcher, original: u32, mark_ms: u64) -> Outcome {
    let s = c.status().expect("status");
    let node = s.locations(VM).first().cloned().expect("a location");
    assert_vm_only_on(scenario, c, &node);
    let pid = c.qemu_pid(&node, VM).expect("pid").expect("QEMU");
    let rebooted = pid != original && !Cluster::process_cmdline(pid).contains("-incoming");
    let how = if pid == original {
        "the original QEMU (never moved)".to_owned()
    } else if !rebooted {
        format!("QEMU {pid}, which received the live migration")
    } else {
        format!("QEMU {pid}, a FRESH BOOT: the guest was restarted")
    };
    let results: Vec<String> = c
        .grep_pacemaker_logs("Result of")
        .into_iter()
        .filter(|l| l.contains(VM) && !l.contains("monitor"))
        .collect();
    for line in &results {
        let short = line.split(" | ").next().unwrap_or(line);
        println!("[{scenario}]   {short}");
    }
    let timeline = assert_never_twice(scenario, c, w);
    let outage = timeline
        .longest_outage_ms(mark_ms, u64::MAX)
        .map_or("none seen".into(), |ms| format!("~{ms} ms"));
    if rebooted {
        println!(
            "[{scenario}] rebooted (partial migration to a node no longer preferred: stop both, \
             start one); safe, but not what the atomic model plans"
        );
    }
    let qemu = if pid == original {
        format!("original QEMU {pid}")
    } else if rebooted {
        format!("FRESH BOOT {pid}")
    } else {
        format!("migrated QEMU {pid}")
    };
    Outcome {
        how: format!("{VM} runs on {node} as {how}; outage {outage}"),
        node,
        qemu,
        rebooted,
        outage,
    }
}

/// The agent is SIGKILLed on the source while migrate_to runs (its `virsh migrate` goes on).
/// The VM must end up running exactly once under either scheduler, and never rebooted under
/// Highlander's; Pacemaker's outcome is printed beside it.
#[test]
fn agent_killed_during_migrate_to_leaves_the_vm_running_once() {
    let _serial = lock();
    let scenario = "agent_killed_mid_migration";
    let mut rows = Vec::new();
    for scheduler in schedulers() {
        let label = scheduler.label();
        let Some(mut c) = cluster_with(scenario, 2, scheduler) else {
            return;
        };
        let run = interrupted_migration(
            scenario,
            &mut c,
            |c| c.move_resource(VM, "node2").expect("crm_resource --move"),
            |c| {
                let killed = c.kill_agent("node1", "migrate_to").expect("kill agent");
                assert!(
                    !killed.is_empty(),
                    "{scenario}: no agent process running migrate_to on node1"
                );
                killed
            },
            |c| c.clear_resource(VM).expect("crm_resource --clear"),
        );
        println!(
            "[{scenario}] {label}: move at 0 s, agent {:?} SIGKILLed mid-migrate_to at {}, settled at {}: {}",
            run.value,
            secs(run.interrupted_at),
            secs(run.settled_at),
            run.outcome.how
        );
        rows.push((label, run.outcome, scheduler_report(&c)));
    }
    side_by_side(scenario, &rows);
}

/// Under Highlander's scheduler, a cluster comes up, starts the VM and live-migrates it there
/// and back; every transition was planned by highlander-schedulerd with the guard's agreement,
/// its inputs are saved where `crm_simulate -x` reads them, and when the daemon is killed
/// between the two moves pacemakerd starts it again and the cluster goes on.
#[test]
fn highlander_scheduler_starts_and_live_migrates_the_vm() {
    let _serial = lock();
    let scenario = "highlander_scheduler_live_migration";
    let bin = workspace_binary("highlander-schedulerd", "highlander-schedulerd");
    let Some(mut c) = cluster_with(scenario, 2, Scheduler::Highlander(bin)) else {
        return;
    };
    let w = c.watch(VM);
    start_vm(scenario, &c, "node1");
    let mut moves = vec![live_migrate(scenario, &c, &w, "node1", "node2")];
    let mut killed = Vec::new();
    for node in c.node_names() {
        killed.extend(c.kill_scheduler(&node).expect("kill scheduler"));
    }
    assert!(!killed.is_empty(), "{scenario}: no scheduler process found");
    c.wait_for(
        "a new scheduler on every node",
        Duration::from_secs(60),
        |c| {
            let mut ok = true;
            for node in c.node_names() {
                let pids = c.scheduler_pids(&node)?;
                ok &= !pids.is_empty() && pids.iter().all(|p| !killed.contains(p));
            }
            Ok(ok)
        },
    )
    .unwrap_or_else(|e| panic!("{scenario}: {e}\n{}", c.diagnostics()));
    c.wait_idle(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    println!("[{scenario}] scheduler {killed:?} SIGKILLed; pacemakerd started it again");
    moves.push(live_migrate(scenario, &c, &w, "node2", "node1"));
    c.wait_idle(Duration::from_secs(30)).expect("idle");
    assert_vm_only_on(scenario, &c, "node1");
    let timeline = assert_never_twice(scenario, &c, w);
    report_moves(scenario, &timeline, &moves, u64::MAX);
    let report = scheduler_report(&c);
    println!("[{scenario}] {report}");
    let planned = c.grep_pacemaker_logs("highlander-schedulerd[");
    assert!(
        planned.iter().any(|l| l.contains("Calculated transition")),
        "{scenario}: highlander-schedulerd planned nothing\n{}",
        c.diagnostics()
    );
    let unguarded: Vec<&String> = planned
        .iter()
        .filter(|l| l.contains("graph from") && !l.contains("graph from highlander (guarded)"))
        .collect();
    assert!(
        unguarded.is_empty(),
        "{scenario}: transitions not planned by Highlander with the guard's agreement: {unguarded:#?}"
    );
    assert!(
        c.grep_pacemaker_logs("pacemaker-schedulerd[")
            .iter()
            .all(|l| !l.contains("Calculated transition")),
        "{scenario}: Pacemaker's scheduler planned a transition"
    );
    let saved = planned
        .iter()
        .find_map(|l| l.split("saving inputs in ").nth(1))
        .map(str::trim)
        .expect("a saved input named in the log");
    let node = c
        .node_names()
        .into_iter()
        .find(|n| c.node(n).is_ok_and(|node| node.root_path(saved).exists()));
    let node = node.unwrap_or_else(|| panic!("{scenario}: {saved} not found in any node"));
    println!("[{scenario}] {node} saved {saved}; crm_simulate -x reads it");
    let out = c
        .run(&node, &["crm_simulate", "-x", saved, "-S", "-Q"])
        .expect("crm_simulate");
    assert!(
        out.status.success(),
        "{scenario}: crm_simulate -x {saved} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A recovery policy for real, under Highlander's scheduler: with `recovery-restarts=1` and
/// `recovery-relocations=1`, a VM whose QEMU keeps dying is restarted in place on node1,
/// relocated to the untried node2, restarted there once, and finally stopped, the reason in the
/// Pacemaker log. (Pacemaker's own scheduler ignores the policy and restarts it in place.)
#[test]
fn recovery_policy_restarts_relocates_then_stops_the_vm() {
    let _serial = lock();
    let scenario = "recovery_policy";
    let bin = workspace_binary("highlander-schedulerd", "highlander-schedulerd");
    let Some(c) = cluster_with(scenario, 2, Scheduler::Highlander(bin)) else {
        return;
    };
    let w = c.watch(VM);
    start_vm(scenario, &c, "node1");
    for (name, value) in [("recovery-restarts", "1"), ("recovery-relocations", "1")] {
        c.cli(&["crm_resource", "--meta", "-r", VM, "-p", name, "-v", value])
            .unwrap_or_else(|e| panic!("{scenario}: {name}: {e}"));
    }
    c.wait_idle(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    // (node the QEMU is killed on, where the policy must start it next; None = stopped)
    let steps = [
        ("node1", Some("node1"), "restarted in place"),
        ("node1", Some("node2"), "relocated to the untried node"),
        ("node2", Some("node2"), "restarted in place"),
        ("node2", None, "stopped"),
    ];
    for (i, (on, next, what)) in steps.iter().enumerate() {
        let pid = c.qemu_pid(on, VM).expect("pid").expect("QEMU to kill");
        let t = Instant::now();
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
        let wanted = format!("{VM} {what}");
        let reached = |c: &Cluster| -> Result<bool, test_cts::cluster::ClusterError> {
            let s = c.status()?;
            Ok(match next {
                Some(n) => s.started_only_on(VM, n) && c.qemu_pid(n, VM)?.is_some_and(|p| p != pid),
                None => s.locations(VM).is_empty() && c.qemu_pid(on, VM)?.is_none(),
            })
        };
        c.wait_for(&wanted, Duration::from_secs(90), reached)
            .unwrap_or_else(|e| panic!("{scenario}: failure {}: {e}\n{}", i + 1, c.diagnostics()));
        // Settled there, not passing through.
        c.wait_idle(Duration::from_secs(60))
            .unwrap_or_else(|e| panic!("{scenario}: {e}"));
        assert!(
            reached(&c).expect("status"),
            "{scenario}: failure {}: {wanted} did not last\n{}",
            i + 1,
            c.diagnostics()
        );
        println!(
            "[{scenario}] failure {} (QEMU {pid} on {on} SIGKILLed): {wanted} after {}",
            i + 1,
            secs(t.elapsed())
        );
    }
    c.wait_idle(Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    let reasons = c.grep_pacemaker_logs(&format!("Policy: {VM}"));
    let last = reasons
        .last()
        .unwrap_or_else(|| panic!("{scenario}: no policy note in the log"));
    println!(
        "[{scenario}] the reason, as logged: {}",
        last.split(") \t").nth(1).unwrap_or(last)
    );
    println!("[{scenario}] {}", scheduler_report(&c));
    assert_never_twice(scenario, &c, w);
}

/// `shutdown-policy=migrate` for real, under Highlander's scheduler: node1 stopped cleanly
/// live-migrates its VM to node2 and the daemon records `origin-node=node1`; when node1 rejoins
/// the VM goes back to it live and the record is cleared, with no `pengine node` call. (Under
/// Pacemaker's scheduler the VM stays on node2: stickiness outweighs its preference for node1,
/// as `vm_migrates_away_from_a_node_stopped_cleanly_which_then_rejoins` shows.)
#[test]
fn shutdown_policy_migrate_moves_the_vm_away_and_back_live() {
    let _serial = lock();
    let scenario = "shutdown_policy_migrate";
    let bin = workspace_binary("highlander-schedulerd", "highlander-schedulerd");
    let Some(mut c) = cluster_with(scenario, 2, Scheduler::Highlander(bin)) else {
        return;
    };
    let w = c.watch(VM);
    start_vm(scenario, &c, "node1");
    c.cli(&[
        "crm_attribute",
        "--type",
        "crm_config",
        "--name",
        "shutdown-policy",
        "--update",
        "migrate",
    ])
    .unwrap_or_else(|e| panic!("{scenario}: shutdown-policy: {e}"));
    c.wait_idle(Duration::from_secs(30))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    let origin = |c: &Cluster| {
        c.cli(&[
            "crm_resource",
            "--meta",
            "-r",
            VM,
            "-g",
            "origin-node",
            "-Q",
        ])
        .map(|o| o.trim().to_string())
        .unwrap_or_default()
    };
    let pid = c
        .qemu_pid("node1", VM)
        .expect("pid")
        .expect("QEMU on node1");
    let before = migration_counts(&c);
    let mut moves = vec![Move {
        label: "node1 (stopping) -> node2".into(),
        mark_ms: w.now_ms(),
    }];
    c.stop_node("node1")
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    c.wait_started_on(VM, "node2", Duration::from_secs(60))
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    assert_migrated(scenario, &c, "node1", "node2", pid, &before);
    assert_eq!(
        origin(&c),
        "node1",
        "{scenario}: no origin record\n{}",
        c.diagnostics()
    );
    println!(
        "[{scenario}] node1 stopped cleanly: {VM} live-migrated to node2, origin-node=node1 recorded"
    );
    let pid = c
        .qemu_pid("node2", VM)
        .expect("pid")
        .expect("QEMU on node2");
    let before = migration_counts(&c);
    moves.push(Move {
        label: "node2 -> node1 (rejoined)".into(),
        mark_ms: w.now_ms(),
    });
    c.start_node("node1")
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    c.wait_started_on(VM, "node1", Duration::from_secs(90))
        .unwrap_or_else(|e| {
            panic!(
                "{scenario}: {VM} did not fail back: {e}\n{}",
                c.diagnostics()
            )
        });
    assert_migrated(scenario, &c, "node2", "node1", pid, &before);
    c.wait_for("the origin record cleared", Duration::from_secs(60), |c| {
        Ok(origin(c).is_empty())
    })
    .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    c.wait_idle(Duration::from_secs(30)).expect("idle");
    assert_vm_only_on(scenario, &c, "node1");
    println!("[{scenario}] node1 rejoined: {VM} live-migrated back, record cleared");
    println!("[{scenario}] {}", scheduler_report(&c));
    let timeline = assert_never_twice(scenario, &c, w);
    report_moves(scenario, &timeline, &moves, u64::MAX);
}

/// A binary of this workspace (`<target>/<profile>/<bin>`), built with the running test's
/// profile and target directory (as `test_cts::ocf` builds the agent).
fn workspace_binary(package: &str, bin: &str) -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // <target>/<profile>/deps/<test-exe>
    let profile_dir = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("profile dir");
    let target = profile_dir.parent().expect("target dir");
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("profile");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .args(["build", "--quiet", "-p", package, "--bin", bin])
        .arg("--target-dir")
        .arg(target);
    match profile {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    let status = cmd.status().expect("cargo build");
    assert!(status.success(), "cargo build -p {package} failed");
    profile_dir.join(bin)
}

/// The `pengine` command line of this workspace.
fn pengine_cli() -> std::path::PathBuf {
    workspace_binary("pengine", "pengine")
}

/// The node lifecycle in a real cluster: `pengine node evacuate` records the VM's origin and
/// bans its node, Pacemaker's own scheduler live-migrates it away; `pengine node restore`
/// brings exactly it back (live), clears the record and removes its constraints.
#[test]
fn pengine_node_evacuate_and_restore_move_the_vm_live_and_back() {
    let _serial = lock();
    let scenario = "pengine_node_evacuate_restore";
    let pengine = pengine_cli();
    let pengine = pengine.to_str().expect("utf-8 path");
    let Some(c) = cluster(scenario, 2) else {
        return;
    };
    let w = c.watch(VM);
    start_vm(scenario, &c, "node1");
    let evacuate = pengine_node_move(scenario, &c, &w, pengine, "evacuate", "node1", "node2");
    // crm_resource prints a value, or says on stderr that there is none.
    let meta = |name: &str| {
        c.cli(&["crm_resource", "-r", VM, "--meta", "-g", name])
            .ok()
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty() && !v.contains("not found"))
    };
    assert_eq!(
        meta("origin-node").as_deref(),
        Some("node1"),
        "{scenario}: no origin record"
    );
    assert_eq!(meta("origin-cause").as_deref(), Some("evacuate"));
    let restore = pengine_node_move(scenario, &c, &w, pengine, "restore", "node2", "node1");
    assert_eq!(
        meta("origin-node"),
        None,
        "{scenario}: the origin record was not cleared"
    );
    let constraints = c
        .cli(&["cibadmin", "-Q", "-o", "constraints"])
        .expect("cibadmin");
    assert!(
        !constraints.contains("hl-lifecycle-") && !constraints.contains("evacuate"),
        "{scenario}: lifecycle constraints left behind: {constraints}"
    );
    c.wait_idle(Duration::from_secs(30)).expect("idle");
    assert_vm_only_on(scenario, &c, "node1");
    let timeline = assert_never_twice(scenario, &c, w);
    println!(
        "[{scenario}] evacuate -> node2 in {}, restore -> node1 in {} (pengine node --wait, both live)",
        secs(evacuate.took),
        secs(restore.took)
    );
    report_moves(
        scenario,
        &timeline,
        &[evacuate.step, restore.step],
        u64::MAX,
    );
}

/// One `pengine node` step that moved the VM: how long the command took, and the move.
struct NodeStep {
    took: Duration,
    step: Move,
}

/// Runs `pengine node VERB NODE --wait 90` (the node is `source` for evacuate, `target` for
/// restore) and checks that it settled with the VM live-migrated from `source` to `target`.
fn pengine_node_move(
    scenario: &str,
    c: &Cluster,
    w: &Watcher,
    pengine: &str,
    verb: &str,
    source: &str,
    target: &str,
) -> NodeStep {
    let node = if verb == "evacuate" { source } else { target };
    let source_pid = c
        .qemu_pid(source, VM)
        .expect("pid")
        .unwrap_or_else(|| panic!("{scenario}: no QEMU on {source} before {verb}"));
    let before = migration_counts(c);
    let mark_ms = w.now_ms();
    let t = Instant::now();
    let out = c
        .cli(&[pengine, "node", verb, node, "--wait", "90"])
        .unwrap_or_else(|e| panic!("{scenario}: {e}"));
    for line in out.lines() {
        println!("[{scenario}] {verb}: {line}");
    }
    let took = t.elapsed();
    assert!(
        out.contains("settled"),
        "{scenario}: {verb} did not settle: {out}"
    );
    assert!(
        c.status().expect("status").started_only_on(VM, target),
        "{scenario}: {VM} not on {target} after {verb}\n{}",
        c.diagnostics()
    );
    assert_migrated(scenario, c, source, target, source_pid, &before);
    NodeStep {
        took,
        step: Move {
            label: format!("{verb} {source} -> {target}"),
            mark_ms,
        },
    }
}
