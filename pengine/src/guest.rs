//! Guest nodes as Pacemaker 2.1.5 has them: a Pacemaker Remote node whose connection (made by
//! `cib/guests.rs` from a primitive's `remote-node` meta-attribute) runs inside that primitive,
//! its container. The node is built by `crate::remote`; what differs lives here: its `#kind` is
//! "container" and it gets no start-up fencing; its online state follows the container as well
//! as the connection; it is "fenced" by recovering its container (no fencing device is asked);
//! the status lists it as `GuestOnline` (an offline guest is not listed) and hides the implicit
//! connection (`internal_rsc`).

use crate::observed::{Node, Observed, Resource, Role};

/// The container of guest node `ni` (None when the node is not a guest node).
pub fn container_of(obs: &Observed, ni: usize) -> Option<usize> {
    let ci = obs.nodes.get(ni)?.remote.as_ref()?.connection?;
    obs.resources.get(ci)?.container
}

/// The node whose attributes resource `ri` reads for node `ni` (Pacemaker's
/// `pe_node_attribute_calculated`): `ni` itself, unless `ri` has container-attribute-target
/// "host" and `ni` is a guest node: then the host its container runs on (None while the
/// container is inactive).
pub fn attribute_node(obs: &Observed, ri: usize, ni: usize) -> Option<usize> {
    let to_host = obs.resources[ri]
        .meta
        .get("container-attribute-target")
        .is_some_and(|v| v.eq_ignore_ascii_case("host"));
    match container_of(obs, ni) {
        Some(ki) if to_host => obs.resources[ki].running_on.first().copied(),
        _ => Some(ni),
    }
}

/// Whether node `ni` is a guest node.
pub fn is_guest(obs: &Observed, ni: usize) -> bool {
    container_of(obs, ni).is_some()
}

/// The guest nodes whose connection is active on node `host` (Pacemaker's
/// `pe_foreach_guest_node`): fencing `host` downs them too.
pub fn hosted_guests(obs: &Observed, host: usize) -> Vec<usize> {
    // (in the order the host's history lists their connections)
    let order = &obs.nodes[host].history_order;
    let mut conns: Vec<&Resource> = obs
        .resources
        .iter()
        .filter(|r| is_connection(r) && r.running_on.contains(&host))
        .collect();
    conns.sort_by_key(|r| {
        order
            .iter()
            .position(|id| *id == r.id)
            .unwrap_or(usize::MAX)
    });
    conns.iter().filter_map(|r| r.remote_node).collect()
}

/// Whether a resource is a guest node's connection.
pub fn is_connection(r: &Resource) -> bool {
    r.remote_node.is_some() && r.container.is_some()
}

/// Whether resource `ri` is the container of a guest node (Pacemaker's
/// `pe__resource_contains_guest_node`): it never runs on a remote or guest node, nor is it
/// probed on a guest node.
pub fn contains_guest(obs: &Observed, ri: usize) -> bool {
    obs.resources
        .iter()
        .any(|r| r.container == Some(ri) && r.remote_node.is_some())
}

/// Whether a resource is internal (the implicit connection of a guest node): never printed in
/// the resource list.
pub fn is_internal(r: &Resource) -> bool {
    r.meta
        .get("internal_rsc")
        .is_some_and(|v| crate::cib::is_true(v))
}

/// Links a guest node to its connection: `#kind` "container", and none of a remote node's
/// start-up fencing (the node is neither unclean nor unseen until its status says so).
pub fn link(node: &mut Node) {
    node.attrs.insert("#kind".into(), "container".into());
    node.unclean = false;
    node.unseen = false;
}

/// Whether a guest node's history can be read in a regular pass: its connection and its
/// container are both known to be started.
pub fn history_readable(obs: &Observed, ni: usize) -> bool {
    let Some(ki) = container_of(obs, ni) else {
        return true;
    };
    let started = obs.nodes[ni]
        .remote
        .as_ref()
        .and_then(|rn| rn.connection)
        .is_some_and(|ci| obs.resources[ci].role == Role::Started);
    started && obs.resources[ki].role == Role::Started
}

/// The guest node's part of its online state (after the connection's part in
/// `remote::determine_online`): a failed container makes it offline and due for a reset; a
/// failed connection offline; a stopped connection or container offline with no reset; a host
/// that is offline and unclean offline and due for a reset. Returns whether the node was a
/// guest node (the connection's failure and stop checks were done here).
pub fn determine_online(obs: &mut Observed, ni: usize) -> bool {
    let Some(ki) = container_of(obs, ni) else {
        return false;
    };
    let Some(ci) = obs.nodes[ni].remote.as_ref().and_then(|rn| rn.connection) else {
        return false;
    };
    let conn = &obs.resources[ci];
    let container = &obs.resources[ki];
    let host = match conn.running_on.as_slice() {
        &[h] => Some(h),
        _ => None,
    };
    let host_lost = host.is_some_and(|h| !obs.nodes[h].online && obs.nodes[h].unclean);
    let (container_failed, conn_failed) = (container.failed, conn.failed);
    let stopped = conn.role == Role::Stopped || container.role == Role::Stopped;
    let node = &mut obs.nodes[ni];
    let mut reset = None;
    if container_failed {
        node.online = false;
        reset = Some(true);
    } else if conn_failed {
        node.online = false;
    } else if stopped {
        node.online = false;
        reset = Some(false);
    } else if host_lost {
        node.online = false;
        reset = Some(true);
    }
    if let (Some(reset), Some(rn)) = (reset, node.remote.as_mut()) {
        rn.requires_reset = reset;
    }
    true
}

/// Whether `ni` is a guest node that cannot be "fenced" because a host of its container is
/// lost and cannot be fenced: nothing that needs neither quorum nor fencing (a stop, demote,
/// notify or monitor) can run there (Pacemaker's `update_resource_action_runnable`).
pub fn host_unfenceable(obs: &Observed, ni: usize) -> bool {
    is_guest(obs, ni) && !can_fence(obs, ni)
}

/// The pseudo fencing of a guest node (Pacemaker's `pcmk__fence_guest`): "stonith-NODE-off",
/// or "-reboot" when the container starts again, to order what the guest ran against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuestFence {
    pub node: usize,
    pub container: usize,
    /// The container does not start again: the fencing action is "off".
    pub off: bool,
}

/// Whether guest node `ni` can be "fenced" (Pacemaker's `pe_can_fence` for a guest): every
/// host its container is active on is online or can be fenced.
pub fn can_fence(obs: &Observed, ni: usize) -> bool {
    let Some(ki) = container_of(obs, ni) else {
        return false;
    };
    obs.resources[ki]
        .running_on
        .iter()
        .all(|&h| obs.nodes[h].online || obs.can_fence(h))
}

/// The guest nodes to "fence", in node order (Pacemaker creates their pseudo fencing after
/// every resource action): those that must be reset, when some resource is managed and the
/// guest can be fenced.
pub fn fencing(obs: &Observed, changes: &[crate::reconcile::Change]) -> Vec<GuestFence> {
    use crate::reconcile::Change;
    if !obs.resources.iter().any(|r| r.managed) {
        return Vec::new();
    }
    (0..obs.nodes.len())
        .filter_map(|ni| {
            let ki = container_of(obs, ni)?;
            let reset = obs.nodes[ni]
                .remote
                .as_ref()
                .is_some_and(|rn| rn.requires_reset);
            if !reset || !can_fence(obs, ni) {
                return None;
            }
            let starts = matches!(
                changes.get(ki),
                Some(
                    Change::Start { .. }
                        | Change::Move { .. }
                        | Change::Recover { .. }
                        | Change::Restart { .. }
                        | Change::Migrate { .. }
                )
            );
            Some(GuestFence {
                node: ni,
                container: ki,
                off: !starts,
            })
        })
        .collect()
}

/// (container, resource) for every resource placed on a guest node (Pacemaker's
/// `apply_container_ordering`: the container's start implies the start, or promote, of what
/// runs on its guest, so a container that must start restarts them: "due to required
/// CONTAINER start").
pub fn implied_restarts(obs: &Observed, assigned: &[Option<usize>]) -> Vec<(usize, usize)> {
    (0..obs.resources.len())
        .filter_map(|ri| {
            let ki = container_of(obs, assigned.get(ri).copied().flatten()?)?;
            (ki != ri).then_some((ki, ri))
        })
        .collect()
}

/// Guests whose host was found lost while the cluster nodes' histories were read (a resource
/// thought active on an offline node): Pacemaker reads a guest's history after its host's, so
/// the guest is offline and due for a reset, and what is active there fails and fences it.
pub fn host_lost(obs: &mut Observed) {
    for ni in 0..obs.nodes.len() {
        if !obs.nodes[ni].online || !is_guest(obs, ni) {
            continue;
        }
        let Some(ci) = obs.nodes[ni].remote.as_ref().and_then(|rn| rn.connection) else {
            continue;
        };
        let lost = match obs.resources[ci].running_on.as_slice() {
            &[h] => !obs.nodes[h].online && obs.nodes[h].unclean,
            _ => false,
        };
        if !lost {
            continue;
        }
        determine_online(obs, ni);
        if obs.nodes[ni].online {
            continue;
        }
        // (offline when its history is read: Pacemaker creates none of the recurring
        // operations found there, and its configuration check skips the node)
        for r in &mut obs.resources {
            r.unpacked_recurring.retain(|&(n, _)| n != ni);
            r.rescheduled.retain(|&(n, _)| n != ni);
            r.definition_restart.retain(|&n| n != ni);
            r.reload_on.retain(|&n| n != ni);
            r.clear_failcount_changed.retain(|&n| n != ni);
        }
        let active: Vec<usize> = (0..obs.resources.len())
            .filter(|&ri| {
                let r = &obs.resources[ri];
                r.role > Role::Stopped && r.managed && r.running_on.contains(&ni)
            })
            .collect();
        for ri in active {
            active_on_offline(obs, ri, ni);
        }
    }
}

/// "Fences" guest node `ni` (Pacemaker's `pe_fence_node` for a guest): its container, when
/// managed and not already failed, is marked failed so that it is recovered; the node must be
/// reset but is not marked unclean (it may run resources again once the container is back).
/// Returns false when `ni` is not a guest node.
pub fn fence(obs: &mut Observed, ni: usize, reason: String) -> bool {
    let Some(ki) = container_of(obs, ni) else {
        return false;
    };
    let container = &obs.resources[ki];
    if container.failed || !container.managed {
        return true;
    }
    obs.resources[ki].failed = true;
    let node = &mut obs.nodes[ni];
    if let Some(rn) = node.remote.as_mut() {
        rn.requires_reset = true;
    }
    if node.fence_reason.is_none() {
        node.fence_reason = Some(reason);
    }
    true
}

/// A managed resource thought active on an offline guest node (whether or not fencing is
/// enabled: a guest is "fenced" by its container's recovery): the resource is failed and the
/// guest fenced. Returns false when `ni` is not a guest node.
pub fn active_on_offline(obs: &mut Observed, ri: usize, ni: usize) -> bool {
    if !is_guest(obs, ni) {
        return false;
    }
    obs.resources[ri].failed = true;
    let reason = format!("{} is thought to be active there", obs.resources[ri].id);
    fence(obs, ni, reason);
    true
}

/// Whether resource `ri` is never probed on node `ni` because `ni` is a guest node (Pacemaker's
/// `pcmk__probe_rsc_on_node`): a guest's container never runs on a guest node; nothing is active
/// on a guest whose container is stopped, and a guest whose container will stop (it must be
/// reset, it failed, it is to stop or to move) is not asked.
pub fn never_probed(obs: &Observed, assigned: &[Option<usize>], ri: usize, ni: usize) -> bool {
    let Some(ki) = container_of(obs, ni) else {
        return false;
    };
    if contains_guest(obs, ri) {
        return true;
    }
    let container = &obs.resources[ki];
    if container.role == Role::Stopped {
        return true;
    }
    will_stop(obs, assigned, ni)
}

/// Whether guest node `ni`'s container (active) will stop or move (Pacemaker's
/// `guest_resource_will_stop`): what would be probed there is not, and its start waits for the
/// container's stop instead (see `probes_skipped_orderings`).
pub fn will_stop(obs: &Observed, assigned: &[Option<usize>], ni: usize) -> bool {
    let Some(ki) = container_of(obs, ni) else {
        return false;
    };
    let container = &obs.resources[ki];
    if container.role == Role::Stopped {
        return false;
    }
    let node = &obs.nodes[ni];
    let requires_reset = node.remote.as_ref().is_some_and(|rn| rn.requires_reset);
    let moving = container.role > Role::Stopped
        && assigned
            .get(ki)
            .copied()
            .flatten()
            .is_some_and(|to| !container.running_on.contains(&to));
    // (an active container left unassigned, an orphan's, is to stop)
    let unassigned = container.role > Role::Stopped && matches!(assigned.get(ki), Some(None));
    requires_reset
        || unassigned
        || node.unclean
        || container.failed
        || container.next_role == Some(Role::Stopped)
        || container.target_role == Some(Role::Stopped)
        || moving
}

/// The graph meta of a guest's container's actions (`CRM_meta_remote_node`), and of a resource
/// action on a guest node (Pacemaker's `pcmk__add_bundle_meta_to_xml`): the physical host it runs through, the container's current
/// host for actions that bring things down (stop, demote), where it is assigned for those that
/// bring them up (start, monitor, promote), with the resource's `container-attribute-target`.
pub fn graph_meta(obs: &Observed, a: &crate::graph::GraphAction) -> Vec<(String, String)> {
    let mut out = Vec::new();
    // A container's actions name its guest node.
    if let Some(v) = a
        .rsc
        .and_then(|ri| obs.resources[ri].meta.get("remote-node"))
    {
        out.push(("CRM_meta_remote_node".into(), v.clone()));
    }
    let (Some(ri), Some(ni)) = (a.rsc, a.node) else {
        return out;
    };
    // (a stop or demote implied by the guest's fencing too)
    if !matches!(
        a.event,
        crate::graph::EventKind::RscOp | crate::graph::EventKind::Pseudo
    ) {
        return out;
    }
    let Some(ki) = container_of(obs, ni) else {
        return out;
    };
    // A notification counts as the operation it notifies of.
    let notified = a.notify.as_ref().and_then(|n| {
        n.meta
            .iter()
            .find(|(k, _)| k == "notify_operation")
            .map(|(_, v)| v.as_str())
    });
    let task = match a.task.as_str() {
        "notify" => notified.unwrap_or("notify"),
        t => t,
    };
    let host = match task {
        "stop" | "demote" => obs.resources[ki].running_on.first().copied(),
        "start" | "monitor" | "promote" => obs.nodes[ni]
            .remote
            .as_ref()
            .and_then(|rn| rn.container_host),
        _ => None,
    };
    if let Some(h) = host {
        if let Some(t) = obs.resources[ri].meta.get("container-attribute-target") {
            out.push(("CRM_meta_container_attribute_target".into(), t.clone()));
        }
        out.push(("CRM_meta_physical_host".into(), obs.nodes[h].uname.clone()));
    }
    out
}

/// Orders action `i` of the plan, on a guest node whose connection is `ci`, against its
/// connection and container (Pacemaker's `apply_container_ordering`): a start after the
/// container's and the connection's starts; a stop, demote (or migration) before the connection
/// stops, unless the container failed (its stop implies them); anything else after the connection
/// starts. A start there also lets the resource's stops elsewhere wait for the connection to
/// start (if it fails, the resource stays where it was). Returns false when the node is not a
/// guest node.
pub fn order_action(
    obs: &Observed,
    plan: &mut crate::actions::Plan,
    i: usize,
    ci: usize,
    conn_placed: bool,
) -> bool {
    use crate::actions::{Kind, Rel};
    let Some(ki) = obs.resources[ci].container else {
        return false;
    };
    let (Some(ri), Some(ni)) = (plan.actions[i].rsc, plan.actions[i].node) else {
        return true;
    };
    // (an action drawn only, or a start that cannot run, is drawn after a connection start
    // drawn only)
    let blocked_start = plan.actions[i].kind == Kind::Start && !plan.actions[i].runnable;
    let drawn_too = plan.actions[i].dot_only || blocked_start;
    let conn_starts: Vec<usize> = if drawn_too {
        (0..plan.actions.len())
            .filter(|&s| plan.actions[s].rsc == Some(ci) && plan.actions[s].kind == Kind::Start)
            .collect()
    } else {
        plan.starts(ci)
    };
    // (likewise the container's start drawn only)
    let mut container_starts = plan.starts(ki);
    if drawn_too {
        container_starts.extend(plan.drawn_starts(ki));
    }
    match plan.actions[i].kind.clone() {
        Kind::Start => {
            for s in container_starts {
                plan.edge_rel(s, i, Rel::Start);
            }
            for &s in &conn_starts {
                plan.edge_rel(s, i, Rel::Start);
            }
            crate::remote::stops_elsewhere_after(plan, &conn_starts, ri, ni);
        }
        Kind::Stop | Kind::Migrate { .. } => {
            if !obs.resources[ki].failed {
                // (The resource's probes come first too: Pacemaker's "probe then" orderings
                // for "stop then" orderings.)
                let probes: Vec<usize> = (0..plan.actions.len())
                    .filter(|&p| {
                        plan.actions[p].rsc == Some(ri) && plan.actions[p].kind == Kind::Probe
                    })
                    .collect();
                for s in plan.stops(ci) {
                    plan.edge_rel(i, s, Rel::Stop);
                    for &p in &probes {
                        plan.edge_rel(p, s, Rel::Optional);
                    }
                }
            }
        }
        // (a demote, as a stop: before the connection stops unless the container failed)
        Kind::Demote => {
            if !obs.resources[ki].failed {
                for s in plan.stops(ci) {
                    plan.edge_rel(i, s, Rel::Stop);
                }
            }
        }
        kind => {
            // Anything else waits for the connection's start (runnable-left): a connection that
            // does not start again (its start only drawn) leaves it unrunnable
            // (`apply_container_ordering`).
            if conn_starts.is_empty() {
                let drawn = plan.drawn_starts(ci);
                if !drawn.is_empty() {
                    plan.actions[i].runnable = false;
                }
                for s in drawn {
                    plan.edge_rel(s, i, Rel::Start);
                }
            }
            for &s in &conn_starts {
                plan.edge_rel(s, i, Rel::Start);
            }
            // (runnable-left: a connection that will not run has an unrunnable start, so a
            // fail-count clear there cannot run)
            if kind == Kind::ClearFailcount && !conn_placed {
                plan.actions[i].runnable = false;
            }
        }
    }
    true
}

/// A resource that would be probed on guest node `ni` but is not because the guest's container
/// will stop: its start (its group's or clone's) waits for the container's stop (an optional
/// ordering; only drawn when that stop ends a migration).
pub fn probes_skipped_orderings(
    obs: &Observed,
    desired: &crate::placement::Desired,
    rec: &crate::reconcile::Reconciliation,
    plan: &mut crate::actions::Plan,
) {
    use crate::actions::{Kind, Rel};
    for (ni, n) in obs.nodes.iter().enumerate() {
        if !n.online || n.unclean || n.maintenance || !will_stop(obs, &desired.assigned, ni) {
            continue;
        }
        // (a bundle's guest node is never probed: `create_remote_resource` and
        // `disallow_node` set its discovery to never, in every allowed-node copy too, so
        // `pcmk__probe_rsc_on_node` gives up before it looks at the guest)
        if crate::bundles::is_bundle_node(obs, ni) {
            continue;
        }
        let Some(ki) = container_of(obs, ni) else {
            continue;
        };
        let container_stops = plan.stops(ki);
        for (ri, r) in obs.resources.iter().enumerate() {
            if crate::reconcile::probe_ruled_out(obs, desired, ri, ni)
                || r.container.is_some()
                || contains_guest(obs, ri)
                // (a bundle's inner instance is probed on its own replica's node only:
                // `pcmk__bundle_create_probe`)
                || crate::bundles::replica_of(obs, ri).is_some_and(|(bi, k)| {
                    obs.bundles[bi].replicas[k].child == Some(ri)
                        && crate::bundles::replica_node(obs, bi, k) != Some(ni)
                })
                || rec.probes.contains(&(ri, ni))
            {
                continue;
            }
            // (an anonymous clone probes one instance per node, as in `reconcile`)
            if let Some(gi) = crate::clone_groups::clone_of(obs, ri) {
                if crate::clones::probed_instance(obs, &desired.assigned, gi, ni, ri) != Some(ri) {
                    continue;
                }
                let probed = &obs.resources[ri];
                if probed.known_on.contains(&ni) || probed.running_on.contains(&ni) {
                    continue;
                }
            }
            let group = crate::clone_groups::clone_of(obs, ri).or(r.group);
            let starts: Vec<usize> = match group {
                Some(gi) => plan
                    .find_group_action(gi, &Kind::GroupStart)
                    .into_iter()
                    .collect(),
                None => plan
                    .starts(ri)
                    .into_iter()
                    .filter(|&s| plan.actions[s].kind == Kind::Start)
                    .collect(),
            };
            for &c in &container_stops {
                for &s in &starts {
                    if matches!(plan.actions[c].kind, Kind::Migrate { .. }) {
                        plan.drawn_orderings.push((c, s));
                    } else {
                        plan.edge_rel(c, s, Rel::Optional);
                    }
                }
            }
        }
    }
}

/// Adds the pseudo fencing of the guests `rec.guest_fence` names (Pacemaker's
/// `pcmk__fence_guest`), after every resource action: it follows the container's stop (the
/// fencing of the container's host when that stop is implied by it; the connection's stop,
/// optionally, when the container does not stop), and is ordered as a real fencing is: the
/// stops (and demotes) on the guest are implied by it and follow it, with their clone's or
/// group's stop, and starts wait for it as for any fencing.
pub fn fencing_actions(
    obs: &Observed,
    desired: &crate::placement::Desired,
    rec: &crate::reconcile::Reconciliation,
    plan: &mut crate::actions::Plan,
) {
    use crate::actions::{Kind, Rel, act};
    for gf in &rec.guest_fence {
        let mut a = act(Kind::GuestFence { off: gf.off }, None, Some(gf.node));
        a.pseudo = true;
        a.reason = Some("guest is unclean".into());
        let f = plan.add(a);
        let container_stop = plan
            .stops(gf.container)
            .into_iter()
            .find(|&s| !plan.actions[s].dot_only);
        // (Pacemaker creates it while walking the nodes in order: the stop is known to be
        // implied by the host's fencing only when the host comes first)
        let host_first = |s: usize| plan.actions[s].node.is_some_and(|h| h < gf.node);
        match container_stop {
            Some(s) if plan.actions[s].pseudo && host_first(s) => {
                let host_fence = (0..plan.actions.len()).find(|&i| {
                    plan.actions[i].kind == Kind::Fence
                        && plan.actions[i].node == plan.actions[s].node
                });
                if let Some(h) = host_fence {
                    plan.edge(h, f);
                }
            }
            Some(s) => plan.edge(s, f),
            None => {
                let conn = obs.nodes[gf.node]
                    .remote
                    .as_ref()
                    .and_then(|rn| rn.connection);
                if let Some(s) = conn.and_then(|ci| plan.stops(ci).into_iter().next()) {
                    plan.edge_rel(s, f, Rel::Optional);
                }
            }
        }
        crate::actions::starts_after_fencing(obs, desired, plan, f, gf.node);
        // What stops on the guest is implied by the fencing and follows it, and so does the
        // stop of its clone or group (demotes: below).
        for i in 0..plan.actions.len() {
            let a = &plan.actions[i];
            let (Some(ri), Some(ni)) = (a.rsc, a.node) else {
                continue;
            };
            if ni != gf.node || !obs.resources[ri].managed || a.kind != Kind::Stop {
                continue;
            }
            // (not a bundled resource's own stop, which would loop: its clone's stop follows
            // the fencing instead; `order_stop_vs_fencing`)
            if !crate::bundles::is_bundled(obs, ri) {
                plan.edge(f, i);
            }
            let top = crate::clone_groups::clone_of(obs, ri).or(obs.resources[ri].group);
            if let Some(gs) = top.and_then(|gi| plan.find_group_action(gi, &Kind::GroupStop)) {
                plan.edge(f, gs);
            }
        }
        crate::actions::demotes_after_fencing(obs, plan, f, gf.node, true);
        crate::actions::promotes_after_fencing(obs, plan, f);
    }
}

/// Orders the promotes, demotes and role monitors on guest nodes (created after
/// `order_action` ran) as Pacemaker's `apply_container_ordering` does: a promote after the
/// container's and the connection's starts, a demote before the connection's stop unless the
/// container failed, a recurring monitor after the connection's start.
pub fn order_role_actions(obs: &Observed, plan: &mut crate::actions::Plan) {
    use crate::actions::{Kind, Rel};
    for i in 0..plan.actions.len() {
        let a = &plan.actions[i];
        let monitor = matches!(a.kind, Kind::Monitor { .. }) && a.rsc.is_some();
        let role_change = matches!(a.kind, Kind::Promote | Kind::Demote) && !a.dot_only;
        if !monitor && !role_change {
            continue;
        }
        let Some(ni) = a.node else { continue };
        let Some(ki) = container_of(obs, ni) else {
            continue;
        };
        let Some(ci) = obs.nodes[ni].remote.as_ref().and_then(|rn| rn.connection) else {
            continue;
        };
        if monitor {
            if plan.actions[i].rsc != Some(ci) {
                for s in plan.starts(ci) {
                    plan.edge_rel(s, i, Rel::Start);
                }
            }
        } else if plan.actions[i].kind == Kind::Promote {
            for s in plan.starts(ki).into_iter().chain(plan.starts(ci)) {
                plan.edge_rel(s, i, Rel::Start);
            }
        } else if !obs.resources[ki].failed {
            for s in plan.stops(ci) {
                plan.edge_rel(i, s, Rel::Stop);
            }
        }
    }
}

/// Drops the orderings of an action on a guest node before an action of that guest's own
/// container (Pacemaker's `ordering_is_invalid`: a constraint may not order what runs in a
/// guest against the resource that makes the guest; those the scheduler makes never have
/// that shape here).
pub fn drop_invalid_orderings(obs: &Observed, plan: &mut crate::actions::Plan) {
    let invalid = |f: usize, t: usize| {
        let (a, b) = (&plan.actions[f], &plan.actions[t]);
        a.rsc.is_some()
            && b.rsc.is_some()
            && a.node
                .and_then(|ni| container_of(obs, ni))
                .is_some_and(|ki| b.rsc == Some(ki))
    };
    let keep: Vec<bool> = plan.edges.iter().map(|&(f, t, _)| !invalid(f, t)).collect();
    let mut k = keep.iter();
    plan.edges.retain(|_| *k.next().unwrap_or(&true));
}
