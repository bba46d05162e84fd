//! pengine: Pacemaker 2.1.5's transition planning as a pure library: a CIB in, a plan out.
//!
//! ```no_run
//! let text = std::fs::read_to_string("cib.xml").unwrap();
//! let cib = pengine::Cib::parse(&text).unwrap();
//! let now = cib.execution_date.unwrap_or(1_700_000_000);
//! let plan = cib.plan(now);
//! print!("{}", plan.summary()); // the "Transition Summary" lines of crm_simulate
//! let graph_xml = plan.graph_xml(); // what `crm_simulate -G` writes
//! # let _ = graph_xml;
//! ```
//!
//! The public API is this file: [`Cib`] (read with [`Cib::parse`] or, to write it back,
//! [`CibDocument`]), [`Plan`] (summary, graph XML, DOT, scores) with [`PlanOptions`], the
//! what-if simulation [`WhatIf`] (injections as methods) giving a [`Simulation`], the
//! explanation [`Explanation`], the node lifecycle writer's changes ([`Cib::node_request`]) and
//! the scenario runner ([`run_scenario`]). Everything else is private; the `unstable` module
//! (hidden from the documentation) gives this workspace's own simulator and white-box tests the
//! pipeline's internals and is no API.
//!
//! No I/O here: no clock, no environment, no processes. "Now" is an input, in seconds since the
//! epoch. Stages run one way, in the order `tests/tidy.rs` lists: `cib` -> `observed` ->
//! `placement` -> `reconcile` (-> `unfencing`) -> `actions` -> `graph` -> `simulate`; the
//! feature modules plug into them through `pipeline.rs`.

#![deny(missing_docs)]

mod actions;
mod atomic;
mod bundles;
mod cib;
mod clone_groups;
mod clones;
mod container;
mod digest;
mod events;
mod explain;
mod graph;
mod guest;
mod lifecycle;
mod notifications;
mod observed;
mod one_or_more;
mod op_defaults;
mod pipeline;
mod placement;
mod probe_restarts;
mod promotable;
mod recheck;
mod reconcile;
mod recovery;
mod remote;
mod rules;
mod scenario;
mod shutdown_lock;
mod simulate;
mod status;
mod summary;
mod tickets;
mod unfencing;

pub(crate) use pipeline::{Transition, schedule, schedule_traced};

pub use atomic::MigrationModel;
pub use cib::{Cib, CibError, Diagnostic, SCHEMA_VALIDATION_DISABLED};
pub use events::EventError;
pub use explain::ExplainError;
pub use lifecycle::{CibChange, LifecycleError, NodeRequest, Pin};
pub use pipeline::RunTo;
pub use scenario::ScenarioError;
pub use simulate::{Injection, InjectionError, OpSpec, TicketChange};

/// Parses a CIB document (the same as [`Cib::parse`]).
pub fn parse_cib(text: &str) -> Result<Cib, CibError> {
    cib::parse_cib(text)
}

/// Parses an ISO 8601 date as `crm_simulate -t` takes it (`2024-05-01 12:00:00Z`,
/// `2005-020T12:30`, ...) into seconds since the epoch; `None` when it is not one.
pub fn parse_iso_date(text: &str) -> Option<i64> {
    rules::parse_iso_date(text)
}

/// A time in seconds since the epoch as crm_simulate prints a CIB's `execution-date`
/// (`2024-05-01 12:00:00Z`).
pub fn format_date(epoch_s: i64) -> String {
    let days = epoch_s.div_euclid(86400);
    let secs = epoch_s.rem_euclid(86400);
    let (y, m, d) = rules::civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}Z",
        secs / 3600,
        (secs / 60) % 60,
        secs % 60
    )
}

impl OpSpec {
    /// Reads an operation spec as crm_simulate's `-i` and `-F` take it:
    /// `RSC_TASK_INTERVAL@NODE=RC` (`vm1_monitor_10000@node1=7`).
    pub fn parse(text: &str) -> Result<OpSpec, InjectionError> {
        simulate::parse_op_spec(text)
    }
}

/// How [`Cib::plan_with`] plans, besides the CIB and the time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlanOptions {
    /// Plan every resource in this migration model, whatever its `migration-model`
    /// meta-attribute or its agent's default says. [`MigrationModel::TwoPhase`] plans exactly as
    /// Pacemaker 2.1.5 does, for a comparison with Pacemaker's own graph.
    pub migration_model: Option<MigrationModel>,
}

impl PlanOptions {
    /// Plans every resource in `model` (see [`PlanOptions::migration_model`]).
    pub fn force_migration_model(mut self, model: MigrationModel) -> PlanOptions {
        self.migration_model = Some(model);
        self
    }
}

impl Cib {
    /// Parses a CIB document: the configuration and the status section. Errors only for text
    /// that is not a CIB at all; what Pacemaker ignores or repairs is kept in
    /// [`Cib::diagnostics`].
    pub fn parse(text: &str) -> Result<Cib, CibError> {
        cib::parse_cib(text)
    }

    /// Plans the transition as Pacemaker's scheduler does at `now` (seconds since the epoch).
    pub fn plan(&self, now: i64) -> Plan {
        Plan {
            t: schedule(self, now),
        }
    }

    /// [`Cib::plan`] with options (e.g. every resource in the two-phase migration model).
    pub fn plan_with(&self, now: i64, options: &PlanOptions) -> Plan {
        match options.migration_model {
            None => self.plan(now),
            Some(model) => {
                let mut forced = self.clone();
                forced.migration_model_override = Some(model.as_str());
                forced.plan(now)
            }
        }
    }

    /// Why `rsc` goes where it goes at `now`: per node every score change and filter. A group,
    /// clone or bundle is explained resource by resource.
    pub fn explain(&self, now: i64, rsc: &str) -> Result<Explanation, ExplainError> {
        Ok(Explanation {
            explained: explain::explain_all(self, now, rsc)?,
        })
    }

    /// A what-if simulation of this CIB at `now`: add injections, then [`WhatIf::run`].
    pub fn what_if(&self, now: i64) -> WhatIf<'_> {
        WhatIf {
            cib: self,
            now,
            injections: Vec::new(),
            op_fail: Vec::new(),
            inject_time: None,
            show_date: None,
            summary: false,
            run_to: RunTo::Revised,
        }
    }

    /// The changes a node lifecycle request (evacuate, restore, shutdown, sync) needs written to
    /// the live CIB at `now`, in order; `pengine node` writes them with Pacemaker's tools.
    pub fn node_request(
        &self,
        now: i64,
        request: &NodeRequest,
    ) -> Result<Vec<CibChange>, LifecycleError> {
        lifecycle::sync(self, now, request)
    }
}

/// A CIB document kept as read, to write it back with a new status section (`crm_simulate -O`).
#[derive(Debug, Clone)]
pub struct CibDocument {
    root: cib::Element,
}

impl CibDocument {
    /// Reads the XML document (it need not be a CIB yet: see [`CibDocument::cib`]).
    pub fn parse(text: &str) -> Result<CibDocument, CibError> {
        Ok(CibDocument {
            root: cib::parse_xml(text)?,
        })
    }

    /// The document as a CIB (what [`Cib::parse`] gives for the same text).
    pub fn cib(&self) -> Result<Cib, CibError> {
        cib::cib_from_element(&self.root)
    }

    /// The document as XML with the quorum and the whole status section taken from `cib`, the
    /// rest (root attributes, configuration) as read: what `crm_simulate -O` writes.
    pub fn render_with_status(&self, cib: &Cib) -> String {
        simulate::render_cib_xml(&self.root, cib)
    }
}

/// One planned transition: what Pacemaker's scheduler decided for a CIB at one time.
#[derive(Debug, Clone)]
pub struct Plan {
    t: Transition,
}

impl Plan {
    /// The "Transition Summary" lines as `crm_simulate` prints them (each ending in a newline;
    /// empty when nothing changes).
    pub fn summary(&self) -> String {
        let t = &self.t;
        graph::render_summary(&t.observed, &t.plan, &t.reconciliation, &t.graph)
    }

    /// The "Transition Summary" lines of [`Plan::summary`] one by one, as printed (with the
    /// leading `  * ` and the column padding, without the newline).
    pub fn summary_lines(&self) -> Vec<String> {
        self.summary().lines().map(str::to_string).collect()
    }

    /// The transition graph XML, exactly as `pengine simulate -G` (and `crm_simulate -G`) writes
    /// it.
    pub fn graph_xml(&self) -> String {
        graph::render_graph_xml(&self.t.observed, &self.t.graph)
    }

    /// The transition graph as DOT, as `simulate -D` writes it.
    pub fn dot(&self) -> String {
        graph::render_dot(&self.t.observed, &self.t.graph)
    }

    /// The allocation scores, as `simulate -s` prints them.
    pub fn scores(&self) -> String {
        graph::render_scores(&self.t.observed, &self.t.desired)
    }

    /// The pipeline's internals, for this workspace's simulator and white-box tests only.
    #[doc(hidden)]
    pub fn transition(&self) -> &unstable::Transition {
        &self.t
    }
}

/// Why resources go where they go (see [`Cib::explain`]).
#[derive(Debug, Clone)]
pub struct Explanation {
    explained: Vec<(Transition, placement::Trace)>,
}

impl Explanation {
    /// The explanation as text: per resource what the transition does with it, then per node its
    /// total, the filter's verdict and every score change, then the notes.
    pub fn render(&self) -> String {
        explain::render_all(&self.explained)
    }
}

/// A what-if simulation (`crm_simulate -S` with injections), built with [`Cib::what_if`]. The
/// injections apply in crm_simulate's order: the order they are added, which the CLI keeps as
/// quorum, node up, node down, node fail, tickets, operation results.
#[derive(Debug, Clone)]
pub struct WhatIf<'a> {
    cib: &'a Cib,
    now: i64,
    injections: Vec<Injection>,
    op_fail: Vec<OpSpec>,
    inject_time: Option<i64>,
    show_date: Option<String>,
    summary: bool,
    run_to: RunTo,
}

impl WhatIf<'_> {
    /// Adds an injection.
    pub fn inject(mut self, injection: Injection) -> Self {
        self.injections.push(injection);
        self
    }

    /// Sets whether the cluster has quorum (`-q`: `1`/`true` or `0`/`false`; crm_simulate 2.1.5
    /// applies it only together with another injection).
    pub fn quorum(self, value: &str) -> Result<Self, InjectionError> {
        Ok(self.inject(simulate::parse_quorum(value)?))
    }

    /// The node joins the cluster (`-u`).
    pub fn node_up(self, node: &str) -> Result<Self, InjectionError> {
        Ok(self.inject(Injection::NodeUp(simulate::parse_node(node)?)))
    }

    /// The node leaves cleanly (`-d`).
    pub fn node_down(self, node: &str) -> Result<Self, InjectionError> {
        Ok(self.inject(Injection::NodeDown(simulate::parse_node(node)?)))
    }

    /// The node fails (`-f`).
    pub fn node_fail(self, node: &str) -> Result<Self, InjectionError> {
        Ok(self.inject(Injection::NodeFail(simulate::parse_node(node)?)))
    }

    /// A ticket is granted, revoked, made standby or activated (`-g`, `-r`, `-b`, `-e`).
    pub fn ticket(self, change: TicketChange, ticket: &str) -> Result<Self, InjectionError> {
        let ticket = simulate::parse_ticket(ticket)?;
        Ok(self.inject(Injection::Ticket { change, ticket }))
    }

    /// An operation result is recorded before planning (`-i`, e.g. `vm1_monitor_10000@node1=7`).
    pub fn op_inject(self, spec: &str) -> Result<Self, InjectionError> {
        Ok(self.inject(Injection::Op(simulate::parse_op_spec(spec)?)))
    }

    /// The action fails with the spec's rc when the transition runs (`-F`, e.g.
    /// `vm1_migrate_to_0@node1=1`); every other action succeeds.
    pub fn op_fail(mut self, spec: &str) -> Result<Self, InjectionError> {
        self.op_fail.push(simulate::parse_op_spec(spec)?);
        Ok(self)
    }

    /// The time written into injected and executed results and fail counts (crm_simulate uses
    /// its clock); the planning time when unset.
    pub fn results_at(mut self, epoch_s: i64) -> Self {
        self.inject_time = Some(epoch_s);
        self
    }

    /// Prints "Using the original execution date of: DATE" as crm_simulate does for a CIB with
    /// an `execution-date`.
    pub fn show_date(mut self, date: &str) -> Self {
        self.show_date = Some(date.to_string());
        self
    }

    /// How far [`WhatIf::run`] goes: the status and modifications only (crm_simulate without
    /// `-R` or `-S`), up to the transition summary (`-R`), or the whole run (`-S`, the default).
    /// Stopped before the run, the result CIB is the injected one and there is no JSON report.
    pub fn run_to(mut self, run_to: RunTo) -> Self {
        self.run_to = run_to;
        self
    }

    /// Also keeps the report as data, for [`Simulation::to_json`].
    pub fn with_json(mut self) -> Self {
        self.summary = true;
        self
    }

    /// The CIB after the injections alone (nothing planned or run yet).
    pub fn injected(&self) -> std::borrow::Cow<'_, Cib> {
        if self.injections.is_empty() {
            return std::borrow::Cow::Borrowed(self.cib);
        }
        let when = self.inject_time.unwrap_or(self.now);
        std::borrow::Cow::Owned(simulate::inject(self.cib, &self.injections, when, self.now).cib)
    }

    /// Plans the injected CIB (what `simulate -s`, `-G` and `-D` show with injections).
    pub fn plan(&self) -> Plan {
        self.injected().plan(self.now)
    }

    /// Runs it: the status, the injections, the planned transition, its execution (with the
    /// `-F` failures) and the revised status.
    pub fn run(&self) -> Simulation {
        let input = pipeline::SimulationInput {
            show_date: self.show_date.as_deref(),
            injections: &self.injections,
            op_fail: &self.op_fail,
            inject_time: self.inject_time,
            summary: self.summary,
            run_to: self.run_to,
        };
        let sim = pipeline::run_simulation(self.cib, self.now, &input);
        Simulation { sim }
    }
}

/// What a what-if simulation reports (see [`WhatIf::run`]).
#[derive(Debug, Clone)]
pub struct Simulation {
    sim: pipeline::Simulation,
}

impl Simulation {
    /// The text `crm_simulate -S` prints.
    pub fn text(&self) -> &str {
        &self.sim.text
    }

    /// The CIB after the transition ran (what `-O` writes, with [`CibDocument`]).
    pub fn cib(&self) -> &Cib {
        &self.sim.result
    }

    /// What crm_simulate reports on stderr (injections naming nothing configured).
    pub fn errors(&self) -> &[String] {
        &self.sim.errors
    }

    /// The report as one JSON document (`--output-as json`); `None` unless built
    /// [`WhatIf::with_json`].
    pub fn to_json(&self) -> Option<String> {
        let summary = self.sim.summary.as_ref()?;
        serde_json::to_string_pretty(&summary.to_json()).ok()
    }
}

/// The text `crm_simulate -S` prints for this CIB at `now`, without injections.
pub fn render_simulation(cib: &Cib, now: i64) -> String {
    cib.what_if(now).run().sim.text
}

/// Runs a recovery scenario (`pengine/scenarios/recovery/*/cmdlist`): the events of `cmdlist`
/// replayed from the CIB over virtual time starting at `start` (seconds since the epoch), each
/// transition run to its end; the log of what happened.
pub fn run_scenario(cib_text: &str, cmdlist: &str, start: i64) -> Result<String, ScenarioError> {
    scenario::run(cib_text, cmdlist, start)
}

/// White-box access to the pipeline's internals for this workspace's cluster simulator
/// (`test-cts`), its fuzz targets and pengine's own property tests. No API: it changes with the
/// code, and the list below may only shrink as the public API grows.
#[doc(hidden)]
#[allow(missing_docs)]
pub mod unstable {
    pub use crate::atomic::{
        Answer, Decision, Doubt, Location, Migration, NodeHistory, OpRecord, Presence, Step, Steps,
        Task, TransitionId, decide, locate,
    };
    pub use crate::cib::{
        Element, INFINITY, Location as LocationConstraint, LrmResource, NodeState, NvSet, RscOp,
        parse_interval_ms, parse_score, parse_xml,
    };
    pub use crate::explain::{explain, explain_all, fold, render, render_all};
    pub use crate::graph::{
        EventKind, GraphAction, TransitionGraph, render_graph_xml, summary_lines,
    };
    // highlander-schedulerd's plan.rs (its Pacemaker-equivalent plan strips Highlander's
    // policies and forces two-phase in the CIB; its log names atomic and policy decisions).
    pub use crate::atomic::MIGRATION_MODEL_META;
    pub use crate::cib::{Primitive, ResourceDef};
    pub use crate::lifecycle::{
        FAILBACK, ORIGIN_CAUSE, ORIGIN_NODE, ORIGIN_SINCE, SHUTDOWN_POLICY, Update, updates,
    };
    pub use crate::observed::{Role, configured_digest, observe};
    pub use crate::pipeline::{Transition, schedule};
    pub use crate::placement::Trace;
    pub use crate::reconcile::Change;
    pub use crate::recovery::{RELOCATIONS, RESTARTS};
    pub use crate::rules::{RscData, eval_rule};
    pub use crate::simulate::render_cib_xml;
    pub use crate::status::primitive_line;

    /// Whether the resource index is part of a bundle replica.
    pub fn is_replica_part(t: &Transition, ri: usize) -> bool {
        crate::bundles::is_replica_part(&t.observed, ri)
    }
}
