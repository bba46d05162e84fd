//! Many agent invocations for many resources at once on one real private libvirtd (issues 3 and
//! 10, "under load"): 50 tiny diskless TCG guests running as 50 resources, plus 10 resources whose
//! guests do not run, then every resource's recurring monitor and a probe for every other one (90
//! invocations) fired at the same instant, in several rounds, then all 60 stops at once. Every answer must be the truth for its guest (0 running, 7 stopped) and come
//! before the executor's timeout (`CRM_meta_timeout`; the harness kills the agent there as the
//! executor would, and a killed run fails the test). Latencies are printed (max, median, p90 per
//! kind of call), never asserted against a time: speed is a benchmark's business.
//!
//! How many of the 50 run is `HIGHLANDER_LOAD_RUNNING` (default 50, which two cores carry: about
//! 4 GiB of RAM); the resources that do not run are defined in the daemon but shut off (half) or
//! not defined at all, so monitors see all three states.
//! Needs what `agent_real_libvirt.rs` needs (tools/deps.sh).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use test_cts::libvirt::{
    DomState, LibvirtDaemon, real_infra_or_skip, unique_name, write_tiny_guest,
};
use test_cts::ocf::{AgentRun, OcfResource, highlander_agent};

/// Guests that run (at most) on the one daemon.
const GUESTS: usize = 50;
/// Resources whose guest never runs, beside them.
const STOPPED: usize = 10;
/// Every resource.
const RESOURCES: usize = GUESTS + STOPPED;
/// Guest memory: SeaBIOS with no disk idles in a few MiB.
const GUEST_MIB: u32 = 32;
/// Probes fired with each round of monitors: every other resource.
const PROBES: usize = RESOURCES / 2;
/// Rounds of (60 monitors + 30 probes) at once.
const ROUNDS: usize = 3;
/// `CRM_meta_timeout` of each monitor and probe: heartbeat's advertised monitor timeout.
const MONITOR_TIMEOUT_MS: u64 = 30_000;
/// Starts run in batches of this many at once, each with heartbeat's 90 s start timeout.
const START_BATCH: usize = 10;
const START_TIMEOUT_MS: u64 = 90_000;
const STOP_TIMEOUT_MS: u64 = 90_000;

/// What a guest is before the monitors run, and so what they must answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Truth {
    Running,
    /// Defined in the daemon, shut off.
    Defined,
    /// Unknown to the daemon.
    Undefined,
}

impl Truth {
    fn monitor_code(self) -> i32 {
        match self {
            Truth::Running => 0,
            Truth::Defined | Truth::Undefined => 7,
        }
    }
}

struct Guest {
    domain: String,
    xml: PathBuf,
    truth: Truth,
}

fn running_count() -> usize {
    match std::env::var("HIGHLANDER_LOAD_RUNNING") {
        Ok(v) => v
            .parse::<usize>()
            .unwrap_or_else(|_| panic!("HIGHLANDER_LOAD_RUNNING={v:?} is not a number"))
            .min(GUESTS),
        Err(_) => GUESTS,
    }
}

fn resource(agent: &Path, daemon: &LibvirtDaemon, dir: &std::path::Path, g: &Guest) -> OcfResource {
    OcfResource::new(agent, &g.domain, &dir.join("rsctmp"))
        .param("config", g.xml.to_str().expect("utf-8 path"))
        .param("hypervisor", daemon.uri())
        .param("force_stop", "true")
}

/// Runs `action` for every resource in `runs` at the same instant (one thread each, released by
/// one barrier); returns each run in input order. `timeout_ms` is both `CRM_meta_timeout` and the
/// point where the harness kills the agent, as the executor would.
fn fire(runs: Vec<(OcfResource, &'static str)>, timeout_ms: u64) -> Vec<Result<AgentRun, String>> {
    let barrier = Arc::new(Barrier::new(runs.len()));
    let handles: Vec<_> = runs
        .into_iter()
        .map(|(mut r, action)| {
            r = r.env("OCF_RESKEY_CRM_meta_timeout", &timeout_ms.to_string());
            r.timeout = Duration::from_millis(timeout_ms);
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                r.run(action).map_err(|e| e.to_string())
            })
        })
        .collect();
    handles
        .into_iter()
        .map(|h| {
            h.join()
                .unwrap_or_else(|_| Err("runner thread panicked".into()))
        })
        .collect()
}

/// max, median and p90 of `samples`, in ms.
fn figures(label: &str, samples: &mut [Duration]) -> String {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    format!(
        "{label}: n={} median {:.0} ms, p90 {:.0} ms, max {:.0} ms, min {:.0} ms",
        samples.len(),
        ms(at(0.5)),
        ms(at(0.9)),
        ms(samples[samples.len() - 1]),
        ms(samples[0])
    )
}

/// Checks one run: finished (not killed at the timeout), the expected code, and a reason for any
/// failure. Returns its latency.
fn check(run: &Result<AgentRun, String>, what: &str, expected: i32) -> Duration {
    let run = run
        .as_ref()
        .unwrap_or_else(|e| panic!("{what}: no answer within its timeout: {e}"));
    assert_eq!(
        run.code(),
        Some(expected),
        "{what}: wrong answer: {}",
        run.describe()
    );
    run.finished.elapsed
}

#[test]
fn fifty_guests_monitored_at_once_all_answer_the_truth_in_time() {
    if !real_infra_or_skip(
        "fifty_guests_monitored_at_once_all_answer_the_truth_in_time",
        &[],
    ) {
        return;
    }
    let agent = highlander_agent().unwrap_or_else(|e| panic!("the VirtualDomain binary: {e}"));
    let daemon = LibvirtDaemon::start("load").expect("a private libvirtd");
    let dir = std::env::temp_dir().join(unique_name("hl-load"));
    std::fs::create_dir_all(dir.join("rsctmp")).expect("scratch dir");
    let running = running_count();
    let guests: Vec<Guest> = (0..RESOURCES)
        .map(|i| {
            let domain = unique_name(&format!("load{i:02}"));
            let xml = write_tiny_guest(&dir, &domain, GUEST_MIB).expect("guest xml");
            let truth = if i < running {
                Truth::Running
            } else if (i - running) % 2 == 0 {
                Truth::Defined
            } else {
                Truth::Undefined
            };
            Guest { domain, xml, truth }
        })
        .collect();
    eprintln!(
        "load: {RESOURCES} resources on one libvirtd: {running} running, {} defined and shut off, {} undefined",
        guests.iter().filter(|g| g.truth == Truth::Defined).count(),
        guests
            .iter()
            .filter(|g| g.truth == Truth::Undefined)
            .count()
    );

    // Start the running ones with the agent itself, a batch at a time.
    let started = Instant::now();
    let mut start_latencies = Vec::new();
    let to_start: Vec<&Guest> = guests
        .iter()
        .filter(|g| g.truth == Truth::Running)
        .collect();
    for batch in to_start.chunks(START_BATCH) {
        let runs = batch
            .iter()
            .map(|g| (resource(&agent, &daemon, &dir, g), "start"))
            .collect();
        for (g, r) in batch.iter().zip(fire(runs, START_TIMEOUT_MS)) {
            start_latencies.push(check(&r, &format!("start {}", g.domain), 0));
        }
    }
    eprintln!(
        "load: {} guests started in {:.1} s",
        to_start.len(),
        started.elapsed().as_secs_f64()
    );
    for g in guests.iter().filter(|g| g.truth == Truth::Defined) {
        daemon
            .virsh_ok(&["define", g.xml.to_str().expect("utf-8 path")])
            .expect("virsh define");
    }
    for g in &guests {
        let state = daemon.domstate(&g.domain).expect("virsh domstate");
        let as_expected = match g.truth {
            Truth::Running => state.is_some_and(DomState::executes),
            Truth::Defined => state == Some(DomState::ShutOff),
            Truth::Undefined => state.is_none(),
        };
        assert!(
            as_expected,
            "{} ({:?}) before the monitors: {state:?}",
            g.domain, g.truth
        );
    }

    // Rounds of every monitor plus some probes, all at once.
    let mut monitor_latencies = Vec::new();
    let mut probe_latencies = Vec::new();
    for round in 0..ROUNDS {
        let mut runs: Vec<(OcfResource, &'static str)> = guests
            .iter()
            .map(|g| {
                (
                    resource(&agent, &daemon, &dir, g).env("OCF_RESKEY_CRM_meta_interval", "10000"),
                    "monitor",
                )
            })
            .collect();
        runs.extend(guests.iter().step_by(RESOURCES / PROBES).map(|g| {
            (
                resource(&agent, &daemon, &dir, g).env("OCF_RESKEY_CRM_meta_interval", "0"),
                "monitor",
            )
        }));
        let t0 = Instant::now();
        let results = fire(runs, MONITOR_TIMEOUT_MS);
        let wall = t0.elapsed();
        let kinds = guests.iter().map(|g| (g, "monitor")).chain(
            guests
                .iter()
                .step_by(RESOURCES / PROBES)
                .map(|g| (g, "probe")),
        );
        let mut n = 0;
        for ((g, kind), r) in kinds.zip(&results) {
            let latency = check(
                r,
                &format!("round {round}: {kind} of {} ({:?})", g.domain, g.truth),
                g.truth.monitor_code(),
            );
            if kind == "monitor" {
                monitor_latencies.push(latency);
            } else {
                probe_latencies.push(latency);
            }
            n += 1;
        }
        assert_eq!(n, results.len(), "every run checked");
        eprintln!(
            "load: round {round}: {} invocations at once, all answered in {:.0} ms (wall)",
            results.len(),
            wall.as_secs_f64() * 1e3
        );
    }
    // The truth did not move under the monitors.
    for g in &guests {
        let running = daemon
            .domstate(&g.domain)
            .expect("virsh domstate")
            .is_some_and(DomState::executes);
        assert_eq!(
            running,
            g.truth == Truth::Running,
            "{} after the monitors",
            g.domain
        );
    }

    // Every stop at once, running or not.
    let runs = guests
        .iter()
        .map(|g| (resource(&agent, &daemon, &dir, g), "stop"))
        .collect();
    let t0 = Instant::now();
    let mut stop_latencies: Vec<Duration> = guests
        .iter()
        .zip(fire(runs, STOP_TIMEOUT_MS))
        .map(|(g, r)| check(&r, &format!("stop {}", g.domain), 0))
        .collect();
    let stop_wall = t0.elapsed();
    for g in &guests {
        let state = daemon.domstate(&g.domain).expect("virsh domstate");
        assert!(
            !state.is_some_and(|s| s.executes()),
            "{} still executes after its stop: {state:?}",
            g.domain
        );
        assert_eq!(
            daemon.qemu_pid(&g.domain),
            None,
            "{}: a QEMU process is left",
            g.domain
        );
    }

    eprintln!("load figures (harness resolution about 10 ms; machine shared, see `uptime`):");
    if !start_latencies.is_empty() {
        eprintln!(
            "  {}",
            figures(
                &format!("start, {START_BATCH} at once"),
                &mut start_latencies
            )
        );
    }
    eprintln!(
        "  {}",
        figures(
            &format!("recurring monitor, {RESOURCES}+{PROBES} at once x{ROUNDS}"),
            &mut monitor_latencies
        )
    );
    eprintln!(
        "  {}",
        figures(
            &format!("probe, with the monitors x{ROUNDS}"),
            &mut probe_latencies
        )
    );
    eprintln!(
        "  {} (wall {:.1} s)",
        figures(&format!("stop, {RESOURCES} at once"), &mut stop_latencies),
        stop_wall.as_secs_f64()
    );
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        eprintln!("  load average: {}", load.trim());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
