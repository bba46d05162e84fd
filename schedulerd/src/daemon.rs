//! The scheduler daemon's behaviour behind the IPC server: who may connect, how each message
//! is answered (ack, then the `pe_calc` reply as an event), where inputs are saved, which graph
//! is returned in each mode, and the counts an administrator reads.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};

use crate::ffi::{Outgoing, Service};
use crate::guard::{self, Mode};
use crate::log::Log;
use crate::message::{self, ReplyCounts, Request};
use crate::plan::{self, Models};
use crate::series::{self, Series};
use crate::wire;

/// The cluster property that sets the mode.
pub const MODE_OPTION: &str = "highlander-scheduler-mode";
/// The file the counts are written to, in the state directory.
pub const COUNTS_FILE: &str = "highlander-schedulerd.counts";

/// How the daemon is set up.
#[derive(Debug, Clone)]
pub struct Config {
    pub state_dir: PathBuf,
    /// The mode when the CIB sets none (config file or command line).
    pub default_mode: Mode,
    /// A mode that overrides the CIB (command line).
    pub forced_mode: Option<Mode>,
    pub crm_simulate: PathBuf,
    /// Pacemaker's `crm_resource`, which writes the lifecycle's origin records.
    pub crm_resource: PathBuf,
    pub buffer_size: u32,
    /// The cluster user (`hacluster`): uid allowed besides root.
    pub cluster_uid: Option<u32>,
}

/// What the daemon has done since it started (written to [`COUNTS_FILE`] after each transition).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    pub transitions: u64,
    /// Transitions answered with Highlander's plan.
    pub highlander_plans: u64,
    /// Inputs where pengine's two-phase plan differed from Pacemaker's.
    pub divergences: u64,
    /// Transitions answered with Pacemaker's graph (divergence, shadow mode, or pengine failure).
    pub fallbacks: u64,
    /// Transitions where Highlander's plan (atomic model) differed from Pacemaker's.
    pub highlander_differs: u64,
    /// Requests refused (malformed, truncated, oversized, or not for the scheduler).
    pub refused: u64,
}

impl Counts {
    pub fn render(&self, mode: Mode) -> String {
        format!(
            "mode={}\ntransitions={}\nhighlander_plans={}\ndivergences={}\nfallbacks={}\nhighlander_differs={}\nrefused={}\n",
            mode.as_str(),
            self.transitions,
            self.highlander_plans,
            self.divergences,
            self.fallbacks,
            self.highlander_differs,
            self.refused
        )
    }
}

/// The daemon's state.
pub struct Daemon {
    cfg: Config,
    log: Log,
    /// The next `transition_id` (Pacemaker counts from 0 for the life of the daemon).
    next_transition: u64,
    /// The next event's qb id.
    next_event: u32,
    last_digest: Option<u64>,
    last_input: Option<PathBuf>,
    pub counts: Counts,
}

/// The graph that goes back, and where it came from.
struct Answer {
    graph: String,
    source: &'static str,
    summary: Vec<String>,
    errors: bool,
    /// Origin records to write (Highlander's plans only).
    meta_writes: Vec<plan::MetaWrite>,
}

impl Daemon {
    pub fn new(cfg: Config, log: Log) -> Daemon {
        Daemon {
            cfg,
            log,
            next_transition: 0,
            next_event: 1,
            last_digest: None,
            last_input: None,
            counts: Counts::default(),
        }
    }

    /// Answers one message (header included): the outgoing messages, in order.
    pub fn handle(&mut self, data: &[u8]) -> Vec<Outgoing> {
        let frame = match wire::decode(data) {
            Ok(f) => f,
            Err(e) => {
                self.counts.refused += 1;
                self.log.warn(&format!("Refusing IPC message: {e}"));
                return wire::peek(data)
                    .and_then(|(id, flags)| self.ack(id, flags, message::EX_PROTOCOL))
                    .into_iter()
                    .collect();
            }
        };
        let req = match message::parse_request(&frame.xml) {
            Ok(r) => r,
            Err(e) => {
                self.counts.refused += 1;
                self.log.warn(&format!("Refusing IPC message: {e}"));
                return self
                    .ack(frame.id, frame.flags, message::EX_PROTOCOL)
                    .into_iter()
                    .collect();
            }
        };
        let mut out: Vec<Outgoing> = Vec::new();
        if req.is_response() || !req.is_for_scheduler() {
            self.counts.refused += 1;
            self.log.info(&format!(
                "Ignoring IPC message to '{}' (subt '{}')",
                req.attr("crm_sys_to").unwrap_or(""),
                req.attr("subt").unwrap_or("")
            ));
            out.extend(self.ack(frame.id, frame.flags, message::EX_INDETERMINATE));
            return out;
        }
        match req.task() {
            Some(message::OP_PECALC) => {
                out.extend(self.ack(frame.id, frame.flags, message::EX_INDETERMINATE));
                out.extend(self.pe_calc(&req));
            }
            Some(message::OP_HELLO) => {
                out.extend(self.ack(frame.id, frame.flags, message::EX_INDETERMINATE));
            }
            other => {
                self.counts.refused += 1;
                self.log.warn(&format!(
                    "Unknown IPC request type '{}'",
                    other.unwrap_or("")
                ));
                out.extend(self.ack(frame.id, frame.flags, message::EX_INVALID_PARAM));
            }
        }
        out
    }

    /// The ack a client that asked for a response gets (none otherwise), on the response channel.
    fn ack(&self, id: u32, flags: u32, status: i32) -> Option<Outgoing> {
        if flags & wire::FLAG_CLIENT_RESPONSE == 0 {
            return None;
        }
        let xml = message::ack_xml("handle_pecalc_request", status);
        wire::encode(
            id,
            flags | wire::FLAG_SERVER_FREE,
            &xml,
            self.cfg.buffer_size,
        )
        .ok()
        .map(Outgoing::Response)
    }

    /// Plans one input and returns the reply event.
    fn pe_calc(&mut self, req: &Request) -> Option<Outgoing> {
        let now = crate::log::now_secs();
        let cib = req.data.clone().unwrap_or_default();
        let cib = message::with_execution_date(&cib, now);
        // Pacemaker compares a digest of the input as received (before its execution-date).
        let mut hasher = DefaultHasher::new();
        req.data.hash(&mut hasher);
        let digest = hasher.finish();
        let repoke = self.last_digest == Some(digest);
        self.last_digest = Some(digest);

        let input = plan::read(&cib);
        let option = |name: &str| {
            input
                .as_ref()
                .ok()
                .and_then(|i| i.option(name).map(str::to_string))
        };
        let mode = self.mode(option(MODE_OPTION).as_deref());
        let series = match &input {
            Err(_) => Series::Error,
            Ok(i) if !i.warnings().is_empty() => Series::Warn,
            Ok(_) => Series::Input,
        };
        let wrap = series.wrap(option(series.option()).as_deref());
        let saved = self.save_input(series, wrap, repoke, &cib);
        let input_path = match &saved {
            Some(p) => p.clone(),
            None => self.scratch_input(&cib),
        };
        let answer = self.answer(mode, input, &input_path, now);
        self.write_records(&answer.meta_writes);
        let transition = self.next_transition;
        self.next_transition += 1;
        self.counts.transitions += 1;
        self.log_transition(transition, saved.as_deref(), series, &answer);
        self.write_counts(mode);
        let graph = plan::with_transition_id(&answer.graph, transition);
        let counts = ReplyCounts {
            input_path: saved.map(|p| p.display().to_string()),
            graph_errors: answer.errors,
            graph_warnings: series == Series::Warn,
            ..ReplyCounts::default()
        };
        let reply = message::reply_xml(req, &graph, &counts);
        self.event(&reply, transition)
    }

    /// Where the guard reads an input the series does not keep.
    fn scratch_input(&self, cib: &str) -> PathBuf {
        let path = self.cfg.state_dir.join("highlander-scratch.bz2");
        if let Err(e) = series::write_bz2(&path, cib) {
            self.log
                .error(&format!("Cannot write {}: {e}", path.display()));
        }
        path
    }

    /// The reply as an event (Pacemaker's daemons reply on the event channel).
    fn event(&mut self, reply: &str, transition: u64) -> Option<Outgoing> {
        let id = self.next_event;
        self.next_event = self.next_event.wrapping_add(1).max(1);
        let flags = wire::FLAG_SERVER_EVENT | wire::FLAG_SERVER_FREE;
        match wire::encode(id, flags, reply, self.cfg.buffer_size) {
            Ok(bytes) => Some(Outgoing::Event(bytes)),
            Err(e) => {
                self.log.error(&format!(
                    "Cannot send transition {transition}: {e}; set PCMK_ipc_buffer higher"
                ));
                None
            }
        }
    }

    /// The mode: forced, else the CIB's, else the configured default.
    fn mode(&self, from_cib: Option<&str>) -> Mode {
        if let Some(m) = self.cfg.forced_mode {
            return m;
        }
        match from_cib.map(|v| (v, Mode::parse(v))) {
            Some((_, Some(m))) => m,
            Some((v, None)) => {
                self.log.warn(&format!(
                    "{MODE_OPTION}='{v}' is not guarded, shadow or trusted; using {}",
                    self.cfg.default_mode.as_str()
                ));
                self.cfg.default_mode
            }
            None => self.cfg.default_mode,
        }
    }

    /// Saves the input as Pacemaker does; its path (None when the series saves nothing).
    fn save_input(
        &mut self,
        series: Series,
        wrap: i64,
        repoke: bool,
        cib: &str,
    ) -> Option<PathBuf> {
        if wrap == 0 {
            self.last_input = None;
            return None;
        }
        if repoke && self.last_input.is_some() {
            self.log
                .info("Input has not changed since last time, not saving to disk");
            return self.last_input.clone();
        }
        let dir = &self.cfg.state_dir;
        let seq = series::read_sequence(dir, series);
        let path = series::file_name(dir, series.name(), seq);
        if let Err(e) = series::write_bz2(&path, cib) {
            self.log
                .error(&format!("Cannot save {}: {e}", path.display()));
        }
        if let Err(e) = series::write_sequence(dir, series, seq.wrapping_add(1), wrap) {
            self.log
                .error(&format!("Cannot write the {} sequence: {e}", series.name()));
        }
        self.last_input = Some(path.clone());
        Some(path)
    }

    /// Chooses the graph for this input according to `mode`.
    fn answer(
        &mut self,
        mode: Mode,
        input: Result<plan::Input, plan::PlanError>,
        path: &Path,
        now: i64,
    ) -> Answer {
        let input = match input {
            Ok(i) => i,
            Err(e) => {
                self.log.warn(&format!(
                    "pengine cannot plan {}: {e}; using Pacemaker's scheduler",
                    path.display()
                ));
                return self.pacemaker_answer(path, "pacemaker (pengine cannot read the input)");
            }
        };
        let now = input.execution_date().unwrap_or(now);
        let ours = plan::plan(&input, now, Models::AsConfigured);
        for n in &ours.policy_notes {
            self.log.notice(&format!("Policy: {n}"));
        }
        if mode == Mode::Trusted {
            return self.highlander(ours, "highlander (trusted)");
        }
        match guard::pacemaker_graph(&self.cfg.crm_simulate, path, &self.cfg.state_dir) {
            Ok(pacemaker) => {
                let two_phase = plan::plan(&input, now, Models::PacemakerEquivalent);
                self.guarded(mode, path, pacemaker, ours, two_phase)
            }
            Err(e) => {
                // Without the guard's answer there is nothing to fall back to: Highlander's plan.
                self.log
                    .error(&format!("Guard unavailable ({e}); using Highlander's plan"));
                self.highlander(ours, "highlander (guard unavailable)")
            }
        }
    }

    /// Highlander's plan goes back.
    fn highlander(&mut self, plan: plan::Plan, source: &'static str) -> Answer {
        self.counts.highlander_plans += 1;
        Answer {
            graph: plan.graph_xml,
            source,
            summary: plan.summary,
            errors: false,
            meta_writes: plan.meta_writes,
        }
    }

    /// The guard's decision: Highlander's plan when pengine's two-phase plan is Pacemaker's graph
    /// (guarded mode), else Pacemaker's graph; differences are counted and logged.
    fn guarded(
        &mut self,
        mode: Mode,
        path: &Path,
        pacemaker: String,
        ours: plan::Plan,
        two_phase: plan::Plan,
    ) -> Answer {
        if guard::compare(&pacemaker, &ours.graph_xml).is_err() {
            self.counts.highlander_differs += 1;
            self.log.notice(&format!(
                "Highlander's plan differs from Pacemaker's: {}",
                ours.summary.join("; ")
            ));
            for n in &ours.atomic_notes {
                self.log.notice(&format!("Atomic migration model: {n}"));
            }
        }

        match guard::compare(&pacemaker, &two_phase.graph_xml) {
            Ok(()) if mode == Mode::Guarded => {
                return self.highlander(ours, "highlander (guarded)");
            }
            Ok(()) => {}
            Err(why) => {
                self.counts.divergences += 1;
                let kept = self.keep_divergence(path);
                self.log.warn(&format!(
                    "pengine's two-phase plan diverges from Pacemaker's for {}: {why}",
                    kept.display()
                ));
            }
        }
        self.counts.fallbacks += 1;
        let source = if mode == Mode::Shadow {
            "pacemaker (shadow)"
        } else {
            "pacemaker (divergence)"
        };
        Answer {
            graph: pacemaker,
            source,
            summary: two_phase.summary,
            errors: false,
            meta_writes: Vec::new(),
        }
    }

    /// Pacemaker's graph alone (pengine could not read the input).
    fn pacemaker_answer(&mut self, path: &Path, source: &'static str) -> Answer {
        self.counts.fallbacks += 1;
        match guard::pacemaker_graph(&self.cfg.crm_simulate, path, &self.cfg.state_dir) {
            Ok(graph) => Answer {
                graph,
                source,
                summary: Vec::new(),
                errors: false,
                meta_writes: Vec::new(),
            },
            Err(e) => {
                self.log.error(&format!(
                    "Neither pengine nor Pacemaker's scheduler can plan {}: {e}",
                    path.display()
                ));
                Answer {
                    graph: "<transition_graph cluster-delay=\"0\" transition_id=\"0\"/>".into(),
                    source: "none (error)",
                    summary: Vec::new(),
                    errors: true,
                    meta_writes: Vec::new(),
                }
            }
        }
    }

    /// Writes the origin records Highlander's plan proposes, with `crm_resource --meta` (the
    /// controller then plans again with them; Pacemaker's own scheduler writes nothing).
    fn write_records(&self, writes: &[plan::MetaWrite]) {
        for w in writes {
            let mut ok = true;
            let sets = w
                .set
                .iter()
                .map(|(k, v)| vec!["-p", k.as_str(), "-v", v.as_str()]);
            let deletes = w.delete.iter().map(|k| vec!["-d", k.as_str()]);
            for args in sets.chain(deletes) {
                let out = std::process::Command::new(&self.cfg.crm_resource)
                    .args(["--meta", "-r", &w.rsc])
                    .args(&args)
                    .output();
                ok &= out.is_ok_and(|o| o.status.success() || args[0] == "-d");
            }
            if ok {
                self.log.notice(&format!("Recorded: {}", w.why));
            } else {
                self.log.error(&format!("Could not record: {}", w.why));
            }
        }
    }

    /// Copies a diverging input to `pe-diverge-N.bz2` (numbered like the other series).
    fn keep_divergence(&self, path: &Path) -> PathBuf {
        let dir = &self.cfg.state_dir;
        let mut n = 0u32;
        while series::file_name(dir, "pe-diverge", n).exists() {
            n += 1;
        }
        let kept = series::file_name(dir, "pe-diverge", n);
        if let Err(e) = std::fs::copy(path, &kept) {
            self.log
                .error(&format!("Cannot keep {}: {e}", kept.display()));
        }
        kept
    }

    fn log_transition(&self, transition: u64, saved: Option<&Path>, series: Series, a: &Answer) {
        for line in &a.summary {
            self.log
                .line("log_list_item", "notice", &format!("Actions: {line}"));
        }
        let what = match series {
            Series::Error => "Calculated transition {t} (with errors)",
            Series::Warn => "Calculated transition {t} (with warnings)",
            Series::Input => "Calculated transition {t}",
        }
        .replace("{t}", &transition.to_string());
        let what = match saved {
            Some(p) => format!("{what}, saving inputs in {}", p.display()),
            None => what,
        };
        self.log
            .line("pcmk__log_transition_summary", "notice", &what);
        self.log
            .notice(&format!("Transition {transition}: graph from {}", a.source));
    }

    fn write_counts(&self, mode: Mode) {
        let path = self.cfg.state_dir.join(COUNTS_FILE);
        let _ = std::fs::write(path, self.counts.render(mode));
    }
}

impl Service for Daemon {
    fn accept(&mut self, uid: u32, _gid: u32) -> bool {
        let ok = uid == 0 || Some(uid) == self.cfg.cluster_uid;
        if !ok {
            self.log.warn(&format!(
                "Refusing IPC connection from uid {uid}: only root and the cluster user may connect"
            ));
        }
        ok
    }

    fn message(&mut self, data: &[u8]) -> Vec<Outgoing> {
        self.handle(data)
    }

    fn send_failed(&mut self, what: &str, rc: isize) {
        self.log.warn(&format!(
            "Could not send the {what} to the client (rc {rc})"
        ));
    }
}
