//! Probes ordered before restarts, as Pacemaker 2.1.5's `add_restart_orderings_for_probe`: a
//! probe comes before the stops of every other primitive whose start its resource's start
//! implies (mandatory symmetrical orderings, optional ones whose then has `restart-type=restart`,
//! and group membership), so that a restart waits until the probe says where the first runs.
//!
//! Pacemaker walks its action graph from the probe's "probe then start" ordering; its optional
//! actions (a start where the resource already runs) exist there but not in our plan, so the
//! walk here runs over resources: a primitive's start exists when it is assigned a node or has a
//! start in the plan, a group's pseudo actions always. An instance of a clone of a primitive
//! leads to its clone's running, and on through the clone's orderings; clones of groups and the
//! instances of a clone that is a then are not entered.

use std::collections::{BTreeMap, BTreeSet};

use crate::actions::{Kind, Plan, Rel};
use crate::observed::Observed;
use crate::placement::Desired;

/// A start-side action of the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Step {
    Start(usize),
    GroupStart(usize),
    GroupRunning(usize),
}

/// Orders every probe before the stops of the primitives its resource's start implies.
pub(crate) fn order(obs: &Observed, desired: &Desired, plan: &mut Plan) {
    let has_start = |plan: &Plan, ri: usize| {
        desired.assigned.get(ri).copied().flatten().is_some() || !plan.starts(ri).is_empty()
    };
    let plain_group = |g: usize| obs.groups[g].clone.is_none();
    // A clone of primitives (its members are the instances).
    let primitive_clone = |g: usize| {
        obs.groups[g]
            .clone
            .as_ref()
            .is_some_and(|c| c.instances.is_empty())
    };
    let probes: Vec<(usize, usize)> = (0..plan.actions.len())
        .filter(|&i| {
            let a = &plan.actions[i];
            a.kind == Kind::Probe && !a.dot_only
        })
        .filter_map(|i| plan.actions[i].rsc.map(|ri| (i, ri)))
        .collect();
    if probes.is_empty() {
        return;
    }
    // Start-then-start orderings by their first, and real stops by resource: looked up at every
    // step of every probe's walk.
    let mut orders_by_first: BTreeMap<&str, Vec<&crate::cib::Order>> = BTreeMap::new();
    for o in obs
        .orders
        .iter()
        .filter(|o| o.first_action == "start" && o.then_action == "start")
    {
        orders_by_first.entry(o.first.as_str()).or_default().push(o);
    }
    let mut stops_by_rsc: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, a) in plan.actions.iter().enumerate() {
        if let Some(x) = a
            .rsc
            .filter(|_| a.kind == Kind::Stop && !a.pseudo && !a.dot_only)
        {
            stops_by_rsc.entry(x).or_default().push(i);
        }
    }
    for (probe, ri) in probes {
        let r = &obs.resources[ri];
        if r.group
            .is_some_and(|g| !plain_group(g) && !primitive_clone(g))
        {
            continue;
        }
        // (An instance's probe comes before its clone's start, which the walk reaches through
        // the clone's running whether or not the instance starts: bug-n-387749.)
        let clone_of_instance = r.group.filter(|&g| primitive_clone(g));
        let first = match clone_of_instance {
            Some(g) if !has_start(plan, ri) => Step::GroupRunning(g),
            _ if !has_start(plan, ri) => continue,
            _ => Step::Start(ri),
        };
        let mut seen = BTreeSet::from([first]);
        let mut todo = vec![first];
        let mut implied = BTreeSet::new();
        while let Some(step) = todo.pop() {
            let mut next = Vec::new();
            let first_id = match step {
                Step::Start(x) => {
                    if x != ri {
                        implied.insert(x);
                    }
                    // An instance's start: its clone is running.
                    if let Some(g) = obs.resources[x].group.filter(|&g| primitive_clone(g)) {
                        next.push(Step::GroupRunning(g));
                    }
                    if let Some(g) = obs.resources[x].group.filter(|&g| plain_group(g)) {
                        next.push(Step::GroupRunning(g));
                        let members = &obs.groups[g].members;
                        let ordered = obs.groups[g]
                            .meta
                            .get("ordered")
                            .is_none_or(|v| crate::cib::is_true(v));
                        if let Some(pos) = members.iter().position(|&m| m == x) {
                            if let Some(&m) = members.get(pos + 1).filter(|_| ordered) {
                                next.push(Step::Start(m));
                            }
                        }
                    }
                    // (an instance is named by its clone's orderings only)
                    (obs.resources[x].clone_base.is_none()).then_some(obs.resources[x].id.as_str())
                }
                Step::GroupStart(g) => {
                    next.extend(obs.groups[g].members.iter().map(|&m| Step::Start(m)));
                    None
                }
                Step::GroupRunning(g) => Some(obs.groups[g].id.as_str()),
            };
            if let Some(first) = first_id {
                for &o in orders_by_first.get(first).into_iter().flatten() {
                    let then = match (obs.group_index(&o.then), obs.rsc_index(&o.then)) {
                        (Some(g), _) if plain_group(g) => Step::GroupStart(g),
                        (None, Some(x)) if obs.resources[x].clone_base.is_none() => Step::Start(x),
                        _ => continue,
                    };
                    if crate::reconcile::implies_then(obs, o) {
                        next.push(then);
                    }
                }
            }
            for s in next {
                let exists = match s {
                    Step::Start(x) => has_start(plan, x),
                    Step::GroupStart(_) | Step::GroupRunning(_) => true,
                };
                if exists && seen.insert(s) {
                    todo.push(s);
                }
            }
        }
        for x in implied {
            for &stop in stops_by_rsc.get(&x).into_iter().flatten() {
                plan.edge_rel(probe, stop, Rel::Optional);
            }
        }
    }
}
