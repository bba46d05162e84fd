//! Pacemaker Remote nodes as Pacemaker 2.1.5 has them: nodes made by `ocf:pacemaker:remote`
//! connection resources (or `<node type="remote">`), whose online state comes from their
//! connection; the connection is placed before everything else, and actions on a remote node
//! wait for it (the connection's host routes them).
//!
//! Guest nodes (a primitive's `remote-node` meta-attribute, its connection made by
//! `cib/guests.rs`) are remote nodes too; what differs for them is in `crate::guest`.

use crate::actions::{Kind, Plan, Rel};
use crate::cib::{Cib, NodeState, ResourceDef, is_true};
use crate::observed::{Node, Observed, Role, merge_sets, natural_cmp};
use crate::placement::Desired;

/// What a Pacemaker Remote node carries besides the cluster node's fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteNode {
    /// The connection resource (index into `Observed::resources`); None for a node entry
    /// whose connection is no longer configured.
    pub connection: Option<usize>,
    /// Pacemaker's `remote_requires_reset`: the node must be fenced before it is trusted.
    pub requires_reset: bool,
    /// The status recorded the node as fenced (`node_fenced`).
    pub was_fenced: bool,
    /// The node's history was read (its `node_state` was unpacked).
    pub unpacked: bool,
    /// Where the connection is assigned (set once placement assigned it).
    pub next_host: Option<usize>,
    /// The connection is an orphan found in the status (no longer configured): Pacemaker made
    /// the node when it met that history, shutting down (see `link_orphans`).
    pub orphan: bool,
    /// A guest node's: where its container is assigned (set with `next_host`).
    pub container_host: Option<usize>,
    /// Configured as a `<node type="remote">` entry: the node exists before the resources are
    /// unpacked (a bundle's containers made before its connection then know it).
    pub declared: bool,
    /// The `<node>` entry's score: the node's weight until a bundle makes it its guest node
    /// (`create_remote_resource` sets -INFINITY), which the resources unpacked before copy.
    pub declared_score: i64,
}

/// Whether a configured primitive is a remote connection (`ocf:pacemaker:remote`).
pub fn is_connection_agent(class: &str, provider: Option<&str>, kind: &str) -> bool {
    class.eq_ignore_ascii_case("ocf")
        && provider.is_some_and(|p| p.eq_ignore_ascii_case("pacemaker"))
        && kind == "remote"
}

/// Whether the node is a Pacemaker Remote node.
pub fn is_remote(node: &Node) -> bool {
    node.remote.is_some()
}

/// Whether any node is a Pacemaker Remote node.
pub fn any(obs: &Observed) -> bool {
    obs.nodes.iter().any(is_remote)
}

fn new_node(id: &str, uname: &str) -> Node {
    let mut attrs = std::collections::BTreeMap::new();
    attrs.insert("#uname".into(), uname.to_string());
    attrs.insert("#id".into(), id.to_string());
    attrs.insert("#kind".into(), "remote".into());
    Node {
        id: id.to_string(),
        uname: uname.to_string(),
        attrs,
        remote: Some(RemoteNode::default()),
        ..Default::default()
    }
}

/// The remote nodes of the configuration: `<node type="remote">` entries, then one per
/// top-level `ocf:pacemaker:remote` primitive not already named by a node entry.
pub fn configured_nodes(cib: &Cib, now: i64) -> Vec<Node> {
    let mut out: Vec<Node> = Vec::new();
    for n in cib.nodes.iter().filter(|n| n.kind == "remote") {
        let mut node = new_node(&n.id, &n.uname);
        node.weight = n.score;
        if let Some(rn) = node.remote.as_mut() {
            rn.declared = true;
            rn.declared_score = n.score;
        }
        merge_sets(&mut node.attrs, &n.attrs, now, None);
        out.push(node);
    }
    let bundle_connections = cib.resources.iter().flat_map(|r| match r {
        ResourceDef::Bundle(b) => b
            .replicas
            .iter()
            .filter_map(|r| r.remote.as_ref())
            .collect(),
        _ => Vec::new(),
    });
    let bundle_names: Vec<&str> = bundle_connections.clone().map(|p| p.id.as_str()).collect();
    let top = cib.resources.iter().filter_map(|r| match r {
        ResourceDef::Primitive(p) => Some(p),
        _ => None,
    });
    for p in top.chain(bundle_connections) {
        if !is_connection_agent(&p.class, p.provider.as_deref(), &p.kind) {
            continue;
        }
        let known = cib
            .nodes
            .iter()
            .any(|n| n.kind != "remote" && n.uname == p.id)
            || out.iter().any(|n| n.uname == p.id);
        if !known {
            out.push(new_node(&p.id, &p.id));
        }
    }
    // A history of a connection no longer configured makes its node, shutting down
    // (Pacemaker's `create_fake_resource`); its connection is linked with `link_orphans`.
    let configured: std::collections::BTreeSet<&str> =
        cib.primitives().map(|p| p.id.as_str()).collect();
    for lr in cib.status.iter().flat_map(|st| st.lrm.iter()) {
        if !is_connection_agent(&lr.class, lr.provider.as_deref(), &lr.kind)
            || configured.contains(lr.id.as_str())
            || cib.nodes.iter().any(|n| n.uname == lr.id)
            || out.iter().any(|n| n.uname == lr.id)
        {
            continue;
        }
        let mut node = new_node(&lr.id, &lr.id);
        node.shutdown = true;
        if let Some(rn) = node.remote.as_mut() {
            rn.orphan = true;
        }
        out.push(node);
    }
    // A bundle's guest node takes no resource but the replica's own (Pacemaker's -INFINITY
    // node weight; see `crate::bundles`).
    for n in &mut out {
        if bundle_names.contains(&n.uname.as_str()) {
            n.weight = crate::cib::INFINITY.saturating_neg();
        }
    }
    out.sort_by(|a, b| natural_cmp(&a.uname, &b.uname));
    out
}

/// Links each remote node to its connection resource (same id as the node's name) and applies
/// start-up fencing to remote nodes that have one: unclean and unseen until their status says
/// otherwise. Connections may migrate unless told not to.
pub fn link(obs: &mut Observed, startup_fencing: bool) {
    for ni in 0..obs.nodes.len() {
        if obs.nodes[ni].remote.is_none() {
            continue;
        }
        let ri = obs.rsc_index(&obs.nodes[ni].uname).filter(|&ri| {
            let r = &obs.resources[ri];
            is_connection_agent(&r.class, r.provider.as_deref(), &r.kind)
        });
        let Some(ri) = ri else {
            continue;
        };
        obs.resources[ri].remote_node = Some(ni);
        let guest = obs.resources[ri].container.is_some();
        let node = &mut obs.nodes[ni];
        if let Some(rn) = node.remote.as_mut() {
            rn.connection = Some(ri);
        }
        if guest {
            crate::guest::link(node);
            continue;
        }
        node.unclean = startup_fencing;
        node.unseen = true;
    }
}

/// When orphaned connections are linked to their nodes (see `link_orphans`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrphanLink {
    /// Once the cluster nodes' histories found them: the node gets a remote node's start-up
    /// fencing (its connection has no container yet when Pacemaker links it).
    Found,
    /// For each later pass over the remote nodes' states.
    Reading,
    /// Once they sit behind the configured resources: fillers ordered with their container.
    Final,
}

/// Links the orphaned connections among `obs.resources[base..]` to the nodes their histories
/// made (Pacemaker's `link_rsc2remotenode` for an orphan, then
/// `handle_orphaned_container_fillers`): `containers` names each orphan's recorded container.
pub fn link_orphans(
    obs: &mut Observed,
    base: usize,
    containers: &[(String, String)],
    startup_fencing: bool,
    stage: OrphanLink,
) {
    for ri in base..obs.resources.len() {
        let r = &obs.resources[ri];
        if let Some((_, c)) = containers.iter().find(|(o, _)| *o == r.id) {
            let ci = obs
                .rsc_index(c)
                .or_else(|| (base..obs.resources.len()).find(|&i| obs.resources[i].id == *c));
            obs.resources[ri].container = ci.filter(|&ci| ci != ri);
            if stage == OrphanLink::Final {
                crate::container::order_filler(obs, ri);
            }
        }
        let r = &obs.resources[ri];
        if !is_connection_agent(&r.class, r.provider.as_deref(), &r.kind) {
            continue;
        }
        let Some(ni) = obs
            .nodes
            .iter()
            .position(|n| n.remote.as_ref().is_some_and(|rn| rn.orphan) && n.uname == r.id)
        else {
            continue;
        };
        obs.resources[ri].remote_node = Some(ni);
        let node = &mut obs.nodes[ni];
        if let Some(rn) = node.remote.as_mut() {
            rn.connection = Some(ri);
        }
        if stage == OrphanLink::Found {
            node.unclean = startup_fencing;
            node.unseen = true;
        }
    }
}

/// Unlinks the orphaned connections again (their indices change when they move to the end of
/// the resources; see `link_orphans`).
pub fn unlink_orphans(obs: &mut Observed) {
    for node in &mut obs.nodes {
        if let Some(rn) = node.remote.as_mut().filter(|rn| rn.orphan) {
            rn.connection = None;
        }
    }
}

/// The first pass over a remote node's `node_state`: only whether it was fenced (a node made
/// for an orphaned connection does not exist yet then).
pub fn note_state(node: &mut Node, st: &NodeState) {
    if let Some(rn) = node.remote.as_mut().filter(|rn| !rn.orphan) {
        rn.was_fenced = st
            .node_fenced
            .as_deref()
            .and_then(|v| v.trim().parse::<i64>().ok())
            .is_some_and(|v| v > 0);
    }
}

/// Whether a remote node's history can be read in a regular pass (Pacemaker's
/// `unpack_node_history` without `fence`): its connection is known to be up (or shutdown locks
/// are in use); a guest node's also needs its container up. A node whose connection is no
/// longer configured waits for the fencing pass.
pub fn history_readable(obs: &Observed, ni: usize) -> bool {
    let Some(rn) = obs.nodes[ni].remote.as_ref() else {
        return true;
    };
    let Some(ri) = rn.connection else {
        return false;
    };
    if crate::guest::is_guest(obs, ni) {
        return crate::guest::history_readable(obs, ni);
    }
    obs.resources[ri].role == Role::Started || obs.shutdown_lock
}

/// A remote node's online state from its connection resource (Pacemaker's
/// `determine_remote_online_status`).
pub fn determine_online(obs: &mut Observed, ni: usize) {
    let Some(ri) = obs.nodes[ni].remote.as_ref().and_then(|rn| rn.connection) else {
        obs.nodes[ni].online = false;
        return;
    };
    let r = &obs.resources[ri];
    let started = r.role == Role::Started;
    let stopping =
        started && (r.next_role == Some(Role::Stopped) || r.target_role == Some(Role::Stopped));
    let failed = r.failed;
    let stopped = r.role == Role::Stopped;
    let node = &mut obs.nodes[ni];
    if started {
        node.online = true;
    }
    if stopping {
        node.shutdown = true;
    }
    if crate::guest::determine_online(obs, ni) {
        return;
    }
    let node = &mut obs.nodes[ni];
    if failed {
        node.online = false;
    } else if stopped {
        node.online = false;
        if let Some(rn) = node.remote.as_mut() {
            rn.requires_reset = false;
        }
    }
}

/// Reads a remote node's `node_state` (Pacemaker's `unpack_handle_remote_attrs`): seen and
/// clean unless it must be reset, its transient attributes, shutdown, standby, maintenance
/// (also when the connection is unmanaged).
pub fn read_state(obs: &mut Observed, ni: usize, st: &NodeState) {
    let connection_unmanaged = obs.nodes[ni]
        .remote
        .as_ref()
        .and_then(|rn| rn.connection)
        .is_some_and(|ri| !obs.resources[ri].managed);
    let node = &mut obs.nodes[ni];
    let Some(rn) = node.remote.as_mut() else {
        return;
    };
    rn.unpacked = true;
    if !rn.requires_reset {
        node.unclean = false;
        node.unseen = false;
    }
    for (k, v) in &st.attrs {
        node.attrs.insert(k.clone(), v.clone());
    }
    if node
        .attrs
        .get("shutdown")
        .is_some_and(|v| v != "0" && !v.is_empty())
    {
        node.shutdown = true;
    }
    if node.attrs.get("standby").is_some_and(|v| is_true(v)) {
        node.standby = true;
    }
    if node.attrs.get("maintenance").is_some_and(|v| is_true(v)) || connection_unmanaged {
        node.maintenance = true;
    }
}

/// After every history was read: remote nodes shutting down stop their connection, and the
/// nodes whose history was not read get their online state from the connection.
pub fn after_histories(obs: &mut Observed) {
    for ni in 0..obs.nodes.len() {
        let Some(rn) = obs.nodes[ni].remote.clone() else {
            continue;
        };
        if obs.nodes[ni].shutdown {
            if let Some(ri) = rn.connection {
                obs.resources[ri].next_role = Some(Role::Stopped);
            }
        }
        if !rn.unpacked {
            determine_online(obs, ni);
        }
    }
}

/// Marks a remote node for fencing (Pacemaker's `pe_fence_node` for remote nodes): nothing when
/// its connection is unmanaged; otherwise it must be reset and is unclean, for `reason` (the
/// first reason is kept).
pub fn fence(obs: &mut Observed, ni: usize, reason: String) {
    if crate::guest::fence(obs, ni, reason.clone()) {
        return;
    }
    let unmanaged = obs.nodes[ni]
        .remote
        .as_ref()
        .and_then(|rn| rn.connection)
        .is_some_and(|ri| !obs.resources[ri].managed);
    if unmanaged {
        return;
    }
    let node = &mut obs.nodes[ni];
    if let Some(rn) = node.remote.as_mut() {
        rn.requires_reset = true;
    }
    if !node.unclean || node.fence_reason.is_none() {
        node.fence_reason = Some(reason);
    }
    node.unclean = true;
    obs.note_fence_request(ni);
}

/// A managed resource thought active on an offline remote node: with fencing enabled the node
/// is fenced, "unseen" while its connection has not failed (the fencing is dropped when the
/// connection starts elsewhere).
pub fn active_on_offline(obs: &mut Observed, ri: usize, ni: usize) {
    if crate::guest::active_on_offline(obs, ri, ni) {
        return;
    }
    if !obs.stonith_enabled {
        return;
    }
    let connection_ok = obs.nodes[ni]
        .remote
        .as_ref()
        .and_then(|rn| rn.connection)
        .is_some_and(|ci| !obs.resources[ci].failed);
    let id = obs.resources[ri].id.clone();
    let reason = if connection_ok {
        obs.nodes[ni].unseen = true;
        format!(
            "{id} is active there (fencing will be revoked if remote connection can be \
             re-established elsewhere)"
        )
    } else {
        format!("{id} is thought to be active there")
    };
    fence(obs, ni, reason);
}

/// Before the remote nodes' `node_state`s are read (after the cluster nodes' histories): a
/// connection whose failure resets its node (fencing enabled) fences the node unless its
/// fencing is already recorded; a failed connection never makes the fencing "unseen".
pub fn prepare_states(obs: &mut Observed) {
    for ri in 0..obs.resources.len() {
        let r = &obs.resources[ri];
        let Some(ni) = r.remote_node else {
            continue;
        };
        if r.failed && obs.nodes[ni].unclean {
            obs.nodes[ni].unseen = false;
        }
        let fenced = obs.nodes[ni]
            .remote
            .as_ref()
            .is_some_and(|rn| rn.was_fenced);
        if r.reset_remote && obs.stonith_enabled && !fenced {
            fence(obs, ni, "remote connection is unrecoverable".into());
        }
    }
}

/// The passes over the status that read the remote nodes' `node_state`s (Pacemaker's
/// `unpack_node_history` loop): each pass reads, in status order, every unread node whose
/// history is readable by now (a guest node whose container runs on a remote node waits for
/// that node's history); passes repeat while one read a node; then, with fencing enabled, a
/// last pass reads every node left.
#[derive(Debug, Default)]
pub struct StatePasses {
    pos: usize,
    progress: bool,
    fence: bool,
}

impl StatePasses {
    /// The next remote node to read: its online state is determined and its `node_state`
    /// read; the caller then unpacks its resource history. None when every pass is done.
    pub fn next(&mut self, obs: &mut Observed, cib: &Cib) -> Option<usize> {
        loop {
            let Some(st) = cib.status.get(self.pos) else {
                if self.progress {
                    self.progress = false;
                } else if !self.fence && obs.stonith_enabled {
                    self.fence = true;
                } else {
                    return None;
                }
                self.pos = 0;
                continue;
            };
            self.pos += 1;
            let Some(ni) = crate::observed::node_of_state(&obs.nodes, st) else {
                continue;
            };
            let unread = obs.nodes[ni].remote.as_ref().is_some_and(|rn| !rn.unpacked);
            if !unread || !(self.fence || history_readable(obs, ni)) {
                continue;
            }
            determine_online(obs, ni);
            read_state(obs, ni, st);
            self.progress = true;
            return Some(ni);
        }
    }
}

/// Once the connections are assigned (Pacemaker's `remote_connection_assigned`): a remote node
/// whose connection will run is online (and no longer unclean when it was only unseen);
/// otherwise it shuts down.
pub fn connections_assigned(obs: &mut Observed, assigned: &[Option<usize>]) {
    for ri in 0..obs.resources.len() {
        connection_assigned(obs, assigned, ri);
    }
}

/// `connections_assigned` for resource `ri` alone (nothing when it is not a connection).
pub fn connection_assigned(obs: &mut Observed, assigned: &[Option<usize>], ri: usize) {
    let Some(ni) = obs.resources[ri].remote_node else {
        return;
    };
    let r = &obs.resources[ri];
    let runs = assigned.get(ri).copied().flatten().is_some()
        && r.next_role != Some(Role::Stopped)
        && r.target_role != Some(Role::Stopped);
    let node = &mut obs.nodes[ni];
    if let Some(rn) = node.remote.as_mut() {
        rn.next_host = assigned.get(ri).copied().flatten();
        rn.container_host = r.container.and_then(|c| assigned.get(c).copied().flatten());
    }
    if runs {
        node.online = true;
        if node.unseen {
            node.unclean = false;
        }
    } else {
        node.shutdown = true;
    }
}

/// A remote node whose connection has failed for good (`ConnectionState::Failed`) while
/// resources are active on it: the only way to stop them is fencing it (Pacemaker's
/// `apply_remote_ordering` for a stop there; the stops are then implied by the fencing).
pub fn fence_unrecoverable(obs: &mut Observed, desired: &Desired) {
    for ni in 0..obs.nodes.len() {
        let Some(ci) = obs.nodes[ni].remote.as_ref().and_then(|rn| rn.connection) else {
            continue;
        };
        if connection_state(obs, desired, ci, ni) != ConnectionState::Failed {
            continue;
        }
        let active = obs
            .resources
            .iter()
            .enumerate()
            .any(|(ri, r)| ri != ci && r.running_on.contains(&ni));
        // (a probe there comes first: Pacemaker creates the probes before the stops)
        let probed = obs.nodes[ni].online
            && !obs.nodes[ni].unclean
            && crate::guest::container_of(obs, ni).is_none()
            && (0..obs.resources.len()).any(|ri| would_probe(obs, desired, ri, ni));
        let was_unclean = obs.nodes[ni].unclean;
        if probed {
            fence(
                obs,
                ni,
                "resources are in unknown state and connection is unrecoverable".to_string(),
            );
        } else if active {
            fence(
                obs,
                ni,
                "resources are active but connection is unrecoverable".to_string(),
            );
        }
        if !was_unclean && obs.nodes[ni].unclean {
            obs.nodes[ni].fence_phase = if probed { 2 } else { 1 };
        }
    }
}

/// Whether resource `ri` is to be probed on remote node `ni` (its state there unknown: no
/// history of it or, for a clone, of any of its instances; see `reconcile`'s probes).
fn would_probe(obs: &Observed, desired: &Desired, ri: usize, ni: usize) -> bool {
    let known = |i: usize| {
        let m = &obs.resources[i];
        m.known_on.contains(&ni) || m.running_on.contains(&ni)
    };
    let clone_known = crate::clone_groups::clone_of(obs, ri)
        .is_some_and(|gi| obs.groups[gi].members.iter().any(|&m| known(m)));
    !(crate::reconcile::probe_ruled_out(obs, desired, ri, ni)
        || obs.resources[ri].container.is_some()
        || clone_known)
}

/// Remote nodes never run fencing devices or remote connections, so never probe them; nor
/// anything where resource discovery is disabled (`resource-discovery-enabled` false, with
/// fencing enabled).
pub fn never_probed(obs: &Observed, ri: usize, ni: usize) -> bool {
    let node = &obs.nodes[ni];
    if node.remote.is_none() {
        return false;
    }
    let r = &obs.resources[ri];
    r.is_stonith() || r.remote_node.is_some() || discovery_disabled(obs, ni)
}

/// Remote node `ni` is not probed at all (`resource-discovery-enabled` false, with fencing
/// enabled: Pacemaker's `rsc_discovery_enabled`).
pub fn discovery_disabled(obs: &Observed, ni: usize) -> bool {
    let node = &obs.nodes[ni];
    node.remote.is_some()
        && obs.stonith_enabled
        && node
            .attrs
            .get("resource-discovery-enabled")
            .is_some_and(|v| !is_true(v))
}

/// The cluster node that routes an action (`task`) on remote node `ni` (Pacemaker's
/// `pcmk__connection_host_for_action`): the connection's current host, or its next one when it
/// is starting; when it moves, actions that must finish before it leaves (stop, demote, cancel,
/// migrations) go through the current host, everything else through the next (all through the
/// next during a partial migration of the connection).
pub fn router(obs: &Observed, ni: usize, task: &str) -> Option<usize> {
    let rn = obs.nodes.get(ni)?.remote.as_ref()?;
    let conn = &obs.resources[rn.connection?];
    let began_on = conn.running_on.first().copied();
    let ended_on = rn.next_host;
    let partial = conn.container.is_none() && conn.partial_migration.is_some();
    match (began_on, ended_on) {
        (None, next) => next,
        (current, None) => current,
        (Some(b), Some(e)) if b == e => Some(b),
        (Some(b), Some(e)) => {
            let before_move = matches!(
                task,
                "cancel" | "stop" | "demote" | "migrate_from" | "migrate_to"
            );
            Some(if before_move && !partial { b } else { e })
        }
    }
}

/// The remote node a graph action brings down: the stop of its connection, unless that stop
/// ends a migration of the connection (it comes after the migrate_from).
pub fn downed_by_stop(
    obs: &Observed,
    g: &crate::graph::TransitionGraph,
    action: usize,
) -> Option<usize> {
    let a = &g.actions[action];
    if a.event != crate::graph::EventKind::RscOp || a.task != "stop" {
        return None;
    }
    let ni = obs.resources[a.rsc?].remote_node?;
    let migrating = g.edges.iter().any(|&(first, then)| {
        then == action && g.actions[first].rsc == a.rsc && g.actions[first].task == "migrate_from"
    });
    (!migrating).then_some(ni)
}

/// A remote node's connection as the scheduler sees it once placed (Pacemaker's
/// `remote_connection_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConnectionState {
    Unknown,
    Alive,
    Resting,
    Failed,
    Stopped,
}

/// The state of remote node `ni`'s connection `ri` (Pacemaker's `get_remote_node_state`).
pub fn connection_state(
    obs: &Observed,
    desired: &Desired,
    ri: usize,
    ni: usize,
) -> ConnectionState {
    let r = &obs.resources[ri];
    let host = r.running_on.first().copied();
    let stopping = r.next_role == Some(Role::Stopped) || r.target_role == Some(Role::Stopped);
    if stopping || desired.assigned.get(ri).copied().flatten().is_none() {
        if host.is_some_and(|h| obs.nodes[h].unclean) {
            return ConnectionState::Failed;
        }
        if !r.failed {
            return ConnectionState::Stopped;
        }
        let fenced = obs.nodes[ni]
            .remote
            .as_ref()
            .is_some_and(|rn| rn.was_fenced);
        let shutdown_asked = obs.nodes[ni]
            .attrs
            .get("shutdown")
            .is_some_and(|v| v != "0" && !v.is_empty());
        if stopping && reconnect_interval_ms(r) > 0 && fenced && !shutdown_asked {
            return ConnectionState::Unknown;
        }
        return ConnectionState::Failed;
    }
    match host {
        None => ConnectionState::Unknown,
        Some(h) if obs.nodes[h].unclean || !obs.nodes[h].online => ConnectionState::Resting,
        Some(_) if r.running_on.len() > 1 && r.partial_migration.is_some() => {
            ConnectionState::Resting
        }
        Some(_) => ConnectionState::Alive,
    }
}

/// Whether remote node `ni`'s connection has a required start (it starts, moves, recovers or
/// restarts): Pacemaker orders the recurring monitors there after it with "implies then"
/// (`apply_remote_ordering`), so the monitors of what stays there are scheduled again.
pub fn connection_restarts(
    obs: &Observed,
    changes: &[crate::reconcile::Change],
    ni: usize,
) -> bool {
    use crate::reconcile::Change;
    let Some(ci) = obs.nodes[ni].remote.as_ref().and_then(|rn| rn.connection) else {
        return false;
    };
    matches!(
        changes.get(ci),
        Some(
            Change::Start { blocked: None, .. }
                | Change::Move { .. }
                | Change::Recover { .. }
                | Change::Restart { .. }
        )
    )
}

/// The connection's `reconnect_interval` parameter in ms (0: none).
pub fn reconnect_interval_ms(r: &crate::observed::Resource) -> u64 {
    r.params
        .get("reconnect_interval")
        .map(|v| crate::cib::parse_interval_ms(v))
        .unwrap_or(0)
}

/// Orders every action on a remote node against its connection (Pacemaker's
/// `apply_remote_ordering`): starts after the connection starts; stops before it stops while it
/// is alive or going away, else after it starts again elsewhere; probes and other actions after
/// it starts (before it stops when it is up but going down).
pub fn order_actions(obs: &Observed, desired: &Desired, plan: &mut Plan) {
    if !any(obs) {
        return;
    }
    let count = plan.actions.len();
    for i in 0..count {
        let a = &plan.actions[i];
        // (Stops implied by fencing count: they become pseudo actions only after this. A
        // start or recurring monitor drawn only, as it cannot run, is ordered too.)
        let drawn = matches!(a.kind, Kind::Monitor { .. } | Kind::Start);
        if (a.dot_only && !drawn) || (a.pseudo && a.kind != Kind::Stop) {
            continue;
        }
        let (Some(ri), Some(ni)) = (a.rsc, a.node) else {
            continue;
        };
        // A remote connection's fail-count clear comes before any start of it (optional).
        if a.kind == Kind::ClearFailcount && obs.resources[ri].remote_node.is_some() {
            for s in plan.find(ri, &Kind::Start) {
                plan.edge_rel(i, s, Rel::Optional);
            }
            continue;
        }
        let Some(ci) = obs.nodes[ni].remote.as_ref().and_then(|rn| rn.connection) else {
            continue;
        };
        if ci == ri {
            continue;
        }
        if crate::guest::order_action(obs, plan, i, ci, desired.assigned[ci].is_some()) {
            continue;
        }
        let state = connection_state(obs, desired, ci, ni);
        let conn_starts = plan.starts(ci);
        let conn_stops = plan.stops(ci);
        let stopping_conn = obs.resources[ci].next_role == Some(Role::Stopped)
            || obs.resources[ci].target_role == Some(Role::Stopped);
        let after_start = |plan: &mut Plan| {
            for &s in &conn_starts {
                plan.edge_rel(s, i, Rel::Start);
            }
        };
        let before_stop = |plan: &mut Plan| {
            for &s in &conn_stops {
                plan.edge_rel(i, s, Rel::Stop);
            }
        };
        // A migration away from another remote node: its migrate_to and stop there come
        // before that node's connection stops, as a stop there would.
        if let Kind::Migrate { source, .. } = plan.actions[i].kind {
            let source_conn = obs.nodes[source]
                .remote
                .as_ref()
                .and_then(|rn| rn.connection)
                .filter(|&sc| sc != ri && sc != ci);
            if let Some(sc) = source_conn {
                let source_state = connection_state(obs, desired, sc, source);
                let stopping = obs.resources[sc].next_role == Some(Role::Stopped)
                    || obs.resources[sc].target_role == Some(Role::Stopped);
                if source_state == ConnectionState::Alive
                    || (source_state != ConnectionState::Failed && stopping)
                {
                    for s in plan.stops(sc) {
                        plan.edge_rel(i, s, Rel::SourceStop);
                    }
                }
            }
        }
        match plan.actions[i].kind {
            Kind::Start => {
                after_start(plan);
                stops_elsewhere_after(plan, &conn_starts, ri, ni);
            }
            Kind::Stop | Kind::Migrate { .. } => match state {
                ConnectionState::Alive => before_stop(plan),
                ConnectionState::Failed => {}
                _ if stopping_conn => before_stop(plan),
                _ => after_start(plan),
            },
            Kind::Monitor { .. } | Kind::StoppedMonitor { .. } => after_start(plan),
            // A clean-up there waits for the connection's start (runnable-left): with the
            // connection unrecoverable and no start, it cannot run.
            Kind::Delete if state == ConnectionState::Failed && conn_starts.is_empty() => {
                plan.actions[i].runnable = false;
            }
            _ => {
                let host = obs.resources[ci].running_on.first();
                if host.is_some() && state == ConnectionState::Stopped {
                    before_stop(plan);
                } else {
                    after_start(plan);
                }
            }
        }
    }
}

/// A resource moving to remote node `ni`: its stops elsewhere wait for the connection's
/// `conn_starts` (if the connection fails, the resource stays where it was).
pub(crate) fn stops_elsewhere_after(plan: &mut Plan, conn_starts: &[usize], ri: usize, ni: usize) {
    let stops_elsewhere: Vec<usize> = plan
        .stops(ri)
        .into_iter()
        .filter(|&j| plan.actions[j].node != Some(ni))
        .collect();
    for &s in conn_starts {
        for &j in &stops_elsewhere {
            plan.edge_rel(s, j, Rel::Optional);
        }
    }
}

/// The node a remote connection prefers when placed: the target of its partial migration.
pub fn preferred_target(obs: &Observed, members: &[usize]) -> Option<usize> {
    let &[ri] = members else {
        return None;
    };
    let r = &obs.resources[ri];
    r.remote_node?;
    r.partial_migration.map(|(_, target)| target)
}

/// A failed remote connection kept stopped until its failure expires (`reconnect_interval`):
/// the scheduler creates no start for it.
pub fn held_stopped(r: &crate::observed::Resource) -> bool {
    r.reset_remote && r.next_role == Some(Role::Stopped) && reconnect_interval_ms(r) > 0
}
