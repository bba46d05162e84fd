//! The pipeline: runs the stages in order on one CIB (`schedule`), and the whole `crm_simulate -S`
//! report around it (`run_simulation`). The public API in `lib.rs` wraps these.

use crate::cib::Cib;
use crate::{
    actions, atomic, bundles, graph, lifecycle, observed, placement, recheck, reconcile, recovery,
    remote, shutdown_lock, simulate, status, summary, tickets, unfencing,
};

/// Everything one scheduler run produces.
#[derive(Debug, Clone)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct Transition {
    pub observed: observed::Observed,
    pub desired: placement::Desired,
    pub reconciliation: reconcile::Reconciliation,
    pub plan: actions::Plan,
    pub graph: graph::TransitionGraph,
    /// Atomic resources with an open migration (see `atomic`).
    pub atomic: atomic::AtomicView,
    /// What the recovery policies decided (see `recovery`).
    pub recovery: Vec<recovery::Note>,
    /// What the node lifecycle rules decided (see `lifecycle`).
    pub lifecycle: Vec<lifecycle::Note>,
    /// What ticket dependencies did (see `tickets`).
    pub tickets: Vec<tickets::Note>,
}

/// Runs the pipeline on a CIB at time `now` (seconds since the epoch).
pub fn schedule(cib: &Cib, now: i64) -> Transition {
    schedule_traced(cib, now, None).0
}

/// Runs the pipeline, recording why the resource `explain` (an id) goes where it goes (see
/// `placement::Trace`; None when no such resource is configured).
pub fn schedule_traced(
    cib: &Cib,
    now: i64,
    explain: Option<&str>,
) -> (Transition, Option<placement::Trace>) {
    let mut observed = observed::observe(cib, now);
    // Ticket dependencies (no-op without `rsc_ticket`): bans, fencing, freezing.
    let tickets = tickets::apply(cib, &mut observed);
    // Pacemaker's shutdown locks (no-op unless the `shutdown-lock` option is set): bans only.
    shutdown_lock::apply(&mut observed);
    // The earliest change of an evaluated date rule (the graph's `recheck-by`).
    recheck::apply(cib, &mut observed);
    // Recovery policies and node lifecycle rules (no-ops without their attributes): they only add
    // bans and preferences before placement.
    let recovery = recovery::apply(&mut observed);
    let lifecycle = lifecycle::apply(cib, &mut observed);
    // Atomic migration model hooks (no-ops for two-phase resources): see `atomic`.
    let mut atomic = atomic::observe(cib, &mut observed);
    let target = explain.and_then(|id| observed.rsc_index(id));
    let (desired, trace) = placement::place_traced(cib, &observed, target);
    // Remote nodes are online from here on when their connection runs (see `remote`).
    remote::connections_assigned(&mut observed, &desired.assigned);
    bundles::check_connection_definitions(cib, &mut observed);
    remote::fence_unrecoverable(&mut observed, &desired);
    let mut recovery = recovery;
    recovery::after_placement(&observed, &desired, &mut recovery);
    let mut reconciliation = reconcile::reconcile(&observed, &desired);
    // Atomic decisions first, so dependents see them; again after the ordering propagation, so a
    // dependency cannot turn an atomic resource's plan into a stop and start.
    atomic::reconcile(&mut atomic, &observed, &desired, &mut reconciliation);
    reconcile::propagate_orderings(&observed, &desired, &mut reconciliation);
    atomic::reconcile(&mut atomic, &observed, &desired, &mut reconciliation);
    // Unfencing (no-op unless the configuration declares it): see `unfencing`.
    unfencing::plan(&observed, &desired, &mut reconciliation);
    let mut plan = actions::build(&observed, &desired, &reconciliation);
    atomic::amend_plan(&atomic, &observed, &reconciliation, &mut plan);
    let mut graph = graph::expand(&observed, &plan);
    atomic::amend_graph(&atomic, &mut graph);
    let transition = Transition {
        observed,
        desired,
        reconciliation,
        plan,
        graph,
        atomic,
        recovery,
        lifecycle,
        tickets,
    };
    (transition, trace)
}

/// What a `pengine simulate -S` run takes besides the CIB and "now".
#[derive(Debug, Clone, Copy, Default)]
pub struct SimulationInput<'a> {
    /// Printed as "Using the original execution date of: ..." when set.
    pub show_date: Option<&'a str>,
    /// `-q -u -d -f -i`: applied to the CIB before scheduling (see `simulate::inject`).
    pub injections: &'a [simulate::Injection],
    /// `-F`: resource actions that fail with the given rc when the transition runs.
    pub op_fail: &'a [simulate::OpSpec],
    /// The time written into injected and executed results and fail counts (crm_simulate uses
    /// the clock); `now` when unset.
    pub inject_time: Option<i64>,
    /// Also return the summary as data (`Simulation::summary`, for `--output-as json`).
    pub summary: bool,
    /// How far the report goes: crm_simulate without `-R`/`-S`, with `-R`, or with `-S`.
    pub run_to: RunTo,
}

/// How far a simulation report goes, as crm_simulate's operations choose it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunTo {
    /// The current status and the requested modifications (no `-R`, no `-S`).
    Status,
    /// Also the planned transition's summary, nothing run (`-R`).
    Summary,
    /// Also the transition run and the revised status (`-S`).
    #[default]
    Revised,
}

/// The text `crm_simulate -S` prints, and the CIB after the transition ran (`-O`).
#[derive(Debug, Clone)]
pub struct Simulation {
    pub text: String,
    pub result: Cib,
    /// What crm_simulate reports on stderr (injections naming no configured resource).
    pub errors: Vec<String>,
    /// The same information as `text`, as data (when `SimulationInput::summary` is set).
    pub summary: Option<summary::SimulationSummary>,
}

/// A report that stops before the transition runs: no blank line at its end, and the injected
/// CIB as its result (what crm_simulate's `-O` writes then).
fn stopped(mut text: String, injected: Option<simulate::Injected>, cib: &Cib) -> Simulation {
    while text.ends_with("\n\n") {
        text.pop();
    }
    let (result, errors) = match injected {
        Some(i) => (i.cib, i.errors),
        None => (cib.clone(), Vec::new()),
    };
    Simulation {
        text,
        result,
        errors,
        summary: None,
    }
}

/// Runs what `crm_simulate -S [-q -u -d -f -i -F]` runs: the status of `cib`, the injections,
/// the transition planned for the injected CIB, its execution (with `-F` failures) and the
/// revised status.
pub fn run_simulation(cib: &Cib, now: i64, input: &SimulationInput) -> Simulation {
    let show_date = input.show_date;
    let when = input.inject_time.unwrap_or(now);
    let injected =
        (!input.injections.is_empty()).then(|| simulate::inject(cib, input.injections, when, now));
    let planned = injected.as_ref().map(|i| &i.cib).unwrap_or(cib);
    let t = schedule(planned, now);
    // The status before the injections, and before the scheduler's ticket effects.
    let before =
        (injected.is_some() || tickets::alters_status(&t.tickets) || remote::any(&t.observed))
            .then(|| observed::observe(cib, now));
    let current = before.as_ref().unwrap_or(&t.observed);
    let mut out = String::new();
    if let Some(d) = show_date {
        out.push_str(&format!("Using the original execution date of: {d}\n"));
    }
    let mut printed = false;
    if current.maintenance_mode {
        out.push_str("\n              *** Resource management is DISABLED ***\n");
        out.push_str("  The cluster will not attempt to start, stop or recover services\n");
        printed = true;
    }
    // (crm_simulate 2.1.5 prints no banner for stop-all-resources.)
    let counted: Vec<&observed::Resource> = current
        .resources
        .iter()
        .filter(|r| !r.orphan || r.role > observed::Role::Stopped)
        .collect();
    let disabled = counted
        .iter()
        .filter(|r| {
            r.meta
                .get("target-role")
                .and_then(|v| observed::Role::parse(v))
                == Some(observed::Role::Stopped)
        })
        .count();
    let blocked = counted.iter().filter(|r| r.blocked).count();
    if disabled > 0 || blocked > 0 {
        if printed {
            out.push('\n');
        }
        out.push_str(&format!(
            "{disabled} of {} resource instances DISABLED and {blocked} BLOCKED from further action due to failure\n\n",
            counted.len()
        ));
    } else if printed {
        // (the spacer crm_simulate prints after any banner)
        out.push('\n');
    }
    out.push_str("Current cluster status:\n");
    out.push_str(&status::render_status(current, true));
    out.push('\n');
    if let Some(i) = injected.as_ref().filter(|i| !i.lines.is_empty()) {
        out.push_str("Performing Requested Modifications:\n");
        out.push_str(&i.lines);
        // crm_simulate reads the modified CIB again, saying the date again (pcmk__simulate).
        if let Some(d) = show_date {
            out.push_str(&format!("Using the original execution date of: {d}\n"));
        }
        out.push('\n');
    }
    if input.run_to == RunTo::Status {
        return stopped(out, injected, cib);
    }
    out.push_str("Transition Summary:\n");
    out.push_str(&graph::render_summary(
        &t.observed,
        &t.plan,
        &t.reconciliation,
        &t.graph,
    ));
    let notes = atomic::render_notes(&t.atomic, &t.observed);
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes);
    }
    for notes in [
        recovery::render_notes(&t.recovery),
        lifecycle::render_notes(&t.lifecycle),
    ] {
        if !notes.is_empty() {
            out.push('\n');
            out.push_str(&notes);
        }
    }
    if input.run_to == RunTo::Summary {
        return stopped(out, injected, cib);
    }
    // `-F`: a named resource action is flagged failed with the spec's rc; the rest succeed.
    let outcome_of = |a: &graph::GraphAction| -> graph::Outcome {
        let failed = a.rsc.zip(a.node).and_then(|(ri, ni)| {
            let (r, n) = (&t.observed.resources[ri], &t.observed.nodes[ni]);
            input
                .op_fail
                .iter()
                .find(|s| s.matches(&r.id, &a.task, a.interval_ms, &n.uname))
        });
        match failed {
            Some(s) => graph::Outcome::Failed(s.rc),
            None => graph::Outcome::Rc(a.expected_rc),
        }
    };
    let record = simulate::Recording {
        when,
        counting: simulate::FailCounting::Simulator,
    };
    let (next, fired) = simulate::apply_with(planned, &t.observed, &t.graph, record, outcome_of);
    out.push('\n');
    out.push_str("Executing Cluster Transition:\n");
    out.push_str(&graph::render_execution(
        &t.observed,
        &t.graph,
        &fired,
        when,
    ));
    let revised = observed::observe(&next, now);
    let data = input.summary.then(|| summary::SimulationSummary {
        execution_date: show_date.map(str::to_string),
        current: summary::cluster_status(current, true),
        injections: input.injections.to_vec(),
        modifications: injected
            .as_ref()
            .map(|i| {
                i.lines
                    .lines()
                    .map(|l| l.trim().trim_start_matches("* ").to_string())
                    .collect()
            })
            .unwrap_or_default(),
        op_fail: input.op_fail.to_vec(),
        fencing: summary::fencing_lines(&t.observed, &t.reconciliation),
        transition: graph::summary_lines(&t.observed, &t.plan, &t.reconciliation, &t.graph),
        executed: summary::executed_actions(&t.observed, &t.graph, &fired),
        revised: summary::cluster_status(&revised, false),
    });
    if let Some(d) = show_date {
        out.push_str(&format!("Using the original execution date of: {d}\n"));
    }
    out.push('\n');
    out.push_str("Revised Cluster Status:\n");
    out.push_str(&status::render_status(&revised, false));
    Simulation {
        text: out,
        result: next,
        errors: injected.map(|i| i.errors).unwrap_or_default(),
        summary: data,
    }
}
