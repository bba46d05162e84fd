//! The simulated cluster and its controller: the event loop in virtual time, the DC that plans
//! with the planner, fires each transition's synapses (ordering, `batch-limit`, `migration-limit`),
//! records every result into the CIB as Pacemaker's controller does, and on an abort lets running
//! actions finish, fires nothing new, and plans again. Nodes, membership, fencing and the
//! executors live here too; faults are in `faults.rs`, checkers in `checkers.rs`.
//!
//! When the DC plans is Pacemaker 2.1.5's controller (pacemaker-controld): only after an abort (a
//! result other than the expected rc, a failed or lost action, a result from outside the active
//! transition, a node joining or lost unexpectedly, a configuration or attribute change, quorum
//! lost, or 5 s after quorum gained unless another abort came first) or when the
//! `cluster-recheck-interval` timer fires in S_IDLE. A recurring monitor's later result while the
//! transition that scheduled it is still active finds its action confirmed and is ignored, as in
//! `process_graph_event`. A transition that ends without an abort,
//! complete or with synapses that could not fire, goes to S_IDLE with no new scheduler run. The
//! simulator then asks the planner once more as an observer: a non-empty plan there is work the
//! real controller would leave until the recheck timer, a `stall`.

use std::collections::{BTreeMap, BTreeSet};

use highlander_agent::Outcome;
use ocf_metadata::OcfExitCode;
use pengine::Cib;
use pengine::unstable::{EventKind, TransitionGraph};

use super::checkers;
use super::executor::{self, OpKind};
use super::kernel::{Kernel, TaskId, TaskState};
use super::options::Options;
use super::planner;
use super::record::{self, Member, NodeLrm, OpResult};
use super::rng::Rng;
use super::world::{RemoteHv, World};

/// The executor's start-up cost for one agent invocation (fork, exec, parameter parsing).
pub const EXEC_STARTUP_MS: u64 = 20;
/// A scheduler run after an abort.
pub const PE_DELAY_MS: u64 = 10;
/// A run that plans this many transitions without settling has looped.
pub const TRANSITIONS_MAX: u64 = 3_000;
/// Events budget for one seed.
pub const EVENTS_MAX: u64 = 400_000;

/// Something that happens at a virtual time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ev {
    Wake(TaskId),
    OpTimeout(TaskId),
    Monitor {
        node: usize,
        rsc: String,
        generation: u64,
    },
    FenceDone {
        node: usize,
        transition: i64,
        action: usize,
    },
    Detect {
        node: usize,
    },
    Boot {
        node: usize,
    },
    Fault,
    Heal(Heal),
    Replan,
    /// The `cluster-recheck-interval` timer, armed when the DC entered S_IDLE with this
    /// generation; leaving S_IDLE stops it (a newer generation).
    Recheck(u64),
    Liveness,
    Script(Script),
    /// Pacemaker's delayed "Quorum gained" abort (`crm_update_quorum` arms a 5 s timer with
    /// `abort_after_delay`), armed with this generation; it aborts only if no other abort came
    /// meanwhile.
    QuorumGained(u64),
}

/// The delay of the controller's "Quorum gained" abort (Pacemaker 2.1.5, controld_membership.c),
/// so that nodes joining around the same time change the quorum only once.
pub const QUORUM_GAINED_DELAY_MS: u64 = 5_000;

/// The end of a temporary fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Heal {
    Daemon(usize),
    Constraint(String),
    Standby(usize),
    Reconnect(usize),
}

/// Scripted scenario steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Script {
    /// `crm_resource --move`: prefer `node` for `vm` with INFINITY.
    AddPrefer { vm: String, node: usize },
}

#[derive(Debug, Clone)]
pub enum Origin {
    Graph {
        transition: i64,
        action: usize,
        expected_rc: i32,
    },
    Recurring {
        generation: u64,
        transition: i64,
        action: usize,
        expected_rc: i32,
    },
}

#[derive(Debug, Clone)]
pub struct TaskInfo {
    pub node: usize,
    pub rsc: String,
    pub op: OpKind,
    pub interval_ms: u64,
    pub origin: Origin,
    pub started_ms: u64,
    pub kill_reason: Option<&'static str>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InFlight {
    Task(TaskId),
    Fence,
    /// Sent to a node that cannot answer; only membership ends it.
    Lost {
        node: usize,
    },
}

/// The transition being executed.
pub struct Active {
    pub id: i64,
    pub graph: TransitionGraph,
    pub node_of: Vec<usize>,
    pub rsc_names: Vec<String>,
    pub confirmed: Vec<bool>,
    pub failed: Vec<bool>,
    pub fired: Vec<bool>,
    pub in_flight: BTreeMap<usize, InFlight>,
    pub aborted: bool,
}

/// A request sent to a node whose network is cut, delivered if it comes back before membership
/// declares it lost.
#[derive(Debug, Clone)]
pub struct HeldSend {
    pub rsc: String,
    pub op: OpKind,
    pub interval_ms: u64,
    pub origin: Origin,
    pub pending: Option<OpResult>,
}

/// One node as the simulator holds it.
#[derive(Debug, Clone)]
pub struct NodeSim {
    pub name: String,
    pub member: Member,
    pub powered: bool,
    pub hist: NodeLrm,
    /// rsc -> (interval, generation, transition, action, expected rc)
    pub recurring: BTreeMap<String, (u64, u64, i64, usize, i32)>,
    /// Results waiting for the network (the node is isolated but not yet declared lost).
    pub held: Vec<(OpResult, bool)>,
    pub held_sends: Vec<HeldSend>,
    pub standby: bool,
    pub shutting_down: bool,
    /// The simulated fencing device is started here.
    pub fence_device: bool,
}

/// What a checker found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub checker: &'static str,
    pub message: String,
    /// A known planner gap this violation matches (see [`checkers::known_gap`]), for triage; the
    /// violation counts all the same.
    pub known_gap: Option<&'static str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Safety,
    Liveness {
        since_ms: u64,
        since_transitions: u64,
    },
    Done,
}

/// Counters reported per seed.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub events: u64,
    pub transitions: u64,
    /// Transitions whose actions repeat the previous transition's exactly: the DC re-trying one
    /// step while it waits (for a node to return, for quorum). The liveness phase bounds these
    /// by time only; every other transition counts towards its transition bound.
    pub repeated_transitions: u64,
    pub actions: u64,
    pub faults: u64,
    /// VMs that went from running nowhere to running again while not freshly enabled: restarts.
    pub restarts: u64,
    pub migrations_ok: u64,
    /// Transitions that ended without an abort while the planner still had work: the real
    /// controller would sit in S_IDLE until the recheck timer.
    pub stalls: u64,
    /// Stalls Pacemaker's controller has as well: the work comes from a recurring monitor's
    /// change that the DC ignored because the transition that scheduled the monitor was still
    /// active (see `Sim::dc_ignores`).
    pub faithful_stalls: u64,
    /// Scheduler runs started by the recheck timer.
    pub rechecks: u64,
}

impl Stats {
    /// Transitions that did not merely repeat the one before (see `repeated_transitions`).
    pub fn progress_transitions(&self) -> u64 {
        self.transitions - self.repeated_transitions
    }
}

pub struct Sim {
    pub opts: Options,
    pub rng: Rng,
    pub kernel: Kernel,
    pub world: World,
    pub cib: Cib,
    pub nodes: Vec<NodeSim>,
    pub vms: Vec<String>,
    queue: BTreeMap<(u64, u64), Ev>,
    seq: u64,
    generation_seq: u64,
    pub tasks: BTreeMap<TaskId, TaskInfo>,
    pub active: Option<Active>,
    transition_seq: i64,
    replan_at: Option<u64>,
    /// The armed recheck timer's generation (see `Ev::Recheck`).
    recheck_generation: u64,
    /// The delayed "Quorum gained" abort: its generation, and whether any abort came since it
    /// was armed (Pacemaker's `abort_timer.aborted`: then it does nothing).
    quorum_timer: (u64, bool),
    pub phase: Phase,
    pub faults_done: usize,
    pub log: Vec<String>,
    pub stats: Stats,
    pub violation: Option<Violation>,
    pub fence_pending: BTreeSet<usize>,
    /// Per VM: was it running (ground truth) after the previous event, and did it ever run.
    pub was_running: Vec<(bool, bool)>,
    /// Per VM: a migrate_to was interrupted since it last ran stably (for the restart count).
    pub idle: bool,
    /// 2013 scenario: remove the move constraint this long after vm's migrate_to fires.
    pub remove_on_migrate: Option<(String, String, u64)>,
    /// pengine's crm_simulate-style view of the CIB when the first violation fired.
    pub status_at_violation: String,
    /// The first stall (see `checkers::on_stall`).
    pub first_stall: Option<String>,
    /// Recurring results the DC ignored during the active transition (see `dc_ignores`).
    ignored_recurring: Vec<String>,
    /// The liveness phase's cleanup waits for every node to be back.
    pub cleanup_pending: bool,
    /// VMs whose migrate_to was sent and no migrate_from succeeded since, while a copy exists
    /// somewhere: a migration in flight or interrupted, for triage.
    pub migration_open: BTreeSet<String>,
    /// The previous transition's actions (`key@node`, in graph order); empty after an idle plan.
    last_actions: String,
    /// The initial CIB document (configuration as generated), for [`record::cib_document`].
    initial_xml: String,
    /// `--dump-cib DIR`: every CIB the DC plans from is written there (`seed<N>-T<id>.xml`, and
    /// `seed<N>-T<id>-idle.xml` for the observer's run after a transition ended without an
    /// abort), to compare with `crm_simulate -x FILE -S`.
    pub dump_dir: Option<std::path::PathBuf>,
    /// `--crm-simulate`: a stall not explained otherwise is checked with Pacemaker's scheduler
    /// (see `oracle`): when it has work on the same CIB too, the stall is Pacemaker's own.
    pub crm_simulate: bool,
    /// `--diff-crm-simulate`: pengine's and crm_simulate's `-S` outputs compared on the CIBs
    /// the planner reads (see `diff_with_pacemaker`), and the tally.
    pub diff: Option<(super::oracle::DiffConfig, super::oracle::DiffTally)>,
    /// Planner calls so far (for `DiffConfig::every`).
    planner_calls: u64,
}

fn state_is_live(s: &TaskState) -> bool {
    matches!(s, TaskState::Ready | TaskState::Sleeping { .. })
}

impl Sim {
    /// Builds the cluster for these options; nothing runs yet.
    pub fn new(opts: Options) -> Result<Self, String> {
        let mut rng = Rng::new(opts.seed);
        let mut cib_rng = rng.fork();
        let xml = record::initial_cib(&opts, &mut cib_rng);
        let cib = pengine::parse_cib(&xml).map_err(|e| format!("initial CIB: {e}"))?;
        let initial_xml = xml;
        let kernel = Kernel::default();
        let names: Vec<String> = (0..opts.nodes).map(record::node_name).collect();
        let vms: Vec<String> = (0..opts.vms).map(record::vm_name).collect();
        let world = World::new(kernel.clock(), &names, &vms, opts.migration_ms);
        let nodes = names
            .iter()
            .map(|n| NodeSim {
                name: n.clone(),
                member: Member::Up,
                powered: true,
                hist: NodeLrm::default(),
                recurring: BTreeMap::new(),
                held: Vec::new(),
                held_sends: Vec::new(),
                standby: false,
                shutting_down: false,
                fence_device: false,
            })
            .collect();
        let nvms = vms.len();
        Ok(Self {
            opts,
            rng,
            kernel,
            world,
            cib,
            nodes,
            vms,
            queue: BTreeMap::new(),
            seq: 0,
            generation_seq: 0,
            tasks: BTreeMap::new(),
            active: None,
            transition_seq: 0,
            replan_at: None,
            recheck_generation: 0,
            quorum_timer: (0, true),
            phase: Phase::Safety,
            faults_done: 0,
            log: Vec::new(),
            stats: Stats::default(),
            violation: None,
            fence_pending: BTreeSet::new(),
            was_running: vec![(false, false); nvms],
            idle: false,
            last_actions: String::new(),
            remove_on_migrate: None,
            status_at_violation: String::new(),
            first_stall: None,
            ignored_recurring: Vec::new(),
            cleanup_pending: false,
            migration_open: BTreeSet::new(),
            initial_xml,
            dump_dir: None,
            crm_simulate: false,
            diff: None,
            planner_calls: 0,
        })
    }

    pub fn now_ms(&self) -> u64 {
        self.kernel.now_ms()
    }

    pub fn at(&mut self, t_ms: u64, ev: Ev) {
        self.seq += 1;
        self.queue.insert((t_ms, self.seq), ev);
    }

    pub fn after(&mut self, delay_ms: u64, ev: Ev) {
        let t = self.now_ms().saturating_add(delay_ms);
        self.at(t, ev);
    }

    pub fn note(&mut self, who: &str, msg: impl AsRef<str>) {
        let t = self.now_ms();
        self.log.push(format!(
            "{:>7}.{:03}s {:<7} {}",
            t / 1000,
            t % 1000,
            who,
            msg.as_ref()
        ));
    }

    pub fn violate(&mut self, checker: &'static str, message: String) {
        if self.violation.is_none() {
            let now_s = record::now_s(self.now_ms());
            self.status_at_violation = pengine::render_simulation(&self.cib, now_s);
            self.note("CHECK", format!("VIOLATION [{checker}] {message}"));
            let known_gap = checkers::known_gap(self, checker, &message);
            if let Some(g) = known_gap {
                self.note("CHECK", format!("matches known planner gap: {g}"));
            }
            self.violation = Some(Violation {
                checker,
                message,
                known_gap,
            });
        }
    }

    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Runs the whole seed: boot, safety phase with faults, liveness phase after healing.
    pub fn run(&mut self) {
        self.note(
            "SIM",
            format!(
                "{} nodes, {} vms; planner {}",
                self.nodes.len(),
                self.vms.len(),
                self.opts.planner.name()
            ),
        );
        self.at(0, Ev::Replan);
        self.replan_at = Some(0);
        if self.opts.faults_max > 0 {
            let gap = self.fault_gap();
            self.at(30_000 + gap, Ev::Fault);
        } else if self.remove_on_migrate.is_none() {
            self.at(60_000, Ev::Liveness);
        }
        while let Some(((t, _), ev)) = self.queue.pop_first() {
            if self.violation.is_some() || self.phase == Phase::Done {
                break;
            }
            self.kernel.advance_to(t);
            self.handle(ev);
            self.stats.events += 1;
            checkers::after_event(self);
            if self.stats.events >= EVENTS_MAX || self.stats.transitions >= TRANSITIONS_MAX {
                let why = format!(
                    "no convergence: {} events, {} transitions",
                    self.stats.events, self.stats.transitions
                );
                self.violate("liveness", why);
            }
        }
        if self.violation.is_none() && self.phase != Phase::Done {
            self.violate(
                "liveness",
                "nothing left to happen, and the cluster did not converge".into(),
            );
        }
        self.kernel.kill_all();
        if self.kernel.main_sleeps() > 0 {
            let n = self.kernel.main_sleeps();
            self.violate("simulator", format!("the main loop slept {n} times"));
        }
    }

    /// Writes the CIB the planner reads now (see `dump_dir`); a failure is noted in the log.
    fn dump_cib(&mut self, name: &str) {
        let Some(dir) = self.dump_dir.clone() else {
            return;
        };
        let now_s = record::now_s(self.now_ms());
        let path = dir.join(format!("seed{}-{name}.xml", self.opts.seed));
        let written = record::cib_document(&self.initial_xml, &self.cib, now_s)
            .and_then(|doc| std::fs::write(&path, doc).map_err(|e| e.to_string()));
        match written {
            Ok(()) => self.note("SIM", format!("CIB written to {}", path.display())),
            Err(e) => self.note("SIM", format!("cannot write {}: {e}", path.display())),
        }
    }

    /// `--diff-crm-simulate`: on every Nth planner call, the CIB the planner reads now goes to
    /// `pengine simulate -x CIB -S` and `crm_simulate -x CIB -S`; the first CIB whose outputs
    /// differ is kept in the output directory (`seed<N>-<name>.xml`, with `.crm` and `.pe`).
    fn diff_with_pacemaker(&mut self, name: &str) {
        self.planner_calls += 1;
        let Some((config, _)) = &self.diff else {
            return;
        };
        if (self.planner_calls - 1) % config.every.max(1) != 0 {
            return;
        }
        let config = config.clone();
        let now_s = record::now_s(self.now_ms());
        let path = std::env::temp_dir().join(format!(
            "cts-sim-diff-{}-seed{}-{name}.xml",
            std::process::id(),
            self.opts.seed
        ));
        let compared = record::cib_document(&self.initial_xml, &self.cib, now_s)
            .and_then(|doc| {
                std::fs::write(&path, &doc)
                    .map(|()| doc)
                    .map_err(|e| e.to_string())
            })
            .and_then(|doc| {
                super::oracle::compare_simulate(&path, &config.pengine).map(|d| (doc, d))
            });
        // A leftover temporary file is harmless; its removal failing changes nothing here.
        let _ = std::fs::remove_file(&path);
        let seed = self.opts.seed;
        let mut note = None;
        if let Some((_, tally)) = self.diff.as_mut() {
            tally.compared += 1;
            match compared {
                Err(e) => {
                    tally.errors += 1;
                    note = Some(format!("diff with crm_simulate not run: {e}"));
                }
                Ok((_, None)) => tally.identical += 1,
                Ok((doc, Some(d))) => {
                    tally.differing += 1;
                    if d.actions_differ {
                        tally.actions_differ += 1;
                    }
                    if tally.first.is_none() {
                        let kept = config.out_dir.join(format!("seed{seed}-{name}.xml"));
                        let written = std::fs::write(&kept, doc)
                            .and_then(|()| std::fs::write(kept.with_extension("crm"), &d.pacemaker))
                            .and_then(|()| std::fs::write(kept.with_extension("pe"), &d.pengine));
                        let place = match written {
                            Ok(()) => kept.display().to_string(),
                            Err(e) => format!("{} (not written: {e})", kept.display()),
                        };
                        let text = format!(
                            "{place}: {}{}\n{}",
                            d.sections.join(", "),
                            if d.actions_differ {
                                " (actions differ)"
                            } else {
                                ""
                            },
                            super::oracle::render_diff(&d).trim_end()
                        );
                        note = Some(format!("pengine and crm_simulate differ on {text}"));
                        tally.first = Some(text);
                    }
                }
            }
        }
        if let Some(n) = note {
            self.note("SIM", n);
        }
    }

    pub fn fault_gap(&mut self) -> u64 {
        let g = self.opts.fault_gap_ms;
        self.rng.range(g / 2, g + g / 2)
    }

    fn handle(&mut self, ev: Ev) {
        match ev {
            Ev::Wake(id) => {
                if self.tasks.contains_key(&id) {
                    let st = self.kernel.resume(id);
                    self.after_resume(id, st);
                }
            }
            Ev::OpTimeout(id) => {
                if let Some(info) = self.tasks.get_mut(&id) {
                    info.kill_reason = Some("timeout");
                    let st = self.kernel.kill(id);
                    self.after_resume(id, st);
                }
            }
            Ev::Monitor {
                node,
                rsc,
                generation,
            } => self.recurring_due(node, &rsc, generation),
            Ev::FenceDone {
                node,
                transition,
                action,
            } => self.fence_done(node, transition, action),
            Ev::Detect { node } => self.detect(node),
            Ev::Boot { node } => self.boot(node),
            Ev::Fault => self.fault(),
            Ev::Heal(h) => self.heal(h),
            Ev::Replan => {
                if self.replan_at.is_some_and(|t| t <= self.now_ms()) {
                    self.replan_at = None;
                }
                self.replan();
            }
            Ev::Recheck(generation) => {
                if generation == self.recheck_generation && self.active.is_none() {
                    self.stats.rechecks += 1;
                    self.note("DC", "cluster-recheck-interval expired");
                    self.replan();
                }
            }
            Ev::Liveness => self.start_liveness(),
            Ev::Script(s) => self.script(s),
            Ev::QuorumGained(generation) => {
                if self.quorum_timer == (generation, false) {
                    self.cib_changed("quorum gained");
                }
            }
        }
    }

    fn script(&mut self, s: Script) {
        match s {
            Script::AddPrefer { vm, node } => {
                let id = format!("cli-prefer-{vm}");
                let name = self.nodes[node].name.clone();
                record::add_location(&mut self.cib, &id, &vm, &name, "INFINITY");
                self.note(
                    "ADMIN",
                    format!("crm_resource --move {vm} {name} (constraint {id} added)"),
                );
                self.cib_changed("configuration change");
            }
        }
    }

    /// Any change the DC did not expect: abort the transition and plan again.
    pub fn cib_changed(&mut self, why: &str) {
        self.idle = false;
        self.quorum_timer.1 = true;
        if let Some(a) = self.active.as_mut() {
            if !a.aborted {
                a.aborted = true;
                let id = a.id;
                self.note("DC", format!("T{id} aborted: {why}"));
            }
            self.pump();
        } else {
            self.request_replan(PE_DELAY_MS);
        }
    }

    /// S_IDLE: arm the recheck timer (Pacemaker's `controld_start_recheck_timer`).
    fn enter_idle(&mut self) {
        self.recheck_generation += 1;
        let g = self.recheck_generation;
        let interval = self.opts.recheck_interval_ms;
        self.after(interval, Ev::Recheck(g));
    }

    fn request_replan(&mut self, delay_ms: u64) {
        let t = self.now_ms() + delay_ms;
        if self.replan_at.is_some_and(|r| r <= t) {
            return;
        }
        self.replan_at = Some(t);
        self.at(t, Ev::Replan);
    }

    pub fn have_quorum(&self) -> bool {
        let up = self.nodes.iter().filter(|n| n.member == Member::Up).count();
        up * 2 > self.nodes.len()
    }

    fn publish(&mut self, ni: usize) {
        let name = self.nodes[ni].name.clone();
        self.nodes[ni].hist.publish(&mut self.cib, &name);
    }

    fn set_member(&mut self, ni: usize, m: Member) {
        let had_quorum = self.cib.have_quorum;
        self.nodes[ni].member = m;
        let name = self.nodes[ni].name.clone();
        record::write_member(&mut self.cib, &name, m);
        self.cib.have_quorum = self.have_quorum();
        if self.cib.have_quorum && !had_quorum {
            // Armed here; the join that brought quorum aborts at once in this simulator (see
            // `boot`), which disarms it, as any abort within the delay does in Pacemaker.
            let generation = self.quorum_timer.0 + 1;
            self.quorum_timer = (generation, false);
            self.note(
                "DC",
                "quorum gained: abort in 5 s unless another comes first",
            );
            self.after(QUORUM_GAINED_DELAY_MS, Ev::QuorumGained(generation));
        }
    }

    // ---------------------------------------------------------------- planning and firing

    fn replan(&mut self) {
        if self.active.is_some() || self.phase == Phase::Done {
            return;
        }
        self.admin_cleanup();
        // Leaving S_IDLE stops the recheck timer.
        self.recheck_generation += 1;
        let now_s = record::now_s(self.now_ms());
        self.dump_cib(&format!("T{}", self.transition_seq + 1));
        self.diff_with_pacemaker(&format!("T{}", self.transition_seq + 1));
        let t = planner::plan(self.opts.planner, &self.cib, now_s);
        self.stats.transitions += 1;
        self.transition_seq += 1;
        let id = self.transition_seq;
        if let Err(cycle) = checkers::check_acyclic(&t.graph) {
            self.violate("graph-acyclic", format!("T{id}: {cycle}"));
            return;
        }
        let node_of: Vec<usize> = t
            .observed
            .nodes
            .iter()
            .map(|n| self.node_index(&n.uname).unwrap_or(usize::MAX))
            .collect();
        let rsc_names: Vec<String> = t.observed.resources.iter().map(|r| r.id.clone()).collect();
        if t.graph.synapses.is_empty() {
            self.last_actions.clear();
            if !self.idle {
                self.note(
                    "DC",
                    format!("T{id}: nothing to do ({})", t.reconciliation.summary()),
                );
            }
            self.idle = true;
            checkers::at_idle(self, &t);
            if self.phase != Phase::Done {
                self.enter_idle();
            }
            return;
        }
        self.idle = false;
        let mut lines: Vec<String> = Vec::new();
        for s in &t.graph.synapses {
            let ga = &t.graph.actions[s.action];
            if ga.event.is_pseudo() {
                continue;
            }
            let node = ga
                .node
                .and_then(|n| node_of.get(n))
                .and_then(|&i| self.nodes.get(i))
                .map(|n| n.name.as_str())
                .unwrap_or("-");
            lines.push(format!("{}@{node}", ga.key));
        }
        let actions = lines.join(" ");
        if actions == self.last_actions {
            self.stats.repeated_transitions += 1;
        }
        self.note(
            "DC",
            format!("T{id}: {} | {actions}", t.reconciliation.summary()),
        );
        self.last_actions = actions;
        let n = t.graph.actions.len();
        let ns = t.graph.synapses.len();
        self.ignored_recurring.clear();
        self.active = Some(Active {
            id,
            graph: t.graph,
            node_of,
            rsc_names,
            confirmed: vec![false; n],
            failed: vec![false; n],
            fired: vec![false; ns],
            in_flight: BTreeMap::new(),
            aborted: false,
        });
        self.pump();
    }

    fn in_flight_counts(&self) -> (usize, BTreeMap<usize, usize>) {
        let Some(a) = &self.active else {
            return (0, BTreeMap::new());
        };
        let mut per_node: BTreeMap<usize, usize> = BTreeMap::new();
        for &ai in a.in_flight.keys() {
            let ga = &a.graph.actions[ai];
            if ga.task == "migrate_to" || ga.task == "migrate_from" {
                if let Some(n) = ga.node.and_then(|n| a.node_of.get(n)) {
                    *per_node.entry(*n).or_insert(0) += 1;
                }
            }
        }
        (a.in_flight.len(), per_node)
    }

    /// Fires what is ready; ends the transition when nothing is in flight and nothing can fire.
    pub fn pump(&mut self) {
        loop {
            let Some(a) = &self.active else { return };
            let mut ready: Vec<usize> = Vec::new();
            if !a.aborted {
                for (si, s) in a.graph.synapses.iter().enumerate() {
                    if a.fired[si] {
                        continue;
                    }
                    if s.inputs.iter().all(|&i| a.confirmed[i] && !a.failed[i]) {
                        ready.push(si);
                    }
                }
            }
            let mut progress = false;
            for si in ready {
                let (count, per_node) = self.in_flight_counts();
                let Some(a) = &self.active else { return };
                let ai = a.graph.synapses[si].action;
                let ga = &a.graph.actions[ai];
                let pseudo = ga.event.is_pseudo();
                if !pseudo && count >= self.opts.batch_limit.max(1) {
                    break;
                }
                if ga.task == "migrate_to" || ga.task == "migrate_from" {
                    if let (Some(limit), Some(n)) = (
                        self.opts.migration_limit,
                        ga.node.and_then(|n| a.node_of.get(n)),
                    ) {
                        if per_node.get(n).copied().unwrap_or(0) >= limit {
                            continue;
                        }
                    }
                }
                if let Some(a) = self.active.as_mut() {
                    a.fired[si] = true;
                }
                self.fire(ai);
                progress = true;
                if self.violation.is_some() {
                    return;
                }
            }
            if progress {
                continue;
            }
            let Some(a) = &self.active else { return };
            if !a.in_flight.is_empty() {
                return;
            }
            let id = a.id;
            let any_failed = a.failed.iter().any(|&f| f);
            let all_fired = a.fired.iter().all(|&f| f);
            let verdict = if a.aborted || any_failed {
                "stopped"
            } else if all_fired {
                "complete"
            } else {
                "terminated"
            };
            self.note("DC", format!("T{id} {verdict}"));
            self.active = None;
            if verdict == "stopped" {
                // The abort's completion action is "restart": plan again.
                self.request_replan(PE_DELAY_MS);
            } else {
                // Complete, or terminated (synapses that could never fire, no abort): the
                // controller goes to S_IDLE and waits for an abort or the recheck timer.
                self.settle(id);
            }
            return;
        }
    }

    /// The DC entered S_IDLE after transition `id` ended without an abort. The planner, asked as
    /// an observer (not a transition), says whether the cluster is settled; if it is not, the work
    /// waits for the recheck timer: a stall, which the `stall` checker reports.
    fn settle(&mut self, id: i64) {
        if self.phase == Phase::Done {
            return;
        }
        let now_s = record::now_s(self.now_ms());
        self.dump_cib(&format!("T{id}-idle"));
        self.diff_with_pacemaker(&format!("T{id}-idle"));
        let t = planner::plan(self.opts.planner, &self.cib, now_s);
        let pending: Vec<String> = t
            .graph
            .synapses
            .iter()
            .map(|s| &t.graph.actions[s.action])
            .filter(|ga| !ga.event.is_pseudo())
            .map(|ga| {
                let node = ga
                    .node
                    .and_then(|n| t.observed.nodes.get(n))
                    .map(|n| n.uname.as_str())
                    .unwrap_or("-");
                format!("{}@{node}", ga.key)
            })
            .collect();
        if t.graph.synapses.is_empty() {
            if !self.idle {
                self.note(
                    "DC",
                    format!("idle after T{id} ({})", t.reconciliation.summary()),
                );
            }
            self.idle = true;
            self.last_actions.clear();
            checkers::at_idle(self, &t);
        } else {
            self.stats.stalls += 1;
            let mut faithful = (!self.ignored_recurring.is_empty()).then(|| {
                format!(
                    "Pacemaker's controller also ignores a recurring monitor's change during the transition that scheduled it: {}",
                    self.ignored_recurring.join(" ")
                )
            });
            // Only for the two-phase model: on an atomic resource Pacemaker's reading differs.
            let two_phase = self.opts.profile.migration_model() == "two-phase";
            if faithful.is_none() && self.crm_simulate && two_phase {
                faithful = self.ask_pacemaker(id, &pending, now_s);
            }
            if faithful.is_some() {
                self.stats.faithful_stalls += 1;
            }
            self.idle = false;
            let what = if pending.is_empty() {
                "pseudo actions only".to_string()
            } else {
                pending.join(" ")
            };
            self.note(
                "DC",
                format!("idle after T{id}, but the planner still has work: {what}"),
            );
            checkers::on_stall(self, id, &what, faithful.as_deref());
        }
        if self.phase != Phase::Done {
            self.enter_idle();
        }
    }

    /// `--crm-simulate`: Pacemaker's scheduler on the CIB of a stall. Some(why) when it has work
    /// there too (the stall is Pacemaker's own; `why` says whether its actions are ours), None
    /// when it has none or cannot be asked (noted in the log).
    fn ask_pacemaker(&mut self, id: i64, pending: &[String], now_s: i64) -> Option<String> {
        let path = std::env::temp_dir().join(format!(
            "cts-sim-{}-seed{}-T{id}.xml",
            std::process::id(),
            self.opts.seed
        ));
        let asked = record::cib_document(&self.initial_xml, &self.cib, now_s)
            .and_then(|doc| std::fs::write(&path, doc).map_err(|e| e.to_string()))
            .and_then(|()| super::oracle::crm_simulate(&path));
        // A leftover temporary file is harmless; its removal failing changes nothing here.
        let _ = std::fs::remove_file(&path);
        let plan = match asked {
            Ok(p) => p,
            Err(e) => {
                self.note("SIM", format!("crm_simulate not asked: {e}"));
                return None;
            }
        };
        if plan.actions.is_empty() {
            self.note("SIM", "crm_simulate has nothing to do on this CIB");
            return None;
        }
        let mut ours = pending.to_vec();
        ours.sort();
        let same = if ours == plan.actions {
            "the same actions".to_string()
        } else {
            format!("other actions: {}", plan.actions.join(" "))
        };
        Some(format!(
            "Pacemaker 2.1.5's scheduler (crm_simulate) has work on the same CIB too, {same}"
        ))
    }

    fn confirm(&mut self, ai: usize, failed: bool) {
        if let Some(a) = self.active.as_mut() {
            a.in_flight.remove(&ai);
            a.confirmed[ai] = true;
            if failed {
                a.failed[ai] = true;
                self.quorum_timer.1 = true;
                if !a.aborted {
                    a.aborted = true;
                    let id = a.id;
                    let key = a.graph.actions[ai].key.clone();
                    self.note("DC", format!("T{id} aborted: {key} failed"));
                }
            }
        }
    }

    fn fire(&mut self, ai: usize) {
        let Some(a) = &self.active else { return };
        let ga = a.graph.actions[ai].clone();
        let tid = a.id;
        let node = ga.node.and_then(|n| a.node_of.get(n).copied());
        let rsc = ga.rsc.and_then(|r| a.rsc_names.get(r).cloned());
        match ga.event {
            EventKind::Pseudo | EventKind::GuestFence { .. } => self.confirm(ai, false),
            // The simulated cluster declares no unfencing device: an unfencing (never planned
            // here) changes nothing and succeeds.
            EventKind::Unfence => self.confirm(ai, false),
            EventKind::Fence => {
                let Some(ni) = node else {
                    self.confirm(ai, true);
                    return;
                };
                let name = self.nodes[ni].name.clone();
                let base = self.opts.fence_delay_ms;
                let delay = self.rng.range(base, base * 3);
                self.note(
                    "DC",
                    format!("T{tid} fence {name} (reboot), answer in {delay}ms"),
                );
                self.fence_pending.insert(ni);
                if let Some(a) = self.active.as_mut() {
                    a.in_flight.insert(ai, InFlight::Fence);
                }
                self.after(
                    delay,
                    Ev::FenceDone {
                        node: ni,
                        transition: tid,
                        action: ai,
                    },
                );
            }
            EventKind::Cluster => {
                let Some(ni) = node else {
                    self.confirm(ai, true);
                    return;
                };
                checkers::on_send(self, ni, &ga.key);
                if ga.task == "do_shutdown" {
                    self.do_shutdown(ni);
                }
                self.confirm(ai, false);
            }
            EventKind::RscOp => {
                let (Some(ni), Some(rsc)) = (node, rsc) else {
                    self.confirm(ai, true);
                    return;
                };
                checkers::on_send(self, ni, &ga.key);
                let op = match ga.task.as_str() {
                    "start" => OpKind::Start,
                    "stop" => OpKind::Stop,
                    "monitor" => OpKind::Monitor,
                    "migrate_to" | "migrate_from" => {
                        let Some((s, t)) = ga.migrate else {
                            self.confirm(ai, true);
                            return;
                        };
                        let a = self.active.as_ref();
                        let name = |i: usize| {
                            a.and_then(|a| a.node_of.get(i))
                                .and_then(|&n| self.nodes.get(n))
                                .map(|n| n.name.clone())
                                .unwrap_or_default()
                        };
                        if ga.task == "migrate_to" {
                            OpKind::MigrateTo { target: name(t) }
                        } else {
                            OpKind::MigrateFrom { source: name(s) }
                        }
                    }
                    other => {
                        self.note(
                            "DC",
                            format!("T{tid} {other} is not executed by the simulator; confirmed"),
                        );
                        self.confirm(ai, false);
                        return;
                    }
                };
                let migrate = ga.migrate.map(|(s, t)| {
                    let a = self.active.as_ref();
                    let name = |i: usize| {
                        a.and_then(|a| a.node_of.get(i))
                            .and_then(|&n| self.nodes.get(n))
                            .map(|n| n.name.clone())
                            .unwrap_or_default()
                    };
                    (name(s), name(t))
                });
                self.stats.actions += 1;
                self.start_op(
                    ni,
                    rsc,
                    op,
                    ga.interval_ms,
                    Origin::Graph {
                        transition: tid,
                        action: ai,
                        expected_rc: ga.expected_rc,
                    },
                    migrate,
                );
                if let Some(a) = self.active.as_mut() {
                    a.in_flight.entry(ai).or_insert(InFlight::Lost { node: ni });
                }
            }
        }
    }

    fn timeout_for(&self, rsc: &str, task: &str, interval_ms: u64) -> u64 {
        let _ = rsc;
        match task {
            "migrate_to" => self.opts.migrate_timeout_ms,
            _ => {
                let _ = interval_ms;
                self.opts.op_timeout_ms
            }
        }
    }

    /// Sends one operation to a node's executor.
    fn start_op(
        &mut self,
        ni: usize,
        rsc: String,
        op: OpKind,
        interval_ms: u64,
        origin: Origin,
        migrate: Option<(String, String)>,
    ) {
        let node = self.nodes[ni].name.clone();
        let task = op.task();
        let (tid, ai, _) = match origin {
            Origin::Graph {
                transition,
                action,
                expected_rc,
            }
            | Origin::Recurring {
                transition,
                action,
                expected_rc,
                ..
            } => (transition, action, expected_rc),
        };
        let detail = match &op {
            OpKind::MigrateTo { target } => format!(" ->{target}"),
            OpKind::MigrateFrom { source } => format!(" <-{source}"),
            _ if interval_ms > 0 => format!(" every {interval_ms}ms"),
            _ => String::new(),
        };
        if matches!(origin, Origin::Graph { .. }) {
            self.note(&node, format!("{rsc} {task}{detail} sent (T{tid} a{ai})"));
        }
        // record-pending (Pacemaker 2.1's default; always on for migrate_to): the DC writes the
        // action as pending before the result, so a node lost meanwhile still shows it.
        let pending = (interval_ms == 0 && task != "monitor").then(|| OpResult {
            rsc: rsc.clone(),
            task: task.into(),
            interval_ms: 0,
            rc: 193,
            op_status: -1,
            expected_rc: 0,
            action_id: ai,
            transition_id: tid,
            migrate: migrate.clone(),
            exit_reason: None,
        });
        if let Some(r) = &pending {
            let now_s = record::now_s(self.now_ms());
            if let Some(st) = record::node_state(&mut self.cib, &node) {
                let mut view = NodeLrm {
                    lrm: std::mem::take(&mut st.lrm),
                    ..NodeLrm::default()
                };
                view.record_pending(r, now_s);
                st.lrm = view.lrm;
            }
        }
        if task == "migrate_to" {
            self.migration_open.insert(rsc.clone());
        }
        if task == "migrate_to" {
            if let Some((vm, id, delay)) = self.remove_on_migrate.clone() {
                if vm == rsc {
                    self.remove_on_migrate = None;
                    self.after(delay, Ev::Heal(Heal::Constraint(id)));
                }
            }
        }
        if !self.nodes[ni].powered {
            self.note(
                &node,
                format!("{rsc} {task}: node is dead, no answer will come"),
            );
            return;
        }
        if self.world.is_isolated(&node) {
            self.note(
                &node,
                format!("{rsc} {task}: node cut off, the request waits in the network"),
            );
            self.nodes[ni].held_sends.push(HeldSend {
                rsc,
                op,
                interval_ms,
                origin,
                pending,
            });
            return;
        }
        self.execute_op(ni, rsc, op, interval_ms, origin, pending);
    }

    /// The node's executor receives the request and runs it.
    fn execute_op(
        &mut self,
        ni: usize,
        rsc: String,
        op: OpKind,
        interval_ms: u64,
        origin: Origin,
        pending: Option<OpResult>,
    ) {
        let task = op.task();
        let (tid, ai, expected_rc) = match origin {
            Origin::Graph {
                transition,
                action,
                expected_rc,
            }
            | Origin::Recurring {
                transition,
                action,
                expected_rc,
                ..
            } => (transition, action, expected_rc),
        };
        // A stop or a migration away cancels the recurring monitor here.
        if matches!(op, OpKind::Stop | OpKind::MigrateTo { .. }) {
            self.nodes[ni].recurring.remove(&rsc);
        }
        if let Some(r) = &pending {
            let now_s = record::now_s(self.now_ms());
            self.nodes[ni].hist.record_pending(r, now_s);
        }
        if interval_ms > 0 {
            self.generation_seq += 1;
            let generation = self.generation_seq;
            self.nodes[ni]
                .recurring
                .insert(rsc.clone(), (interval_ms, generation, tid, ai, expected_rc));
        }
        let timeout_ms = self.timeout_for(&rsc, task, interval_ms);
        let id = self.spawn_op(ni, &rsc, &op, timeout_ms);
        self.tasks.insert(
            id,
            TaskInfo {
                node: ni,
                rsc,
                op,
                interval_ms,
                origin: origin.clone(),
                started_ms: self.now_ms(),
                kill_reason: None,
            },
        );
        if let (
            Origin::Graph {
                action, transition, ..
            },
            Some(a),
        ) = (&origin, self.active.as_mut())
        {
            if a.id == *transition {
                a.in_flight.insert(*action, InFlight::Task(id));
            }
        }
        self.after(timeout_ms, Ev::OpTimeout(id));
        let st = self.kernel.resume(id);
        self.after_resume(id, st);
    }

    /// Starts the agent (or, for the fencing device, the fencer's trivial agent) on a task.
    fn spawn_op(&mut self, ni: usize, rsc: &str, op: &OpKind, timeout_ms: u64) -> TaskId {
        let node = self.nodes[ni].name.clone();
        let clock = self.kernel.clock();
        if rsc == record::FENCE_ID {
            let code = match op {
                OpKind::Monitor if !self.nodes[ni].fence_device => OcfExitCode::NotRunning,
                _ => OcfExitCode::Success,
            };
            return self.kernel.spawn(move || {
                use highlander_agent::clock::Clock;
                clock.sleep_ms(EXEC_STARTUP_MS);
                Outcome::code_only(code)
            });
        }
        let hv = self.world.hv(&node);
        let remote = match op {
            OpKind::MigrateTo { target: other } | OpKind::MigrateFrom { source: other } => {
                Some(RemoteHv {
                    hv: self.world.hv(other),
                    from: node.clone(),
                })
            }
            _ => None,
        };
        let vm = rsc.to_owned();
        let op = op.clone();
        self.kernel.spawn(move || {
            use highlander_agent::clock::Clock;
            clock.sleep_ms(EXEC_STARTUP_MS);
            executor::run(hv, remote, clock, &vm, &op, timeout_ms)
        })
    }

    pub(crate) fn after_resume(&mut self, id: TaskId, st: TaskState) {
        if state_is_live(&st) {
            if let TaskState::Sleeping { until_ms } = st {
                self.at(until_ms, Ev::Wake(id));
            }
            return;
        }
        let Some(info) = self.tasks.remove(&id) else {
            return;
        };
        let (rc, status, reason) = match st {
            TaskState::Done(Outcome { code, reason, .. }) => (i32::from(code), 0, reason),
            TaskState::Killed => match info.kill_reason {
                Some("timeout") => (1, 2, Some("action timed out".to_string())),
                Some("node") => return,
                _ => (1, 4, Some("agent killed by signal 9".to_string())),
            },
            TaskState::Panicked(p) => {
                self.violate(
                    "agent",
                    format!(
                        "{} {} on {} panicked: {p}",
                        info.rsc,
                        info.op.task(),
                        self.nodes[info.node].name
                    ),
                );
                (1, 4, Some(p))
            }
            TaskState::Ready | TaskState::Sleeping { .. } => return,
        };
        self.op_finished(info, rc, status, reason);
    }

    fn op_finished(&mut self, info: TaskInfo, rc: i32, op_status: i32, reason: Option<String>) {
        let ni = info.node;
        let node = self.nodes[ni].name.clone();
        let task = info.op.task();
        let (tid, ai, expected_rc, recurring_gen) = match info.origin {
            Origin::Graph {
                transition,
                action,
                expected_rc,
            } => (transition, action, expected_rc, None),
            Origin::Recurring {
                generation,
                transition,
                action,
                expected_rc,
            } => (transition, action, expected_rc, Some(generation)),
        };
        if let Some(g) = recurring_gen {
            // Cancelled meanwhile?
            if self.nodes[ni].recurring.get(&info.rsc).map(|r| r.1) != Some(g) {
                return;
            }
        }
        let migrate = match &info.op {
            OpKind::MigrateTo { target } => Some((node.clone(), target.clone())),
            OpKind::MigrateFrom { source } => Some((source.clone(), node.clone())),
            _ => None,
        };
        let r = OpResult {
            rsc: info.rsc.clone(),
            task: task.into(),
            interval_ms: info.interval_ms,
            rc,
            op_status,
            expected_rc,
            action_id: ai,
            transition_id: tid,
            migrate,
            exit_reason: reason.clone(),
        };
        let took = self.now_ms() - info.started_ms;
        let failed = r.failed();
        if recurring_gen.is_some() {
            // Recurring results are written only when they change.
            let last = self.nodes[ni]
                .hist
                .lrm
                .iter()
                .find(|l| l.id == info.rsc)
                .and_then(|l| l.ops.iter().find(|o| o.interval_ms == info.interval_ms))
                .map(|o| (o.rc_code, o.op_status));
            if last == Some((rc, op_status)) {
                self.schedule_recurring(ni, &info.rsc);
                return;
            }
        }
        let verdict = if failed { "FAILED" } else { "ok" };
        let why = reason.map(|r| format!(" ({r})")).unwrap_or_default();
        self.note(
            &node,
            format!(
                "{} {task} -> rc={rc} status={op_status} {verdict} in {took}ms{why}",
                info.rsc
            ),
        );
        if task == "migrate_from" && !failed {
            self.stats.migrations_ok += 1;
            self.migration_open.remove(&info.rsc);
        }

        if info.rsc == record::FENCE_ID && !failed {
            match task {
                "start" => self.nodes[ni].fence_device = true,
                "stop" => self.nodes[ni].fence_device = false,
                _ => {}
            }
        }
        let now_s = record::now_s(self.now_ms());
        let fatal = true;
        let counted =
            !(recurring_gen.is_some() && !self.world.is_isolated(&node) && self.dc_ignores(&r));
        self.nodes[ni]
            .hist
            .record_counting(&r, now_s, fatal, counted);
        if recurring_gen.is_some() || info.interval_ms > 0 {
            self.schedule_recurring(ni, &info.rsc);
        }
        if self.world.is_isolated(&node) {
            self.nodes[ni].held.push((r, recurring_gen.is_some()));
            return;
        }
        if self.nodes[ni].member != Member::Up {
            return;
        }
        self.publish(ni);
        self.deliver(r, recurring_gen.is_some());
    }

    /// Whether the DC ignores this result: its action belongs to the active transition (the
    /// transition is neither complete nor replaced) and is confirmed already. For a recurring
    /// monitor that is every result after its first while the transition that scheduled it is
    /// still active: Pacemaker 2.1.5's `process_graph_event` finds the graph action confirmed and
    /// returns, with no abort and no fail count; the change waits for a later scheduler run (an
    /// abort for another reason, or the recheck timer).
    fn dc_ignores(&self, r: &OpResult) -> bool {
        self.active
            .as_ref()
            .is_some_and(|a| a.id == r.transition_id && !a.in_flight.contains_key(&r.action_id))
    }

    /// The DC receives one result.
    /// As Pacemaker's `process_graph_event`: a result of an action in flight in the active
    /// transition confirms it (failed when its rc is not the expected one, which aborts); one the
    /// active transition already confirmed is ignored (a recurring monitor's change too, see
    /// `dc_ignores`); any other written result (a late one, a recurring monitor's change after
    /// the transition that scheduled it ended) aborts the transition, or starts a scheduler run
    /// when idle.
    fn deliver(&mut self, r: OpResult, recurring: bool) {
        let failed = r.failed();
        let ours = self
            .active
            .as_ref()
            .is_some_and(|a| a.id == r.transition_id && a.in_flight.contains_key(&r.action_id));
        if ours {
            // An action's result, or a recurring monitor's first one.
            self.confirm(r.action_id, failed);
            self.pump();
        } else if self.dc_ignores(&r) {
            // Already confirmed (counted as lost when its node left), or a recurring monitor's
            // change during the transition that scheduled it: nothing more.
            if recurring {
                let what = format!("{}_{}_{} rc={}", r.rsc, r.task, r.interval_ms, r.rc);
                self.note(
                    "DC",
                    format!(
                        "{what} ignored: its action in T{} is confirmed already",
                        r.transition_id
                    ),
                );
                self.ignored_recurring.push(what);
            }
        } else {
            let why = if recurring {
                "change in recurring result"
            } else {
                "result arrived after its transition"
            };
            self.cib_changed(&format!("{} {} rc={} ({why})", r.rsc, r.task, r.rc));
        }
    }

    fn schedule_recurring(&mut self, ni: usize, rsc: &str) {
        if let Some(&(interval, generation, ..)) = self.nodes[ni].recurring.get(rsc) {
            self.after(
                interval,
                Ev::Monitor {
                    node: ni,
                    rsc: rsc.to_owned(),
                    generation,
                },
            );
        }
    }

    fn recurring_due(&mut self, ni: usize, rsc: &str, generation: u64) {
        let Some(&(interval, g, tid, ai, expected_rc)) = self.nodes[ni].recurring.get(rsc) else {
            return;
        };
        if g != generation || !self.nodes[ni].powered {
            return;
        }
        let busy = self.tasks.values().any(|t| t.node == ni && t.rsc == rsc);
        if busy {
            self.after(
                interval,
                Ev::Monitor {
                    node: ni,
                    rsc: rsc.to_owned(),
                    generation,
                },
            );
            return;
        }
        let timeout_ms = self.opts.op_timeout_ms;
        let id = self.spawn_op(ni, rsc, &OpKind::Monitor, timeout_ms);
        self.tasks.insert(
            id,
            TaskInfo {
                node: ni,
                rsc: rsc.to_owned(),
                op: OpKind::Monitor,
                interval_ms: interval,
                origin: Origin::Recurring {
                    generation,
                    transition: tid,
                    action: ai,
                    expected_rc,
                },
                started_ms: self.now_ms(),
                kill_reason: None,
            },
        );
        self.after(timeout_ms, Ev::OpTimeout(id));
        let st = self.kernel.resume(id);
        self.after_resume(id, st);
    }

    // ---------------------------------------------------------------- nodes and fencing

    /// Kills every agent running on a node (its power went away); no results come from them.
    pub fn kill_tasks_on(&mut self, ni: usize) {
        let ids: Vec<TaskId> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.node == ni)
            .map(|(&id, _)| id)
            .collect();
        for id in ids {
            if let Some(t) = self.tasks.get_mut(&id) {
                t.kill_reason = Some("node");
            }
            let st = self.kernel.kill(id);
            self.after_resume(id, st);
        }
        self.nodes[ni].recurring.clear();
    }

    /// Power goes off (crash, fence, end of shutdown).
    pub fn power_off(&mut self, ni: usize) -> Vec<String> {
        self.kill_tasks_on(ni);
        self.nodes[ni].powered = false;
        self.nodes[ni].fence_device = false;
        self.nodes[ni].held.clear();
        self.nodes[ni].held_sends.clear();
        let name = self.nodes[ni].name.clone();
        self.world.power_off(&name)
    }

    fn do_shutdown(&mut self, ni: usize) {
        let name = self.nodes[ni].name.clone();
        let running: Vec<String> = self
            .vms
            .iter()
            .filter(|vm| self.world.running_on(vm).contains(&name))
            .cloned()
            .collect();
        if !running.is_empty() {
            self.violate(
                "vm-lost",
                format!(
                    "{name} shuts down while {} still run there",
                    running.join(",")
                ),
            );
        }
        self.power_off(ni);
        self.nodes[ni].hist = NodeLrm {
            call_id: self.nodes[ni].hist.call_id,
            ..NodeLrm::default()
        };
        self.nodes[ni].shutting_down = false;
        self.publish(ni);
        self.set_member(ni, Member::Down);
        self.lose_actions_on(ni);
        self.note(&name, "shut down cleanly, left the cluster");
        let reboot = self.opts.reboot_ms;
        self.after(reboot, Ev::Boot { node: ni });
        self.cib_changed("node left");
    }

    fn fence_done(&mut self, ni: usize, transition: i64, action: usize) {
        self.fence_pending.remove(&ni);
        let name = self.nodes[ni].name.clone();
        let fail = self.phase == Phase::Safety && self.rng.chance(self.opts.fence_fail_per_mille);
        let ours = self.active.as_ref().is_some_and(|a| a.id == transition);
        if fail {
            self.note("FENCE", format!("fencing {name} FAILED"));
            if ours {
                self.confirm(action, true);
                self.pump();
            }
            return;
        }
        let had_quorum = self.have_quorum();
        let killed = self.power_off(ni);
        self.world.reconnect(&name);
        self.nodes[ni].hist = NodeLrm {
            call_id: self.nodes[ni].hist.call_id,
            ..NodeLrm::default()
        };
        self.nodes[ni].shutting_down = false;
        self.publish(ni);
        self.set_member(ni, Member::Down);
        self.lose_actions_on(ni);
        let lost = if killed.is_empty() {
            String::new()
        } else {
            format!(" (destroyed: {})", killed.join(","))
        };
        self.note("FENCE", format!("{name} fenced: powered off{lost}"));
        let reboot = self.opts.reboot_ms;
        self.after(reboot, Ev::Boot { node: ni });
        if ours {
            // The transition expected this node down: confirmed, no abort (the controller's
            // peer callback finds the down event).
            self.confirm(action, false);
            if had_quorum && !self.have_quorum() {
                // Pacemaker's membership callback aborts on quorum lost.
                self.cib_changed("quorum lost");
            } else {
                self.pump();
            }
        } else {
            self.cib_changed("node fenced outside the transition");
        }
    }

    /// Membership notices that a node is gone (crash or isolation).
    fn detect(&mut self, ni: usize) {
        let name = self.nodes[ni].name.clone();
        let gone = !self.nodes[ni].powered || self.world.is_isolated(&name);
        if !gone || self.nodes[ni].member != Member::Up {
            return;
        }
        self.nodes[ni].held.clear();
        self.nodes[ni].held_sends.clear();
        self.set_member(ni, Member::Lost);
        self.note("MEMBER", format!("{name} lost (unclean)"));
        self.lose_actions_on(ni);
        self.cib_changed("node lost");
    }

    /// The node left the membership: actions in flight there will never answer, so the DC
    /// counts them as failed (Pacemaker's "incompletable" actions).
    fn lose_actions_on(&mut self, ni: usize) {
        let lost: Vec<usize> = self
            .active
            .as_ref()
            .map(|a| {
                a.in_flight
                    .iter()
                    .filter(|&(&ai, f)| {
                        let here =
                            a.graph.actions[ai].node.and_then(|n| a.node_of.get(n)) == Some(&ni);
                        match f {
                            InFlight::Fence => false,
                            InFlight::Lost { node } => *node == ni,
                            InFlight::Task(id) => {
                                here || self.tasks.get(id).is_some_and(|t| t.node == ni)
                            }
                        }
                    })
                    .map(|(&ai, _)| ai)
                    .collect()
            })
            .unwrap_or_default();
        for ai in lost {
            self.confirm(ai, true);
        }
    }

    fn boot(&mut self, ni: usize) {
        let name = self.nodes[ni].name.clone();
        if self.nodes[ni].powered && self.nodes[ni].member == Member::Up {
            return;
        }
        self.nodes[ni].powered = true;
        self.world.power_on(&name);
        self.world.reconnect(&name);
        self.nodes[ni].hist = NodeLrm {
            call_id: self.nodes[ni].hist.call_id,
            ..NodeLrm::default()
        };
        self.publish(ni);
        self.set_member(ni, Member::Up);
        self.note("MEMBER", format!("{name} booted and joined"));
        self.cib_changed("node joined");
    }

    pub fn heal(&mut self, h: Heal) {
        match h {
            Heal::Daemon(ni) => {
                let name = self.nodes[ni].name.clone();
                if self.world.daemon(&name) != highlander_agent::mem::Daemon::Up
                    && self.nodes[ni].powered
                {
                    self.world
                        .set_daemon(&name, highlander_agent::mem::Daemon::Up);
                    self.note("HEAL", format!("libvirtd on {name} back"));
                }
            }
            Heal::Constraint(id) => {
                if record::remove_location(&mut self.cib, &id) {
                    self.note("ADMIN", format!("constraint {id} removed"));
                    self.cib_changed("configuration change");
                }
            }
            Heal::Standby(ni) => {
                if self.nodes[ni].standby {
                    self.nodes[ni].standby = false;
                    let name = self.nodes[ni].name.clone();
                    record::set_node_attr(&mut self.cib, &name, "standby", None);
                    self.note("ADMIN", format!("{name} restored (standby off)"));
                    self.cib_changed("configuration change");
                }
            }
            Heal::Reconnect(ni) => {
                let name = self.nodes[ni].name.clone();
                if !self.world.is_isolated(&name) || self.nodes[ni].member != Member::Up {
                    return;
                }
                self.world.reconnect(&name);
                self.note(
                    "NET",
                    format!("{name} reconnected before membership noticed"),
                );
                let held = std::mem::take(&mut self.nodes[ni].held);
                let sends = std::mem::take(&mut self.nodes[ni].held_sends);
                // One publish, after the held requests ran: publishing before them would erase
                // the pending entries the DC wrote when it sent them. Delivering a held result
                // reads no status (a replan it causes comes later), so it need not come first.
                for (r, recurring) in held {
                    self.deliver(r, recurring);
                }
                for h in sends {
                    self.execute_op(ni, h.rsc, h.op, h.interval_ms, h.origin, h.pending);
                }
                self.publish(ni);
            }
        }
    }

    fn start_liveness(&mut self) {
        if self.phase != Phase::Safety {
            return;
        }
        self.note("SIM", "faults stop; healing; liveness phase");
        self.phase = Phase::Liveness {
            since_ms: self.now_ms(),
            since_transitions: self.stats.progress_transitions(),
        };
        self.world.clear_faults();
        for ni in 0..self.nodes.len() {
            self.heal(Heal::Daemon(ni));
            self.heal(Heal::Standby(ni));
        }
        let ids: Vec<String> = self
            .cib
            .locations
            .iter()
            .filter(|l| l.id.starts_with("cli-"))
            .map(|l| l.id.clone())
            .collect();
        for id in ids {
            self.heal(Heal::Constraint(id));
        }
        // crm_resource --cleanup, once every node is back (see `admin_cleanup`).
        self.cleanup_pending = true;
        self.cib_changed("liveness phase");
    }

    /// `crm_resource --cleanup`, as an administrator runs it after the faults: every resource with
    /// a failure recorded forgets its history and fail counts, and is probed again. Only when every
    /// node is up and reachable: a cleanup that erases the history a cut-off node still holds
    /// makes the DC forget a copy that may run there.
    fn admin_cleanup(&mut self) {
        // Nor while a node is shutting down: pengine then plans the re-probes and the
        // do_shutdown together, unordered (open question in the report).
        let healthy = self.nodes.iter().all(|n| {
            n.powered
                && n.member == Member::Up
                && !n.shutting_down
                && !self.world.is_isolated(&n.name)
        });
        if !self.cleanup_pending || !healthy {
            return;
        }
        self.cleanup_pending = false;
        let failed: Vec<String> = self
            .vms
            .iter()
            .filter(|vm| self.nodes.iter().any(|n| n.hist.has_failure(vm)))
            .cloned()
            .collect();
        for vm in &failed {
            for ni in 0..self.nodes.len() {
                self.nodes[ni].hist.cleanup(vm);
                self.publish(ni);
            }
        }
        if !failed.is_empty() {
            self.note(
                "ADMIN",
                format!("crm_resource --cleanup ({})", failed.join(",")),
            );
        }
    }

    /// Whether every enabled VM runs exactly once, by the hypervisors.
    pub fn converged(&self) -> bool {
        self.vms
            .iter()
            .all(|vm| self.world.running_on(vm).len() == 1)
    }

    pub fn phase_done(&mut self) {
        self.phase = Phase::Done;
    }
}
