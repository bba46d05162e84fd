//! `pengine explain`: why a resource goes where it goes, rendered from the placement trace.
//!
//! Placement records the trace (`placement::Trace`) only for the resource asked about: every
//! score change of its placement unit with the constraint, stickiness, failure or colocation
//! behind it, then what each filter said per node and the ranking. This module folds the steps
//! into per-node totals and prints them node by node, chosen node first.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::cib::{Cib, INFINITY};
use crate::placement::{Step, StepOp, Trace, add_score, score_text};
use crate::{Transition, graph};

/// `explain` was asked about something that is not a configured primitive.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExplainError {
    #[error("no primitive '{rsc}' is configured")]
    UnknownResource { rsc: String },
    /// Clone instances are placed together (`placement/clones.rs`), without a trace yet.
    #[error("'{rsc}' is a clone instance: explaining clone placement is not supported yet")]
    CloneInstance { rsc: String },
    /// A bundle's container, IP or connection is placed with its bundle
    /// (`pcmk__bundle_allocate`), without a trace yet.
    #[error(
        "'{rsc}' is part of bundle '{bundle}': explaining bundle placement is not supported yet"
    )]
    BundlePart { rsc: String, bundle: String },
}

/// The scores the steps give, per node: a node no step touched has none (-INFINITY).
pub fn fold(steps: &[Step]) -> BTreeMap<usize, i64> {
    let mut scores = BTreeMap::new();
    for s in steps {
        let v = match s.op {
            StepOp::Set(v) => v,
            StepOp::Add(d) => add_score(scores.get(&s.node).copied().unwrap_or(0), d),
        };
        scores.insert(s.node, v);
    }
    scores
}

/// Schedules `cib` at `now`, tracing the placement of `rsc`.
pub fn explain(cib: &Cib, now: i64, rsc: &str) -> Result<(Transition, Trace), ExplainError> {
    let (transition, trace) = crate::schedule_traced(cib, now, Some(rsc));
    let obs = &transition.observed;
    if let Some((bi, _)) = obs
        .rsc_index(rsc)
        .filter(|&ri| crate::bundles::is_replica_part(obs, ri))
        .and_then(|ri| crate::bundles::replica_of(obs, ri))
    {
        return Err(ExplainError::BundlePart {
            rsc: rsc.to_string(),
            bundle: obs.bundles[bi].id.clone(),
        });
    }
    match trace {
        Some(trace) if !transition.observed.resources[trace.rsc].orphan => Ok((transition, trace)),
        _ if transition.observed.rsc_index(rsc).is_some_and(|ri| {
            crate::clone_groups::clone_of(&transition.observed, ri).is_some()
        }) =>
        {
            Err(ExplainError::CloneInstance {
                rsc: rsc.to_string(),
            })
        }
        _ => Err(ExplainError::UnknownResource {
            rsc: rsc.to_string(),
        }),
    }
}

fn op_text(op: StepOp) -> String {
    match op {
        StepOp::Set(v) => format!("= {}", score_text(v)),
        StepOp::Add(d) if d < 0 => format!("- {}", score_text(d).trim_start_matches('-')),
        StepOp::Add(d) => format!("+ {}", score_text(d)),
    }
}

/// The explanation as text: the resource and what the transition does with it, then per node
/// its total, the filter's verdict and every score change, then the notes.
pub fn render(t: &Transition, trace: &Trace) -> String {
    let obs = &t.observed;
    let r = &obs.resources[trace.rsc];
    let mut out = String::new();
    let _ = write!(out, "{} ({})", r.id, r.agent());
    if let Some(gi) = trace.group {
        let _ = write!(out, " in group {}", obs.groups[gi].id);
    }
    let lines = graph::summary_lines(obs, &t.plan, &t.reconciliation, &t.graph);
    let action = lines.iter().find(|l| l.rsc == r.id);
    let now_on: Vec<&str> = r
        .running_on
        .iter()
        .map(|&ni| obs.nodes[ni].uname.as_str())
        .collect();
    match (action, trace.assigned) {
        (Some(l), _) => {
            let _ = write!(out, ": {} {}", l.verb, l.details);
            if !l.reason.is_empty() {
                let _ = write!(out, " {}", l.reason);
            }
        }
        (None, Some(ni)) => {
            let _ = write!(out, ": stays on {}", obs.nodes[ni].uname);
        }
        (None, None) if now_on.is_empty() => out.push_str(": stays stopped"),
        (None, None) => {
            let _ = write!(out, ": not placed (active on {})", now_on.join(", "));
        }
    }
    out.push('\n');
    if let Some(gi) = trace.group {
        let _ = writeln!(
            out,
            "Placed with its group {} member by member, each colocated with the member before it.",
            obs.groups[gi].id
        );
    }
    let totals = fold(&trace.steps);
    let mut order: Vec<usize> = trace.ranking.clone();
    order.extend((0..obs.nodes.len()).filter(|ni| !trace.ranking.contains(ni)));
    let width = trace
        .steps
        .iter()
        .map(|s| op_text(s.op).len())
        .max()
        .unwrap_or(0);
    for ni in order {
        let total = totals.get(&ni).copied().unwrap_or(-INFINITY);
        let _ = write!(out, "\n{}: {}", obs.nodes[ni].uname, score_text(total));
        let verdict = trace.filtered.iter().find(|(n, _)| *n == ni);
        match (verdict, trace.ranking.iter().position(|&c| c == ni)) {
            (_, Some(rank)) => {
                let chosen = trace.assigned == Some(ni);
                let _ = write!(
                    out,
                    ", {}ranked {} of {}",
                    if chosen { "chosen, " } else { "" },
                    rank + 1,
                    trace.ranking.len()
                );
            }
            (Some((_, Some(why))), None) => {
                let _ = write!(out, ", filtered: {why}");
            }
            _ => {}
        }
        if trace.assigned == Some(ni) && !trace.ranking.contains(&ni) {
            out.push_str(", chosen");
        }
        out.push('\n');
        for s in trace.steps.iter().filter(|s| s.node == ni) {
            let _ = writeln!(out, "    {:<width$}  {}", op_text(s.op), s.why);
        }
    }
    if trace.ranking.len() > 1 {
        let strategy = &obs.placement_strategy;
        let _ = writeln!(
            out,
            "\nEqual scores are ranked by: {}the number of resources already placed, the node it runs on now, the node name.",
            if strategy == "balanced" {
                "free capacity, "
            } else {
                ""
            }
        );
    }
    if !trace.notes.is_empty() {
        out.push_str("\nNotes:\n");
        for n in &trace.notes {
            let _ = writeln!(out, "  - {n}");
        }
    }
    out
}
