//! The split-brain watcher: polls every node's libvirtd for one domain throughout a scenario and
//! keeps the timeline, from which a scenario reads the VM's downtime and whether the domain
//! ever ran on two nodes.
//!
//! Polling cannot see two nodes at one instant: at the switch-over of a live migration, one
//! round can read "running" on the source just before and on the target just after. A double
//! run is therefore a violation only when the next round confirms it; two booted copies stay
//! up for many rounds, a switch-over race does not.

use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use super::node::node_command;
use super::procs;

/// How long the watcher sleeps between rounds.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// One node's answer about the domain in one round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DomainSeen {
    Running,
    /// Defined but not running (paused for an incoming migration, shut off...), as virsh said.
    Other(String),
    Absent,
    /// libvirtd did not answer, but a QEMU process for the domain lives in the node: counted
    /// as running, since nobody can say the guest is stopped.
    QemuWithoutLibvirtd,
    /// libvirtd did not answer (stopped, crashed, fenced) and no QEMU for the domain lives there.
    Unreachable,
}

/// One round: when (ms since the watcher started) and what each node said, in node order.
#[derive(Debug, Clone)]
pub struct Sample {
    pub at_ms: u64,
    pub seen: Vec<(String, DomainSeen)>,
}

impl Sample {
    /// The nodes where the domain was running in this round.
    pub fn running_on(&self) -> Vec<&str> {
        self.seen
            .iter()
            .filter(|(_, s)| matches!(s, DomainSeen::Running | DomainSeen::QemuWithoutLibvirtd))
            .map(|(n, _)| n.as_str())
            .collect()
    }
}

/// Everything the watcher saw.
#[derive(Debug, Clone)]
pub struct Timeline {
    pub domain: String,
    pub samples: Vec<Sample>,
}

impl Timeline {
    /// Rounds that saw the domain running on two or more nodes, confirmed by the next round.
    pub fn double_runs(&self) -> Vec<&Sample> {
        self.samples
            .windows(2)
            .filter(|w| w[0].running_on().len() > 1 && w[1].running_on().len() > 1)
            .map(|w| &w[0])
            .collect()
    }

    /// Single rounds that saw two running copies, not confirmed (a switch-over race).
    pub fn unconfirmed_double_reads(&self) -> usize {
        self.samples
            .iter()
            .filter(|s| s.running_on().len() > 1)
            .count()
            .saturating_sub(self.double_runs().len())
    }

    /// The changes only: one line per round whose answers differ from the previous round's.
    pub fn changes(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut last: Option<&Vec<(String, DomainSeen)>> = None;
        for s in &self.samples {
            if last != Some(&s.seen) {
                let parts: Vec<String> = s
                    .seen
                    .iter()
                    .map(|(n, seen)| format!("{n}={}", short(seen)))
                    .collect();
                out.push(format!("{:>7} ms  {}", s.at_ms, parts.join(" ")));
                last = Some(&s.seen);
            }
        }
        out
    }

    /// The longest stretch between `from_ms` and `to_ms` in which no node ran the domain,
    /// from the last round that saw it running to the first that saw it running again (ms).
    /// `None` when no round saw it down: the outage, if any, was shorter than one round.
    pub fn longest_outage_ms(&self, from_ms: u64, to_ms: u64) -> Option<u64> {
        let after_ms = from_ms;
        let mut last_up: Option<u64> = None;
        let mut down = false;
        let mut longest: Option<u64> = None;
        let window = self
            .samples
            .iter()
            .filter(|s| s.at_ms >= from_ms && s.at_ms <= to_ms);
        for s in window {
            if s.running_on().is_empty() {
                down = true;
            } else {
                if down {
                    let from = last_up.unwrap_or(after_ms);
                    let gap = s.at_ms.saturating_sub(from);
                    longest = Some(longest.map_or(gap, |l: u64| l.max(gap)));
                }
                down = false;
                last_up = Some(s.at_ms);
            }
        }
        longest
    }

    /// The first round at or after `after_ms` that saw the domain running on `node` alone.
    pub fn first_running_only_on(&self, node: &str, after_ms: u64) -> Option<u64> {
        self.samples
            .iter()
            .find(|s| s.at_ms >= after_ms && s.running_on() == [node])
            .map(|s| s.at_ms)
    }

    /// The mean time between rounds, for reporting the resolution of the outage figures.
    pub fn mean_round_ms(&self) -> u64 {
        match (self.samples.first(), self.samples.last()) {
            (Some(a), Some(b)) if self.samples.len() > 1 => {
                (b.at_ms - a.at_ms) / (self.samples.len() as u64 - 1)
            }
            _ => 0,
        }
    }
}

fn short(seen: &DomainSeen) -> String {
    match seen {
        DomainSeen::Running => "RUNNING".into(),
        DomainSeen::Other(s) => s.clone(),
        DomainSeen::Absent => "-".into(),
        DomainSeen::QemuWithoutLibvirtd => "QEMU-ALIVE(libvirtd down)".into(),
        DomainSeen::Unreachable => "(libvirtd down)".into(),
    }
}

/// A running watcher; `finish` stops it and hands back the timeline.
#[derive(Debug)]
pub struct Watcher {
    started: Instant,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Timeline>>,
}

impl Watcher {
    /// Starts polling `domain` on the nodes given as (name, holder PID).
    pub fn start(domain: &str, nodes: Vec<(String, u32)>) -> Watcher {
        let started = Instant::now();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let domain = domain.to_owned();
        let handle = thread::spawn(move || {
            let mut samples = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                samples.push(poll_round(&domain, &nodes, started));
                thread::sleep(POLL_INTERVAL);
            }
            samples.push(poll_round(&domain, &nodes, started));
            Timeline { domain, samples }
        });
        Watcher {
            started,
            stop,
            handle: Some(handle),
        }
    }

    /// Milliseconds since the watcher started: the timeline's clock, for marking events.
    pub fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// Stops polling and returns the timeline.
    pub fn finish(mut self) -> Timeline {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or(Timeline {
                domain: String::new(),
                samples: Vec::new(),
            })
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Asks every node at once (one virsh each, started together) and records the answers.
fn poll_round(domain: &str, nodes: &[(String, u32)], started: Instant) -> Sample {
    let at_ms = started.elapsed().as_millis() as u64;
    let children: Vec<_> = nodes
        .iter()
        .map(|(_, holder)| {
            node_command(
                *holder,
                &[
                    "timeout",
                    "5",
                    "virsh",
                    "-c",
                    "qemu:///system",
                    "domstate",
                    domain,
                ],
            )
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
        })
        .collect();
    let seen = nodes
        .iter()
        .zip(children)
        .map(|((name, holder), child)| {
            let seen = match child.and_then(|c| c.wait_with_output()) {
                Ok(out) if out.status.success() => {
                    let state = String::from_utf8_lossy(&out.stdout).trim().to_owned();
                    if state == "running" {
                        DomainSeen::Running
                    } else {
                        DomainSeen::Other(state)
                    }
                }
                Ok(out) => {
                    let err = String::from_utf8_lossy(&out.stderr);
                    if err.contains("failed to get domain") || err.contains("Domain not found") {
                        DomainSeen::Absent
                    } else {
                        unreachable(domain, *holder)
                    }
                }
                Err(_) => unreachable(domain, *holder),
            };
            (name.clone(), seen)
        })
        .collect();
    Sample { at_ms, seen }
}

/// libvirtd does not answer: is a QEMU process for `domain` alive in the node all the same?
fn unreachable(domain: &str, holder: u32) -> DomainSeen {
    let Some(netns) = procs::netns_of_pid(holder) else {
        return DomainSeen::Unreachable;
    };
    let needle = format!("guest={domain},");
    let qemu_alive = procs::pids_in_netns(&netns, &[holder])
        .into_iter()
        .any(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(&needle))
                .unwrap_or(false)
                && !procs::zombie(pid)
        });
    if qemu_alive {
        DomainSeen::QemuWithoutLibvirtd
    } else {
        DomainSeen::Unreachable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(at_ms: u64, running: &[&str]) -> Sample {
        Sample {
            at_ms,
            seen: ["node1", "node2"]
                .iter()
                .map(|n| {
                    let s = if running.contains(n) {
                        DomainSeen::Running
                    } else {
                        DomainSeen::Absent
                    };
                    (n.to_string(), s)
                })
                .collect(),
        }
    }

    #[test]
    fn a_confirmed_double_run_is_caught_and_a_single_race_is_not() {
        let race = Timeline {
            domain: "vm".into(),
            samples: vec![
                sample(0, &["node1"]),
                sample(100, &["node1", "node2"]),
                sample(200, &["node2"]),
            ],
        };
        assert!(race.double_runs().is_empty());
        assert_eq!(race.unconfirmed_double_reads(), 1);
        let split = Timeline {
            domain: "vm".into(),
            samples: vec![
                sample(0, &["node1"]),
                sample(100, &["node1", "node2"]),
                sample(200, &["node1", "node2"]),
            ],
        };
        assert_eq!(split.double_runs().len(), 1);
        assert_eq!(split.double_runs()[0].at_ms, 100);
    }

    #[test]
    fn outage_runs_from_last_seen_up_to_first_seen_up_again() {
        let t = Timeline {
            domain: "vm".into(),
            samples: vec![
                sample(0, &["node2"]),
                sample(100, &["node2"]),
                sample(200, &[]),
                sample(300, &[]),
                sample(400, &["node1"]),
            ],
        };
        assert_eq!(t.longest_outage_ms(0, u64::MAX), Some(300));
        assert_eq!(t.longest_outage_ms(0, 300), None);
        assert_eq!(t.first_running_only_on("node1", 0), Some(400));
        let live = Timeline {
            domain: "vm".into(),
            samples: vec![sample(0, &["node1"]), sample(100, &["node2"])],
        };
        assert_eq!(live.longest_outage_ms(0, u64::MAX), None);
        assert_eq!(live.changes().len(), 2);
    }
}
