//! The transition graph: expands the plan into Pacemaker actions and renders the summary, graph XML and DOT.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use crate::actions::{Kind, Plan, Rel};
use crate::cib::rc;
use crate::observed::{Observed, Top};
use crate::reconcile::{Change, Reconciliation};

/// How a graph action is executed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub enum EventKind {
    RscOp,
    Pseudo,
    Fence,
    /// The pseudo fencing of a guest node (its container's recovery): a pseudo event that
    /// names its node, action "off" or "reboot".
    GuestFence {
        off: bool,
    },
    /// Unfencing (fencing action "on"): brings no node down.
    Unfence,
    Cluster,
}

impl EventKind {
    /// A pseudo event (the graph's `pseudo_event`): no node executes it.
    pub fn is_pseudo(self) -> bool {
        matches!(self, EventKind::Pseudo | EventKind::GuestFence { .. })
    }
    /// The fencing action of a fencing event ("reboot", "off" or "on").
    pub fn fence_action(self) -> Option<&'static str> {
        match self {
            EventKind::Fence => Some("reboot"),
            EventKind::GuestFence { off: true } => Some("off"),
            EventKind::GuestFence { off: false } => Some("reboot"),
            EventKind::Unfence => Some("on"),
            _ => None,
        }
    }
}

/// One action in the transition graph.
#[derive(Debug, Clone)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct GraphAction {
    pub key: String,
    pub task: String,
    pub rsc: Option<usize>,
    /// The group of a group's pseudo action (start, running, stop, stopped).
    pub group: Option<usize>,
    pub node: Option<usize>,
    pub interval_ms: u64,
    pub event: EventKind,
    pub runnable: bool,
    /// For migrations: (source, target).
    pub migrate: Option<(usize, usize)>,
    /// The result the action is expected to return (7 for probes and Stopped-role monitors).
    pub expected_rc: i32,
    /// The history's call a cancel stops, when the cancel comes from the history.
    pub call_id: Option<i64>,
    /// Never shown (see `actions::Action::optional`).
    pub optional: bool,
    /// Clone notification details (see `crate::notifications`).
    pub notify: Option<Box<crate::notifications::NotifyMeta>>,
}

/// A synapse: one action and the actions that must be confirmed first.
#[derive(Debug, Clone)]
pub struct Synapse {
    pub action: usize,
    pub inputs: Vec<usize>,
}

/// The expanded transition graph.
#[derive(Debug, Clone, Default)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct TransitionGraph {
    pub actions: Vec<GraphAction>,
    pub edges: Vec<(usize, usize)>,
    /// Synapses in Pacemaker's order.
    pub synapses: Vec<Synapse>,
    /// Orderings that exist but do not constrain the graph (drawn dashed in DOT).
    pub optional_edges: Vec<(usize, usize)>,
    /// Orderings of actions that cannot run and constrain nothing, only drawn (dashed) in DOT:
    /// those of an abandoned migration's migrate_to and migrate_from.
    pub dot_edges: Vec<(usize, usize)>,
    /// The edges of optional orderings (`Rel::Optional`): inputs like the others, but an
    /// unrunnable first does not make the then unrunnable.
    pub optional_orderings: std::collections::BTreeSet<(usize, usize)>,
    /// Why a resource's action became unrunnable along an ordering from another resource's
    /// action ("unrunnable FIRST TASK"), for actions the plan gave no reason.
    pub unrunnable_reasons: std::collections::BTreeMap<usize, String>,
    /// Start and promote actions made unrunnable because what they are colocated with cannot
    /// start or be promoted ("colocation with RSC"; `pcmk__block_colocation_dependents`).
    pub colocation_blocked: std::collections::BTreeMap<usize, String>,
}

/// Whether resource `rsc`'s recurring monitor of `interval_ms` is configured for the Promoted role.
fn promoted_monitor(obs: &Observed, rsc: Option<usize>, interval_ms: u64) -> bool {
    rsc.is_some_and(|ri| {
        obs.resources[ri].ops.iter().any(|o| {
            o.name == "monitor"
                && o.interval_ms == interval_ms
                && o.role.as_deref().and_then(crate::observed::Role::parse)
                    == Some(crate::observed::Role::Promoted)
        })
    })
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
        let rname = a
            .rsc
            .map(|r| crate::clones::key_name(&obs.resources[r]).to_string());
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
                group: a.group.filter(|_| a.rsc.is_none()),
                node,
                interval_ms: iv,
                event: ev,
                runnable: a.runnable,
                migrate: mig,
                expected_rc: match a.kind {
                    Kind::Probe | Kind::StoppedMonitor { .. } => rc::NOT_RUNNING,
                    // A Promoted-role monitor expects "running promoted".
                    Kind::Monitor { interval_ms } if promoted_monitor(obs, a.rsc, interval_ms) => {
                        rc::RUNNING_PROMOTED
                    }
                    _ => rc::OK,
                },
                call_id: match a.kind {
                    Kind::Cancel { call_id, .. } => call_id,
                    _ => None,
                },
                optional: a.optional,
                notify: None,
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
            Kind::Start
            | Kind::Stop
            | Kind::Reload
            | Kind::Delete
            | Kind::Promote
            | Kind::Demote => {
                let task = match a.kind {
                    Kind::Start => "start",
                    Kind::Stop => "stop",
                    Kind::Promote => "promote",
                    Kind::Demote => "demote",
                    Kind::Reload => "reload-agent",
                    _ => "delete",
                };
                let r = rname.clone().unwrap_or_default();
                // Only a start, stop or demote stands for something done elsewhere (a pseudo
                // action; a demote implied by fencing).
                let ev = if a.pseudo && matches!(a.kind, Kind::Start | Kind::Stop | Kind::Demote) {
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
            Kind::Cancel { interval_ms, .. } => {
                let r = rname.clone().unwrap_or_default();
                let i = push(
                    &mut g,
                    op_key(&r, "monitor", *interval_ms),
                    "cancel",
                    a.rsc,
                    a.node,
                    *interval_ms,
                    EventKind::RscOp,
                    None,
                );
                (i, i, vec![i])
            }
            Kind::Monitor { interval_ms } | Kind::StoppedMonitor { interval_ms } => {
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
                // On a source being fenced (an atomic migration finishing after the source was
                // lost), the fencing implies the stop.
                let stop_event = if obs.nodes[*source].unclean {
                    EventKind::Pseudo
                } else {
                    EventKind::RscOp
                };
                let stop = push(
                    &mut g,
                    op_key(&r, "stop", 0),
                    "stop",
                    a.rsc,
                    Some(*source),
                    0,
                    stop_event,
                    None,
                );
                // The pseudo start carries no migration meta (only migrate_to and
                // migrate_from do).
                let start = push(
                    &mut g,
                    op_key(&r, "start", 0),
                    "start",
                    a.rsc,
                    Some(*target),
                    0,
                    EventKind::Pseudo,
                    None,
                );
                // A partial migration (migrate_to done on `source`) continues with migrate_from.
                let continues = a.rsc.is_some_and(|ri| {
                    obs.resources[ri].partial_migration == Some((*source, *target))
                });
                let to = (!continues).then(|| {
                    push(
                        &mut g,
                        op_key(&r, "migrate_to", 0),
                        "migrate_to",
                        a.rsc,
                        Some(*source),
                        0,
                        EventKind::RscOp,
                        m,
                    )
                });
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
                let to = match to {
                    Some(to) => {
                        g.edges.push((to, from));
                        to
                    }
                    None => from,
                };
                g.edges.push((from, stop));
                g.edges.push((from, start));
                g.edges.push((stop, start));
                (to, start, vec![stop, start, to, from])
            }
            Kind::GroupStart
            | Kind::GroupRunning
            | Kind::GroupStop
            | Kind::GroupStopped
            | Kind::GroupPromote
            | Kind::GroupPromoted
            | Kind::GroupDemote
            | Kind::GroupDemoted => {
                let task = match a.kind {
                    Kind::GroupStart => "start",
                    Kind::GroupRunning => "running",
                    Kind::GroupStop => "stop",
                    Kind::GroupPromote => "promote",
                    Kind::GroupPromoted => "promoted",
                    Kind::GroupDemote => "demote",
                    Kind::GroupDemoted => "demoted",
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
            Kind::Fence | Kind::Unfence | Kind::GuestFence { .. } => {
                let n = a
                    .node
                    .map(|n| obs.nodes[n].uname.clone())
                    .unwrap_or_default();
                let ev = match a.kind {
                    Kind::Fence => EventKind::Fence,
                    Kind::GuestFence { off } => EventKind::GuestFence { off },
                    _ => EventKind::Unfence,
                };
                let action = ev.fence_action().unwrap_or_default();
                let i = push(
                    &mut g,
                    format!("stonith-{n}-{action}"),
                    "stonith",
                    None,
                    a.node,
                    0,
                    ev,
                    None,
                );
                (i, i, vec![i])
            }
            Kind::LoadStopped => {
                let n = a
                    .node
                    .map(|n| obs.nodes[n].uname.clone())
                    .unwrap_or_default();
                let key = format!("load_stopped_{n}");
                let i = push(
                    &mut g,
                    key.clone(),
                    &key,
                    None,
                    a.node,
                    0,
                    EventKind::Pseudo,
                    None,
                );
                (i, i, vec![i])
            }
            Kind::OneOrMore(name) => {
                let i = push(
                    &mut g,
                    name.clone(),
                    name,
                    None,
                    None,
                    0,
                    EventKind::Pseudo,
                    None,
                );
                (i, i, vec![i])
            }
            Kind::ClearFailcount => {
                let r = rname.clone().unwrap_or_default();
                let i = push(
                    &mut g,
                    format!("{r}_clear_failcount_0"),
                    "clear_failcount",
                    a.rsc,
                    a.node,
                    0,
                    EventKind::Cluster,
                    None,
                );
                (i, i, vec![i])
            }
            Kind::LrmDelete => {
                let r = rname.clone().unwrap_or_default();
                let i = push(
                    &mut g,
                    format!("{r}_lrm_delete_0"),
                    "lrm_delete",
                    a.rsc,
                    a.node,
                    0,
                    EventKind::Cluster,
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
            (true, Rel::Stop | Rel::GroupStop | Rel::StopStart | Rel::SourceStop) => map[f].2[0],
            _ => map[f].1,
        };
        let target = match (is_mig(t), rel) {
            (true, Rel::Stop | Rel::GroupStop | Rel::SourceStop) => map[t].2[0],
            (true, Rel::Start | Rel::StopStart) => map[t].2[1],
            _ => map[t].0,
        };
        // load_stopped orders a migration's migrate_to, not the migrate_from continuing a
        // partial one (then only the pseudo start, below).
        let continuing = is_mig(t) && map[t].2[2] == map[t].2[3];
        if !(continuing && plan.actions[f].kind == Kind::LoadStopped) {
            g.edges.push((source, target));
        }
        if rel == Rel::Optional {
            g.optional_orderings.insert((source, target));
        }
        // (a migration away from a remote node: its migrate_to before the connection stops too)
        if rel == Rel::SourceStop && is_mig(f) && map[f].2[2] != map[f].2[3] {
            g.edges.push((map[f].2[2], target));
        }
        // load_stopped and the resource's own probe order the (pseudo) start too, besides the
        // migration's first action (another resource's probe, ordered as its stop is, only
        // the first action).
        let own_probe =
            plan.actions[f].kind == Kind::Probe && plan.actions[f].rsc == plan.actions[t].rsc;
        if is_mig(t) && (plan.actions[f].kind == Kind::LoadStopped || own_probe) {
            g.edges.push((source, map[t].2[1]));
        }
        // "A start then B start" also orders A's migrate_from (or start) before B's migrate_to
        // (A a group or clone: its running), unless A is B's parent.
        let parent_of_then = |gi: usize| {
            plan.actions[t].rsc.is_some_and(|ri| {
                obs.groups[gi].members.contains(&ri)
                    || crate::clone_groups::clone_of(obs, ri) == Some(gi)
            })
        };
        if rel == Rel::Start
            && is_mig(t)
            && plan.actions[f].rsc.is_none()
            && matches!(
                plan.actions[f].kind,
                Kind::GroupRunning | Kind::GroupPromoted | Kind::GroupDemoted
            )
            && plan.actions[f].group.is_some_and(|gi| !parent_of_then(gi))
        {
            g.edges.push((map[f].1, map[t].2[2]));
        }
        if rel == Rel::Start
            && is_mig(t)
            && plan.actions[f].rsc.is_some()
            && plan.actions[f].rsc != plan.actions[t].rsc
        {
            let first = if is_mig(f) { map[f].2[3] } else { map[f].1 };
            g.edges.push((first, map[t].2[2]));
            if is_mig(f) {
                g.optional_edges.push((map[f].2[1], map[t].2[2]));
            }
        }
        // "A demote then B stop" also orders A's demote before B's migrate_to.
        if rel == Rel::Stop
            && is_mig(t)
            && matches!(plan.actions[f].kind, Kind::GroupDemoted | Kind::Demote)
        {
            g.edges.push((map[f].1, map[t].2[2]));
        }
        // "A stop then B stop" (a constraint, or a later group member before an earlier one)
        // also orders A's stop before B's migrate_to.
        if matches!(rel, Rel::Stop | Rel::GroupStop | Rel::SourceStop)
            && is_mig(t)
            && plan.actions[f].rsc.is_some()
            && plan.actions[f].rsc != plan.actions[t].rsc
        {
            if is_mig(f) {
                g.optional_edges.push((map[f].2[0], map[t].2[2]));
            } else {
                g.edges.push((map[f].1, map[t].2[2]));
            }
        }
    }
    // A load_stopped -> migrate_to ordering that closes a loop (another migration the other
    // way whose stop releases that load_stopped) is dropped, as Pacemaker's
    // `ordering_is_invalid` does: migrate_to actions from the last created back, each loop
    // checked with the orderings still kept (load-stopped-loop-2).
    let load_migrations: Vec<(usize, usize)> = {
        let mut v: Vec<(usize, usize)> = g
            .edges
            .iter()
            .copied()
            .filter(|&(f, t)| {
                g.actions[f].task.starts_with("load_stopped") && g.actions[t].task == "migrate_to"
            })
            .collect();
        v.sort_by_key(|e| std::cmp::Reverse(e.1));
        v.dedup();
        v
    };
    for (load, migrate_to) in load_migrations {
        let mut seen = vec![false; g.actions.len()];
        let mut stack = vec![migrate_to];
        let mut loops = false;
        while let Some(a) = stack.pop() {
            if a == load {
                loops = true;
                break;
            }
            if std::mem::replace(&mut seen[a], true) {
                continue;
            }
            stack.extend(g.edges.iter().filter(|e| e.0 == a).map(|e| e.1));
        }
        if loops {
            g.edges.retain(|&e| e != (load, migrate_to));
        }
    }
    // Optional orderings after a migration's stop: drawn only.
    for &(f, t) in &plan.drawn_orderings {
        let source = if is_mig(f) { map[f].2[0] } else { map[f].1 };
        g.optional_edges.push((source, map[t].0));
    }
    // Start orderings with a start that is only drawn.
    for &(f, t) in &plan.dot_orderings {
        g.dot_edges.push((map[f].1, map[t].0));
    }
    // An abandoned migration keeps its migrate_to and migrate_from, unrunnable and only drawn:
    // after what the start waited for, before the stop and the start (which is only drawn too
    // when the resource stops instead).
    for &(ri, source, target) in &plan.abandoned_migrations {
        let find = |kind: Kind, node: usize| {
            (0..plan.actions.len()).find(|&pi| {
                let a = &plan.actions[pi];
                a.rsc == Some(ri)
                    && a.kind == kind
                    && a.node == Some(node)
                    && (!a.dot_only || kind == Kind::Start)
            })
        };
        let (Some(start), Some(stop)) = (find(Kind::Start, target), find(Kind::Stop, source))
        else {
            continue;
        };
        let r = &obs.resources[ri].id;
        let mut half = |task: &str, node: usize| {
            g.actions.push(GraphAction {
                key: op_key(r, task, 0),
                task: task.to_string(),
                rsc: Some(ri),
                group: None,
                node: Some(node),
                interval_ms: 0,
                event: EventKind::RscOp,
                runnable: false,
                migrate: Some((source, target)),
                expected_rc: rc::OK,
                call_id: None,
                optional: false,
                notify: None,
            });
            g.actions.len() - 1
        };
        let migrate_to = half("migrate_to", source);
        let migrate_from = half("migrate_from", target);
        g.dot_edges.push((migrate_to, migrate_from));
        g.dot_edges.push((migrate_from, map[start].0));
        g.dot_edges.push((migrate_from, map[stop].0));
        // (migrate_from is ordered before every stop of the resource: a dangling migration's
        // too)
        for (pi, a) in plan.actions.iter().enumerate() {
            if pi != stop && a.rsc == Some(ri) && a.kind == Kind::Stop && !a.dot_only {
                g.dot_edges.push((migrate_from, map[pi].0));
            }
        }
        // (what the start waits for: another resource's start, or a group's or clone's
        // running that is not the resource's own)
        let other = |f: usize| match (plan.actions[f].rsc, plan.actions[f].group) {
            (Some(fr), _) => fr != ri,
            (None, Some(gi)) => {
                !obs.groups[gi].members.contains(&ri)
                    && crate::clone_groups::clone_of(obs, ri) != Some(gi)
            }
            _ => false,
        };
        let waits: Vec<usize> = plan
            .edges
            .iter()
            .filter(|&&(_, t, rel)| t == start && rel == Rel::Start)
            .map(|&(f, _, _)| f)
            .chain(
                plan.dot_orderings
                    .iter()
                    .filter(|&&(_, t)| t == start)
                    .map(|&(f, _)| f),
            )
            .collect();
        for f in waits {
            if other(f) {
                g.dot_edges.push((map[f].1, migrate_to));
            }
        }
    }
    // Unrunnable actions make their mandatory dependents unrunnable.
    let mut plan_reason: Vec<Option<&str>> = vec![None; g.actions.len()];
    for (pi, m) in map.iter().enumerate() {
        for &ga in &m.2 {
            plan_reason[ga] = plan.actions[pi].reason.as_deref();
        }
    }
    // A clone is stopped whether or not its instances' stops can run (Pacemaker orders an
    // instance's stop before the clone's stopped without requiring it): only the clone's own
    // stop makes its stopped unrunnable.
    let clone_stopped: Vec<bool> = g
        .actions
        .iter()
        .map(|a| {
            a.rsc.is_none()
                && a.task == "stopped"
                && a.group.is_some_and(|gi| obs.groups[gi].clone.is_some())
        })
        .collect();
    let groups: Vec<Option<usize>> = g.actions.iter().map(|a| a.group).collect();
    let instance_to_clone_stopped = |f: usize, t: usize| clone_stopped[t] && groups[f] != groups[t];
    // (Pacemaker blocks the colocation dependents of the starts and promotes unrunnable when
    // created before it updates any action for its orderings: `pcmk__apply_orderings`)
    block_colocation_dependents(obs, &mut g);
    loop {
        let mut changed = false;
        for &(f, t) in &g.edges {
            if !g.actions[f].runnable
                && g.actions[t].runnable
                && !g.optional_orderings.contains(&(f, t))
                && !instance_to_clone_stopped(f, t)
            {
                g.actions[t].runnable = false;
                if let (Some(fr), Some(tr)) = (g.actions[f].rsc, g.actions[t].rsc) {
                    if fr != tr && plan_reason[t].is_none() {
                        g.unrunnable_reasons.entry(t).or_insert_with(|| {
                            format!("unrunnable {} {}", obs.resources[fr].id, g.actions[f].task)
                        });
                    }
                }
                changed = true;
            }
        }
        if !changed && !block_colocation_dependents(obs, &mut g) {
            break;
        }
    }
    // Clone notifications, created as Pacemaker adds the clone to the graph.
    let notes = crate::notifications::add(obs, &mut g, &plan.clone_allowed);
    let with_notes = |v: Vec<usize>| -> Vec<usize> {
        let mut out = Vec::with_capacity(v.len());
        for a in v {
            if let Some(n) = notes.after.get(&a) {
                out.extend(n.iter().rev());
            }
            out.push(a);
        }
        out
    };
    let rsc_notes = |ri: usize| -> Vec<usize> {
        notes
            .per_rsc
            .get(&ri)
            .map(|v| v.iter().rev().copied().collect())
            .unwrap_or_default()
    };
    // Synapse order: per top-level entry in processing order, group pseudo actions then members,
    // each resource's actions newest first (by where Pacemaker creates them: an action created
    // earlier than the plan adds it is older than the actions after that position); then the
    // other actions newest first.
    let mut order: Vec<usize> = Vec::new();
    let created = |pi: usize| match plan.actions[pi].created_at {
        Some(at) => (at, false),
        None => (pi, true),
    };
    let per_plan = |pred: &dyn Fn(usize) -> bool| -> Vec<usize> {
        let mut v = Vec::new();
        let mut newest_first: Vec<usize> = (0..plan.actions.len()).filter(|&pi| pred(pi)).collect();
        newest_first.sort_by_key(|&pi| std::cmp::Reverse((created(pi), pi)));
        for pi in newest_first {
            {
                let mut created = map[pi].2.clone();
                created.reverse();
                // a continuing migration maps its migrate_to slot to migrate_from
                created.dedup();
                v.extend(created);
            }
        }
        v
    };
    // A bundle's synapses (`pcmk__bundle_expand`): its inner clone's, then per replica the IP's,
    // the container's and the connection's; its own pseudo actions last.
    let mut tops: Vec<Top> = Vec::new();
    let mut bundle_own: Vec<usize> = Vec::new();
    for t in &plan.order {
        match crate::bundles::bundle_of(obs, *t) {
            None => tops.push(*t),
            Some((_, false)) => {}
            Some((bi, true)) => {
                let b = &obs.bundles[bi];
                tops.extend(b.child.map(Top::Group));
                for r in &b.replicas {
                    tops.extend(r.ip.map(Top::Primitive));
                    tops.push(Top::Primitive(r.container));
                    tops.extend(r.remote.map(Top::Primitive));
                }
                bundle_own.push(b.containers);
            }
        }
    }
    for t in &tops {
        match *t {
            Top::Primitive(ri) => order.extend(per_plan(&|pi| plan.actions[pi].rsc == Some(ri))),
            // A group's pseudo actions come before its members'; a clone's after its
            // instances'.
            Top::Group(gi) => {
                let own = with_notes(per_plan(&|pi| {
                    plan.actions[pi].group == Some(gi) && plan.actions[pi].rsc.is_none()
                }));
                let is_clone = obs.groups[gi].clone.is_some();
                if !is_clone {
                    order.extend(own.iter().copied());
                }
                // (a clone of a group: each instance's pseudo actions, then its members')
                let instances = obs.groups[gi]
                    .clone
                    .as_ref()
                    .map(|c| c.instances.clone())
                    .unwrap_or_default();
                for &ig in &instances {
                    order.extend(per_plan(&|pi| {
                        plan.actions[pi].group == Some(ig) && plan.actions[pi].rsc.is_none()
                    }));
                    for &ri in &obs.groups[ig].members {
                        order.extend(rsc_notes(ri));
                        order.extend(per_plan(&|pi| plan.actions[pi].rsc == Some(ri)));
                    }
                }
                for &ri in obs.groups[gi]
                    .members
                    .iter()
                    .filter(|_| instances.is_empty())
                {
                    order.extend(rsc_notes(ri));
                    order.extend(per_plan(&|pi| plan.actions[pi].rsc == Some(ri)));
                }
                if is_clone {
                    order.extend(own);
                }
            }
        }
    }
    // (`pcmk__bundle_expand` adds none of a bundle's own actions: they come with the actions
    // that belong to no resource, newest first: after the guest fencings, the shutdowns and
    // the fencings decided after the status was unpacked, which Pacemaker creates once every
    // resource's actions are)
    let unowned = |pi: usize| plan.actions[pi].rsc.is_none() && plan.actions[pi].group.is_none();
    let late = |pi: usize| match plan.actions[pi].kind {
        Kind::GuestFence { .. } | Kind::Shutdown => true,
        Kind::Fence => plan.actions[pi]
            .node
            .is_some_and(|ni| obs.nodes[ni].fence_phase > 0),
        _ => false,
    };
    if !bundle_own.is_empty() {
        order.extend(per_plan(&|pi| unowned(pi) && late(pi)));
    }
    for gi in bundle_own.iter().rev() {
        order.extend(with_notes(per_plan(&|pi| {
            plan.actions[pi].group == Some(*gi) && plan.actions[pi].rsc.is_none()
        })));
    }
    order.extend(per_plan(&|pi| {
        unowned(pi) && (bundle_own.is_empty() || !late(pi))
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

/// What executing one fired action returned, as its caller decides: the expected results
/// (`firing_order`), crm_simulate's `-F` failures, or the scenario runner's model of the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The action returned this rc (fencing: 0 is success); a failure when it is not the expected
    /// one (a cancel never fails).
    Rc(i32),
    /// The action is flagged failed with this rc whatever was expected (crm_simulate's `-F`
    /// flags every action its spec names, even with the expected rc).
    Failed(i32),
    /// The action could not complete yet (fencing that waits for a watchdog): nothing is
    /// recorded, and nothing fires after it.
    Pending,
}

/// One fired action and its outcome, in firing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fired {
    pub action: usize,
    pub outcome: Outcome,
}

impl Fired {
    /// The rc of a failed action (`None`: it succeeded, or is pending).
    pub fn failed_rc(&self, g: &TransitionGraph) -> Option<i32> {
        let ga = &g.actions[self.action];
        match self.outcome {
            Outcome::Failed(rc) => Some(rc),
            Outcome::Rc(rc) if rc != ga.expected_rc && ga.task != "cancel" => Some(rc),
            Outcome::Rc(_) | Outcome::Pending => None,
        }
    }
}

/// Fires synapses as crm_simulate does (each pass in order, results confirmed at once); returns the firing order.
pub fn firing_order(g: &TransitionGraph) -> Vec<usize> {
    fire(g, &mut |ga| Outcome::Rc(ga.expected_rc))
        .into_iter()
        .map(|f| f.action)
        .collect()
}

/// Fires synapses as crm_simulate does, asking `outcome_of` what each resource and fencing
/// action returns, when it fires (cluster and pseudo actions return what is expected). The
/// first failure or pending action aborts the transition, as the controller does: no further
/// resource, fencing or cluster action fires (`outcome_of` is not asked), nor anything that
/// waits for the failed action; pseudo actions whose inputs all succeeded still fire.
pub fn fire(
    g: &TransitionGraph,
    outcome_of: &mut dyn FnMut(&GraphAction) -> Outcome,
) -> Vec<Fired> {
    let mut confirmed = vec![false; g.actions.len()];
    let mut failed = vec![false; g.actions.len()];
    let mut fired = vec![false; g.synapses.len()];
    let mut aborted = false;
    let mut out = Vec::new();
    loop {
        let mut progress = false;
        for (si, s) in g.synapses.iter().enumerate() {
            if fired[si] || !s.inputs.iter().all(|&i| confirmed[i] && !failed[i]) {
                continue;
            }
            let a = &g.actions[s.action];
            if aborted && !a.event.is_pseudo() {
                continue;
            }
            fired[si] = true;
            let outcome = match a.event {
                EventKind::RscOp | EventKind::Fence | EventKind::Unfence => outcome_of(a),
                EventKind::Cluster | EventKind::Pseudo | EventKind::GuestFence { .. } => {
                    Outcome::Rc(a.expected_rc)
                }
            };
            let f = Fired {
                action: s.action,
                outcome,
            };
            if outcome == Outcome::Pending {
                aborted = true;
            } else {
                confirmed[s.action] = true;
                if f.failed_rc(g).is_some() {
                    failed[s.action] = true;
                    aborted = true;
                }
            }
            out.push(f);
            progress = true;
        }
        if !progress {
            break;
        }
    }
    out
}

/// Renders the "Executing Cluster Transition" lines.
/// A `-F` failure adds crm_simulate's "Pretending action N failed" line (N is our action id)
/// and the fail count it injects, stamped `when`.
pub fn render_execution(obs: &Observed, g: &TransitionGraph, fired: &[Fired], when: i64) -> String {
    let mut out = String::new();
    for f in fired {
        let a = f.action;
        let ga = &g.actions[a];
        let node = ga.node.map(|n| obs.nodes[n].uname.as_str()).unwrap_or("");
        match ga.event {
            EventKind::RscOp => {
                let r = ga
                    .rsc
                    .map(|r| crate::clones::simulated_name(obs, r))
                    .unwrap_or("");
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
            EventKind::GuestFence { .. } => {
                let _ = writeln!(out, "  * Pseudo action:   {} on {}", ga.key, node);
            }
            EventKind::Fence => {
                let _ = writeln!(out, "  * Fencing {} (reboot)", node);
            }
            EventKind::Unfence => {
                let _ = writeln!(out, "  * Fencing {} (on)", node);
            }
            EventKind::Cluster => match ga.rsc {
                Some(r) => {
                    let _ = writeln!(
                        out,
                        "  * Cluster action:  {} for {} on {}",
                        ga.task,
                        obs.resources[r].history_id(),
                        node
                    );
                }
                None => {
                    let _ = writeln!(out, "  * Cluster action:  {} on {}", ga.task, node);
                }
            },
        }
        if let Some(rc) = f.failed_rc(g) {
            let _ = writeln!(out, "Pretending action {} failed with rc={rc}", a + 1);
            out.push_str(&crate::simulate::failure_lines(obs, g, f, when));
        }
    }
    out
}

/// One "Transition Summary" line: `* VERB RSC ( DETAILS ) REASON`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryLine {
    pub verb: String,
    pub rsc: String,
    /// The node, or `source -> target`.
    pub details: String,
    /// "due to ...", "blocked", or empty.
    pub reason: String,
}

/// Renders the "Transition Summary" lines with crm_simulate's growing column widths.
pub fn render_summary(
    obs: &Observed,
    plan: &Plan,
    rec: &Reconciliation,
    g: &TransitionGraph,
) -> String {
    let mut out = String::new();
    // (guests' pseudo fencing, fencing, unfencing: newest first, see `summary::fencing_lines`)
    for line in crate::summary::fencing_lines(obs, rec) {
        let _ = writeln!(out, "  * {line}");
    }
    let lines = summary_lines(obs, plan, rec, g);
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

/// The resources a colocation naming `id` concerns: a primitive's own index, or a group's or
/// clone's members (its instances); with whether `id` is a group or clone.
fn colocation_resources(obs: &Observed, id: &str) -> Option<(Vec<usize>, Option<usize>)> {
    if let Some(gi) = obs.group_index(id) {
        return Some((obs.groups[gi].members.clone(), Some(gi)));
    }
    let ri = obs.rsc_index(id)?;
    // (a member of a group or an instance of a clone is not a primary of its own here)
    (obs.resources[ri].group.is_none()).then(|| (vec![ri], None))
}

/// Marks unrunnable the starts (promotes, for a Promoted dependent role) of what is colocated
/// (INFINITY) with a resource none of whose parts can start (or, for a colocation with its
/// Promoted role, be promoted), as `pcmk__block_colocation_dependents` does. Whether anything
/// changed.
fn block_colocation_dependents(obs: &Observed, g: &mut TransitionGraph) -> bool {
    let mut changed = false;
    for (dependent, primary, dependent_role, primary_role) in &obs.mandatory_colocations {
        let Some((parts, _)) = colocation_resources(obs, primary) else {
            continue;
        };
        let Some((mut dep_parts, dep_group)) = colocation_resources(obs, dependent) else {
            continue;
        };
        // (`mark_action_blocked` recurses into a bundle's children: per replica its IP,
        // container and connection, then its inner clone and that clone's instances)
        let mut dep_groups = vec![dep_group];
        if let Some(b) = obs.bundles.iter().find(|b| b.id == *dependent) {
            for r in &b.replicas {
                dep_parts.extend(r.ip);
                dep_parts.extend(r.remote);
            }
            if let Some(ci) = b.child {
                dep_groups.push(Some(ci));
                dep_parts.extend(obs.groups[ci].members.iter().copied());
            }
        }
        for task in ["start", "promote"] {
            if task == "promote" && *primary_role != Some(crate::observed::Role::Promoted) {
                continue;
            }
            // Every part has the action and none can run.
            let first_of = |ri: usize| {
                g.actions
                    .iter()
                    .position(|a| a.rsc == Some(ri) && a.task == task)
            };
            let firsts: Vec<Option<usize>> = parts.iter().map(|&ri| first_of(ri)).collect();
            if firsts.is_empty()
                || firsts
                    .iter()
                    .any(|f| f.is_none_or(|i| g.actions[i].runnable))
            {
                continue;
            }
            let cause = obs.resources[parts[0]].id.clone();
            let blocked_task = if *dependent_role == Some(crate::observed::Role::Promoted) {
                "promote"
            } else {
                "start"
            };
            for i in 0..g.actions.len() {
                let a = &g.actions[i];
                let ours = match a.rsc {
                    Some(ri) => dep_parts.contains(&ri),
                    None => a.group.is_some() && dep_groups.contains(&a.group),
                };
                if ours && a.runnable && a.task == blocked_task {
                    g.actions[i].runnable = false;
                    g.colocation_blocked
                        .insert(i, format!("colocation with {cause}"));
                    changed = true;
                }
            }
        }
    }
    changed
}

/// The "Transition Summary" resource lines (after the fencing lines), in placement order.
pub fn summary_lines(
    obs: &Observed,
    plan: &Plan,
    rec: &Reconciliation,
    g: &TransitionGraph,
) -> Vec<SummaryLine> {
    let name = |n: usize| obs.nodes[n].uname.clone();
    let runnable_start = |ri: usize| -> bool {
        g.actions
            .iter()
            .filter(|a| a.rsc == Some(ri) && a.task == "start")
            .all(|a| a.runnable)
    };
    // A resource's stop on a node: whether it can run, and why it happens or cannot (its own
    // reason, else the one an ordering gave it).
    let stop_there = |ri: usize, ni: usize| -> Option<(bool, Option<String>)> {
        let gi = (0..g.actions.len()).find(|&i| {
            let a = &g.actions[i];
            a.rsc == Some(ri) && a.task == "stop" && a.node == Some(ni)
        })?;
        let own = plan
            .actions
            .iter()
            .find(|a| a.rsc == Some(ri) && a.kind == Kind::Stop && a.node == Some(ni))
            .and_then(|a| a.reason.clone());
        Some((
            g.actions[gi].runnable,
            own.or_else(|| g.unrunnable_reasons.get(&gi).cloned()),
        ))
    };
    let mut lines: Vec<SummaryLine> = Vec::new();
    let mut ris: Vec<usize> = Vec::new();
    for t in &plan.order {
        // A bundle's lines: per replica its IP, container, connection and inner instance
        // (`pcmk__bundle_output_actions`), then any orphaned instance.
        if let Some((bi, first)) = crate::bundles::bundle_of(obs, *t) {
            if first {
                let b = &obs.bundles[bi];
                for r in &b.replicas {
                    ris.extend(r.ip);
                    ris.push(r.container);
                    ris.extend(r.remote);
                    ris.extend(r.child);
                }
                if let Some(ci) = b.child {
                    ris.extend(
                        obs.groups[ci]
                            .members
                            .iter()
                            .filter(|m| !b.replicas.iter().any(|r| r.child == Some(**m))),
                    );
                }
            }
            continue;
        }
        match *t {
            Top::Primitive(ri) => ris.push(ri),
            Top::Group(gi) => ris.extend(obs.groups[gi].members.iter().copied()),
        }
    }
    for ri in ris {
        let first_line = lines.len();
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
        // A resource that should start again but cannot stops: why its stop happens (or why
        // its start cannot), blocked when the stop cannot run either.
        let stop_instead = |source: usize| match stop_there(ri, source) {
            Some((runnable, Some(why))) => line("Stop", name(source), Some(why), !runnable),
            Some((runnable, None)) => line("Stop", name(source), start_reason.clone(), !runnable),
            None => line("Stop", name(source), start_reason.clone(), false),
        };
        match &rec.changes[ri] {
            Change::Keep => {
                let reload = plan
                    .actions
                    .iter()
                    .find(|a| a.rsc == Some(ri) && a.kind == Kind::Reload);
                if let Some(ni) = reload.and_then(|a| a.node) {
                    lines.push(line("Reload", name(ni), None, false));
                }
            }
            // (an instance Pacemaker unassigned for want of an interleaved first: no line)
            Change::Start { .. } if rec.inhibited.contains(&ri) => {}
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
                    let unrunnable = plan.actions.iter().any(|a| {
                        a.rsc == Some(ri)
                            && a.node == Some(s)
                            && matches!(a.kind, Kind::Stop)
                            && !a.runnable
                    });
                    lines.push(line(
                        "Stop",
                        name(s),
                        reason.clone(),
                        *blocked || unrunnable,
                    ));
                }
            }
            Change::Move { source, target, .. } => {
                if runnable_start(ri) {
                    // (a failed resource active on several nodes moves: Pacemaker's
                    // `rsc_action_default` calls that a recovery)
                    lines.push(line(
                        if r.failed { "Recover" } else { "Move" },
                        format!("{} -> {}", name(*source), name(*target)),
                        rec.move_reasons.get(&ri).cloned(),
                        false,
                    ));
                } else {
                    lines.push(stop_instead(*source));
                }
            }
            Change::Recover { source, target, .. } => {
                if !runnable_start(ri) {
                    lines.push(stop_instead(*source));
                } else if source == target {
                    let verb = if r.failed { "Recover" } else { "Restart" };
                    lines.push(line(verb, name(*source), None, false));
                } else {
                    lines.push(line(
                        "Recover",
                        format!("{} -> {}", name(*source), name(*target)),
                        None,
                        false,
                    ));
                }
            }
            Change::Restart { node, reason } => {
                if runnable_start(ri) {
                    lines.push(line("Restart", name(*node), reason.clone(), false))
                } else {
                    lines.push(stop_instead(*node));
                }
            }
            Change::Migrate { source, target } => {
                lines.push(line(
                    "Migrate",
                    format!("{} -> {}", name(*source), name(*target)),
                    None,
                    false,
                ));
            }
        }
        let promote_blocked = g
            .actions
            .iter()
            .enumerate()
            .find(|(_, a)| a.rsc == Some(ri) && a.task == "promote")
            .and_then(|(i, _)| g.colocation_blocked.get(&i).cloned());
        crate::promotable::role_summary(obs, plan, rec, ri, &mut lines, first_line);
        if let Some(why) = promote_blocked {
            for l in &mut lines[first_line..] {
                if l.verb == "Promote" {
                    l.reason = format!("due to {why} (blocked)");
                }
            }
        }
    }
    lines
}

fn xml_escape(v: &str) -> String {
    v.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn event_tag(a: &GraphAction) -> &'static str {
    match a.event {
        EventKind::RscOp => "rsc_op",
        EventKind::Pseudo | EventKind::GuestFence { .. } => "pseudo_event",
        EventKind::Fence | EventKind::Unfence | EventKind::Cluster => "crm_event",
    }
}

fn action_ref(obs: &Observed, a: &GraphAction, id: usize) -> String {
    // A shutdown lock's clean-up only touches the CIB.
    let mode = if a.event == EventKind::Cluster && a.task == "lrm_delete" {
        " mode=\"cib\""
    } else {
        ""
    };
    let mut s = format!(
        "<{}{mode} id=\"{}\" operation=\"{}\" operation_key=\"{}\"",
        event_tag(a),
        id,
        xml_escape(&a.task),
        xml_escape(&a.key)
    );
    // An instance known by another name in the history: its own key too.
    if let Some(uuid) = a.notify.as_ref().and_then(|n| n.uuid.as_ref()) {
        s.push_str(&format!(" internal_operation_key=\"{}\"", xml_escape(uuid)));
    } else if let Some(r) = a.rsc.map(|ri| &obs.resources[ri]) {
        if let Some(rest) = r.clone_name.as_deref().and_then(|c| a.key.strip_prefix(c)) {
            s.push_str(&format!(
                " internal_operation_key=\"{}{}\"",
                xml_escape(&r.id),
                xml_escape(rest)
            ));
        }
    }
    if a.event != EventKind::Pseudo {
        if let Some(n) = a.node {
            let node = &obs.nodes[n];
            s.push_str(&format!(
                " on_node=\"{}\" on_node_uuid=\"{}\"",
                xml_escape(&node.uname),
                xml_escape(&node.id)
            ));
            // An action on a remote node goes through its connection's host (a notification
            // as the operation it notifies of: `pcmk__connection_host_for_action`).
            let notified = a.notify.as_ref().and_then(|m| {
                m.meta
                    .iter()
                    .find(|(k, _)| k == "notify_operation")
                    .map(|(_, v)| v.as_str())
            });
            let task = match (a.task.as_str(), notified) {
                ("notify", Some(op)) => op,
                (t, _) => t,
            };
            let router = (!matches!(a.event, EventKind::Fence | EventKind::GuestFence { .. }))
                .then(|| crate::remote::router(obs, n, task))
                .flatten();
            if let Some(host) = router {
                s.push_str(&format!(
                    " router_node=\"{}\"",
                    xml_escape(&obs.nodes[host].uname)
                ));
            }
        }
    }
    s
}

/// Meta-attributes as graph fields: `CRM_meta_` and the name with dashes as underscores.
fn meta_fields(meta: &std::collections::BTreeMap<String, String>) -> Vec<(String, String)> {
    meta.iter()
        .map(|(k, v)| (format!("CRM_meta_{}", k.replace('-', "_")), v.clone()))
        .collect()
}

/// A synapse's priority: its resource's (or group's) priority meta-attribute.
fn synapse_priority(obs: &Observed, a: &GraphAction) -> i64 {
    if a.notify.as_ref().is_some_and(|n| n.infinity) {
        return crate::cib::INFINITY;
    }
    let meta = match (a.rsc, a.group) {
        (Some(ri), _) => &obs.resources[ri].meta,
        // A clone's running and stopped pseudo actions come first (Pacemaker: INFINITY).
        (None, Some(gi))
            if obs.groups[gi].clone.is_some()
                && matches!(
                    a.task.as_str(),
                    "running" | "stopped" | "promoted" | "demoted"
                ) =>
        {
            return crate::cib::INFINITY;
        }
        (None, Some(gi)) => &obs.groups[gi].meta,
        (None, None) => return 0,
    };
    meta.get("priority")
        .and_then(|v| crate::cib::parse_score(v))
        .unwrap_or(0)
}

/// Renders the transition graph as Pacemaker's graph XML.
pub fn render_graph_xml(obs: &Observed, g: &TransitionGraph) -> String {
    let id_of = |a: usize| a + 1;
    let opt = |n: &str, d: &str| obs.option(n).unwrap_or(d).to_string();
    // A failed start counts INFINITY failures only with start-failure-is-fatal.
    let start_offset = if obs.start_failure_is_fatal {
        "INFINITY"
    } else {
        "1"
    };
    // (a positive migration-limit is passed on to the controller)
    let migration_limit = obs
        .option("migration-limit")
        .filter(|v| v.parse::<i64>().is_ok_and(|n| n > 0))
        .map(|v| format!(" migration-limit=\"{v}\""))
        .unwrap_or_default();
    let recheck = obs
        .recheck_by
        .map(|t| format!(" recheck-by=\"{t}\""))
        .unwrap_or_default();
    let mut out = format!(
        "<transition_graph cluster-delay=\"{}\" stonith-timeout=\"{}\" failed-stop-offset=\"INFINITY\" failed-start-offset=\"{start_offset}\"  transition_id=\"0\"{migration_limit}{recheck}>\n",
        opt("cluster-delay", "60s"),
        opt("stonith-timeout", "60s")
    );
    for (si, syn) in g.synapses.iter().enumerate() {
        let a = &g.actions[syn.action];
        match synapse_priority(obs, a) {
            p if p > 0 => {
                let _ = writeln!(out, "  <synapse id=\"{si}\" priority=\"{p}\">");
            }
            _ => {
                let _ = writeln!(out, "  <synapse id=\"{si}\">");
            }
        }
        out.push_str("    <action_set>\n");
        // The stop of a resource locked in this run records the lock (the node's history keeps it).
        let lock = a
            .rsc
            .and_then(|ri| obs.resources[ri].new_lock)
            .filter(|&(ln, _)| {
                a.event == EventKind::RscOp && a.task == "stop" && a.node == Some(ln)
            })
            .map(|(_, since)| format!(" shutdown-lock=\"{since}\""))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "      {}{lock}>",
            action_ref(obs, a, id_of(syn.action))
        );
        let mut attrs: Vec<(String, String)> = Vec::new();
        if let Some(ri) = a.rsc {
            let r = &obs.resources[ri];
            // Cluster actions on a resource (clear_failcount, lrm_delete) name it too.
            if matches!(a.event, EventKind::RscOp | EventKind::Cluster) {
                // An anonymous clone instance is named by its primitive, the instance as
                // `long-id`.
                // (An orphaned instance known by another name: that name, its own as long-id.)
                let (id, long_id) = match (&r.clone_base, &r.clone_name) {
                    _ if r.unique_in_graph => (r.id.as_str(), ""),
                    (Some(_), Some(name)) if r.orphan => (name.as_str(), r.id.as_str()),
                    (Some(_), _) => (r.history_id(), crate::clones::long_id(r)),
                    (None, _) => (r.history_id(), ""),
                };
                let long_id = match long_id {
                    "" => String::new(),
                    l => format!(" long-id=\"{}\"", xml_escape(l)),
                };
                let mut prim = format!(
                    "<primitive id=\"{}\"{long_id} class=\"{}\"",
                    xml_escape(id),
                    xml_escape(&r.class)
                );
                if let Some(p) = &r.provider {
                    prim.push_str(&format!(" provider=\"{}\"", xml_escape(p)));
                }
                prim.push_str(&format!(" type=\"{}\"/>", xml_escape(&r.kind)));
                let _ = writeln!(out, "        {prim}");
            }
            // The configured operation's own instance attributes come first (they win over the
            // resource's), then the resource's parameters evaluated for the action's node.
            let no_attrs = std::collections::BTreeMap::new();
            let node_attrs = a.node.map_or(&no_attrs, |ni| &obs.nodes[ni].attrs);
            let op_task = if a.task == "cancel" {
                "monitor"
            } else {
                a.task.as_str()
            };
            let mut op = r.op_params(op_task, a.interval_ms, node_attrs, obs.now);
            if let Some(host) = crate::bundles::remote_addr_host(obs, ri) {
                op.params
                    .insert("addr".into(), obs.nodes[host].uname.clone());
            }
            attrs.extend(op.extra.into_iter().chain(op.params));
            // A bundle instance's replica address (see `crate::bundles`).
            if let Some(ip) = r.meta.get("external-ip") {
                attrs.push(("pcmk_external_ip".into(), ip.clone()));
            }
            if let Some(gi) = r.group {
                attrs.extend(crate::clones::graph_meta(obs, gi, Some(ri)));
            }
            // A filler's actions name its container.
            if let Some(ci) = r.container {
                attrs.push(("CRM_meta_container".into(), obs.resources[ci].id.clone()));
            }
            if a.interval_ms > 0 {
                attrs.push(("CRM_meta_interval".into(), a.interval_ms.to_string()));
                attrs.push(("CRM_meta_name".into(), "monitor".into()));
            }
            // The meta-attributes of the configured operation and op_defaults (a cancel's
            // are its own).
            // (a key with "_notify_" takes the notify operation's: an instance's notified)
            let own_task = if a.task == "notified" {
                "notify"
            } else {
                a.task.as_str()
            };
            if matches!(a.event, EventKind::RscOp | EventKind::Pseudo) && a.task != "cancel" {
                attrs.extend(meta_fields(&r.op_meta(own_task, a.interval_ms)));
            }
            // A cancel carries the cancelled operation's name, and the meta-attributes of that
            // operation's configuration when it has one (Pacemaker looks the cancel's key up
            // among the configured operations; an orphaned operation has none).
            if a.task == "cancel" {
                attrs.push(("CRM_meta_operation".into(), "monitor".into()));
                if let Some(call_id) = a.call_id {
                    attrs.push(("CRM_meta_call_id".into(), call_id.to_string()));
                }
                let configured = r
                    .ops
                    .iter()
                    .any(|o| o.name == "monitor" && o.interval_ms == a.interval_ms);
                if configured {
                    attrs.extend(meta_fields(&r.op_meta("monitor", a.interval_ms)));
                } else {
                    attrs.retain(|(k, _)| k != "CRM_meta_name");
                }
            }
            if let Some((source, target)) = a.migrate {
                attrs.push((
                    "CRM_meta_migrate_source".into(),
                    obs.nodes[source].uname.clone(),
                ));
                attrs.push((
                    "CRM_meta_migrate_target".into(),
                    obs.nodes[target].uname.clone(),
                ));
                // Not for remote connections (Pacemaker skips them).
                if a.task == "migrate_to" && r.remote_node.is_none() {
                    attrs.push(("CRM_meta_record_pending".into(), "true".into()));
                }
            }
            // Probes and Stopped-role monitors expect "not running".
            if a.event == EventKind::RscOp && a.task == "monitor" && a.expected_rc != rc::OK {
                attrs.push(("CRM_meta_op_target_rc".into(), a.expected_rc.to_string()));
            }
            // Every action of a resource carries its operation's timeout, pseudo ones too
            // (a migration's start, a stop implied by fencing).
            if matches!(
                a.event,
                EventKind::RscOp | EventKind::Pseudo | EventKind::Cluster
            ) {
                // (a cancel of a configured monitor takes that operation's timeout)
                let configured_cancel = a.task == "cancel"
                    && r.ops
                        .iter()
                        .any(|o| o.name == "monitor" && o.interval_ms == a.interval_ms);
                let task = if configured_cancel {
                    "monitor"
                } else {
                    own_task
                };
                attrs.push((
                    "CRM_meta_timeout".into(),
                    r.op_timeout_ms(task, a.interval_ms).to_string(),
                ));
            }
        }
        // A group's pseudo actions carry op_defaults and the default operation timeout.
        if let Some(gi) = a.group {
            attrs.extend(crate::clones::graph_meta(obs, gi, None));
            if let Some(&m) = obs.groups[gi].members.first() {
                let defaults = obs.resources[m].op_meta("", 0);
                attrs.extend(meta_fields(&defaults));
            }
            attrs.push((
                "CRM_meta_timeout".into(),
                obs.group_op_timeout_ms(gi).to_string(),
            ));
        }
        if a.event == EventKind::Cluster
            && matches!(a.task.as_str(), "do_shutdown" | "clear_failcount")
        {
            attrs.push(("CRM_meta_op_no_wait".into(), "true".into()));
        }
        if a.event != EventKind::Pseudo {
            if let Some(n) = a.node {
                attrs.push(("CRM_meta_on_node".into(), obs.nodes[n].uname.clone()));
                attrs.push(("CRM_meta_on_node_uuid".into(), obs.nodes[n].id.clone()));
            }
        }
        if let Some(action) = a.event.fence_action() {
            attrs.push(("CRM_meta_stonith_action".into(), action.into()));
            if let Some(ni) = a.node {
                // The node's attributes, but those the cluster generates (with '#' or ':').
                for (k, v) in &obs.nodes[ni].attrs {
                    if !k.contains(['#', ':']) {
                        attrs.push((format!("CRM_meta_{}", k.replace('-', "_")), v.clone()));
                    }
                }
                let delay = crate::observed::priority_fencing_delay(obs, ni)
                    .filter(|_| action != "on" && obs.nodes[ni].fence_priority_delay);
                if let Some(delay) = delay {
                    attrs.push(("CRM_meta_priority_fencing_delay".into(), delay.to_string()));
                }
                if let Some((all, secure)) = crate::unfencing::fencing_digests(obs, ni) {
                    attrs.push(("CRM_meta_digests_all".into(), all));
                    attrs.push(("CRM_meta_digests_secure".into(), secure));
                }
            }
        }
        attrs.extend(crate::guest::graph_meta(obs, a));
        if let Some(n) = &a.notify {
            attrs.extend(
                n.meta
                    .iter()
                    .map(|(k, v)| (format!("CRM_meta_{k}"), v.clone())),
            );
        }
        // A meta-attribute set twice keeps its first value (an operation's record-pending wins
        // over a migrate_to's default).
        attrs.sort_by(|x, y| x.0.cmp(&y.0));
        attrs.dedup_by(|later, first| later.0 == first.0);
        // A name that starts with a digit is no XML attribute name: Pacemaker writes it as a
        // `<param name= value=>` child instead.
        let digit = |k: &str| k.starts_with(|c: char| c.is_ascii_digit());
        let body: Vec<String> = attrs
            .iter()
            .filter(|(k, _)| !digit(k))
            .map(|(k, v)| format!("{}=\"{}\"", xml_escape(k), xml_escape(v)))
            .collect();
        let params: Vec<String> = attrs
            .iter()
            .filter(|(k, _)| digit(k))
            .map(|(k, v)| {
                format!(
                    "          <param name=\"{}\" value=\"{}\"/>",
                    xml_escape(k),
                    xml_escape(v)
                )
            })
            .collect();
        if params.is_empty() {
            let _ = writeln!(out, "        <attributes {} />", body.join(" "));
        } else {
            let _ = writeln!(out, "        <attributes {} >", body.join(" "));
            for p in &params {
                let _ = writeln!(out, "{p}");
            }
            let _ = writeln!(out, "        </attributes>");
        }
        if matches!(a.event, EventKind::Fence | EventKind::GuestFence { .. })
            || a.task == "do_shutdown"
        {
            if let Some(n) = a.node {
                // Fencing also downs the guest nodes whose connection runs there.
                let mut downed = vec![n];
                if a.task != "do_shutdown" {
                    downed.extend(crate::guest::hosted_guests(obs, n));
                }
                out.push_str("        <downed>\n");
                for d in downed {
                    let _ = writeln!(
                        out,
                        "          <node id=\"{}\"/>",
                        xml_escape(&obs.nodes[d].id)
                    );
                }
                out.push_str("        </downed>\n");
            }
        } else if let Some(n) = crate::remote::downed_by_stop(obs, g, syn.action) {
            let _ = writeln!(
                out,
                "        <downed>\n          <node id=\"{}\"/>\n        </downed>",
                xml_escape(&obs.nodes[n].id)
            );
        }
        let _ = writeln!(out, "      </{}>", event_tag(a));
        out.push_str("    </action_set>\n");
        if syn.inputs.is_empty() {
            out.push_str("    <inputs/>\n");
        } else {
            out.push_str("    <inputs>\n");
            for &i in &syn.inputs {
                let _ = writeln!(
                    out,
                    "      <trigger>\n        {}/>\n      </trigger>",
                    action_ref(obs, &g.actions[i], id_of(i))
                );
            }
            out.push_str("    </inputs>\n");
        }
        out.push_str("  </synapse>\n");
    }
    out.push_str("</transition_graph>\n");
    out
}

fn dot_label(obs: &Observed, a: &GraphAction) -> String {
    if let Some(key) = a.notify.as_ref().and_then(|n| n.dot_key.as_ref()) {
        return match a.node {
            Some(n) => format!("{key} {}", obs.nodes[n].uname),
            None => key.clone(),
        };
    }
    // Fencing is drawn as its task, fencing action and target ("stonith 'reboot' node2").
    if let Some(action) = a.event.fence_action() {
        let host = a
            .node
            .map(|n| obs.nodes[n].uname.as_str())
            .unwrap_or("<none>");
        return format!("{} '{action}' {host}", a.task);
    }
    // A cancel is drawn as "Cancel" and the key of the operation it cancels.
    if a.task == "cancel" {
        let host = a
            .node
            .map(|n| obs.nodes[n].uname.as_str())
            .unwrap_or("<none>");
        return format!("Cancel {} {host}", a.key);
    }
    match a.node {
        // A node's shutdown is named by its task (its key names the node already).
        Some(n) if a.rsc.is_none() && a.task == "do_shutdown" => {
            format!("{} {}", a.task, obs.nodes[n].uname)
        }
        Some(n)
            if a.rsc.is_some()
                || a.event != EventKind::Pseudo
                || a.task.starts_with("load_stopped") =>
        {
            format!("{} {}", a.key, obs.nodes[n].uname)
        }
        None if a.rsc.is_some() && a.event == EventKind::RscOp => format!("{} <none>", a.key),
        _ => a.key.clone(),
    }
}

/// Renders the transition graph as DOT, as crm_simulate -D does (body lines sorted).
pub fn render_dot(obs: &Observed, g: &TransitionGraph) -> String {
    let in_graph: std::collections::BTreeSet<usize> = g.synapses.iter().map(|s| s.action).collect();
    let mut lines: Vec<String> = Vec::new();
    for &a in &in_graph {
        let ga = &g.actions[a];
        let font = if ga.event.is_pseudo() {
            "orange"
        } else {
            "black"
        };
        lines.push(format!(
            "\"{}\" [ style=bold color=\"green\" fontcolor=\"{}\"]",
            dot_label(obs, ga),
            font
        ));
    }
    for s in &g.synapses {
        for &i in &s.inputs {
            lines.push(format!(
                "\"{}\" -> \"{}\" [ style = bold]",
                dot_label(obs, &g.actions[i]),
                dot_label(obs, &g.actions[s.action])
            ));
        }
    }
    // An action left out of the graph is drawn when it is required, unless its resource is
    // unmanaged (crm_simulate draws those only with all actions).
    let unmanaged = |ga: &GraphAction| ga.rsc.is_some_and(|ri| !obs.resources[ri].managed);
    let drawn = |a: usize| {
        let ga = &g.actions[a];
        in_graph.contains(&a) || (!ga.runnable && !ga.optional && !unmanaged(ga))
    };
    for (a, ga) in g.actions.iter().enumerate() {
        if !ga.runnable && !ga.optional && !unmanaged(ga) {
            // A pseudo action is named in orange, runnable or not.
            let font = if ga.event.is_pseudo() {
                "orange"
            } else {
                "black"
            };
            lines.push(format!(
                "\"{}\" [ style=dashed color=\"red\" fontcolor=\"{font}\"]",
                dot_label(obs, ga)
            ));
            let _ = a;
        }
    }
    // (a load ordering, to or from a load_stopped pseudo action, is drawn only when it is in
    // the graph: crm_simulate never counts one as required)
    let load = |a: usize| g.actions[a].task.starts_with("load_stopped");
    for &(f, t) in &g.edges {
        if drawn(f)
            && drawn(t)
            && (!g.actions[f].runnable || !g.actions[t].runnable)
            && !load(f)
            && !load(t)
        {
            lines.push(format!(
                "\"{}\" -> \"{}\" [ style = dashed]",
                dot_label(obs, &g.actions[f]),
                dot_label(obs, &g.actions[t])
            ));
        }
    }
    for &(f, t) in &g.dot_edges {
        if drawn(f) && drawn(t) {
            lines.push(format!(
                "\"{}\" -> \"{}\" [ style = dashed]",
                dot_label(obs, &g.actions[f]),
                dot_label(obs, &g.actions[t])
            ));
        }
    }
    for &(f, t) in &g.optional_edges {
        if in_graph.contains(&f) && in_graph.contains(&t) {
            lines.push(format!(
                "\"{}\" -> \"{}\" [ style = dashed]",
                dot_label(obs, &g.actions[f]),
                dot_label(obs, &g.actions[t])
            ));
        }
    }
    lines.sort();
    lines.dedup();
    let mut out = String::from(" digraph \"g\" {\n");
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    out.push_str("}\n");
    out
}

/// Renders the allocation scores as `crm_simulate -s` prints them.
pub fn render_scores(obs: &Observed, desired: &crate::placement::Desired) -> String {
    let mut lines = Vec::new();
    let abandoned = desired.abandoned_scores.iter().map(|(ri, s)| (*ri, s));
    let last = (0..obs.resources.len()).map(|ri| (ri, &desired.scores[ri]));
    // A bundle's guest nodes are never among a resource's allowed nodes by default (they are
    // made while the bundle is unpacked, not to be probed): only the inner clone's instances
    // list them.
    let guest_nodes = crate::bundles::guest_nodes(obs);
    let inner: BTreeSet<usize> = obs
        .bundles
        .iter()
        .filter_map(|b| b.child)
        .flat_map(|gi| obs.groups[gi].members.iter().copied())
        .collect();
    let known = |ri: usize, ni: usize| inner.contains(&ri) || !guest_nodes.contains(&ni);
    let connections: BTreeMap<usize, BTreeMap<usize, i64>> = obs
        .bundles
        .iter()
        .flat_map(|b| b.replicas.iter())
        .filter_map(|r| Some((r.remote?, connection_scores(obs, desired, r)?)))
        .collect();
    for (ri, scores) in abandoned.chain(last) {
        let r = &obs.resources[ri];
        if r.orphan {
            continue;
        }
        let scores = connections.get(&ri).unwrap_or(scores);
        // Only the nodes it has a score on: Pacemaker lists the resource's allowed nodes.
        // (a resource banned because it is to be stopped knows every node, -INFINITY)
        let banned = (crate::placement::stop_banned(obs, ri) || desired.unpaired.contains(&ri))
            && !inner.contains(&ri);
        // (the guest nodes its allowed nodes hold since it was unpacked, banned by now)
        let copies = crate::bundles::guest_node_copies(obs, ri);
        let guests = guest_nodes
            .iter()
            .copied()
            .filter(|ni| banned || copies.contains_key(ni))
            .map(|ni| (ni, -crate::cib::INFINITY));
        // (and the guest nodes a location on it names or matches, not listed already)
        let located = |ni: usize| {
            !banned && desired.location_guests[ri].contains(&ni) && !copies.contains_key(&ni)
        };
        let shown = scores
            .iter()
            .filter(|&(&ni, _)| known(ri, ni) || located(ni));
        for (ni, v) in shown.map(|(&ni, &v)| (ni, v)).chain(guests) {
            let n = &obs.nodes[ni];
            let text = if v >= crate::cib::INFINITY {
                "INFINITY".to_string()
            } else if v <= -crate::cib::INFINITY {
                "-INFINITY".to_string()
            } else {
                v.to_string()
            };
            lines.push(format!(
                "pcmk__primitive_assign: {} allocation score on {}: {}",
                r.id, n.uname, text
            ));
        }
    }
    // A group's own scores, then each member's before its colocations (`pcmk__group_assign`);
    // only the nodes each has a score on, as Pacemaker lists a resource's allowed nodes.
    // (A clone of a group shows its instances with its own scores, and each instance's members
    // once the clone's limits apply with the instance.)
    // Orphaned instances of a clone of a group are not shown.
    let orphaned = |ig: usize| {
        obs.groups[ig]
            .members
            .iter()
            .all(|&m| obs.resources[m].orphan)
    };
    for (gi, g) in obs.groups.iter().enumerate() {
        if obs.bundles.iter().any(|b| b.containers == gi) {
            continue;
        }
        let of_groups = g.clone.as_ref().is_some_and(|c| !c.instances.is_empty());
        if (of_groups || crate::clone_groups::is_instance(obs, gi)) && orphaned(gi) {
            continue;
        }
        // (The one instance a clone with clone-max 0 has is shown; orphans found in the
        // history are not.)
        let first_orphan = g.clone.as_ref().map_or(0, |c| c.max.max(1));
        let member_rows = g
            .members
            .iter()
            .enumerate()
            .filter(|&(k, &ri)| !(obs.resources[ri].orphan && (of_groups || k >= first_orphan)))
            .map(|(_, ri)| ri)
            .map(|&ri| {
                let scores = match g.clone {
                    None => desired
                        .instance_scores
                        .get(&ri)
                        .unwrap_or(&desired.member_scores[ri]),
                    Some(_) => &desired.member_scores[ri],
                };
                (
                    obs.resources[ri].id.as_str(),
                    scores,
                    &desired.location_guests[ri],
                    Some(ri),
                )
            });
        let instance_rows = g
            .clone
            .iter()
            .flat_map(|c| c.instances.iter())
            .filter(|&&ig| !orphaned(ig))
            .map(|&ig| {
                let scores = desired
                    .clone_base_scores
                    .get(&ig)
                    .or_else(|| desired.clone_base_scores.get(&gi))
                    .unwrap_or(&desired.group_scores[gi]);
                (
                    obs.groups[ig].id.as_str(),
                    scores,
                    &desired.group_location_guests[ig],
                    obs.groups[ig].members.first().copied(),
                )
            });
        let first_member = g.members.first().copied().or_else(|| {
            g.clone
                .iter()
                .flat_map(|c| c.instances.iter())
                .find_map(|&ig| obs.groups[ig].members.first().copied())
        });
        let rows = std::iter::once((
            g.id.as_str(),
            &desired.group_scores[gi],
            &desired.group_location_guests[gi],
            first_member,
        ))
        .chain(instance_rows)
        .chain(member_rows);
        // A clone shows its own and its instances' scores before distributing them.
        let label = match g.clone {
            Some(_) => "pcmk__clone_allocate",
            None => "pcmk__group_assign",
        };
        // A bundle's inner clone knows its own replicas' guest nodes, no other bundle's.
        let own_bundle = crate::bundles::bundle_of_child(obs, gi);
        let own_guests: BTreeSet<usize> = own_bundle
            .map(|bi| {
                (0..obs.bundles[bi].replicas.len())
                    .filter_map(|n| crate::bundles::replica_node(obs, bi, n))
                    .collect()
            })
            .unwrap_or_default();
        // (and those a location on the row's resource names or matches)
        // (in an asymmetric cluster the inner clone copied no node when it was unpacked:
        // it holds its own guest nodes only)
        let copied_none = own_bundle.is_some() && !obs.symmetric;
        let shown = |ni: &usize, located: &BTreeSet<usize>| {
            (!guest_nodes.contains(ni) && !copied_none)
                || own_guests.contains(ni)
                || located.contains(ni)
        };
        for (id, scores, located, first) in rows {
            // (-INFINITY on the other bundles' guest nodes its allowed nodes hold since it was
            // unpacked: a bundle's inner clone is unpacked with the bundle)
            let later: BTreeSet<usize> = match own_bundle {
                Some(bi) if id == g.id => guest_nodes
                    .iter()
                    .copied()
                    .filter(|&ni| {
                        !own_guests.contains(&ni)
                            && crate::bundles::inner_clone_copy(obs, bi, ni).is_some()
                    })
                    .collect(),
                _ => first
                    .map(|ri| {
                        crate::bundles::guest_node_copies(obs, ri)
                            .into_keys()
                            .collect()
                    })
                    .unwrap_or_default(),
            };
            let shown_scores = scores
                .iter()
                .filter(|&(ni, _)| shown(ni, located) && !later.contains(ni))
                .map(|(&ni, &v)| (ni, v))
                .chain(later.iter().map(|&ni| (ni, -crate::cib::INFINITY)));
            for (ni, v) in shown_scores {
                lines.push(format!(
                    "{label}: {id} allocation score on {}: {}",
                    obs.nodes[ni].uname,
                    crate::placement::score_text(v)
                ));
            }
        }
    }
    bundle_scores(obs, desired, &guest_nodes, &connections, &mut lines);
    for &(ri, node, score) in &desired.promotion_scores {
        // (an instance of a clone of a group is named by its group)
        let id = match obs.resources[ri].group {
            Some(ig) if crate::clone_groups::is_instance(obs, ig) => &obs.groups[ig].id,
            _ => &obs.resources[ri].id,
        };
        lines.push(format!(
            "{} promotion score on {}: {}",
            id,
            node.map_or("none", |ni| obs.nodes[ni].uname.as_str()),
            crate::placement::score_text(score)
        ));
    }
    lines.sort();
    let mut out = String::new();
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// What `pcmk__bundle_allocate` shows each time it runs (`crate::bundles::assign_calls`): the
/// bundle's own scores, each replica's IP, container and connection, the inner clone and its
/// instances, each on the nodes it knew when the bundle was unpacked (no guest node but the
/// inner clone's own replicas' and those `crate::bundles::guest_node_copies` gives).
/// The first time before anything is assigned; every later time as the first left them: the
/// bundle's own unchanged, its parts with the scores their assignment showed.
fn bundle_scores(
    obs: &Observed,
    desired: &crate::placement::Desired,
    guest_nodes: &BTreeSet<usize>,
    connections: &BTreeMap<usize, BTreeMap<usize, i64>>,
    lines: &mut Vec<String>,
) {
    let mut push = |id: &str, ni: usize, v: i64| {
        lines.push(format!(
            "pcmk__bundle_allocate: {id} allocation score on {}: {}",
            obs.nodes[ni].uname,
            crate::placement::score_text(v)
        ));
    };
    for (bi, b) in obs.bundles.iter().enumerate() {
        let calls = desired.bundle_assign_calls.get(bi).copied().unwrap_or(1);
        let own_scores = desired
            .bundle_own_scores
            .get(&b.containers)
            .unwrap_or(&desired.group_scores[b.containers]);
        let own: Vec<Option<usize>> = (0..b.replicas.len())
            .map(|n| crate::bundles::replica_node(obs, bi, n))
            .collect();
        for call in 0..calls {
            let later = call > 0;
            for (&ni, &v) in own_scores
                .iter()
                .filter(|&(ni, _)| !guest_nodes.contains(ni))
            {
                push(&b.id, ni, v);
            }
            // (and the guest nodes it copied once its parts were made)
            for ni in guest_nodes.iter().copied() {
                if let Some(v) = crate::bundles::bundle_copy(obs, bi, ni) {
                    push(&b.id, ni, v);
                }
            }
            for r in &b.replicas {
                for ri in std::iter::once(r.container).chain(r.ip).chain(r.remote) {
                    let scores = if !later {
                        &desired.member_scores[ri]
                    } else {
                        connections.get(&ri).unwrap_or(&desired.scores[ri])
                    };
                    let id = obs.resources[ri].id.as_str();
                    for (&ni, &v) in scores.iter().filter(|&(ni, _)| !guest_nodes.contains(ni)) {
                        push(id, ni, v);
                    }
                    // (the guest nodes it copied when unpacked: a container or IP the declared
                    // node's weight, unless exclusive discovery bans it there
                    // (`apply_exclusive_discovery`); later as the assignment left them)
                    for (ni, copy) in crate::bundles::guest_node_copies(obs, ri) {
                        let v = if later {
                            scores.get(&ni).copied().unwrap_or(-crate::cib::INFINITY)
                        } else if desired
                            .exclusive_discovery
                            .get(ri)
                            .copied()
                            .unwrap_or(false)
                        {
                            -crate::cib::INFINITY
                        } else {
                            copy
                        };
                        push(id, ni, v);
                    }
                }
            }
            let Some(ci) = b.child else { continue };
            let clone_id = obs.groups[ci].id.as_str();
            for ni in 0..obs.nodes.len() {
                let guest = guest_nodes.contains(&ni);
                // (the nodes it copied when unpacked: its own guest nodes -INFINITY, another
                // bundle's as `inner_clone_copy` says, the others at their weight when the
                // cluster is symmetric)
                let copy = if guest && !own.contains(&Some(ni)) {
                    match crate::bundles::inner_clone_copy(obs, bi, ni) {
                        Some(v) => v,
                        None => continue,
                    }
                } else if guest {
                    -crate::cib::INFINITY
                } else if obs.symmetric {
                    obs.nodes[ni].weight
                } else {
                    continue;
                };
                // (later: as the bundle left them, 0 on its guest nodes, -INFINITY elsewhere)
                let foreign = guest && !own.contains(&Some(ni));
                let v = match (later, guest) {
                    (false, _) => copy,
                    (true, _) if foreign => copy,
                    // (a promotable clone's instances' promotion scores added where they
                    // were assigned, as choosing their roles left them; a negative one is
                    // not: `add_sort_index_to_node_weight`)
                    (true, _) => desired
                        .promotion_scores
                        .iter()
                        .filter(|&&(ri, n, p)| {
                            n == Some(ni) && p >= 0 && obs.groups[ci].members.contains(&ri)
                        })
                        .fold(
                            desired.group_scores[ci].get(&ni).copied().unwrap_or(0),
                            |v, &(_, _, p)| crate::cib::add_score(v, p),
                        ),
                };
                push(clone_id, ni, v);
            }
            // (500 on the replica's guest node, plus the instance's stickiness when it is
            // active there alone: `apply_stickiness` runs before the bundle is assigned; later
            // as its assignment showed them)
            for (n, &ri) in obs.groups[ci].members.iter().enumerate() {
                if let Some(Some(ni)) = own.get(n) {
                    let r = &obs.resources[ri];
                    if later {
                        for (&m, &v) in &desired.scores[ri] {
                            push(&r.id, m, v);
                        }
                        continue;
                    }
                    let stickiness = Some(r.stickiness())
                        .filter(|&s| s > 0 && r.managed && r.running_on == [*ni])
                        .unwrap_or(0);
                    push(&r.id, *ni, crate::cib::add_score(500, stickiness));
                }
            }
        }
    }
}

/// What `pcmk__primitive_assign` shows for a bundle replica's connection: its own scores with
/// its colocation with its container (10000, as a nested remote's may run elsewhere) applied:
/// 10000 more on the container's node, or, with the container stopped, 10000 less everywhere
/// unless that leaves no node available.
fn connection_scores(
    obs: &Observed,
    desired: &crate::placement::Desired,
    r: &crate::bundles::Replica,
) -> Option<BTreeMap<usize, i64>> {
    const SCORE: i64 = 10_000;
    let base = &desired.member_scores[r.remote?];
    let mut work = base.clone();
    match desired.assigned[r.container] {
        Some(c) => {
            if let Some(v) = work.get_mut(&c) {
                *v = crate::cib::add_score(*v, SCORE);
            }
            // (its container on a remote node: with that node's connection, INFINITY)
            if let Some(rc) =
                crate::bundles::nested_host_connection(obs, &desired.assigned, r.remote?)
            {
                for (&ni, v) in work.iter_mut() {
                    if Some(ni) != desired.assigned[rc] {
                        *v = crate::cib::add_score(*v, -crate::cib::INFINITY);
                    }
                }
            }
            Some(work)
        }
        None => {
            for v in work.values_mut() {
                *v = crate::cib::add_score(*v, -SCORE);
            }
            let available = work
                .iter()
                .any(|(&ni, &v)| v >= 0 && crate::placement::node_available(obs, ni));
            Some(if available { work } else { base.clone() })
        }
    }
}
