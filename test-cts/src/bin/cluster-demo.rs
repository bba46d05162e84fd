//! `cluster-demo`: a local two-node corosync + Pacemaker cluster with one tiny VM, live-migrated
//! back and forth by Pacemaker while it prints what Pacemaker and the agent do; then torn down.
//!
//! Usage: `cluster-demo [highlander|heartbeat] [moves]` (root; default: highlander, 2 moves).
//! `highlander` installs target/release/VirtualDomain (or `$HIGHLANDER_AGENT_DIR`) as
//! `ocf:highlander:VirtualDomain` in both nodes.
//!
//! `cluster-demo 2013`: the 2013 case (a ban starts a live migration, the ban is cleared while
//! migrate_to runs) twice, under Pacemaker's scheduler and under highlander-schedulerd
//! (target/release/highlander-schedulerd, bound over pacemaker-schedulerd in each node), and
//! the two outcomes side by side: the guest rebooted, or the same guest still running.

use std::collections::BTreeMap;
use std::fs;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use test_cts::cluster::{Cluster, ClusterSpec, Scheduler, VmAgent, unsupported_reason};

const VM: &str = "vm1";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("2013") {
        if let Some(reason) = unsupported_reason() {
            eprintln!("cluster-demo: this machine cannot run the demo cluster: {reason}");
            return ExitCode::from(1);
        }
        return match run_2013(highlander_agent()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("cluster-demo: {e}");
                ExitCode::from(1)
            }
        };
    }
    if let Some(agent) = args.first() {
        if agent != "heartbeat" && agent != "highlander" {
            eprintln!("usage: cluster-demo [highlander|heartbeat] [moves]");
            return ExitCode::from(2);
        }
    }
    let moves: usize = match args.get(1).map(|m| m.parse()) {
        None => 2,
        Some(Ok(m)) => m,
        Some(Err(_)) => {
            eprintln!("usage: cluster-demo [highlander|heartbeat] [moves]");
            return ExitCode::from(2);
        }
    };
    if let Some(reason) = unsupported_reason() {
        eprintln!("cluster-demo: this machine cannot run the demo cluster: {reason}");
        return ExitCode::from(1);
    }
    let agent = match args.first().map(String::as_str) {
        Some("heartbeat") => VmAgent::Heartbeat,
        _ => highlander_agent(),
    };
    match run(agent, moves) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cluster-demo: {e}");
            ExitCode::from(1)
        }
    }
}

/// Our agent, from `$HIGHLANDER_AGENT_DIR` or target/release.
fn highlander_agent() -> VmAgent {
    let dir = std::env::var_os("HIGHLANDER_AGENT_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release")
        });
    VmAgent::Highlander(dir)
}

/// How one run of the 2013 case ended.
struct Ending {
    scheduler: &'static str,
    node: String,
    original: u32,
    pid: u32,
    how: &'static str,
}

/// The 2013 case under both schedulers, then the outcomes side by side.
fn run_2013(agent: VmAgent) -> Result<(), Box<dyn std::error::Error>> {
    let bin = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/release/highlander-schedulerd");
    if !bin.is_file() {
        return Err(format!(
            "{} is missing: cargo build --release -p highlander-schedulerd",
            bin.display()
        )
        .into());
    }
    let mut endings = Vec::new();
    for scheduler in [Scheduler::Pacemaker, Scheduler::Highlander(bin)] {
        endings.push(case_2013(agent.clone(), scheduler)?);
    }
    println!("== the 2013 case, side by side");
    for e in &endings {
        println!(
            "   {:<10} scheduler: {VM} started as QEMU {}, ends on {} as QEMU {}: {}",
            e.scheduler, e.original, e.node, e.pid, e.how
        );
    }
    Ok(())
}

/// One run of the 2013 case: a ban moves the VM, the ban is cleared mid-migrate_to.
fn case_2013(agent: VmAgent, scheduler: Scheduler) -> Result<Ending, Box<dyn std::error::Error>> {
    let label = scheduler.label();
    println!("== the 2013 case under {label}'s scheduler: bringing up node1 and node2");
    let c = Cluster::start(ClusterSpec::new(2, agent).with_scheduler(scheduler))?;
    let mut seen = BTreeMap::new();
    skip_logs(&c, &mut seen);
    c.add_vm(VM, "node1")?;
    c.wait_started_on(VM, "node1", Duration::from_secs(60))?;
    let original = c.qemu_pid("node1", VM)?.ok_or("no QEMU on node1")?;
    println!(
        "   {VM} running on node1 as QEMU {original}; migrations from node1 throttled to 1 Mbit/s"
    );
    c.throttle_migrations_from("node1", 1000)?;
    println!("== crm_resource --ban {VM} node1 (Pacemaker live-migrates it to node2)");
    c.ban_resource(VM, "node1")?;
    c.wait_for("the incoming QEMU on node2", Duration::from_secs(30), |c| {
        Ok(c.virsh_state("node2", VM)?.as_deref() == Some("paused"))
    })?;
    println!("== crm_resource --clear {VM} while migrate_to runs (node1 is preferred again)");
    c.clear_resource(VM)?;
    c.wait_idle(Duration::from_secs(90))?;
    c.wait_for("vm1 started somewhere", Duration::from_secs(60), |c| {
        let s = c.status()?;
        Ok(["node1", "node2"].iter().any(|n| s.started_only_on(VM, n)))
    })?;
    print_logs(&c, &mut seen);
    let node = c
        .status()?
        .locations(VM)
        .first()
        .cloned()
        .ok_or("vm1 runs nowhere")?;
    let pid = c.qemu_pid(&node, VM)?.ok_or("no QEMU")?;
    let how = if pid == original {
        "the same QEMU process, still running"
    } else if Cluster::process_cmdline(pid).contains("-incoming") {
        "the QEMU that received the live migration: the guest kept running"
    } else {
        "a new QEMU, BOOTED: the guest was rebooted"
    };
    println!("   {VM} on {node} as QEMU {pid}: {how}");
    Ok(Ending {
        scheduler: label,
        node,
        original,
        pid,
        how,
    })
}

fn run(agent: VmAgent, moves: usize) -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "== bringing up node1 and node2 (each a network + mount namespace with corosync, \
         Pacemaker and libvirtd); VM agent ocf:{}:VirtualDomain",
        agent.provider()
    );
    let c = Cluster::start(ClusterSpec::new(2, agent))?;
    for (step, d) in &c.timings {
        println!("   {step}: {:.2}s", d.as_secs_f64());
    }
    let mut seen = BTreeMap::new();
    skip_logs(&c, &mut seen);
    println!("== adding {VM} (a diskless 32 MiB QEMU guest), preferring node1");
    let t = Instant::now();
    c.add_vm(VM, "node1")?;
    c.wait_started_on(VM, "node1", Duration::from_secs(60))?;
    println!(
        "   {VM} running on node1 after {:.2}s",
        t.elapsed().as_secs_f64()
    );
    print_logs(&c, &mut seen);
    let mut here = "node1".to_owned();
    for _ in 0..moves {
        let there = if here == "node1" { "node2" } else { "node1" };
        println!("== crm_resource --move {VM} to {there}");
        let t = Instant::now();
        c.move_resource(VM, there)?;
        c.wait_started_on(VM, there, Duration::from_secs(60))?;
        let took = t.elapsed();
        c.clear_resource(VM)?;
        print_logs(&c, &mut seen);
        let pid = c.qemu_pid(there, VM)?.unwrap_or(0);
        let migrated = Cluster::process_cmdline(pid).contains("-incoming");
        let downtime = c
            .completed_job_field(there, VM, "Total downtime")
            .unwrap_or_else(|| "not reported".into());
        println!(
            "   {VM} on {there} after {:.2}s: QEMU {pid} {}; guest downtime {downtime}",
            took.as_secs_f64(),
            if migrated {
                "received a live migration"
            } else {
                "was BOOTED (no live migration)"
            }
        );
        here = there.to_owned();
    }
    println!("== tearing down (every process of both nodes, by PID)");
    drop(c);
    println!("   done");
    Ok(())
}

/// The pacemaker.log lines a person wants to see: what the controller initiates, each result,
/// and what the VirtualDomain agent itself logs.
fn interesting(line: &str) -> bool {
    !line.contains("(cib_perform_op)")
        && (line.contains("Initiating")
            || line.contains("Result of")
            || (line.contains("VirtualDomain") && line.contains("notice"))
            || line.contains("INFO:")
            || line.contains("ERROR:"))
        && line.contains(VM)
}

fn node_log(c: &Cluster, node: &str) -> Vec<String> {
    c.node(node)
        .ok()
        .and_then(|n| fs::read_to_string(n.dir.join("log-pacemaker/pacemaker.log")).ok())
        .map(|s| s.lines().map(str::to_owned).collect())
        .unwrap_or_default()
}

fn skip_logs(c: &Cluster, seen: &mut BTreeMap<String, usize>) {
    for node in c.node_names() {
        let n = node_log(c, &node).len();
        seen.insert(node, n);
    }
}

/// Prints the new interesting lines of both nodes' logs, merged in time order.
fn print_logs(c: &Cluster, seen: &mut BTreeMap<String, usize>) {
    let mut merged: Vec<(String, String, String)> = Vec::new();
    for node in c.node_names() {
        let lines = node_log(c, &node);
        let from = seen.get(&node).copied().unwrap_or(0).min(lines.len());
        for line in lines[from..].iter().filter(|l| interesting(l)) {
            // "Nov 30 09:46:39.123 host daemon [pid] (function) \tnotice: message | details"
            let stamp: String = line.chars().take(15).collect();
            let text = line.split_once(") \t").map_or(line.as_str(), |(_, m)| m);
            let text = text.split(" | ").next().unwrap_or(text);
            let text = text
                .split_once("  VirtualDomain")
                .map_or(text.to_owned(), |(_, m)| {
                    format!(
                        "VirtualDomain{}",
                        m.split_whitespace()
                            .collect::<Vec<_>>()
                            .join(" ")
                            .trim_start_matches("VirtualDomain")
                    )
                });
            merged.push((stamp, node.clone(), text.trim().to_owned()));
        }
        seen.insert(node, lines.len());
    }
    merged.sort_by(|a, b| a.0.cmp(&b.0));
    for (stamp, node, text) in merged {
        println!("   {stamp} [{node}] {text}");
    }
}
