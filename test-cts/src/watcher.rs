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
//!
//! A daemon that restarts (a test may restart one on purpose) ends its `virsh` session: the
//! watcher opens a new one, at most every [`RESPAWN_INTERVAL`]. Until it answers, the daemon's
//! reads are unknown and count as "may execute": a sample in which the domain executes elsewhere
//! (or a second daemon is unknown too) is unproven, and fails the check like a violation. Each
//! gap is kept in the report.

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
/// The least time between two attempts to open a new session to a daemon that stopped answering.
pub const RESPAWN_INTERVAL: Duration = Duration::from_millis(100);

/// An interactive `virsh -c <uri>`: commands on stdin, a unique marker echoed after each.
struct VirshSession {
    stdin: ChildStdin,
    /// virsh's stdout and stderr.
    stdout: ChildStdout,
    buffer: Vec<u8>,
    next_marker: u64,
}

impl VirshSession {
    fn spawn(uri: &str) -> Result<(Child, Self), LibvirtError> {
        // stdout and stderr in one pipe (through `sh`): an error ("failed to get domain", or a
        // lost connection) arrives in order with the answers, so a failed reading is never taken
        // for "unknown here".
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg("exec virsh -q -c \"$0\" 2>&1")
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
        parse_answer(&answer)
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The one state line in virsh's answer (prompts and echoed commands are not states); `None` when
/// virsh says the daemon does not know the domain; an error for any other answer (a lost
/// connection, a daemon restarting), which is never read as "not here".
fn parse_answer(answer: &str) -> Result<Option<DomState>, String> {
    if let Some(state) = answer.lines().find_map(DomState::from_virsh) {
        return Ok(Some(state));
    }
    // "Unknown here" only when that is virsh's one complaint: a lost connection adds its own.
    let mut errors = answer
        .lines()
        .filter_map(|l| l.split_once("error: ").map(|(_, e)| e))
        .peekable();
    // (A domain gone between virsh's lookup and its reading: "Domain not found".)
    let not_here =
        |e: &str| e.starts_with("failed to get domain") || e.starts_with("Domain not found");
    if errors.peek().is_some() && errors.all(not_here) {
        return Ok(None);
    }
    Err(format!("virsh answered no state: {:?}", answer.trim()))
}

/// One sample in which the domain executed on two or more daemons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Since the watcher started.
    pub at: Duration,
    /// Per daemon (label, first read, second read); `None` also for a daemon that could not be
    /// read (the executing ones were).
    pub states: Vec<(String, Option<DomState>, Option<DomState>)>,
}

/// One sample in which a daemon could not be read while the domain executed on another.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unproven {
    /// Since the watcher started.
    pub at: Duration,
    /// Per daemon (label, first read, second read); `None`: not read.
    pub states: Vec<(String, Option<DomRead>, Option<DomRead>)>,
}

/// One read of the domain on one daemon: its state, `None` when the daemon does not know it.
pub type DomRead = Option<DomState>;

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
    /// Failures that ended the watch (the first sample failed): "never both" is unproven.
    pub errors: Vec<String>,
    /// Samples in which one daemon could not be read while the domain executed on another (or a
    /// second one could not be read either): a double run there cannot be excluded (all counted).
    pub unproven_count: u64,
    /// The first unproven samples.
    pub unproven: Vec<Unproven>,
    /// Every interval in which a daemon could not be read: label, start, end (`None`: to the
    /// end of the watch), and why it began.
    pub gaps: Vec<(String, Duration, Option<Duration>, String)>,
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
        if self.unproven_count > 0 {
            return Err(format!(
                "{} could not be read on one daemon while it executed on another in {} of {} samples, so 'never on two' is unproven; first: {:?}\ngaps: {:?}\ntimeline: {}",
                self.domain,
                self.unproven_count,
                self.samples,
                self.unproven.first(),
                self.gaps,
                self.render_timeline()
            ));
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
    /// Per daemon, the `virsh` of its current session.
    children: Children,
}

type Children = Arc<Mutex<Vec<Option<Child>>>>;

/// One daemon: its session while it answers, and when a new one may be opened.
struct Slot {
    uri: String,
    label: String,
    session: Option<VirshSession>,
    next_open: Instant,
    /// The open gap (an index into `WatchReport::gaps`) while the daemon cannot be read.
    gap: Option<usize>,
}

impl Slot {
    /// Opens a new session unless one was tried within [`RESPAWN_INTERVAL`]; the old `virsh`
    /// is killed first.
    fn open(&mut self, i: usize, children: &Children) -> Result<(), String> {
        let now = Instant::now();
        if now < self.next_open {
            return Err("waiting to open a new session".into());
        }
        self.next_open = now + RESPAWN_INTERVAL;
        let mut kids = children.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(mut old) = kids.get_mut(i).and_then(Option::take) {
            let _ = old.kill();
            let _ = old.wait();
        }
        let (child, session) = VirshSession::spawn(&self.uri).map_err(|e| e.to_string())?;
        if let Some(k) = kids.get_mut(i) {
            *k = Some(child);
        }
        self.session = Some(session);
        Ok(())
    }

    /// The domain's state here, `None` when the daemon cannot be read now (a gap is opened).
    fn read(
        &mut self,
        i: usize,
        children: &Children,
        domain: &str,
        report: &mut WatchReport,
        started: Instant,
    ) -> Option<DomRead> {
        let result = match self.session.as_mut() {
            Some(session) => session.domstate(domain),
            None => self
                .open(i, children)
                .and_then(|()| match self.session.as_mut() {
                    Some(session) => session.domstate(domain),
                    None => Err("no session".into()),
                }),
        };
        match result {
            Ok(state) => {
                if let Some(g) = self.gap.take() {
                    if let Some(gap) = report.gaps.get_mut(g) {
                        gap.2 = Some(started.elapsed());
                    }
                }
                Some(state)
            }
            Err(why) => {
                self.session = None;
                if self.gap.is_none() {
                    self.gap = Some(report.gaps.len());
                    report
                        .gaps
                        .push((self.label.clone(), started.elapsed(), None, why));
                }
                None
            }
        }
    }
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
        let children: Children = Arc::new(Mutex::new(Vec::new()));
        let mut slots = Vec::new();
        for daemon in daemons {
            match VirshSession::spawn(daemon.uri()) {
                Ok((child, session)) => {
                    children
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push(Some(child));
                    slots.push(Slot {
                        uri: daemon.uri().to_string(),
                        label: daemon.label().to_string(),
                        session: Some(session),
                        next_open: Instant::now(),
                        gap: None,
                    });
                }
                Err(e) => {
                    kill_all(&children);
                    return Err(e);
                }
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let mut report = WatchReport {
            domain: domain.to_string(),
            labels: daemons.iter().map(|d| d.label().to_string()).collect(),
            executing_samples: vec![0; daemons.len()],
            ..WatchReport::default()
        };
        let started = Instant::now();
        let mut last = None;
        let mut ran = vec![false; slots.len()];
        // The first sample before returning: the watch demonstrably covers what follows.
        let mut watch = Sampler {
            slots,
            children: Arc::clone(&children),
            started,
        };
        watch.sample(&mut report, &mut last, &mut ran);
        if let Some((label, _, _, why)) = report.gaps.first().cloned() {
            report
                .errors
                .push(format!("the first sample could not read {label}: {why}"));
        }
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
                watch.sample(&mut report, &mut last, &mut ran);
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
        kill_all(&self.children);
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

fn kill_all(children: &Children) {
    let mut kids = children.lock().unwrap_or_else(|p| p.into_inner());
    for child in kids.iter_mut().filter_map(Option::as_mut) {
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// The sampling side of a watcher: the daemons' sessions.
struct Sampler {
    slots: Vec<Slot>,
    children: Children,
    started: Instant,
}

impl Sampler {
    /// Reads every daemon twice in order and records the outcome in `report`.
    fn sample(
        &mut self,
        report: &mut WatchReport,
        last: &mut Option<Vec<Option<DomState>>>,
        ran: &mut [bool],
    ) {
        let n = self.slots.len();
        let mut reads: Vec<Option<DomRead>> = Vec::with_capacity(n * 2);
        for _pass in 0..2 {
            for (i, slot) in self.slots.iter_mut().enumerate() {
                let domain = report.domain.clone();
                reads.push(slot.read(i, &self.children, &domain, report, self.started));
            }
        }
        let at = self.started.elapsed();
        let (first, second) = reads.split_at(n);
        report.samples += 1;
        let (mut executing, mut unknown) = (0, 0);
        for (i, (a, b)) in first.iter().zip(second).enumerate() {
            match (a, b) {
                // `&`, not `&&`: both reads update `ran`.
                (Some(a), Some(b)) => {
                    if executes(*a, &mut ran[i]) & executes(*b, &mut ran[i]) {
                        executing += 1;
                        report.executing_samples[i] += 1;
                    }
                }
                _ => {
                    unknown += 1;
                    for r in [a, b].into_iter().flatten() {
                        executes(*r, &mut ran[i]);
                    }
                }
            }
        }
        let labelled = || -> Vec<(String, Option<DomRead>, Option<DomRead>)> {
            report
                .labels
                .iter()
                .cloned()
                .zip(first.iter().zip(second))
                .map(|(l, (a, b))| (l, *a, *b))
                .collect()
        };
        if executing >= 2 {
            report.violation_count += 1;
            if report.violations.len() < KEPT {
                let states = labelled()
                    .into_iter()
                    .map(|(l, a, b)| (l, a.flatten(), b.flatten()))
                    .collect();
                report.violations.push(Violation { at, states });
            }
        } else if unknown >= 1 && executing + unknown >= 2 {
            report.unproven_count += 1;
            if report.unproven.len() < KEPT {
                let states = labelled();
                report.unproven.push(Unproven { at, states });
            }
        }
        let shown: Vec<Option<DomState>> = first.iter().map(|r| r.flatten()).collect();
        if last.as_deref() != Some(&shown[..]) && report.timeline.len() < KEPT {
            report.timeline.push((at, shown.clone()));
            *last = Some(shown);
        }
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
        assert_eq!(parse_answer(answer), Ok(Some(DomState::Running)));
        assert_eq!(parse_answer("shut off\n\n"), Ok(Some(DomState::ShutOff)));
        let unknown = "virsh # domstate gone\nerror: failed to get domain 'gone'\n";
        assert_eq!(parse_answer(unknown), Ok(None));
        let vanished = "error: Domain not found: no domain with matching uuid 'b7e2' (vm1)\n";
        assert_eq!(parse_answer(vanished), Ok(None));
    }

    #[test]
    fn a_failed_reading_is_not_unknown_here() {
        let lost = "error: Disconnected from qemu:///system due to end of file\nerror: failed to connect to the hypervisor\n";
        assert!(parse_answer(lost).is_err());
        assert!(parse_answer("").is_err());
        let both =
            "error: failed to get domain 'vm1'\nerror: internal error: client socket is closed\n";
        assert!(parse_answer(both).is_err());
    }

    #[test]
    fn marker_is_found_only_at_a_line_start() {
        let out = b"virsh # echo @@hl1@@\n@@hl1@@virsh # ";
        assert_eq!(find(out, b"\n@@hl1@@"), Some(20));
        assert_eq!(find(b"virsh # echo @@hl1@@", b"\n@@hl1@@"), None);
    }
}
