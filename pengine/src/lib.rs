//! pengine: Pacemaker transition planning as a pure pipeline (CIB in; graph, summary and DOT out).
//!
//! No I/O here: no clock, no environment, no processes. "Now" is an input.
//! Stages: `cib` -> `observed` -> `placement` -> `reconcile` -> `actions` -> `graph` -> `simulate`;
//! `status` renders the cluster status block.

pub mod actions;
pub mod atomic;
pub mod cib;
pub mod events;
pub mod graph;
pub mod lifecycle;
pub mod observed;
pub mod placement;
pub mod reconcile;
pub mod recovery;
pub mod scenario;
pub mod simulate;
pub mod status;

pub use cib::{Cib, CibError, parse_cib};

/// Everything one scheduler run produces.
#[derive(Debug, Clone)]
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
}

/// Runs the pipeline on a CIB at time `now` (seconds since the epoch).
pub fn schedule(cib: &Cib, now: i64) -> Transition {
    let mut observed = observed::observe(cib, now);
    // Recovery policies and node lifecycle rules (no-ops without their attributes): they only add
    // bans and preferences before placement.
    let recovery = recovery::apply(&mut observed);
    let lifecycle = lifecycle::apply(cib, &mut observed);
    // Atomic migration model hooks (no-ops for two-phase resources): see `atomic`.
    let mut atomic = atomic::observe(cib, &mut observed);
    let desired = placement::place(cib, &observed);
    let mut recovery = recovery;
    recovery::after_placement(&observed, &desired, &mut recovery);
    let mut reconciliation = reconcile::reconcile(&observed, &desired);
    // Atomic decisions first, so dependents see them; again after the ordering propagation, so a
    // dependency cannot turn an atomic resource's plan into a stop and start.
    atomic::reconcile(&mut atomic, &observed, &desired, &mut reconciliation);
    reconcile::propagate_orderings(&observed, &desired, &mut reconciliation);
    atomic::reconcile(&mut atomic, &observed, &desired, &mut reconciliation);
    let mut plan = actions::build(&observed, &desired, &reconciliation);
    atomic::amend_plan(&atomic, &observed, &reconciliation, &mut plan);
    let graph = graph::expand(&observed, &plan);
    Transition {
        observed,
        desired,
        reconciliation,
        plan,
        graph,
        atomic,
        recovery,
        lifecycle,
    }
}

/// Renders what `crm_simulate -S` prints for this CIB at time `now`.
pub fn render_simulation(cib: &Cib, now: i64, show_date: Option<&str>) -> String {
    let t = schedule(cib, now);
    let mut out = String::new();
    if let Some(d) = show_date {
        out.push_str(&format!("Using the original execution date of: {d}\n"));
    }
    let mut printed = false;
    if t.observed.maintenance_mode {
        out.push_str("\n              *** Resource management is DISABLED ***\n");
        out.push_str("  The cluster will not attempt to start, stop or recover services\n");
        printed = true;
    } else if t.observed.stop_all {
        out.push_str("\n    *** Resource management is DISABLED ***\n");
        out.push_str("  The cluster will keep all resources stopped\n");
        printed = true;
    }
    let counted: Vec<&observed::Resource> = t
        .observed
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
    }
    out.push_str("Current cluster status:\n");
    out.push_str(&status::render_status(&t.observed));
    out.push('\n');
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
    let fired = graph::firing_order(&t.graph);
    out.push('\n');
    out.push_str("Executing Cluster Transition:\n");
    out.push_str(&graph::render_execution(&t.observed, &t.graph, &fired));
    let next = simulate::apply(cib, &t.observed, &t.graph, &fired);
    let revised = observed::observe(&next, now);
    if let Some(d) = show_date {
        out.push_str(&format!("Using the original execution date of: {d}\n"));
    }
    out.push('\n');
    out.push_str("Revised Cluster Status:\n");
    out.push_str(&status::render_status(&revised));
    out
}
