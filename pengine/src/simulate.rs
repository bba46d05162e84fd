//! Applies a transition graph with default-success results to the CIB status, as crm_simulate does.

use crate::cib::{Cib, Element, LrmResource, NodeState, RscOp};
use crate::graph::{EventKind, TransitionGraph};
use crate::observed::Observed;

fn node_state<'a>(cib: &'a mut Cib, id: &str, uname: &str) -> &'a mut NodeState {
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
    let mut next = cib.clone();
    for &a in fired {
        let ga = &g.actions[a];
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
                let rc = ga.expected_rc;
                let st = node_state(&mut next, &n.id, &n.uname);
                let lrm = match st.lrm.iter().position(|l| l.id == r.id) {
                    Some(p) => &mut st.lrm[p],
                    None => {
                        st.lrm.push(LrmResource {
                            id: r.id.clone(),
                            class: r.class.clone(),
                            provider: r.provider.clone(),
                            kind: r.kind.clone(),
                            ops: Vec::new(),
                        });
                        let l = st.lrm.len() - 1;
                        &mut st.lrm[l]
                    }
                };
                if ga.task == "cancel" {
                    lrm.ops
                        .retain(|o| !(o.operation == "monitor" && o.interval_ms == ga.interval_ms));
                    continue;
                }
                let call_id = lrm.ops.iter().map(|o| o.call_id).max().unwrap_or(0).max(0) + 1;
                let (source, target) = match ga.migrate {
                    Some((s, t)) => (
                        Some(obs.nodes[s].uname.clone()),
                        Some(obs.nodes[t].uname.clone()),
                    ),
                    None => (None, None),
                };
                let op = RscOp {
                    id: format!("{}_{}_{}", r.id, ga.task, ga.interval_ms),
                    operation: ga.task.clone(),
                    call_id,
                    rc_code: rc,
                    op_status: 0,
                    interval_ms: ga.interval_ms,
                    transition_key: Some(format!("0:0:{rc}:00000000-0000-0000-0000-000000000000")),
                    last_rc_change: Some(obs.now),
                    migrate_source: source,
                    migrate_target: target,
                    exit_reason: None,
                    element: Element::default(),
                };
                if ga.interval_ms == 0 {
                    lrm.ops.retain(|o| {
                        o.interval_ms != 0
                            || (o.operation == "migrate_to" || o.operation == "migrate_from")
                                && ga.task != "stop"
                    });
                    // a new non-recurring result replaces the last one
                } else {
                    lrm.ops
                        .retain(|o| !(o.operation == ga.task && o.interval_ms == ga.interval_ms));
                }
                if ga.task == "stop" {
                    lrm.ops.retain(|o| o.interval_ms == 0);
                }
                lrm.ops.push(op);
            }
            // crm_simulate does not change the node for cluster actions (do_shutdown).
            EventKind::Cluster => {}
            EventKind::Pseudo => {}
        }
    }
    next
}
