//! Clones as Pacemaker 2.1.5 unpacks and shows them: the instances (`child:N`) as resources of
//! a clone `Group` (`Group::clone`); for an anonymous clone each node's history of the cloned
//! primitive mapped to an instance and fail counts by the primitive's name, for a globally
//! unique one histories and fail counts by the instance's own id; the "Clone Set" status lines.
//!
//! A clone is kept as an `observed::Group` whose members are its instances, so the pseudo
//! actions (`CLONE_start_0`, `_running_0`, `_stop_0`, `_stopped_0`) and constraints naming the
//! clone work as they do for groups; what differs (no member chain, placement by instance
//! count, the status block) branches on `Group::clone`. Promotable clones (roles) can extend
//! `CloneSpec` (`crate::promotable`). Clones of groups: `crate::clone_groups`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write;

use crate::cib::{Cib, CloneDef, is_true};
use crate::observed::{
    Group, Observed, Resource, Role, Top, make_resource, merge_sets, natural_cmp,
};

/// What a clone's meta attributes say about its instances.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CloneSpec {
    /// The cloned primitive's id (instances are `child:0`, `child:1`...).
    pub child: String,
    /// `clone-max` (default: the number of nodes, at least 1).
    pub max: usize,
    /// `clone-node-max` (always 1 for anonymous clones).
    pub node_max: usize,
    /// `globally-unique`: each instance is a resource of its own (`child:N` in the history,
    /// fail counts, probes and status), see `unique_instance`.
    pub unique: bool,
    pub interleave: bool,
    pub ordered: bool,
    pub notify: bool,
    /// Some instance's history uses the primitive's own name (Pacemaker then finds the
    /// primitive's name among the resources, and crm_simulate prints it for executed actions).
    pub history_named: bool,
    /// Promotion options when the clone is promotable (see `crate::promotable`).
    pub promotable: Option<crate::promotable::PromotableSpec>,
    /// For a clone of a group: its instances' groups (`group:N`), see `crate::clone_groups`;
    /// empty for a clone of a primitive.
    pub instances: Vec<usize>,
}

/// A non-negative integer meta value as Pacemaker reads it (invalid or negative: 0).
fn scan_count(v: &str) -> usize {
    v.trim()
        .parse::<i64>()
        .map(|n| n.max(0) as usize)
        .unwrap_or(0)
}

/// Adds the clone `c` to `obs`: its meta (own sets, then `rsc_defaults`, stickiness 1 unless
/// set), one resource per instance (`clone-max`; one orphan instance when it is 0, for the
/// history), as a `Group` with `clone` set, listed at the top level.
pub fn add_clone(obs: &mut Observed, c: &CloneDef, cib: &Cib, now: i64) {
    let mut meta = BTreeMap::new();
    merge_sets(&mut meta, &c.meta, now, None);
    merge_sets(&mut meta, &cib.rsc_defaults, now, None);
    meta.entry("resource-stickiness".into())
        .or_insert_with(|| "1".into());
    meta.entry("globally-unique".into())
        .or_insert_with(|| "false".into());
    let flag = |name: &str| meta.get(name).is_some_and(|v| is_true(v));
    // (`cib` refuses a larger clone-max; one set by a rule is capped the same way.)
    let cap = crate::cib::clones::MAX_INSTANCES as usize;
    let mut max = match meta.get("clone-max") {
        Some(v) => scan_count(v).min(cap),
        None => obs.unpacked_nodes().max(1),
    };
    let mut unique = flag("globally-unique");
    let mut node_max = match meta.get("clone-node-max") {
        Some(v) if unique => scan_count(v),
        _ => 1,
    };
    // An agent standard that cannot be unique makes the clone anonymous, with at most one
    // instance per node (Pacemaker's `pe__force_anon`).
    let classes: Vec<&str> = match &c.group {
        Some(g) => g.members.iter().map(|m| m.class.as_str()).collect(),
        None => vec![c.child.class.as_str()],
    };
    if unique
        && !classes
            .iter()
            .all(|k| crate::cib::clones::supports_unique(k))
    {
        unique = false;
        node_max = 1;
        max = max.min(obs.unpacked_nodes());
    }
    let spec = CloneSpec {
        child: c.child.id.clone(),
        max,
        node_max,
        unique,
        interleave: flag("interleave"),
        ordered: flag("ordered"),
        notify: flag("notify"),
        history_named: false,
        promotable: crate::promotable::spec(c, &meta),
        instances: Vec::new(),
    };
    if let Some(g) = &c.group {
        crate::clone_groups::add_instances(obs, &c.id, g, meta, spec, cib, now);
        return;
    }
    let gi = obs.groups.len();
    let mut members = Vec::new();
    for n in 0..max.max(1) {
        let mut rsc = make_resource(&c.child, cib, Some(&meta), now);
        rsc.id = format!("{}:{n}", c.child.id);
        rsc.group = Some(gi);
        // A unique instance is known by its own id only (history, fail counts, graph).
        rsc.clone_base = (!unique).then(|| c.child.id.clone());
        rsc.orphan = n >= max;
        members.push(obs.resources.len());
        obs.resources.push(rsc);
    }
    obs.groups.push(Group {
        id: c.id.clone(),
        members,
        meta,
        clone: Some(spec),
    });
    obs.top.push(Top::Group(gi));
}

/// The cloned primitive's id named by a history or attribute name: `child` or `child:N`.
pub fn strip_instance(id: &str) -> &str {
    match id.rsplit_once(':') {
        Some((base, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => id,
    }
}

/// Clone groups by their cloned primitive's id, built once per unpacking (empty without
/// clones, so looking up costs nothing then).
/// (For a clone of a group: by each member primitive's id.)
pub fn by_child(obs: &Observed) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for (gi, g) in obs.groups.iter().enumerate() {
        let Some(c) = g.clone.as_ref() else { continue };
        // A unique clone's histories name their instance exactly (as any resource's).
        if c.unique {
            continue;
        }
        if c.instances.is_empty() {
            out.insert(c.child.clone(), gi);
        } else {
            for &m in &g.members {
                out.insert(obs.resources[m].history_id().to_string(), gi);
            }
        }
    }
    out
}

/// Which resource a node's history entry `lrm_id` belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// Not the history of a cloned primitive.
    NotCloned,
    /// The instance it is mapped to.
    Instance(usize),
    /// A cloned primitive's history no instance can take (an orphan).
    Orphan,
}

/// Maps node `ni`'s history entry `lrm_id` of a cloned primitive to an instance as Pacemaker
/// does while unpacking, node by node in status order: the instance already found active or
/// pending on this node, else the first instance not active anywhere yet (and not pending on
/// another node); an instance not requiring fencing is not taken for a lost node unless the
/// clone has an instance per node. For a clone of a group, an instance is where any of its
/// members is, and the entry maps to the member of that instance with the history's name.
pub fn history_owner(
    obs: &Observed,
    clones: &HashMap<String, usize>,
    ni: usize,
    lrm_id: &str,
) -> Owner {
    if clones.is_empty() {
        return Owner::NotCloned;
    }
    let Some(&gi) = clones.get(strip_instance(lrm_id)) else {
        return Owner::NotCloned;
    };
    let Some(spec) = obs.groups[gi].clone.as_ref() else {
        return Owner::NotCloned;
    };
    // A bundle's inner clone: the instance of the replica whose guest node this is
    // (`pe__find_bundle_replica`).
    if let Some(bi) = crate::bundles::bundle_of_child(obs, gi) {
        return (0..obs.bundles[bi].replicas.len())
            .find(|&n| crate::bundles::replica_node(obs, bi, n) == Some(ni))
            .and_then(|n| obs.bundles[bi].replicas[n].child)
            .map_or(Owner::Orphan, Owner::Instance);
    }
    let mut found = None;
    let mut inactive = None;
    let mut skip_inactive = false;
    let base = strip_instance(lrm_id);
    for instance in crate::clone_groups::instances(obs, gi) {
        let first = crate::clone_groups::instance_location(obs, &instance);
        let Some(m) = instance
            .iter()
            .copied()
            .find(|&m| obs.resources[m].history_id() == base)
        else {
            continue;
        };
        let r = &obs.resources[m];
        match first {
            Some(at) if at == ni => {
                if r.running_on.is_empty() {
                    found = Some(m);
                    break;
                }
                // A second history of an instance active here: an orphan.
                skip_inactive = true;
            }
            Some(_) => {}
            None => {
                if !skip_inactive && inactive.is_none() && !r.blocked {
                    inactive = Some(m);
                }
            }
        }
    }
    let Some(m) = found.or(inactive.filter(|_| !skip_inactive)) else {
        return Owner::Orphan;
    };
    let node = &obs.nodes[ni];
    if !needs_fencing(obs, m) && (!node.online || node.unclean) && spec.max != obs.nodes.len() {
        return Owner::Orphan;
    }
    Owner::Instance(m)
}

/// Records that instance `ri`'s history on a node is named `lrm_id`: another name than the
/// instance's becomes its `clone_name`, and the primitive's own name marks the clone
/// (`CloneSpec::history_named`).
pub fn note_history_name(
    resources: &mut [Resource],
    groups: &mut [Group],
    ri: usize,
    lrm_id: &str,
) {
    let r = &mut resources[ri];
    if r.clone_base.is_none() || r.id == lrm_id {
        return;
    }
    r.clone_name = Some(lrm_id.to_string());
    if r.clone_base.as_deref() != Some(lrm_id) {
        return;
    }
    if let Some(gi) = r.group {
        if let Some(spec) = groups[gi].clone.as_mut() {
            spec.history_named = true;
        }
    }
}

/// After a node's history of instance `r` is read: a numbered history name (`child:N`) that
/// leaves the instance stopped there is forgotten, as Pacemaker does for older status sections
/// (so that instance number can map other nodes' histories).
pub fn forget_stopped_name(r: &mut Resource, ni: usize) {
    if r.clone_name.as_deref().is_some_and(|c| c.contains(':')) && !r.running_on.contains(&ni) {
        r.clone_name = None;
    }
}

/// The name an instance's action keys use: its `clone_name` when it has one.
pub fn key_name(r: &Resource) -> &str {
    r.clone_name.as_deref().unwrap_or(&r.id)
}

/// The instance name the graph gives as `long-id`: the history's name when the instance was
/// mapped from another one (`clone_name`) other than the primitive's own, else its own.
pub fn long_id(r: &Resource) -> &str {
    match r.clone_name.as_deref() {
        Some(name) if r.clone_base.as_deref() != Some(name) => name,
        _ => &r.id,
    }
}

/// The name crm_simulate prints (and records history under) for an executed action of
/// resource `ri`: for an anonymous clone instance, the primitive's name when some instance's
/// history uses it, else the `long_id` when a resource is known by it, else the primitive's.
pub fn simulated_name(obs: &Observed, ri: usize) -> &str {
    let r = &obs.resources[ri];
    let Some(base) = r.clone_base.as_deref() else {
        return &r.id;
    };
    let known = |name: &str| {
        obs.resources
            .iter()
            .any(|o| o.id == name || o.clone_name.as_deref() == Some(name))
    };
    if known(base) {
        return base;
    }
    let long = long_id(r);
    if known(long) { long } else { base }
}

/// Whether a resource requires fencing before it can be recovered (`requires`).
fn needs_fencing(obs: &Observed, ri: usize) -> bool {
    let r = &obs.resources[ri];
    obs.stonith_enabled
        && match r.meta.get("requires").map(|v| v.to_ascii_lowercase()) {
            Some(v) => v == "fencing" || v == "unfencing",
            None => !r.is_stonith(),
        }
}

/// The resources a fail-count or last-failure attribute for `rid` counts for: every instance
/// of an anonymous clone for the cloned primitive's name (with or without an instance
/// number), else the resource of that id.
pub fn named_by_history(obs: &Observed, rid: &str) -> Vec<usize> {
    let base = strip_instance(rid);
    let clone = obs.groups.iter().find(|g| {
        g.clone.as_ref().is_some_and(|c| {
            !c.unique
                && (c.child == base
                    || (!c.instances.is_empty()
                        && g.members
                            .iter()
                            .any(|&m| obs.resources[m].history_id() == base)))
        })
    });
    match clone {
        Some(g) => g
            .members
            .iter()
            .copied()
            .filter(|&m| obs.resources[m].history_id() == base)
            .collect(),
        None => obs.rsc_index(rid).into_iter().collect(),
    }
}

/// The instance of clone group `gi` that is probed on node `ni` (every instance of a unique
/// clone; an anonymous clone probes one per node): the one whose history there is known, else the one placed there, else the first;
/// for a clone of a group, among the members named as resource `ri`.
pub fn probed_instance(
    obs: &Observed,
    assigned: &[Option<usize>],
    gi: usize,
    ni: usize,
    ri: usize,
) -> Option<usize> {
    if obs.groups[gi].clone.as_ref().is_some_and(|c| c.unique) {
        return Some(ri);
    }
    let base = obs.resources[ri].history_id();
    let members: Vec<usize> = obs.groups[gi]
        .members
        .iter()
        .copied()
        .filter(|&m| obs.resources[m].history_id() == base)
        .collect();
    let known_here = |m: usize| {
        let r = &obs.resources[m];
        r.known_on.contains(&ni) || r.running_on.contains(&ni)
    };
    // (an instance group is known on a node when any of its members is: Pacemaker's
    // `rsc_known_on`, so a member's probe there goes to that instance)
    let of_groups = obs.groups[gi]
        .clone
        .as_ref()
        .is_some_and(|c| !c.instances.is_empty());
    let known = if of_groups {
        crate::clone_groups::instances(obs, gi)
            .into_iter()
            .find(|unit| unit.iter().any(|&m| known_here(m)))
            .and_then(|unit| unit.into_iter().find(|m| members.contains(m)))
    } else {
        members.iter().copied().find(|&m| known_here(m))
    };
    // (an instance group is placed where any of its members is)
    let placed = || {
        crate::clone_groups::instances(obs, gi)
            .into_iter()
            .find(|unit| {
                unit.iter()
                    .any(|&m| assigned.get(m).copied().flatten() == Some(ni))
            })
            .and_then(|unit| unit.into_iter().find(|m| members.contains(m)))
    };
    known.or_else(placed).or(members.first().copied())
}

/// The meta attributes a clone adds to its actions in the graph (`CRM_meta_clone_max`...), and
/// for an instance's (`instance`) its number (`CRM_meta_clone`); nothing for a group.
/// (A clone of a group's instance group gives its clone's.)
pub fn graph_meta(obs: &Observed, gi: usize, instance: Option<usize>) -> Vec<(String, String)> {
    // A bundle is no clone in the graph (see `crate::bundles`).
    if obs.bundles.iter().any(|b| b.containers == gi) {
        return Vec::new();
    }
    let gi = match obs.groups[gi].clone {
        Some(_) => gi,
        None => match crate::clone_groups::parent_clone(obs, gi) {
            Some(p) => p,
            None => return Vec::new(),
        },
    };
    let g = &obs.groups[gi];
    let Some(spec) = g.clone.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if let Some(ri) = instance {
        let id = &obs.resources[ri].id;
        if let Some((_, n)) = id.rsplit_once(':') {
            out.push(("CRM_meta_clone".to_string(), n.to_string()));
        }
    }
    out.push(("CRM_meta_clone_max".into(), spec.max.to_string()));
    out.push(("CRM_meta_clone_node_max".into(), spec.node_max.to_string()));
    out.push(("CRM_meta_globally_unique".into(), spec.unique.to_string()));
    if let Some(p) = spec.promotable.as_ref() {
        out.push(("CRM_meta_master_max".into(), p.promoted_max.to_string()));
        out.push((
            "CRM_meta_master_node_max".into(),
            p.promoted_node_max.to_string(),
        ));
    }
    out.push(("CRM_meta_notify".into(), spec.notify.to_string()));
    if let Some(p) = spec.promotable.as_ref() {
        out.push(("CRM_meta_promoted_max".into(), p.promoted_max.to_string()));
        out.push((
            "CRM_meta_promoted_node_max".into(),
            p.promoted_node_max.to_string(),
        ));
    }
    out
}

/// Whether the clone (not one instance) is managed: `is-managed` and `maintenance` of its
/// meta, and maintenance mode.
fn clone_managed(obs: &Observed, g: &Group) -> bool {
    g.meta.get("is-managed").is_none_or(|v| is_true(v))
        && !g.meta.get("maintenance").is_some_and(|v| is_true(v))
        && !obs.maintenance_mode
}

/// The "Clone Set" block of the status for clone group `gi`, as crm_simulate prints it: each
/// instance that is failed, unmanaged, orphaned, pending or on a lost node on its own line
/// (named by the cloned primitive), the others as "Started: [ nodes ]", then the nodes without
/// an instance as "Stopped" (or "Stopped (disabled)", or with a failed probe's result).
pub fn render_clone(obs: &Observed, gi: usize, show_pending: bool, out: &mut String) {
    let g = &obs.groups[gi];
    let Some(spec) = g.clone.as_ref() else {
        return;
    };
    let disabled = g.meta.get("target-role").and_then(|t| Role::parse(t)) == Some(Role::Stopped);
    let mut attrs = Vec::new();
    if spec.promotable.is_some() {
        attrs.push("promotable");
    }
    if spec.unique {
        attrs.push("unique");
    }
    if !clone_managed(obs, g) {
        attrs.push("unmanaged");
    }
    if disabled {
        attrs.push("disabled");
    }
    if attrs.is_empty() {
        let _ = writeln!(out, "    * Clone Set: {} [{}]:", g.id, spec.child);
    } else {
        let _ = writeln!(
            out,
            "    * Clone Set: {} [{}] ({}):",
            g.id,
            spec.child,
            attrs.join(", ")
        );
    }
    // A unique clone lists every instance on its own line, by its own id.
    if spec.unique && !spec.instances.is_empty() {
        crate::clone_groups::render_instances(
            obs,
            gi,
            show_pending,
            &mut Vec::new(),
            &mut Vec::new(),
            out,
        );
        return;
    }
    if spec.unique {
        for &m in &g.members {
            let _ = writeln!(
                out,
                "      * {}",
                crate::status::primitive_line_with(obs, &obs.resources[m], show_pending)
            );
        }
        return;
    }
    let mut started: Vec<usize> = Vec::new();
    let mut promoted: Vec<usize> = Vec::new();
    let mut active_instances = 0usize;
    if !spec.instances.is_empty() {
        crate::clone_groups::render_instances(
            obs,
            gi,
            show_pending,
            &mut started,
            &mut promoted,
            out,
        );
    }
    for &m in g.members.iter().filter(|_| spec.instances.is_empty()) {
        let r = &obs.resources[m];
        // (Pacemaker's `native_active`: a node that is offline, clean and not in maintenance
        // does not count for a managed instance; an instance active only there is not
        // listed.)
        let active = r.running_on.iter().any(|&ni| {
            let n = &obs.nodes[ni];
            n.unclean || n.online || n.maintenance || !r.managed
        });
        let pending = show_pending && r.pending_task.is_some();
        let full = if pending {
            true
        } else if !active {
            false
        } else if r.orphan || !r.managed || r.failed {
            true
        } else if r.running_on.len() == 1 {
            let ni = r.running_on[0];
            let n = &obs.nodes[ni];
            if !n.online && n.unclean {
                true
            } else if r.role > Role::Unpromoted {
                promoted.push(ni);
                false
            } else {
                started.push(ni);
                false
            }
        } else {
            true
        };
        if full {
            let mut shown = r.clone();
            shown.id = spec.child.clone();
            let _ = writeln!(
                out,
                "      * {}",
                crate::status::primitive_line_with(obs, &shown, show_pending)
            );
        }
    }
    let started_label = crate::promotable::started_label(g);
    for (list, label) in [(&mut promoted, "Promoted"), (&mut started, started_label)] {
        list.sort_by(|&a, &b| natural_cmp(&obs.nodes[a].uname, &obs.nodes[b].uname));
        if !list.is_empty() {
            active_instances += list.len();
            let names: Vec<&str> = list
                .iter()
                .map(|&ni| obs.nodes[ni].uname.as_str())
                .collect();
            let _ = writeln!(out, "      * {label}: [ {} ]", names.join(" "));
        }
    }
    if spec.max <= active_instances {
        return;
    }
    // (an unmanaged instance does not make the clone run on a cluster node that is offline,
    // clean and not in maintenance)
    let running: BTreeSet<usize> = g
        .members
        .iter()
        .flat_map(|&m| {
            let r = &obs.resources[m];
            r.running_on.iter().copied().filter(move |&ni| {
                let n = &obs.nodes[ni];
                r.managed || n.online || n.unclean || n.maintenance
            })
        })
        .collect();
    let candidates: Vec<usize> = if obs.symmetric {
        // The list reads the clone's allowed nodes: a bundle's guest node only in a few cases
        // (see `bundles::guest_node_allowed`).
        let instance = g.members.first().copied().or_else(|| {
            spec.instances
                .first()
                .and_then(|&ig| obs.groups[ig].members.first().copied())
        });
        (0..obs.nodes.len())
            .filter(|&ni| {
                let allowed = match instance {
                    Some(ri) => crate::bundles::guest_node_allowed(obs, ri, ni) != Some(false),
                    None => !crate::bundles::is_bundle_node(obs, ni),
                };
                allowed && !crate::observed::is_orphan_node(&obs.nodes[ni])
            })
            .collect()
    } else {
        g.members
            .iter()
            .flat_map(|&m| obs.resources[m].known_on.iter().copied())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let mut by_state: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for ni in candidates.into_iter().filter(|ni| !running.contains(ni)) {
        let probe = g.members.iter().find_map(|&m| {
            obs.resources[m]
                .failed_probes
                .iter()
                .find(|(pn, _)| *pn == ni)
                .map(|(_, rc)| *rc)
        });
        let state = match probe {
            Some(rc) => format!("Stopped ({})", crate::status::ocf_exit_text(rc)),
            None if disabled => "Stopped (disabled)".into(),
            None => "Stopped".into(),
        };
        by_state.entry(state).or_default().push(ni);
    }
    for (state, mut nodes) in by_state {
        nodes.sort_by(|&a, &b| natural_cmp(&obs.nodes[a].uname, &obs.nodes[b].uname));
        let names: Vec<&str> = nodes
            .iter()
            .map(|&ni| obs.nodes[ni].uname.as_str())
            .collect();
        let _ = writeln!(out, "      * {state}: [ {} ]", names.join(" "));
    }
}

/// The clones (first, then) of an ordering between two clones of primitives that Pacemaker
/// 2.1.5 interleaves (`can_interleave_actions`): `interleave` of the then clone, or of the first
/// when the then action is a stop or demote. Such an ordering also orders each then instance's
/// action after the action of the first instance on the same node (placed node for starts,
/// current node for stops), and the clones' own ordering no longer gates the then clone.
pub fn interleaved(
    obs: &Observed,
    first: &str,
    then: &str,
    then_action: &str,
) -> Option<(usize, usize)> {
    let fg = obs.group_index(first)?;
    let tg = obs.group_index(then)?;
    if fg == tg {
        return None;
    }
    let (fc, tc) = (
        obs.groups[fg].clone.as_ref()?,
        obs.groups[tg].clone.as_ref()?,
    );
    let consumer = if matches!(then_action, "stop" | "demote") {
        fc
    } else {
        tc
    };
    consumer.interleave.then_some((fg, tg))
}

/// The interleaved start orderings (start then start between two clones, the then interleaved,
/// none gated by a one-or-more pseudo action), in configuration order, each with its (first
/// clone, then clone).
pub fn interleaved_starts(
    obs: &Observed,
) -> impl Iterator<Item = (&crate::cib::Order, (usize, usize))> {
    obs.orders
        .iter()
        .filter(|o| {
            o.first_action == "start"
                && o.then_action == "start"
                && crate::one_or_more::name_of(obs, o).is_none()
        })
        .filter_map(|o| interleaved(obs, &o.first, &o.then, "start").map(|clones| (o, clones)))
}

/// One instance of a clone as an interleaved ordering pairs it: a primitive instance, or an
/// instance group of a clone of groups (whose running/stopped it follows, or whose start/stop
/// follows, as Pacemaker's `clone_child_action` maps the clone's action for a group child).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instance {
    Rsc(usize),
    Group(usize),
}

impl Instance {
    /// The primitives the instance is made of.
    pub fn members(self, obs: &Observed) -> Vec<usize> {
        match self {
            Instance::Rsc(ri) => vec![ri],
            Instance::Group(ig) => obs.groups[ig].members.clone(),
        }
    }
}

/// The instances of clone `gi` (its instance groups for a clone of groups).
pub fn instance_units(obs: &Observed, gi: usize) -> Vec<Instance> {
    match obs.groups[gi].clone.as_ref() {
        Some(c) if !c.instances.is_empty() => {
            c.instances.iter().map(|&ig| Instance::Group(ig)).collect()
        }
        _ => obs.groups[gi]
            .members
            .iter()
            .map(|&m| Instance::Rsc(m))
            .collect(),
    }
}

/// Interleaved instance pairs (first instance, then instance) of clones `fg` and `tg`: each then
/// instance with the first instance on its node (`current`: where they are active; else where
/// they are placed; an instance group where its members are), as `find_compatible_child`
/// pairs them.
pub fn unit_pairs(
    obs: &Observed,
    assigned: &[Option<usize>],
    fg: usize,
    tg: usize,
    current: bool,
) -> Vec<(Instance, Instance)> {
    let node = |u: Instance| match u {
        Instance::Rsc(ri) if current => obs.resources[ri].running_on.first().copied(),
        Instance::Rsc(ri) => assigned[ri],
        Instance::Group(ig) if current => {
            crate::clone_groups::instance_location(obs, &obs.groups[ig].members)
        }
        Instance::Group(ig) => obs.groups[ig].members.first().and_then(|&m| assigned[m]),
    };
    let firsts = instance_units(obs, fg);
    let mut out = Vec::new();
    for t in instance_units(obs, tg) {
        let Some(n) = node(t) else { continue };
        if let Some(&f) = firsts.iter().find(|&&f| node(f) == Some(n)) {
            out.push((f, t));
        }
    }
    out
}

/// Interleaved instance pairs (first instance, then instance) of clones `fg` and `tg`: each then
/// instance with the first instance on its node (`current`: where they are active; else where
/// they are placed), as `find_compatible_child` pairs them.
#[cfg(test)]
fn instance_pairs(
    obs: &Observed,
    assigned: &[Option<usize>],
    fg: usize,
    tg: usize,
    current: bool,
) -> Vec<(usize, usize)> {
    let node = |ri: usize| {
        if current {
            obs.resources[ri].running_on.first().copied()
        } else {
            assigned[ri]
        }
    };
    let mut out = Vec::new();
    for &t in &obs.groups[tg].members {
        let Some(n) = node(t) else { continue };
        if let Some(&f) = obs.groups[fg].members.iter().find(|&&f| node(f) == Some(n)) {
            out.push((f, t));
        }
    }
    out
}

/// Whether `ri` is an instance of a clone of primitives other than `gi` (the first of an
/// interleaved ordering whose then is an instance of `gi`).
pub fn interleaved_instance(obs: &Observed, ri: usize, gi: usize) -> bool {
    obs.resources[ri]
        .group
        .is_some_and(|g| g != gi && obs.groups[g].clone.is_some())
}

/// The clone instances Pacemaker unassigns for want of an interleaved first (`reconcile`'s
/// `inhibited`), and which of them were already unassigned when Pacemaker first paired the
/// instances of each interleaved start ordering (`before_pairing`, by (first clone, then
/// clone)): the pairing (`multi_update_interleave_actions`) orders a then instance after a
/// first instance only while that one is still assigned, and the orderings are processed one
/// then clone at a time, so an instance unassigned later still gets its (unrunnable) orderings.
#[derive(Debug, Clone, Default)]
pub struct Inhibitions {
    pub all: BTreeSet<usize>,
    pub before_pairing: BTreeMap<(usize, usize), BTreeSet<usize>>,
}

impl Inhibitions {
    /// Whether first instance `ri` of clone `fg` was unassigned before the instances of the
    /// ordering's then clone `tg` were paired (every unassigned one, for an ordering the
    /// replay below does not cover).
    pub fn before(&self, (fg, tg): (usize, usize), ri: usize) -> bool {
        match self.before_pairing.get(&(fg, tg)) {
            Some(set) => set.contains(&ri),
            None => self.all.contains(&ri),
        }
    }
}

/// Replays the order in which Pacemaker 2.1.5 first pairs the instances of interleaved
/// start orderings and unassigns the then instances left without a first
/// (`pcmk__update_action_for_orderings` over the actions, newest first: the clones in reverse
/// CIB order; a then clone whose start changed has the clones ordered after it processed at
/// once, `cascades`, and unassigning an instance reprocesses them too). `assigned` is the
/// placement before any unassignment; `inhibited` the final set (`reconcile`).
pub fn inhibitions(
    obs: &Observed,
    assigned: &[Option<usize>],
    inhibited: &BTreeSet<usize>,
    cascades: &dyn Fn(usize) -> bool,
) -> Inhibitions {
    let clone_of = |id: &str| {
        obs.group_index(id)
            .filter(|&g| obs.groups[g].clone.is_some())
    };
    // (first clone, then clone, mandatory) of the interleaved start orderings, and the clones
    // each clone's start is ordered before (whose processing a change of it triggers).
    let orderings: Vec<(usize, usize, bool)> = interleaved_starts(obs)
        .map(|(o, (fg, tg))| (fg, tg, o.kind == "mandatory"))
        .collect();
    let mut after: Vec<Vec<usize>> = vec![Vec::new(); obs.groups.len()];
    for o in &obs.orders {
        if o.first_action != "start"
            || o.then_action != "start"
            || crate::one_or_more::name_of(obs, o).is_some()
        {
            continue;
        }
        let (Some(fg), Some(tg)) = (clone_of(&o.first), clone_of(&o.then)) else {
            continue;
        };
        if fg == tg {
            continue;
        }
        if !after[fg].contains(&tg) {
            after[fg].push(tg);
        }
    }
    let mut replay = Replay {
        obs,
        assigned,
        inhibited,
        interleaved: &orderings,
        after: &after,
        cascades,
        visited: vec![false; obs.groups.len()],
        out: Inhibitions {
            all: inhibited.clone(),
            before_pairing: BTreeMap::new(),
        },
        now: BTreeSet::new(),
    };
    for top in obs.top.iter().rev() {
        if let Top::Group(g) = *top {
            if obs.groups[g].clone.is_some() {
                replay.visit(g);
            }
        }
    }
    replay.out
}

/// The state of `inhibitions`' replay.
struct Replay<'a> {
    obs: &'a Observed,
    assigned: &'a [Option<usize>],
    inhibited: &'a BTreeSet<usize>,
    interleaved: &'a [(usize, usize, bool)],
    after: &'a [Vec<usize>],
    cascades: &'a dyn Fn(usize) -> bool,
    visited: Vec<bool>,
    out: Inhibitions,
    /// The instances unassigned so far.
    now: BTreeSet<usize>,
}

impl Replay<'_> {
    /// An instance's node before any unassignment (an instance group's: its first member's).
    fn node(&self, u: Instance) -> Option<usize> {
        u.members(self.obs).first().and_then(|&m| self.assigned[m])
    }

    /// Processes the orderings before clone `tg`'s start.
    fn visit(&mut self, tg: usize) {
        let first_visit = !self.visited[tg];
        self.visited[tg] = true;
        let orderings: Vec<(usize, bool)> = self
            .interleaved
            .iter()
            .filter(|&&(_, t, _)| t == tg)
            .map(|&(f, _, mandatory)| (f, mandatory))
            .collect();
        if first_visit {
            for &(fg, _) in &orderings {
                let gone: BTreeSet<usize> = self.obs.groups[fg]
                    .members
                    .iter()
                    .copied()
                    .filter(|m| self.now.contains(m))
                    .collect();
                self.out.before_pairing.entry((fg, tg)).or_insert(gone);
            }
        }
        let mut unassigned = false;
        for t in instance_units(self.obs, tg) {
            let members = t.members(self.obs);
            let pending: Vec<usize> = members
                .iter()
                .copied()
                .filter(|m| self.inhibited.contains(m) && !self.now.contains(m))
                .collect();
            if pending.is_empty() {
                continue;
            }
            let node = self.node(t);
            let unpaired = orderings.iter().any(|&(fg, mandatory)| {
                mandatory
                    && !instance_units(self.obs, fg).into_iter().any(|f| {
                        node.is_some()
                            && self.node(f) == node
                            && !f.members(self.obs).iter().any(|m| self.now.contains(m))
                    })
            });
            if unpaired {
                self.now.extend(pending);
                unassigned = true;
            }
        }
        if unassigned || (first_visit && (self.cascades)(tg)) {
            for c in self.after[tg].clone() {
                self.visit(c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clones x-clone and y-clone (two instances each) on nodes n1, n2; `y_meta` goes on y-clone.
    fn two_clones(x_meta: &str, y_meta: &str) -> Observed {
        let clone = |id: &str, meta: &str| {
            format!(
                r#"<clone id="{id}-clone"><primitive id="{id}" class="ocf" provider="pacemaker" type="Dummy"/><meta_attributes id="{id}-m">{meta}</meta_attributes></clone>"#
            )
        };
        let xml = format!(
            r#"<cib><configuration><crm_config/><nodes><node id="n1" uname="n1"/><node id="n2" uname="n2"/></nodes>
<resources>{}{}</resources><constraints/></configuration><status/></cib>"#,
            clone("x", x_meta),
            clone("y", y_meta)
        );
        crate::observed::observe(&crate::cib::parse_cib(&xml).expect("valid cib"), 0)
    }

    #[test]
    fn interleave_is_the_then_clones_for_starts_and_the_firsts_for_stops() {
        let on = r#"<nvpair id="i" name="interleave" value="true"/>"#;
        let obs = two_clones("", on);
        let (x, y) = (obs.group_index("x-clone"), obs.group_index("y-clone"));
        assert_eq!(
            interleaved(&obs, "x-clone", "y-clone", "start"),
            Some((x.unwrap(), y.unwrap()))
        );
        assert_eq!(interleaved(&obs, "x-clone", "y-clone", "stop"), None);
        assert_eq!(
            interleaved(&obs, "y-clone", "x-clone", "stop"),
            Some((y.unwrap(), x.unwrap()))
        );
        assert_eq!(interleaved(&obs, "y-clone", "y-clone", "start"), None);
    }

    #[test]
    fn interleaved_instances_pair_by_node() {
        let obs = two_clones("", "");
        let (x, y) = (
            obs.group_index("x-clone").unwrap(),
            obs.group_index("y-clone").unwrap(),
        );
        let (x0, x1) = (obs.groups[x].members[0], obs.groups[x].members[1]);
        let (y0, y1) = (obs.groups[y].members[0], obs.groups[y].members[1]);
        let mut assigned = vec![None; obs.resources.len()];
        assigned[x0] = Some(1);
        assigned[x1] = Some(0);
        assigned[y0] = Some(0);
        assigned[y1] = Some(0);
        // y:0 and y:1 both on node 0 pair with x:1 there; none is placed where x is not.
        assert_eq!(
            instance_pairs(&obs, &assigned, x, y, false),
            [(x1, y0), (x1, y1)]
        );
        assigned[x1] = None;
        assert!(instance_pairs(&obs, &assigned, x, y, false).is_empty());
        // Current pairing looks at where they are active: nothing is.
        assert!(instance_pairs(&obs, &assigned, x, y, true).is_empty());
    }

    #[test]
    fn a_first_unassigned_after_the_pairing_keeps_its_orderings() {
        // In CIB order o, v, d, c (interleaved): d then o, d then c, c then v, o then v. The
        // newest, c, is processed first and unassigned (d has no instance placed), which
        // processes v at once: v loses its instances for want of c's, while o's are still
        // placed (o is processed last).
        let clone = |id: &str| {
            format!(
                r#"<clone id="{id}-clone"><primitive id="{id}" class="ocf" provider="pacemaker" type="Dummy"/><meta_attributes id="{id}-m"><nvpair id="{id}-i" name="interleave" value="true"/></meta_attributes></clone>"#
            )
        };
        let order = |first: &str, then: &str| {
            format!(r#"<rsc_order id="{first}-{then}" first="{first}-clone" then="{then}-clone"/>"#)
        };
        let xml = format!(
            r#"<cib><configuration><crm_config/><nodes><node id="n1" uname="n1"/><node id="n2" uname="n2"/></nodes>
<resources>{}{}{}{}</resources><constraints>{}{}{}{}</constraints></configuration><status/></cib>"#,
            clone("o"),
            clone("v"),
            clone("d"),
            clone("c"),
            order("d", "o"),
            order("d", "c"),
            order("c", "v"),
            order("o", "v"),
        );
        let obs = crate::observed::observe(&crate::cib::parse_cib(&xml).expect("valid cib"), 0);
        let g = |id: &str| obs.group_index(id).expect("clone");
        let (o, v, d, c) = (g("o-clone"), g("v-clone"), g("d-clone"), g("c-clone"));
        let mut assigned = vec![None; obs.resources.len()];
        let mut inhibited = BTreeSet::new();
        for gi in [o, v, c] {
            for (k, &m) in obs.groups[gi].members.iter().enumerate() {
                assigned[m] = Some(k);
                inhibited.insert(m);
            }
        }
        let inh = inhibitions(&obs, &assigned, &inhibited, &|_| true);
        let c0 = obs.groups[c].members[0];
        let o0 = obs.groups[o].members[0];
        assert!(inh.before((c, v), c0));
        assert!(!inh.before((o, v), o0));
        // (d's orderings: d has nothing to unassign)
        assert!(inh.before_pairing[&(d, o)].is_empty());
        // Outside the replay, every unassigned instance counts.
        assert!(inh.before((v, o), o0));
    }

    #[test]
    fn instance_numbers_are_stripped_only_when_numeric() {
        assert_eq!(strip_instance("drbd0:1"), "drbd0");
        assert_eq!(strip_instance("drbd0"), "drbd0");
        assert_eq!(strip_instance("a:b"), "a:b");
        assert_eq!(strip_instance("a:"), "a:");
    }
}
