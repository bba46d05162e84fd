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
    let clone_scores = super::members::location_scores(ctx, gi);
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
    // Instance order: active on a node it may still use first, then active, then on an
    // available node, not failed, then by instance number.
    let current = |k: usize| obs.resources[members[k]].running_on.first().copied();
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by_key(|&k| {
        let r = &obs.resources[members[k]];
        let allowed = current(k).is_none_or(|ni| scores[k].get(&ni).is_some_and(|&v| v >= 0));
        (
            !allowed,
            r.running_on.is_empty(),
            r.running_on.len(),
            !current(k).is_some_and(|ni| node_available(obs, ni)),
            r.failed,
            k,
        )
    });
    let mut count: BTreeMap<usize, usize> = BTreeMap::new();
    let mut assigned: Vec<Option<usize>> = vec![None; members.len()];
    let mut decided = vec![false; members.len()];
    let mut allocated = 0usize;
    // One instance's assignment (with `prefer`, only to that node, else it stays undecided).
    let allocate = |ctx: &mut Ctx,
                    k: usize,
                    prefer: Option<usize>,
                    scores: &mut Vec<BTreeMap<usize, i64>>,
                    count: &mut BTreeMap<usize, usize>|
     -> Option<usize> {
        let ri = members[k];
        let r = &obs.resources[ri];
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
        if let Some(ni) = allocate(ctx, k, Some(cur), &mut scores, &mut count) {
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
        assigned[k] = allocate(ctx, k, None, &mut scores, &mut count);
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
