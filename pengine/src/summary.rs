//! The simulation summary as data (`--output-as json`): what `simulate -S` prints as text.
//!
//! Built from the same pipeline results the text renderers read (`Observed`, the transition
//! summary lines, the fired graph actions), then turned into one JSON document with serde_json.

use serde_json::{Value, json};

use crate::graph::{EventKind, Fired, SummaryLine, TransitionGraph};
use crate::observed::{Observed, Role, Top};
use crate::simulate::{Injection, OpSpec};

/// One node of a status block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeStatus {
    pub name: String,
    pub id: String,
    /// "member", "remote" (a Pacemaker Remote node) or "guest" (a guest node, such as a bundle
    /// replica's), as the node list tells them apart.
    pub kind: &'static str,
    /// As the node list prints it: "online", "OFFLINE", "standby", "UNCLEAN (offline)", ...
    pub status: String,
    /// "red", "yellow" or "green", from the `#health-*` attributes.
    pub health: &'static str,
}

/// One primitive of a status block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceStatus {
    pub id: String,
    /// `class:provider:type`.
    pub agent: String,
    pub group: Option<String>,
    /// For an anonymous clone instance: the clone's id (its `group` is then None).
    pub clone: Option<String>,
    /// For a bundle replica's line: the bundle's id (the line's `id` is then the replica's
    /// connection, or its container without one, and `agent` the inner resource's or the
    /// container's, as the text prints it).
    pub bundle: Option<String>,
    /// A bundle replica's address, which the text prints after its name.
    pub ipaddr: Option<String>,
    /// As the resource list prints it: "Started", "Stopped", "FAILED", "Migrating", ...
    pub state: String,
    /// Where it is active, by node name.
    pub nodes: Vec<String>,
    pub failed: bool,
    pub managed: bool,
    pub blocked: bool,
    pub orphan: bool,
}

/// A status block ("Current cluster status", "Revised Cluster Status").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterStatus {
    pub nodes: Vec<NodeStatus>,
    pub resources: Vec<ResourceStatus>,
}

/// One action of "Executing Cluster Transition".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutedAction {
    /// "resource", "pseudo", "fence" or "cluster".
    pub kind: &'static str,
    pub task: String,
    pub rsc: Option<String>,
    pub node: Option<String>,
    pub interval_ms: u64,
    /// The graph's operation key (pseudo actions are printed by it).
    pub key: String,
    /// Set when the action failed (`-F`): its rc.
    pub failed_rc: Option<i32>,
}

/// Everything `simulate -S` reports, as data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimulationSummary {
    pub execution_date: Option<String>,
    pub current: ClusterStatus,
    /// `-q -u -d -f -i`, in the order they were applied.
    pub injections: Vec<Injection>,
    /// The "Performing Requested Modifications" lines, as printed.
    pub modifications: Vec<String>,
    /// `-F`: actions made to fail when the transition runs.
    pub op_fail: Vec<OpSpec>,
    /// "Fence (ACTION)" lines, as printed.
    pub fencing: Vec<FenceLine>,
    pub transition: Vec<SummaryLine>,
    pub executed: Vec<ExecutedAction>,
    pub revised: ClusterStatus,
}

/// One "Fence (ACTION) NODE 'REASON'" line of the transition summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FenceLine {
    pub node: String,
    /// The fencing action: "reboot" ("off" for a guest whose container stays stopped), or
    /// "on" for an unfencing.
    pub action: String,
    /// Empty when the line gives none.
    pub reason: String,
    /// A guest node's container, whose recovery "fences" it ("(resource: ID)").
    pub resource: Option<String>,
}

impl std::fmt::Display for FenceLine {
    /// The line as the text summary prints it (after its "  * ").
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fence ({}) {}", self.action, self.node)?;
        if let Some(resource) = &self.resource {
            write!(f, " (resource: {resource})")?;
        }
        if !self.reason.is_empty() {
            write!(f, " '{}'", self.reason)?;
        }
        Ok(())
    }
}

fn resource_state(r: &crate::observed::Resource, show_pending: bool) -> String {
    if r.failed {
        return "FAILED".into();
    }
    let pending = r
        .pending_task
        .as_ref()
        .filter(|_| show_pending)
        .and_then(|(t, _)| crate::status::pending_state(t));
    let role = if r.role == Role::Unknown {
        Role::Stopped
    } else {
        r.role
    };
    pending.unwrap_or(role.text()).to_string()
}

/// The status block of `obs`: nodes in name order, primitives in the order they are listed
/// (`show_pending` as for `status::primitive_line_with`).
pub fn cluster_status(obs: &Observed, show_pending: bool) -> ClusterStatus {
    let nodes = obs
        .nodes
        .iter()
        .enumerate()
        // (An offline guest node is not listed, as in the text, unless with its status.)
        .filter(|&(ni, n)| {
            n.online || !crate::guest::is_guest(obs, ni) || crate::status::listed_with_status(n)
        })
        .map(|(ni, n)| NodeStatus {
            name: n.uname.clone(),
            id: n.id.clone(),
            kind: if crate::guest::is_guest(obs, ni) {
                "guest"
            } else if n.remote.is_some() {
                "remote"
            } else {
                "member"
            },
            status: crate::status::node_text_status(obs, ni),
            health: match n.health {
                h if h < 0 => "red",
                0 => "yellow",
                _ => "green",
            },
        })
        .collect();
    let mut listed = Vec::new();
    let mut resources = Vec::new();
    for t in &obs.top {
        // (a bundle is listed once, where its containers' clone is, one line per replica)
        if let Some((bi, first)) = crate::bundles::bundle_of(obs, *t) {
            if first {
                resources.extend(
                    std::mem::take(&mut listed).into_iter().map(|ri| {
                        primitive_status(obs, &obs.resources[ri], Some(ri), show_pending)
                    }),
                );
                let b = &obs.bundles[bi];
                for (n, replica) in b.replicas.iter().enumerate() {
                    let shown = crate::bundles::replica_shown(obs, bi, n);
                    let mut st = primitive_status(obs, &shown, None, show_pending);
                    st.bundle = Some(b.id.clone());
                    st.ipaddr = replica.ipaddr.clone();
                    resources.push(st);
                }
            }
            continue;
        }
        match *t {
            Top::Primitive(ri) => {
                let r = &obs.resources[ri];
                if !(crate::guest::is_internal(r) || (r.orphan && r.running_on.is_empty())) {
                    listed.push(ri);
                }
            }
            Top::Group(gi) => listed.extend(obs.groups[gi].members.iter().copied()),
        }
    }
    resources.extend(
        listed
            .into_iter()
            .map(|ri| primitive_status(obs, &obs.resources[ri], Some(ri), show_pending)),
    );
    ClusterStatus { nodes, resources }
}

/// One listed primitive (`ri` its index; None for a bundle replica's line).
fn primitive_status(
    obs: &Observed,
    r: &crate::observed::Resource,
    ri: Option<usize>,
    show_pending: bool,
) -> ResourceStatus {
    ResourceStatus {
        id: r.id.clone(),
        agent: r.agent(),
        group: r
            .group
            .filter(|&gi| ri.is_some() && obs.groups[gi].clone.is_none())
            .map(|gi| obs.groups[gi].id.clone()),
        // (a member of a clone of a group: its group is the instance, `group:N`)
        clone: ri
            .and_then(|ri| crate::clone_groups::clone_of(obs, ri))
            .map(|gi| obs.groups[gi].id.clone()),
        bundle: None,
        ipaddr: None,
        state: resource_state(r, show_pending),
        nodes: r
            .running_on
            .iter()
            .map(|&ni| obs.nodes[ni].uname.clone())
            .collect(),
        failed: r.failed,
        managed: r.managed,
        blocked: r.blocked,
        orphan: r.orphan,
    }
}

/// The executed actions, in firing order.
pub fn executed_actions(
    obs: &Observed,
    g: &TransitionGraph,
    fired: &[Fired],
) -> Vec<ExecutedAction> {
    fired
        .iter()
        .map(|f| {
            let ga = &g.actions[f.action];
            ExecutedAction {
                kind: match ga.event {
                    EventKind::RscOp => "resource",
                    EventKind::Pseudo | EventKind::GuestFence { .. } => "pseudo",
                    EventKind::Fence => "fence",
                    EventKind::Unfence => "unfence",
                    EventKind::Cluster => "cluster",
                },
                task: ga.task.clone(),
                // (a cluster action names an anonymous clone instance by its primitive, as
                // the text does)
                rsc: ga.rsc.map(|ri| match ga.event {
                    EventKind::Cluster => obs.resources[ri].history_id().to_string(),
                    _ => crate::clones::simulated_name(obs, ri).to_string(),
                }),
                node: ga.node.map(|ni| obs.nodes[ni].uname.clone()),
                interval_ms: ga.interval_ms,
                key: ga.key.clone(),
                failed_rc: f.failed_rc(g),
            }
        })
        .collect()
}

fn status_json(s: &ClusterStatus) -> Value {
    json!({
        "nodes": s.nodes.iter().map(|n| json!({
            "name": n.name,
            "id": n.id,
            "type": n.kind,
            "status": n.status,
            "health": n.health,
        })).collect::<Vec<_>>(),
        "resources": s.resources.iter().map(|r| json!({
            "id": r.id,
            "agent": r.agent,
            "group": r.group,
            "clone": r.clone,
            "bundle": r.bundle,
            "ipaddr": r.ipaddr,
            "state": r.state,
            "nodes": r.nodes,
            "failed": r.failed,
            "managed": r.managed,
            "blocked": r.blocked,
            "orphan": r.orphan,
        })).collect::<Vec<_>>(),
    })
}

fn op_spec_json(s: &OpSpec) -> Value {
    json!({
        "rsc": s.rsc,
        "task": s.task,
        "interval_ms": s.interval_ms,
        "node": s.node,
        "rc": s.rc,
    })
}

fn injection_json(i: &Injection) -> Value {
    match i {
        Injection::Quorum { quorum, .. } => json!({ "kind": "quorum", "quorum": quorum }),
        Injection::NodeUp(n) => json!({ "kind": "node-up", "node": n }),
        Injection::NodeDown(n) => json!({ "kind": "node-down", "node": n }),
        Injection::NodeFail(n) => json!({ "kind": "node-fail", "node": n }),
        Injection::Ticket { change, ticket } => json!({ "kind": change.name(), "ticket": ticket }),
        Injection::Op(s) => {
            let mut v = op_spec_json(s);
            if let Some(o) = v.as_object_mut() {
                o.insert("kind".into(), json!("op"));
            }
            v
        }
    }
}

impl SimulationSummary {
    /// The JSON document `pengine simulate -S --output-as json` prints.
    pub fn to_json(&self) -> Value {
        json!({
            "execution_date": self.execution_date,
            "current": status_json(&self.current),
            "injections": self.injections.iter().map(injection_json).collect::<Vec<_>>(),
            "modifications": self.modifications,
            "op_fail": self.op_fail.iter().map(op_spec_json).collect::<Vec<_>>(),
            "transition": {
                "fencing": self.fencing.iter().map(|f| json!({
                    "node": f.node,
                    "action": f.action,
                    "reason": f.reason,
                    "resource": f.resource,
                })).collect::<Vec<_>>(),
                "actions": self.transition.iter().map(|l| json!({
                    "verb": l.verb,
                    "rsc": l.rsc,
                    "details": l.details,
                    "reason": l.reason,
                })).collect::<Vec<_>>(),
            },
            "executed": self.executed.iter().map(|a| json!({
                "kind": a.kind,
                "task": a.task,
                "rsc": a.rsc,
                "node": a.node,
                "interval_ms": a.interval_ms,
                "key": a.key,
                "failed_rc": a.failed_rc,
            })).collect::<Vec<_>>(),
            "revised": status_json(&self.revised),
        })
    }
}

/// The fencing lines of the transition summary, as printed (latest decision first): guests'
/// pseudo fencing (created last), the fencing of nodes, then unfencing (created before the
/// fencing of unclean nodes). The text summary prints these too (`graph::render_summary`).
pub fn fencing_lines(obs: &Observed, rec: &crate::reconcile::Reconciliation) -> Vec<FenceLine> {
    let line = |ni: usize, action: &str, reason: Option<&String>| FenceLine {
        node: obs.nodes[ni].uname.clone(),
        action: action.into(),
        reason: reason.cloned().unwrap_or_default(),
        resource: None,
    };
    let guests = rec.guest_fence.iter().rev().map(|gf| FenceLine {
        node: obs.nodes[gf.node].uname.clone(),
        action: if gf.off { "off" } else { "reboot" }.into(),
        reason: "guest is unclean".into(),
        resource: Some(obs.resources[gf.container].id.clone()),
    });
    // (newest first, in the order Pacemaker created them: `actions::fencing_creation_order`)
    let fencing = crate::actions::fencing_creation_order(obs, &rec.fence)
        .into_iter()
        .rev()
        .map(|k| &rec.fence[k])
        .map(|(ni, reason)| line(*ni, "reboot", Some(reason)));
    let fencing = guests.chain(fencing);
    let unfencing = rec
        .unfence
        .iter()
        .rev()
        .map(|u| line(u.node, "on", u.reason.as_ref()));
    fencing.chain(unfencing).collect()
}
