//! `pengine explain`: why a resource goes where it goes, rendered from the placement trace.
//!
//! Placement records the trace (`placement::Trace`) only for the resource asked about: every
//! score change of its placement unit with the constraint, stickiness, failure or colocation
//! behind it, then what each filter said per node and the ranking. This module folds the steps
//! into per-node totals and prints them node by node, chosen node first.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::cib::add_score;
use crate::cib::{Cib, INFINITY};
use crate::placement::{Step, StepOp, Trace, score_text};
use crate::{Transition, graph};

/// `explain` was asked about something it cannot explain.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExplainError {
    /// Nothing of that name is configured.
    #[error("no resource, group, clone or bundle '{rsc}' is configured")]
    UnknownResource {
        /// The name asked about.
        rsc: String,
    },
    /// A group, clone or bundle: `explain_all` explains its primitives one by one.
    #[error("'{rsc}' is a {kind}: explain its resources ({members})")]
    Collective {
        /// The name asked about.
        rsc: String,
        /// "group", "clone" or "bundle".
        kind: &'static str,
        /// Its resources, comma-separated.
        members: String,
    },
    /// A group, clone or bundle without a primitive to explain.
    #[error("'{rsc}' is a {kind} without any resource to explain")]
    Empty {
        /// The name asked about.
        rsc: String,
        /// "group", "clone" or "bundle".
        kind: &'static str,
    },
}

/// What id `rsc` names besides a primitive: its kind and its primitives, in placement order
/// (a clone's instances, a bundle's containers, IPs, connections and inner instances), orphans
/// left out.
fn collective(obs: &crate::observed::Observed, rsc: &str) -> Option<(&'static str, Vec<usize>)> {
    let live = |ri: &usize| !obs.resources[*ri].orphan;
    if let Some(b) = obs.bundles.iter().find(|b| b.id == rsc) {
        let parts = b
            .replicas
            .iter()
            .flat_map(|r| std::iter::once(r.container).chain(r.ip).chain(r.remote));
        let inner = b.child.into_iter().flat_map(|ci| {
            crate::clone_groups::instances(obs, ci)
                .into_iter()
                .flatten()
        });
        return Some(("bundle", parts.chain(inner).filter(live).collect()));
    }
    let Some(gi) = obs.group_index(rsc) else {
        // The resource (or group) a clone is made of, named by its own id: its instances
        // (`rsc:0`, ...), a clone of groups' by their members.
        let base = |id: &str| id.rsplit_once(':').map(|(b, _)| b == rsc).unwrap_or(false);
        let instances: Vec<usize> = (0..obs.resources.len())
            .filter(|&ri| crate::clone_groups::clone_of(obs, ri).is_some())
            .filter(|&ri| {
                let r = &obs.resources[ri];
                base(&r.id)
                    || r.group.is_some_and(|g| {
                        crate::clone_groups::is_instance(obs, g) && base(&obs.groups[g].id)
                    })
            })
            .filter(live)
            .collect();
        return (!instances.is_empty()).then_some(("clone's resource", instances));
    };
    let g = &obs.groups[gi];
    let kind = match &g.clone {
        Some(spec) if spec.promotable.is_some() => "promotable clone",
        Some(_) => "clone",
        None => "group",
    };
    let members: Vec<usize> = match g.clone {
        Some(_) => crate::clone_groups::instances(obs, gi)
            .into_iter()
            .flatten()
            .collect(),
        None => g.members.clone(),
    };
    Some((kind, members.into_iter().filter(live).collect()))
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

/// Schedules `cib` at `now`, tracing the placement of primitive `rsc` (a clone instance, a
/// group member or a bundle's part included).
pub fn explain(cib: &Cib, now: i64, rsc: &str) -> Result<(Transition, Trace), ExplainError> {
    let (transition, trace) = crate::schedule_traced(cib, now, Some(rsc));
    let obs = &transition.observed;
    match trace {
        Some(trace) if !obs.resources[trace.rsc].orphan => Ok((transition, trace)),
        _ => match collective(obs, rsc) {
            Some((kind, members)) => Err(ExplainError::Collective {
                rsc: rsc.to_string(),
                kind,
                members: members
                    .iter()
                    .map(|&ri| obs.resources[ri].id.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
            None => Err(ExplainError::UnknownResource {
                rsc: rsc.to_string(),
            }),
        },
    }
}

/// `explain` for `rsc` or, when it names a group, clone or bundle, for each of its primitives
/// in turn (a clone: each instance; a bundle: each replica's parts, then its inner instances).
pub fn explain_all(
    cib: &Cib,
    now: i64,
    rsc: &str,
) -> Result<Vec<(Transition, Trace)>, ExplainError> {
    let members = match explain(cib, now, rsc) {
        Ok(one) => return Ok(vec![one]),
        Err(ExplainError::Collective { .. }) => {
            let obs = crate::observed::observe(cib, now);
            let (kind, members) = collective(&obs, rsc).ok_or(ExplainError::UnknownResource {
                rsc: rsc.to_string(),
            })?;
            if members.is_empty() {
                return Err(ExplainError::Empty {
                    rsc: rsc.to_string(),
                    kind,
                });
            }
            members
                .into_iter()
                .map(|ri| obs.resources[ri].id.clone())
                .collect::<Vec<_>>()
        }
        Err(e) => return Err(e),
    };
    members.iter().map(|id| explain(cib, now, id)).collect()
}

/// The width of the widest step operation, to align the reasons after it.
fn op_width(steps: &[Step]) -> usize {
    steps.iter().map(|s| op_text(s.op).len()).max().unwrap_or(0)
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
    render_with(t, trace, true)
}

/// `render` for each explanation of `explain_all`, separated by a blank line; a clone's own
/// scores are shown with its first instance only.
pub fn render_all(explained: &[(Transition, Trace)]) -> String {
    let mut shown = Vec::new();
    let texts: Vec<String> = explained
        .iter()
        .map(|(t, trace)| {
            let first = trace.clone.is_none_or(|ci| !shown.contains(&ci));
            shown.extend(trace.clone);
            render_with(t, trace, first)
        })
        .collect();
    texts.join("\n")
}

/// `render`, with or without the scores of the clone the resource is an instance of.
fn render_with(t: &Transition, trace: &Trace, clone_scores: bool) -> String {
    let obs = &t.observed;
    let r = &obs.resources[trace.rsc];
    let mut out = String::new();
    let _ = write!(out, "{} ({})", r.id, r.agent());
    if let Some(gi) = trace.group {
        let _ = write!(out, " in group {}", obs.groups[gi].id);
    }
    // (a bundle's containers are the instances of a clone of the bundle's id)
    let replica = crate::bundles::replica_of(obs, trace.rsc);
    let inner_of = trace
        .clone
        .and_then(|ci| crate::bundles::bundle_of_child(obs, ci));
    match (replica, inner_of, trace.clone) {
        (_, Some(bi), Some(ci)) => {
            let _ = write!(
                out,
                ", an instance of {} inside bundle {}",
                obs.groups[ci].id, obs.bundles[bi].id
            );
        }
        (Some((bi, n)), _, _) => {
            let b = &obs.bundles[bi];
            let p = &b.replicas[n];
            let part = if p.container == trace.rsc {
                "container"
            } else if p.ip == Some(trace.rsc) {
                "IP address"
            } else {
                "connection"
            };
            let _ = write!(out, ", the {part} of replica {n} of bundle {}", b.id);
        }
        (None, _, Some(ci)) => {
            let _ = write!(out, ", an instance of {}", obs.groups[ci].id);
        }
        _ => {}
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
    if let Some(ci) = trace.clone {
        let c = &obs.groups[ci];
        if let Some(spec) = &c.clone {
            let promoted = spec.promotable.as_ref().map(|p| {
                format!(
                    ", promotable: promoted-max={}, promoted-node-max={}",
                    p.promoted_max, p.promoted_node_max
                )
            });
            let what = match obs.bundles.iter().any(|b| b.containers == ci) {
                true => "bundle",
                false => "clone",
            };
            let _ = writeln!(
                out,
                "Placed by {what} {} with its other instances (clone-max={}, clone-node-max={}{}{}).",
                c.id,
                spec.max,
                spec.node_max,
                if spec.interleave { ", interleave" } else { "" },
                promoted.unwrap_or_default(),
            );
        }
        if clone_scores && !trace.clone_steps.is_empty() {
            let _ = writeln!(out, "\n{}'s own scores (its instances' limits):", c.id);
            let own = fold(&trace.clone_steps);
            let w = op_width(&trace.clone_steps);
            for (&ni, &v) in &own {
                let _ = writeln!(out, "  {}: {}", obs.nodes[ni].uname, score_text(v));
                for s in trace.clone_steps.iter().filter(|s| s.node == ni) {
                    let _ = writeln!(out, "    {:<w$}  {}", op_text(s.op), s.why);
                }
            }
        }
    }
    let totals = fold(&trace.steps);
    let mut order: Vec<usize> = trace.ranking.clone();
    order.extend((0..obs.nodes.len()).filter(|ni| !trace.ranking.contains(ni)));
    let width = op_width(&trace.steps);
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
