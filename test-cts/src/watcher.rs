//! The "never on two nodes" checker for real daemons: a background thread polls every daemon for
//! one domain and records each instant at which it executes on two or more of them.
//!
//! Each daemon gets one long-lived interactive `virsh` (a query costs well under a millisecond,
//! against ~30 ms for a fresh `virsh` process). Queries are sequential, so one sample reads the
//! daemons in order twice: d0, d1, ..., d0, d1, .... A daemon whose two reads both say "executes"
//! ran through the whole interval between them (a guest does not stop and restart within a few
//! milliseconds unobserved), and all these intervals share the instant between the first pass and
//! the second; two such daemons in one sample are two copies running at that instant. A normal
//! migration never trips it: the source is paused before the target resumes, and a paused
//! (incoming or switched-over) domain does not execute. libvirt shows every QEMU it kills as "in
//! shutdown" for a moment, also an incoming copy that never ran: "in shutdown" counts as executing
//! only when the daemon's previous other state was running or blocked (a guest shutting down).

use std::io::{Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::libvirt::{DomState, LibvirtDaemon, LibvirtError};
use crate::process::ProcessError;

/// The default pause between two samples.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(5);
/// Violations and state changes kept in a report (all are counted).
const KEPT: usize = 200;

/// An interactive `virsh -c <uri>`: commands on stdin, a unique marker echoed after each.
struct VirshSession {
    stdin: ChildStdin,
    stdout: ChildStdout,
    buffer: Vec<u8>,
    next_marker: u64,
}

impl VirshSession {
    fn spawn(uri: &str) -> Result<(Child, Self), LibvirtError> {
        let mut cmd = Command::new("virsh");
        cmd.arg("-q")
            .arg("-c")
            .arg(uri)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().map_err(|source| ProcessError::Spawn {
            command: crate::process::describe(&cmd),
            source,
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(LibvirtError::NotReady {
                label: uri.to_string(),
                waited_ms: 0,
                detail: "virsh session without pipes".into(),
            });
        };
        Ok((
            child,
            Self {
                stdin,
                stdout,
                buffer: Vec::new(),
                next_marker: 0,
            },
        ))
    }

    /// The domain's state, `None` when the daemon does not know it.
    fn domstate(&mut self, domain: &str) -> Result<Option<DomState>, String> {
        self.next_marker += 1;
        let marker = format!("@@hl{}@@", self.next_marker);
        self.stdin
            .write_all(format!("domstate {domain}\necho {marker}\n").as_bytes())
            .and_then(|()| self.stdin.flush())
            .map_err(|e| format!("writing to virsh: {e}"))?;
        // The echo's output starts a line; virsh's own copy of the command (when it echoes
        // input) has "echo " before it, so "\n<marker>" only matches the answer.
        let needle = format!("\n{marker}");
        let mut chunk = [0u8; 4096];
        let end = loop {
            if let Some(at) = find(&self.buffer, needle.as_bytes()) {
                break at;
            }
            let n = self
                .stdout
                .read(&mut chunk)
                .map_err(|e| format!("reading from virsh: {e}"))?;
            if n == 0 {
                return Err("virsh session ended".into());
            }
            self.buffer.extend_from_slice(&chunk[..n]);
        };
        let answer = String::from_utf8_lossy(&self.buffer[..end]).into_owned();
        self.buffer.drain(..end + needle.len());
        Ok(parse_state(&answer))
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The one state line in virsh's answer; prompts and echoed commands are not states.
fn parse_state(answer: &str) -> Option<DomState> {
    answer.lines().find_map(DomState::from_virsh)
}

/// One sample in which the domain executed on two or more daemons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Since the watcher started.
    pub at: Duration,
    /// Per daemon (label, first read, second read).
    pub states: Vec<(String, Option<DomState>, Option<DomState>)>,
}

/// What a watcher saw.
#[derive(Debug, Clone, Default)]
pub struct WatchReport {
    pub domain: String,
    pub labels: Vec<String>,
    pub samples: u64,
    /// Samples with the domain executing on two or more daemons (all counted).
    pub violation_count: u64,
    /// The first violations, with the states read.
    pub violations: Vec<Violation>,
    /// Per daemon, the samples in which the domain executed there (both reads).
    pub executing_samples: Vec<u64>,
    /// Every change of the first-pass states, with its time (the first ones).
    pub timeline: Vec<(Duration, Vec<Option<DomState>>)>,
    /// Session failures: the watch was interrupted, so "never both" is unproven.
    pub errors: Vec<String>,
    pub watched_for: Duration,
}

impl WatchReport {
    /// True when the domain was seen executing on each daemon at some point.
    pub fn saw_executing_on(&self, index: usize) -> bool {
        self.executing_samples.get(index).is_some_and(|&n| n > 0)
    }

    /// `Err` with the evidence unless every sample saw the domain executing on at most one
    /// daemon and the watch ran without interruption.
    pub fn check_never_both(&self) -> Result<(), String> {
        if !self.errors.is_empty() {
            return Err(format!(
                "the watch of {} was interrupted, so 'never on two' is unproven: {:?}",
                self.domain, self.errors
            ));
        }
        if self.samples == 0 {
            return Err(format!("the watcher of {} took no sample", self.domain));
        }
        if self.violation_count > 0 {
            return Err(format!(
                "{} executed on two daemons in {} of {} samples; first: {:?}\ntimeline: {}",
                self.domain,
                self.violation_count,
                self.samples,
                self.violations.first(),
                self.render_timeline()
            ));
        }
        Ok(())
    }

    /// Panics with [`WatchReport::check_never_both`]'s evidence.
    pub fn assert_never_both(&self) {
        if let Err(evidence) = self.check_never_both() {
            panic!("{evidence}");
        }
    }

    /// The state changes, one line each, for messages.
    pub fn render_timeline(&self) -> String {
        let mut text = String::new();
        for (at, states) in &self.timeline {
            text.push_str(&format!("\n  {:>8.3} s", at.as_secs_f64()));
            for (label, state) in self.labels.iter().zip(states) {
                text.push_str(&format!("  {label}: {state:?}"));
            }
        }
        text
    }
}

/// A background poller of one domain on several daemons; [`Watcher::finish`] returns its report.
pub struct Watcher {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<WatchReport>>,
    children: Arc<Mutex<Vec<Child>>>,
}

impl Watcher {
    /// Starts watching `domain` on `daemons`, sampling every [`DEFAULT_INTERVAL`]. Returns once
    /// the first sample is taken, so everything the test does afterwards is watched.
    pub fn start(domain: &str, daemons: &[&LibvirtDaemon]) -> Result<Self, LibvirtError> {
        Self::start_with_interval(domain, daemons, DEFAULT_INTERVAL)
    }

    /// As [`Watcher::start`], with a given pause between samples.
    pub fn start_with_interval(
        domain: &str,
        daemons: &[&LibvirtDaemon],
        interval: Duration,
    ) -> Result<Self, LibvirtError> {
        let mut children = Vec::new();
        let mut sessions = Vec::new();
        for daemon in daemons {
            match VirshSession::spawn(daemon.uri()) {
                Ok((child, session)) => {
                    children.push(child);
                    sessions.push(session);
                }
                Err(e) => {
                    for mut child in children {
                        let _ = child.kill();
                        let _ = child.wait();
                    }
                    return Err(e);
                }
            }
        }
        let children = Arc::new(Mutex::new(children));
        let stop = Arc::new(AtomicBool::new(false));
        let mut report = WatchReport {
            domain: domain.to_string(),
            labels: daemons.iter().map(|d| d.label().to_string()).collect(),
            executing_samples: vec![0; daemons.len()],
            ..WatchReport::default()
        };
        let started = Instant::now();
        let mut last = None;
        let mut ran = vec![false; sessions.len()];
        // The first sample before returning: the watch demonstrably covers what follows.
        sample(&mut sessions, &mut report, started, &mut last, &mut ran);
        let (first_sample_failed, first_error) = (
            !report.errors.is_empty(),
            report.errors.first().cloned().unwrap_or_default(),
        );
        let domain = domain.to_string();
        let stop_flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            // One sample always starts after `finish` is called: the end state is observed.
            while report.errors.is_empty() {
                std::thread::sleep(interval);
                let stopping = stop_flag.load(Ordering::Relaxed);
                sample(&mut sessions, &mut report, started, &mut last, &mut ran);
                if stopping {
                    break;
                }
            }
            report.watched_for = started.elapsed();
            report
        });
        let watcher = Self {
            stop,
            thread: Some(thread),
            children,
        };
        if first_sample_failed {
            drop(watcher);
            return Err(LibvirtError::NotReady {
                label: domain,
                waited_ms: 0,
                detail: format!("the watcher's first sample failed: {first_error}"),
            });
        }
        Ok(watcher)
    }

    /// Stops the thread and returns what it saw.
    pub fn finish(mut self) -> WatchReport {
        self.stop_thread().unwrap_or_default()
    }

    fn stop_thread(&mut self) -> Option<WatchReport> {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take()?;
        // A sample blocked on a hung daemon ends when its virsh is killed.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !thread.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        let killed = !thread.is_finished();
        let mut children = self
            .children
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for child in children.iter_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
        drop(children);
        let mut report = thread.join().ok()?;
        if killed {
            report
                .errors
                .push("a sample hung for 10 s; its virsh sessions were killed".into());
        }
        Some(report)
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.stop_thread();
    }
}

/// Reads every daemon twice in order and records the outcome in `report`.
fn sample(
    sessions: &mut [VirshSession],
    report: &mut WatchReport,
    started: Instant,
    last: &mut Option<Vec<Option<DomState>>>,
    ran: &mut [bool],
) {
    let mut reads = Vec::with_capacity(sessions.len() * 2);
    for _pass in 0..2 {
        for session in sessions.iter_mut() {
            match session.domstate(&report.domain) {
                Ok(state) => reads.push(state),
                Err(e) => {
                    report.errors.push(e);
                    return;
                }
            }
        }
    }
    let at = started.elapsed();
    let n = sessions.len();
    let (first, second) = reads.split_at(n);
    report.samples += 1;
    let mut executing = 0;
    for (i, (a, b)) in first.iter().zip(second).enumerate() {
        // `&`, not `&&`: both reads update `ran`.
        if executes(*a, &mut ran[i]) & executes(*b, &mut ran[i]) {
            executing += 1;
            report.executing_samples[i] += 1;
        }
    }
    if executing >= 2 {
        report.violation_count += 1;
        if report.violations.len() < KEPT {
            report.violations.push(Violation {
                at,
                states: report
                    .labels
                    .iter()
                    .cloned()
                    .zip(first.iter().zip(second))
                    .map(|(l, (a, b))| (l, *a, *b))
                    .collect(),
            });
        }
    }
    if last.as_deref() != Some(first) && report.timeline.len() < KEPT {
        report.timeline.push((at, first.to_vec()));
        *last = Some(first.to_vec());
    }
}

/// Whether a read shows the guest executing, given `ran`: whether the daemon's last state other
/// than "in shutdown" was running or blocked (updated here). A QEMU that never ran guest code (an
/// incoming copy) or was paused passes through "in shutdown" when it is killed; that is not the
/// guest executing.
fn executes(state: Option<DomState>, ran: &mut bool) -> bool {
    match state {
        Some(DomState::InShutdown) => *ran,
        other => {
            *ran = other.is_some_and(DomState::executes);
            *ran
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_shutdown_executes_only_after_running() {
        let mut ran = false;
        // An incoming copy torn down: paused, then in shutdown, then gone.
        assert!(!executes(Some(DomState::Paused), &mut ran));
        assert!(!executes(Some(DomState::InShutdown), &mut ran));
        assert!(!executes(None, &mut ran));
        // A running guest shutting down executes until it is off.
        assert!(executes(Some(DomState::Running), &mut ran));
        assert!(executes(Some(DomState::InShutdown), &mut ran));
        assert!(executes(Some(DomState::InShutdown), &mut ran));
        assert!(!executes(Some(DomState::ShutOff), &mut ran));
        assert!(!executes(Some(DomState::InShutdown), &mut ran));
    }

    #[test]
    fn state_found_among_prompts_and_echoes() {
        let answer = "virsh # domstate vm1\nrunning\n\nvirsh # echo @@hl3@@";
        assert_eq!(parse_state(answer), Some(DomState::Running));
        assert_eq!(parse_state("shut off\n\n"), Some(DomState::ShutOff));
        assert_eq!(parse_state("virsh # domstate gone\n"), None);
    }

    #[test]
    fn marker_is_found_only_at_a_line_start() {
        let out = b"virsh # echo @@hl1@@\n@@hl1@@virsh # ";
        assert_eq!(find(out, b"\n@@hl1@@"), Some(20));
        assert_eq!(find(b"virsh # echo @@hl1@@", b"\n@@hl1@@"), None);
    }
}
