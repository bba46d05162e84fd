//! The transition graph: expands the plan into Pacemaker actions and renders the summary, graph XML and DOT.

use std::fmt::Write;

use crate::actions::{Kind, Plan, Rel};
use crate::observed::{Observed, Top};
use crate::reconcile::{Change, Reconciliation};

/// How a graph action is executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    RscOp,
    Pseudo,
    Fence,
    Cluster,
}

/// One action in the transition graph.
#[derive(Debug, Clone)]
pub struct GraphAction {
    pub key: String,
    pub task: String,
    pub rsc: Option<usize>,
    pub node: Option<usize>,
    pub interval_ms: u64,
    pub event: EventKind,
    pub runnable: bool,
    /// For migrations: (source, target).
    pub migrate: Option<(usize, usize)>,
}

/// A synapse: one action and the actions that must be confirmed first.
#[derive(Debug, Clone)]
pub struct Synapse {
    pub action: usize,
    pub inputs: Vec<usize>,
}

/// The expanded transition graph.
#[derive(Debug, Clone, Default)]
pub struct TransitionGraph {
    pub actions: Vec<GraphAction>,
    pub edges: Vec<(usize, usize)>,
    /// Synapses in Pacemaker's order.
    pub synapses: Vec<Synapse>,
}

fn op_key(rsc: &str, task: &str, interval_ms: u64) -> String {
    format!("{rsc}_{task}_{interval_ms}")
}

/// Expands the plan (migrations become four actions) and orders the synapses.
pub fn expand(obs: &Observed, plan: &Plan) -> TransitionGraph {
    let mut g = TransitionGraph::default();
    // plan index -> (first graph action for incoming edges, last for outgoing edges, all created)
    let mut map: Vec<(usize, usize, Vec<usize>)> = Vec::with_capacity(plan.actions.len());
    for a in &plan.actions {
        let rname = a.rsc.map(|r| obs.resources[r].id.clone());
        let gname = a.group.map(|gi| obs.groups[gi].id.clone());
        let push = |g: &mut TransitionGraph,
                    key: String,
                    task: &str,
                    rsc: Option<usize>,
                    node: Option<usize>,
                    iv: u64,
                    ev: EventKind,
                    mig: Option<(usize, usize)>| {
            g.actions.push(GraphAction {
                key,
                task: task.to_string(),
                rsc,
                node,
                interval_ms: iv,
                event: ev,
                runnable: a.runnable,
                migrate: mig,
            });
            g.actions.len() - 1
        };
        let entry = match &a.kind {
            Kind::Probe => {
                let r = rname.clone().unwrap_or_default();
                let i = push(
                    &mut g,
                    op_key(&r, "monitor", 0),
                    "monitor",
                    a.rsc,
                    a.node,
                    0,
                    EventKind::RscOp,
                    None,
                );
                (i, i, vec![i])
            }
            Kind::Start | Kind::Stop => {
                let task = if a.kind == Kind::Start {
                    "start"
                } else {
                    "stop"
                };
                let r = rname.clone().unwrap_or_default();
                let ev = if a.pseudo {
                    EventKind::Pseudo
                } else {
                    EventKind::RscOp
                };
                let i = push(
                    &mut g,
                    op_key(&r, task, 0),
                    task,
                    a.rsc,
                    a.node,
                    0,
                    ev,
                    None,
                );
                (i, i, vec![i])
            }
            Kind::Monitor { interval_ms } => {
                let r = rname.clone().unwrap_or_default();
                let i = push(
                    &mut g,
                    op_key(&r, "monitor", *interval_ms),
                    "monitor",
                    a.rsc,
                    a.node,
                    *interval_ms,
                    EventKind::RscOp,
                    None,
                );
                (i, i, vec![i])
            }
            Kind::Migrate { source, target } => {
                let r = rname.clone().unwrap_or_default();
                let m = Some((*source, *target));
                let stop = push(
                    &mut g,
                    op_key(&r, "stop", 0),
                    "stop",
                    a.rsc,
                    Some(*source),
                    0,
                    EventKind::RscOp,
                    None,
                );
                let start = push(
                    &mut g,
                    op_key(&r, "start", 0),
                    "start",
                    a.rsc,
                    None,
                    0,
                    EventKind::Pseudo,
                    m,
                );
                let to = push(
                    &mut g,
                    op_key(&r, "migrate_to", 0),
                    "migrate_to",
                    a.rsc,
                    Some(*source),
                    0,
                    EventKind::RscOp,
                    m,
                );
                let from = push(
                    &mut g,
                    op_key(&r, "migrate_from", 0),
                    "migrate_from",
                    a.rsc,
                    Some(*target),
                    0,
                    EventKind::RscOp,
                    m,
                );
                g.edges.push((to, from));
                g.edges.push((from, stop));
                g.edges.push((from, start));
                g.edges.push((stop, start));
                (to, start, vec![stop, start, to, from])
            }
            Kind::GroupStart | Kind::GroupRunning | Kind::GroupStop | Kind::GroupStopped => {
                let task = match a.kind {
                    Kind::GroupStart => "start",
                    Kind::GroupRunning => "running",
                    Kind::GroupStop => "stop",
                    _ => "stopped",
                };
                let gn = gname.clone().unwrap_or_default();
                let i = push(
                    &mut g,
                    op_key(&gn, task, 0),
                    task,
                    None,
                    None,
                    0,
                    EventKind::Pseudo,
                    None,
                );
                (i, i, vec![i])
            }
            Kind::Fence => {
                let n = a
                    .node
                    .map(|n| obs.nodes[n].uname.clone())
                    .unwrap_or_default();
                let i = push(
                    &mut g,
                    format!("stonith-{n}-reboot"),
                    "stonith",
                    None,
                    a.node,
                    0,
                    EventKind::Fence,
                    None,
                );
                (i, i, vec![i])
            }
            Kind::Shutdown => {
                let n = a
                    .node
                    .map(|n| obs.nodes[n].uname.clone())
                    .unwrap_or_default();
                let i = push(
                    &mut g,
                    format!("do_shutdown-{n}"),
                    "do_shutdown",
                    None,
                    a.node,
                    0,
                    EventKind::Cluster,
                    None,
                );
                (i, i, vec![i])
            }
        };
        map.push(entry);
    }
    // A migration's graph actions: [stop, pseudo start, migrate_to, migrate_from].
    let is_mig = |pi: usize| matches!(plan.actions[pi].kind, Kind::Migrate { .. });
    for &(f, t, rel) in &plan.edges {
        let source = match (is_mig(f), rel) {
            (true, Rel::Stop | Rel::GroupStop) => map[f].2[0],
            _ => map[f].1,
        };
        let target = match (is_mig(t), rel) {
            (true, Rel::Stop | Rel::GroupStop) => map[t].2[0],
            (true, Rel::Start) => map[t].2[1],
            _ => map[t].0,
        };
        g.edges.push((source, target));
        // "A start then B start" also orders A's migrate_from (or start) before B's migrate_to.
        if rel == Rel::Start
            && is_mig(t)
            && plan.actions[f].rsc.is_some()
            && plan.actions[f].rsc != plan.actions[t].rsc
        {
            let first = if is_mig(f) { map[f].2[3] } else { map[f].1 };
            g.edges.push((first, map[t].2[2]));
        }
        // "A stop then B stop" also orders A's stop before B's migrate_to.
        if rel == Rel::Stop
            && is_mig(t)
            && !is_mig(f)
            && plan.actions[f].rsc.is_some()
            && plan.actions[f].rsc != plan.actions[t].rsc
        {
            g.edges.push((map[f].1, map[t].2[2]));
        }
    }
    // Unrunnable actions make their mandatory dependents unrunnable.
    loop {
        let mut changed = false;
        for &(f, t) in &g.edges {
            if !g.actions[f].runnable && g.actions[t].runnable {
                g.actions[t].runnable = false;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    // Synapse order: per top-level entry in processing order, group pseudo actions then members,
    // each resource's actions newest first; then the other actions newest first.
    let mut order: Vec<usize> = Vec::new();
    let per_plan = |pred: &dyn Fn(usize) -> bool| -> Vec<usize> {
        let mut v = Vec::new();
        for pi in (0..plan.actions.len()).rev() {
            if pred(pi) {
                let mut created = map[pi].2.clone();
                created.reverse();
                v.extend(created);
            }
        }
        v
    };
    for t in &plan.order {
        match *t {
            Top::Primitive(ri) => order.extend(per_plan(&|pi| plan.actions[pi].rsc == Some(ri))),
            Top::Group(gi) => {
                order.extend(per_plan(&|pi| {
                    plan.actions[pi].group == Some(gi) && plan.actions[pi].rsc.is_none()
                }));
                for &ri in &obs.groups[gi].members {
                    order.extend(per_plan(&|pi| plan.actions[pi].rsc == Some(ri)));
                }
            }
        }
    }
    order.extend(per_plan(&|pi| {
        plan.actions[pi].rsc.is_none() && plan.actions[pi].group.is_none()
    }));
    for a in order {
        if !g.actions[a].runnable {
            continue;
        }
        let mut inputs: Vec<usize> = g
            .edges
            .iter()
            .filter(|e| e.1 == a && g.actions[e.0].runnable)
            .map(|e| e.0)
            .collect();
        inputs.sort();
        inputs.dedup();
        g.synapses.push(Synapse { action: a, inputs });
    }
    g
}

/// Fires synapses as crm_simulate does (each pass in order, results confirmed at once); returns the firing order.
pub fn firing_order(g: &TransitionGraph) -> Vec<usize> {
    let mut confirmed = vec![false; g.actions.len()];
    let mut fired = vec![false; g.synapses.len()];
    let mut out = Vec::new();
    loop {
        let mut progress = false;
        for (si, s) in g.synapses.iter().enumerate() {
            if fired[si] || !s.inputs.iter().all(|&i| confirmed[i]) {
                continue;
            }
            fired[si] = true;
            confirmed[s.action] = true;
            out.push(s.action);
            progress = true;
        }
        if !progress {
            break;
        }
    }
    out
}

/// Renders the "Executing Cluster Transition" lines.
pub fn render_execution(obs: &Observed, g: &TransitionGraph, fired: &[usize]) -> String {
    let mut out = String::new();
    for &a in fired {
        let ga = &g.actions[a];
        let node = ga.node.map(|n| obs.nodes[n].uname.as_str()).unwrap_or("");
        match ga.event {
            EventKind::RscOp => {
                let r = ga.rsc.map(|r| obs.resources[r].id.as_str()).unwrap_or("");
                if ga.interval_ms > 0 {
                    let _ = writeln!(
                        out,
                        "  * Resource action: {:<15} {}={} on {}",
                        r, ga.task, ga.interval_ms, node
                    );
                } else {
                    let _ = writeln!(
                        out,
                        "  * Resource action: {:<15} {} on {}",
                        r, ga.task, node
                    );
                }
            }
            EventKind::Pseudo => {
                let _ = writeln!(out, "  * Pseudo action:   {}", ga.key);
            }
            EventKind::Fence => {
                let _ = writeln!(out, "  * Fencing {} (reboot)", node);
            }
            EventKind::Cluster => {
                let _ = writeln!(out, "  * Cluster action:  {} on {}", ga.task, node);
            }
        }
    }
    out
}

struct SummaryLine {
    verb: String,
    rsc: String,
    details: String,
    reason: String,
}

/// Renders the "Transition Summary" lines with crm_simulate's growing column widths.
pub fn render_summary(
    obs: &Observed,
    plan: &Plan,
    rec: &Reconciliation,
    g: &TransitionGraph,
) -> String {
    let mut out = String::new();
    for (ni, reason) in rec.fence.iter().rev() {
        let _ = writeln!(
            out,
            "  * Fence (reboot) {} '{}'",
            obs.nodes[*ni].uname, reason
        );
    }
    let name = |n: usize| obs.nodes[n].uname.clone();
    let runnable_start = |ri: usize| -> bool {
        g.actions
            .iter()
            .filter(|a| a.rsc == Some(ri) && a.task == "start")
            .all(|a| a.runnable)
    };
    let mut lines: Vec<SummaryLine> = Vec::new();
    let mut ris: Vec<usize> = Vec::new();
    for t in &plan.order {
        match *t {
            Top::Primitive(ri) => ris.push(ri),
            Top::Group(gi) => ris.extend(obs.groups[gi].members.iter().copied()),
        }
    }
    for ri in ris {
        let r = &obs.resources[ri];
        let start_reason = plan
            .starts(ri)
            .first()
            .and_then(|&i| plan.actions[i].reason.clone());
        let line =
            |verb: &str, details: String, reason: Option<String>, blocked: bool| SummaryLine {
                verb: verb.into(),
                rsc: r.id.clone(),
                details,
                reason: match (reason, blocked) {
                    (Some(r), true) => format!("due to {r} (blocked)"),
                    (Some(r), false) => format!("due to {r}"),
                    (None, true) => "blocked".into(),
                    (None, false) => String::new(),
                },
            };
        match &rec.changes[ri] {
            Change::Keep => {}
            Change::Start { target, blocked } => {
                let ok = runnable_start(ri);
                lines.push(line("Start", name(*target), blocked.clone(), !ok));
            }
            Change::Stop {
                sources,
                reason,
                blocked,
            } => {
                for &s in sources {
                    lines.push(line("Stop", name(s), reason.clone(), *blocked));
                }
            }
            Change::Move { source, target, .. } => {
                if runnable_start(ri) {
                    lines.push(line(
                        "Move",
                        format!("{} -> {}", name(*source), name(*target)),
                        None,
                        false,
                    ));
                } else {
                    lines.push(line("Stop", name(*source), start_reason.clone(), false));
                }
            }
            Change::Recover { source, target, .. } => {
                if !runnable_start(ri) {
                    lines.push(line("Stop", name(*source), start_reason.clone(), false));
                } else if source == target {
                    lines.push(line("Recover", name(*source), None, false));
                } else {
                    lines.push(line(
                        "Recover",
                        format!("{} -> {}", name(*source), name(*target)),
                        None,
                        false,
                    ));
                }
            }
            Change::Restart { node } => lines.push(line("Restart", name(*node), None, false)),
            Change::Migrate { source, target } => {
                lines.push(line(
                    "Migrate",
                    format!("{} -> {}", name(*source), name(*target)),
                    None,
                    false,
                ));
            }
        }
    }
    let mut rsc_width = 5usize;
    let mut detail_width = 5usize;
    for l in &lines {
        if l.rsc.len() > rsc_width {
            rsc_width = l.rsc.len() + 2;
        }
        detail_width = detail_width.max(l.details.len());
    }
    for l in &lines {
        let _ = write!(
            out,
            "  * {:<8}   {:<rw$}   ( {:>dw$} )",
            l.verb,
            l.rsc,
            l.details,
            rw = rsc_width,
            dw = detail_width
        );
        if !l.reason.is_empty() {
            let _ = write!(out, "  {}", l.reason);
        }
        out.push('\n');
    }
    out
}
