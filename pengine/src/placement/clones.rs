//! Placement of an anonymous clone's instances as Pacemaker 2.1.5 distributes them: each
//! instance scored as a primitive (the clone's locations and its own, stickiness, failures, the
//! clone's colocations), instances ordered (active on an allowed node first, then by instance
//! number), those running kept on their node while it holds fewer than clone-max/nodes, then
//! the rest placed one by one, a node taking at most `clone-node-max` instances and the clone
//! at most `clone-max`.

use std::collections::BTreeMap;

use super::{Ctx, ScoreNote, add_score, node_available, same_attribute, target_stopped, unit_of};
use crate::cib::INFINITY;
use crate::observed::natural_cmp;

/// The nodes where the primary of a colocation is placed (every instance's, for a clone).
pub(super) fn placed_nodes(ctx: &Ctx, u: super::Unit) -> Vec<usize> {
    let obs = ctx.obs;
    match u {
        super::Unit::Group(gi) if obs.groups[gi].clone.is_some() => obs.groups[gi]
            .members
            .iter()
            .filter_map(|&m| ctx.desired.assigned.get(m).copied().flatten())
            .collect(),
        _ => {
            let key = super::unit_key(obs, u);
            ctx.desired
                .assigned
                .get(key)
                .copied()
                .flatten()
                .into_iter()
                .collect()
        }
    }
}

/// The best node for an instance: score, then fewest resources placed, then its current node,
/// then name; only available nodes with a non-negative score.
fn best_node(ctx: &Ctx, scores: &BTreeMap<usize, i64>, running: Option<usize>) -> Option<usize> {
    let obs = ctx.obs;
    let mut candidates: Vec<(usize, i64)> = scores
        .iter()
        .filter(|&(&ni, &s)| s >= 0 && node_available(obs, ni))
        .map(|(&ni, &s)| (ni, s))
        .collect();
    candidates.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| ctx.num_resources[a.0].cmp(&ctx.num_resources[b.0]))
            .then_with(|| (Some(b.0) == running).cmp(&(Some(a.0) == running)))
            .then_with(|| natural_cmp(&obs.nodes[a.0].uname, &obs.nodes[b.0].uname))
    });
    candidates.first().map(|c| c.0)
}

/// Places every instance of clone group `gi` (its primaries were placed by `assign_unit`).
pub(super) fn assign_clone(ctx: &mut Ctx, gi: usize) {
    let obs = ctx.obs;
    let Some(spec) = obs.groups[gi].clone.clone() else {
        return;
    };
    let members = obs.groups[gi].members.clone();
    let clone_id = obs.groups[gi].id.clone();
    let mut clone_scores = super::members::location_scores(ctx, gi);
    super::members::add_clone_dependents(ctx, gi, &mut clone_scores);
    ctx.desired.group_scores[gi] = clone_scores.clone();
    let available: Vec<usize> = clone_scores
        .keys()
        .copied()
        .filter(|&ni| node_available(obs, ni))
        .collect();
    let all_coloc = spec.max < available.len();
    let loop_max = (spec.max / available.len().max(1)).max(1);
    // The clone's colocations with resources already placed, as its instances take them: all
    // of them when not every node gets an instance, else only mandatory and negative ones.
    let cib = ctx.cib;
    let colocations: Vec<(usize, Vec<usize>)> = cib
        .colocations
        .iter()
        .enumerate()
        .filter(|(_, c)| c.rsc == clone_id)
        .filter(|(_, c)| all_coloc || c.score < 0 || c.score >= INFINITY)
        // A positive colocation of one role counts when roles are chosen (`promotable.rs`).
        .filter(|(_, c)| {
            c.score < 0 || super::promotable::role_filter(c.rsc_role.as_deref()).is_none()
        })
        .filter_map(|(i, c)| {
            let w = unit_of(obs, &c.with_rsc).filter(|w| *w != super::Unit::Group(gi))?;
            let key = super::unit_key(obs, w);
            (key != usize::MAX && ctx.done[key]).then(|| (i, placed_nodes(ctx, w)))
        })
        .collect();
    let mut scores: Vec<BTreeMap<usize, i64>> = Vec::with_capacity(members.len());
    let mut base: Vec<BTreeMap<usize, i64>> = members
        .iter()
        .map(|&ri| super::base_scores(ctx, ri))
        .collect();
    if spec.promotable.is_some() {
        super::promotable::add_promotion_scores(ctx, gi, &mut base);
    }
    for (&ri, s) in members.iter().zip(base) {
        let mut s = s;
        // What `pcmk__clone_allocate` shows for the instance: before the clone's colocations.
        ctx.desired.member_scores[ri] = s.clone();
        for (ci, placed) in &colocations {
            let c = &cib.colocations[*ci];
            let attr = c.node_attribute.as_deref();
            let alike = |ni: usize| placed.iter().any(|&p| same_attribute(obs, attr, ni, p));
            for ni in 0..obs.nodes.len() {
                let banned = if c.score >= INFINITY {
                    !alike(ni)
                } else {
                    c.score <= -INFINITY && alike(ni)
                };
                if banned {
                    s.insert(ni, -INFINITY);
                } else if c.score.abs() < INFINITY && alike(ni) {
                    if let Some(cur) = s.get(&ni).copied() {
                        s.insert(ni, add_score(cur, c.score));
                    }
                }
            }
            ctx.desired.trace[ri].push(ScoreNote {
                node: placed.first().copied().unwrap_or(usize::MAX),
                delta: c.score,
                why: format!("colocation {}", c.id),
            });
        }
        scores.push(s);
    }
    // Instance order (`pcmk__cmp_instance`): the less multiply active of two active ones; not
    // active on a node its own scores (before colocations) forbid; active; its node available;
    // the clone allowed there; not failed; the higher score there once the clone's
    // colocations are added; the lower instance number.
    let current = |k: usize| obs.resources[members[k]].running_on.first().copied();
    let allowed_here = |k: usize| {
        current(k).filter(|ni| {
            ctx.desired.member_scores[members[k]]
                .get(ni)
                .is_some_and(|&v| v >= 0)
        })
    };
    let here: Vec<Option<usize>> = (0..members.len()).map(allowed_here).collect();
    let mut colocated: Vec<i64> = vec![0; members.len()];
    for k in 0..members.len() {
        if let Some(ni) = here[k] {
            colocated[k] = super::members::colocated_score(ctx, gi, members[k], ni);
        }
    }
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by(|&a, &b| {
        let (ra, rb) = (&obs.resources[members[a]], &obs.resources[members[b]]);
        let (na, nb) = (ra.running_on.len(), rb.running_on.len());
        if na > 0 && nb > 0 && na != nb {
            return na.cmp(&nb);
        }
        let disallowed = |k: usize| current(k).is_some() && here[k].is_none();
        let by_allowed = disallowed(a).cmp(&disallowed(b));
        if by_allowed.is_ne() {
            return by_allowed;
        }
        let (Some(x), Some(y)) = (here[a], here[b]) else {
            return here[b].is_some().cmp(&here[a].is_some()).then(a.cmp(&b));
        };
        node_available(obs, y)
            .cmp(&node_available(obs, x))
            .then_with(|| {
                clone_scores
                    .contains_key(&y)
                    .cmp(&clone_scores.contains_key(&x))
            })
            .then_with(|| ra.failed.cmp(&rb.failed))
            .then_with(|| colocated[b].cmp(&colocated[a]))
            .then(a.cmp(&b))
    });
    let mut count: BTreeMap<usize, usize> = BTreeMap::new();
    let mut assigned: Vec<Option<usize>> = vec![None; members.len()];
    let mut decided = vec![false; members.len()];
    let mut allocated = 0usize;
    let mut appended = vec![0usize; members.len()];
    // One instance's assignment (with `prefer`, only to that node, else it stays undecided).
    let allocate = |ctx: &mut Ctx,
                    k: usize,
                    prefer: Option<usize>,
                    scores: &mut Vec<BTreeMap<usize, i64>>,
                    count: &mut BTreeMap<usize, usize>,
                    appended: &mut Vec<usize>|
     -> Option<usize> {
        let ri = members[k];
        let r = &obs.resources[ri];
        // Each attempt passes the clone's colocations on to the instance once more (a failed
        // pre-assignment leaves them passed twice, as in Pacemaker).
        appended[k] += 1;
        if let Some(p) = prefer {
            if scores[k].get(&p).is_none_or(|&v| v < 0) {
                return None;
            }
        }
        let nodes: Vec<usize> = scores[k].keys().copied().collect();
        for ni in nodes {
            let parent = clone_scores.get(&ni).copied();
            let full = count.get(&ni).copied().unwrap_or(0) >= spec.node_max;
            let ban = match parent {
                _ if !node_available(obs, ni) || r.orphan => Some(-INFINITY),
                None => Some(-INFINITY),
                Some(w) if w < 0 => Some(w),
                Some(_) if full => Some(-INFINITY),
                Some(_) => None,
            };
            if let Some(b) = ban {
                let cur = scores[k].get(&ni).copied().unwrap_or(0);
                scores[k].insert(
                    ni,
                    if b <= -INFINITY {
                        -INFINITY
                    } else {
                        cur.min(b)
                    },
                );
            }
        }
        let backup = scores[k].clone();
        // What is colocated with the clone, as the instance takes it while placed.
        for _ in 0..appended[k] {
            super::members::add_parent_dependents(ctx, gi, all_coloc, &mut scores[k]);
        }
        if target_stopped(obs, ri) {
            return None;
        }
        let running = r.running_on.first().copied();
        let chosen = if !r.managed {
            running.filter(|&ni| r.running_on.len() == 1 && scores[k].contains_key(&ni))
        } else {
            match prefer {
                Some(p) => {
                    let best = best_node(ctx, &scores[k], running);
                    let best_score = best.and_then(|b| scores[k].get(&b).copied());
                    let ps = scores[k].get(&p).copied().unwrap_or(-INFINITY);
                    (node_available(obs, p) && ps >= 0 && best_score.is_some_and(|b| ps >= b))
                        .then_some(p)
                }
                None => best_node(ctx, &scores[k], running),
            }
        };
        if prefer.is_some() && chosen.is_none() {
            scores[k] = backup;
        }
        if let Some(ni) = chosen {
            *count.entry(ni).or_insert(0) += 1;
            ctx.num_resources[ni] += 1;
            for (name, v) in &r.utilization {
                *ctx.util_used[ni].entry(name.clone()).or_insert(0) += *v;
            }
        }
        chosen
    };
    for &k in &order {
        if allocated >= spec.max {
            break;
        }
        let r = &obs.resources[members[k]];
        let Some(cur) = current(k) else { continue };
        if r.failed || !node_available(obs, cur) || scores[k].get(&cur).is_none_or(|&v| v < 0) {
            continue;
        }
        if count.get(&cur).copied().unwrap_or(0) >= loop_max {
            continue;
        }
        if let Some(ni) = allocate(ctx, k, Some(cur), &mut scores, &mut count, &mut appended) {
            assigned[k] = Some(ni);
            decided[k] = true;
            allocated += 1;
        }
    }
    for &k in &order {
        if decided[k] {
            continue;
        }
        decided[k] = true;
        if allocated >= spec.max {
            for v in scores[k].values_mut() {
                *v = -INFINITY;
            }
            continue;
        }
        assigned[k] = allocate(ctx, k, None, &mut scores, &mut count, &mut appended);
        if assigned[k].is_some() {
            allocated += 1;
        }
    }
    for (k, &ri) in members.iter().enumerate() {
        ctx.desired.assigned[ri] = assigned[k];
        ctx.desired.scores[ri] = std::mem::take(&mut scores[k]);
        ctx.done[ri] = true;
    }
    if let Some(p) = spec.promotable.as_ref() {
        super::promotable::set_roles(ctx, gi, p);
    }
}
