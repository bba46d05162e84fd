//! The utilization a clone instance needs room for as Pacemaker 2.1.5 sums it before placing
//! it (`pcmk__ban_insufficient_capacity`): the instance and every resource still to be placed
//! that a chain of mandatory colocations ties to it (`colocated_resources`, `add_utilization`).

use std::collections::BTreeMap;

use super::{Ctx, INFINITY};

/// A resource as Pacemaker's colocation lists see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rsc {
    Prim(usize),
    /// A plain group or a clone's instance group.
    Group(usize),
    Clone(usize),
}

/// The instance being placed: its first resource (the one Pacemaker checks first), which
/// resources of its clone are placed already, and whether its clone passes every colocation
/// with it to its instances (not every node gets one), else only the negative ones.
pub(super) struct Placing<'p> {
    pub first: usize,
    pub placed: &'p dyn Fn(usize) -> bool,
    pub all_coloc: bool,
}

fn named(ctx: &Ctx, id: &str) -> Option<Rsc> {
    let obs = ctx.obs;
    if let Some(gi) = obs.group_index(id) {
        return Some(if obs.groups[gi].clone.is_some() {
            Rsc::Clone(gi)
        } else {
            Rsc::Group(gi)
        });
    }
    obs.rsc_index(id).map(Rsc::Prim)
}

/// Whether clone `gi` holds the instance being placed (directly or through an instance group):
/// only its `all_coloc` is known here.
fn placing_clone(ctx: &Ctx, p: &Placing, gi: usize) -> bool {
    let obs = ctx.obs;
    obs.resources[p.first]
        .group
        .is_some_and(|g| g == gi || crate::clone_groups::parent_clone(obs, g) == Some(gi))
}

/// Whether resource `ri` is still to be placed.
fn provisional(ctx: &Ctx, p: &Placing, ri: usize) -> bool {
    !ctx.done[ri] && !(p.placed)(ri)
}

/// The mandatory colocations naming `id`: as the dependent (its primaries) or as the primary
/// (its dependents).
fn configured(ctx: &Ctx, id: &str, as_dependent: bool) -> Vec<Rsc> {
    let map = if as_dependent {
        &ctx.colocations_by_rsc
    } else {
        &ctx.colocations_by_with
    };
    super::positions_of(map, &[id])
        .into_iter()
        .map(|i| &ctx.cib.colocations[i])
        .filter(|c| c.score >= INFINITY)
        .filter_map(|c| named(ctx, if as_dependent { &c.with_rsc } else { &c.rsc }))
        .collect()
}

/// Whether group `gi` (plain, or an instance group) has moved its colocations to its first
/// and last members: its placement started.
fn expanded(ctx: &Ctx, p: &Placing, gi: usize) -> bool {
    ctx.obs.groups[gi]
        .members
        .first()
        .is_some_and(|&m| m == p.first || ctx.in_progress[m] || ctx.done[m] || (p.placed)(m))
}

/// The colocations a group (or instance group) holds: an instance group's are its clone's,
/// passed on when the instance is placed.
fn group_lists(ctx: &Ctx, p: &Placing, gi: usize, as_dependent: bool) -> Vec<Rsc> {
    let obs = ctx.obs;
    match crate::clone_groups::parent_clone(obs, gi) {
        Some(c) if !as_dependent && !p.all_coloc && placing_clone(ctx, p, c) => Vec::new(),
        Some(c) => configured(ctx, &obs.groups[c].id, as_dependent),
        None => configured(ctx, &obs.groups[gi].id, as_dependent),
    }
}

/// (primaries, dependents) of `r` in mandatory colocations, as Pacemaker holds them now.
fn lists(ctx: &Ctx, p: &Placing, r: Rsc) -> (Vec<Rsc>, Vec<Rsc>) {
    let obs = ctx.obs;
    match r {
        Rsc::Clone(gi) => (
            configured(ctx, &obs.groups[gi].id, true),
            configured(ctx, &obs.groups[gi].id, false),
        ),
        Rsc::Group(gi) => {
            if expanded(ctx, p, gi) || crate::clone_groups::is_instance(obs, gi) {
                (Vec::new(), Vec::new())
            } else {
                (
                    group_lists(ctx, p, gi, true),
                    group_lists(ctx, p, gi, false),
                )
            }
        }
        Rsc::Prim(ri) => {
            let id = obs.resources[ri].id.as_str();
            let mut cons = configured(ctx, id, true);
            let mut lhs = configured(ctx, id, false);
            if let Some(gi) = obs.resources[ri].group {
                if obs.groups[gi].clone.is_some() {
                    // A clone's instance takes its clone's colocations once placed: the
                    // mandatory ones with a primary, those with a dependent only when not
                    // every node gets an instance (`append_parent_colocation`).
                    if ri == p.first || !provisional(ctx, p, ri) {
                        cons.extend(configured(ctx, &obs.groups[gi].id, true));
                        if p.all_coloc || !placing_clone(ctx, p, gi) {
                            lhs.extend(configured(ctx, &obs.groups[gi].id, false));
                        }
                    }
                } else {
                    let members = &obs.groups[gi].members;
                    let k = members.iter().position(|&m| m == ri).unwrap_or(0);
                    if k > 0 {
                        cons.push(Rsc::Prim(members[k - 1]));
                    }
                    if let Some(&next) = members.get(k + 1) {
                        lhs.push(Rsc::Prim(next));
                    }
                    let instance = crate::clone_groups::is_instance(obs, gi);
                    let attached = !instance
                        || members.contains(&p.first)
                        || members.iter().all(|&m| !provisional(ctx, p, m));
                    if attached && expanded(ctx, p, gi) {
                        if k == 0 {
                            cons.extend(group_lists(ctx, p, gi, true));
                        }
                        if k + 1 == members.len() {
                            lhs.extend(group_lists(ctx, p, gi, false));
                        }
                    }
                }
            }
            (cons, lhs)
        }
    }
}

/// Pacemaker's `colocated_resources`: `r` and what mandatory colocations tie to it, the chain
/// broken at `orig`; a clone does not follow dependents that are not clones.
fn colocated(ctx: &Ctx, p: &Placing, r: Rsc, orig: Rsc, list: &mut Vec<Rsc>) {
    if let Rsc::Group(gi) = r {
        for &m in &ctx.obs.groups[gi].members {
            colocated(ctx, p, Rsc::Prim(m), orig, list);
        }
    }
    if list.contains(&r) {
        return;
    }
    list.push(r);
    let (cons, lhs) = lists(ctx, p, r);
    for primary in cons {
        if primary != orig {
            colocated(ctx, p, primary, orig, list);
        }
    }
    for dependent in lhs {
        if dependent == orig || (matches!(r, Rsc::Clone(_)) && !matches!(dependent, Rsc::Clone(_)))
        {
            continue;
        }
        colocated(ctx, p, dependent, orig, list);
    }
}

fn add(ctx: &Ctx, ri: usize, need: &mut BTreeMap<String, i64>) {
    for (k, v) in &ctx.obs.resources[ri].utilization {
        *need.entry(k.clone()).or_insert(0) += v;
    }
}

/// A group's members not listed and still to be placed.
fn add_group(ctx: &Ctx, p: &Placing, gi: usize, list: &[Rsc], need: &mut BTreeMap<String, i64>) {
    let members = &ctx.obs.groups[gi].members;
    if members.iter().all(|&m| !provisional(ctx, p, m)) {
        return;
    }
    for &m in members {
        if provisional(ctx, p, m) && !list.contains(&Rsc::Prim(m)) {
            add(ctx, m, need);
        }
    }
}

/// Pacemaker's `add_utilization` of every listed resource still to be placed.
fn sum(ctx: &Ctx, p: &Placing, list: &[Rsc]) -> BTreeMap<String, i64> {
    let obs = ctx.obs;
    let mut need = BTreeMap::new();
    for &r in list {
        match r {
            Rsc::Prim(ri) => {
                if provisional(ctx, p, ri) {
                    add(ctx, ri, &mut need);
                }
            }
            Rsc::Group(gi) => add_group(ctx, p, gi, list, &mut need),
            Rsc::Clone(gi) => {
                if obs.groups[gi]
                    .members
                    .iter()
                    .all(|&m| !provisional(ctx, p, m))
                {
                    continue;
                }
                let spec = obs.groups[gi].clone.as_ref();
                let instance_groups = spec.map(|s| s.instances.clone()).unwrap_or_default();
                let mut existing = false;
                if instance_groups.is_empty() {
                    existing = obs.groups[gi]
                        .members
                        .iter()
                        .any(|&m| list.contains(&Rsc::Prim(m)));
                    if !existing {
                        if let Some(&first) = obs.groups[gi].members.first() {
                            if provisional(ctx, p, first) {
                                add(ctx, first, &mut need);
                            }
                        }
                    }
                } else {
                    for &ig in &instance_groups {
                        if list.contains(&Rsc::Group(ig)) {
                            existing = true;
                        } else if obs.groups[ig]
                            .members
                            .iter()
                            .any(|&m| list.contains(&Rsc::Prim(m)))
                        {
                            add_group(ctx, p, ig, list, &mut need);
                            existing = true;
                        }
                    }
                    if !existing {
                        if let Some(&first) = instance_groups.first() {
                            add_group(ctx, p, first, list, &mut need);
                        }
                    }
                }
            }
        }
    }
    need
}

/// What the instance being placed needs room for: its first resource's colocation chain.
pub(super) fn instance_need(ctx: &Ctx, p: &Placing) -> BTreeMap<String, i64> {
    let orig = Rsc::Prim(p.first);
    let mut list = Vec::new();
    colocated(ctx, p, orig, orig, &mut list);
    sum(ctx, p, &list)
}
