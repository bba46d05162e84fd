//! Applies a transition graph with default-success results to the CIB status, as crm_simulate does.

use crate::cib::{Cib, Element, LrmResource, NodeState, RscOp};
use crate::graph::{EventKind, TransitionGraph};
use crate::observed::Observed;

pub(crate) fn node_state<'a>(cib: &'a mut Cib, id: &str, uname: &str) -> &'a mut NodeState {
    let pos = cib
        .status
        .iter()
        .position(|s| s.id == id || s.uname == uname);
    let pos = match pos {
        Some(p) => p,
        None => {
            cib.status.push(NodeState {
                id: id.to_string(),
                uname: uname.to_string(),
                in_ccm: Some("true".into()),
                crmd: Some("online".into()),
                join: Some("member".into()),
                expected: Some("member".into()),
                has_lrm: true,
                ..Default::default()
            });
            cib.status.len() - 1
        }
    };
    &mut cib.status[pos]
}

/// Returns the CIB after every fired action succeeded with its expected result.
pub fn apply(cib: &Cib, obs: &Observed, g: &TransitionGraph, fired: &[usize]) -> Cib {
    apply_with(cib, obs, g, fired, |ga| Outcome::Rc(ga.expected_rc)).0
}

/// What executing one graph action returned, as decided by the caller (the scenario runner).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The action ran and returned this OCF code (fencing: 0 is success).
    Rc(i32),
    /// The action could not complete yet (fencing waiting for a watchdog); nothing is recorded.
    Pending,
}

/// One fired action and its outcome, in execution order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Executed {
    pub action: usize,
    pub outcome: Outcome,
}

/// Applies fired actions with the results `outcome_of` gives, recording each as [`apply`] does.
/// The first result other than the expected one aborts the transition, as the controller does:
/// it is recorded, and no later action is initiated.
pub fn apply_with(
    cib: &Cib,
    obs: &Observed,
    g: &TransitionGraph,
    fired: &[usize],
    mut outcome_of: impl FnMut(&crate::graph::GraphAction) -> Outcome,
) -> (Cib, Vec<Executed>) {
    let mut next = cib.clone();
    let mut executed = Vec::new();
    for &a in fired {
        let ga = &g.actions[a];
        let outcome = match ga.event {
            EventKind::Fence | EventKind::RscOp => outcome_of(ga),
            EventKind::Cluster | EventKind::Pseudo => Outcome::Rc(ga.expected_rc),
        };
        executed.push(Executed { action: a, outcome });
        let rc = match outcome {
            Outcome::Pending => break,
            Outcome::Rc(rc) => rc,
        };
        if ga.event == EventKind::Fence && rc != 0 {
            break;
        }
        match ga.event {
            EventKind::Fence => {
                let Some(ni) = ga.node else { continue };
                let n = &obs.nodes[ni];
                let st = node_state(&mut next, &n.id, &n.uname);
                st.in_ccm = Some("false".into());
                st.crmd = Some("offline".into());
                st.join = Some("down".into());
                st.expected = Some("down".into());
                st.lrm.clear();
                st.attrs.clear();
            }
            EventKind::RscOp => {
                let (Some(ri), Some(ni)) = (ga.rsc, ga.node) else {
                    continue;
                };
                let r = &obs.resources[ri];
                let n = &obs.nodes[ni];
                let migrate = ga
                    .migrate
                    .map(|(s, t)| (obs.nodes[s].uname.clone(), obs.nodes[t].uname.clone()));
                let op = OpResult {
                    task: &ga.task,
                    interval_ms: ga.interval_ms,
                    expected_rc: ga.expected_rc,
                    rc,
                    migrate,
                    now: obs.now,
                };
                record_op(&mut next, (&n.id, &n.uname), r, &op);
                if ga.task != "cancel" && rc != ga.expected_rc {
                    break;
                }
            }
            // crm_simulate does not change the node for cluster actions (do_shutdown).
            EventKind::Cluster => {}
            EventKind::Pseudo => {}
        }
    }
    (next, executed)
}

/// One operation result to record in a resource's history.
#[derive(Debug, Clone)]
pub struct OpResult<'a> {
    pub task: &'a str,
    pub interval_ms: u64,
    /// The result the transition expected (kept in the transition key, as the controller does).
    pub expected_rc: i32,
    pub rc: i32,
    /// For migrate_to/migrate_from: (source, target) node names.
    pub migrate: Option<(String, String)>,
    pub now: i64,
}

/// Records an operation result in `rsc`'s history on node `(id, uname)`: a cancel removes the
/// recurring monitor; a new non-recurring result replaces the last one; a stop drops monitors.
pub fn record_op(
    cib: &mut Cib,
    node: (&str, &str),
    rsc: &crate::observed::Resource,
    op: &OpResult,
) {
    let st = node_state(cib, node.0, node.1);
    let lrm = match st.lrm.iter().position(|l| l.id == rsc.id) {
        Some(p) => &mut st.lrm[p],
        None => {
            st.lrm.push(LrmResource {
                id: rsc.id.clone(),
                class: rsc.class.clone(),
                provider: rsc.provider.clone(),
                kind: rsc.kind.clone(),
                ops: Vec::new(),
            });
            let l = st.lrm.len() - 1;
            &mut st.lrm[l]
        }
    };
    if op.task == "cancel" {
        lrm.ops
            .retain(|o| !(o.operation == "monitor" && o.interval_ms == op.interval_ms));
        return;
    }
    let call_id = lrm.ops.iter().map(|o| o.call_id).max().unwrap_or(0).max(0) + 1;
    let (source, target) = match &op.migrate {
        Some((s, t)) => (Some(s.clone()), Some(t.clone())),
        None => (None, None),
    };
    let record = RscOp {
        id: format!("{}_{}_{}", rsc.id, op.task, op.interval_ms),
        operation: op.task.to_string(),
        call_id,
        rc_code: op.rc,
        op_status: 0,
        interval_ms: op.interval_ms,
        transition_key: Some(format!(
            "0:0:{}:00000000-0000-0000-0000-000000000000",
            op.expected_rc
        )),
        last_rc_change: Some(op.now),
        migrate_source: source,
        migrate_target: target,
        exit_reason: None,
        element: Element::default(),
    };
    if op.interval_ms == 0 {
        // a new non-recurring result replaces the last one
        lrm.ops.retain(|o| {
            o.interval_ms != 0
                || (o.operation == "migrate_to" || o.operation == "migrate_from")
                    && op.task != "stop"
        });
    } else {
        lrm.ops
            .retain(|o| !(o.operation == op.task && o.interval_ms == op.interval_ms));
    }
    if op.task == "stop" {
        lrm.ops.retain(|o| o.interval_ms == 0);
    }
    lrm.ops.push(record);
}
