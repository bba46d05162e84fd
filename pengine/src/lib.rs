//! pengine: Pacemaker transition planning as a pure pipeline (CIB in; graph, summary and DOT out).
//!
//! No I/O here: no clock, no environment, no processes. "Now" is an input.
//! Stages: `cib` -> `observed` -> `placement` -> `reconcile` -> `actions` -> `graph` -> `simulate`;
//! `status` renders the cluster status block.

pub mod actions;
pub mod cib;
pub mod graph;
pub mod observed;
pub mod placement;
pub mod reconcile;
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
}

/// Runs the pipeline on a CIB at time `now` (seconds since the epoch).
pub fn schedule(cib: &Cib, now: i64) -> Transition {
    let observed = observed::observe(cib, now);
    let desired = placement::place(cib, &observed);
    let reconciliation = reconcile::reconcile(&observed, &desired);
    let plan = actions::build(&observed, &desired, &reconciliation);
    let graph = graph::expand(&observed, &plan);
    Transition {
        observed,
        desired,
        reconciliation,
        plan,
        graph,
    }
}

/// Renders what `crm_simulate -S` prints for this CIB at time `now`.
pub fn render_simulation(cib: &Cib, now: i64, show_date: Option<&str>) -> String {
    let t = schedule(cib, now);
    let mut out = String::new();
    if let Some(d) = show_date {
        out.push_str(&format!("Using the original execution date of: {d}\n"));
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
    let fired = graph::firing_order(&t.graph);
    if !fired.is_empty() {
        out.push('\n');
        out.push_str("Executing Cluster Transition:\n");
        out.push_str(&graph::render_execution(&t.observed, &t.graph, &fired));
    }
    let next = simulate::apply(cib, &t.observed, &t.graph, &fired);
    let revised = observed::observe(&next, now);
    out.push('\n');
    if let Some(d) = show_date {
        out.push_str(&format!("Using the original execution date of: {d}\n"));
    }
    out.push_str("Revised Cluster Status:\n");
    out.push_str(&status::render_status(&revised));
    out
}
