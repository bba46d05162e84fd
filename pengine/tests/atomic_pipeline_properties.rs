//! Property test of the whole pipeline on random small clusters whose VM (`atomic` by default) has
//! a random migration history: no start while it may run somewhere unprobed, never two stops of
//! copies that may both run, every transition graph acyclic, and the fencing of a migration's
//! source that holds the only record of the move waits for a newer record on the target.
//!
//! The histories are random walks of migrations with random outcomes (success, failure, pending,
//! timeout, failed or missing migrate_from), over nodes that are online, lost or in standby. A
//! second generator ends every walk with a migrate_to whose target has recorded nothing since,
//! fences its source (lost, or another resource's stop failed there) and wants the VM elsewhere
//! (issue 6; cts-sim seeds 40045 and 1796061061167805). The oracle reads the generated history
//! directly, not the model under test.

use std::collections::BTreeMap;

use pengine::unstable::{EventKind, TransitionGraph};
use proptest::prelude::*;

const T0: i64 = 1_764_489_600;
const UUID: &str = "6f1d2c3a-4b5e-4f60-8a71-92b3c4d5e6f7";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Presence {
    Online,
    Lost,
    Standby,
}

#[derive(Debug, Clone)]
struct Rec {
    operation: &'static str,
    call_id: i64,
    rc: i32,
    status: i32,
    time: i64,
    source: Option<usize>,
    target: Option<usize>,
}

#[derive(Debug, Clone)]
struct Case {
    presence: Vec<Presence>,
    /// Per node: entry id -> record (later entries overwrite, as the controller does).
    history: Vec<BTreeMap<String, Rec>>,
    preference: Option<(usize, bool)>,
    /// A node where another resource (`blocker`) failed to stop: the cluster fences it.
    failed_stop_on: Option<usize>,
}

/// One migration attempt: target offset, migrate_to outcome, migrate_from outcome, source stop.
type Step = (usize, u8, u8, bool);

fn build(presence: Vec<Presence>, steps: &[Step], preference: Option<(usize, bool)>) -> Case {
    let n = presence.len();
    let mut history: Vec<BTreeMap<String, Rec>> = vec![BTreeMap::new(); n];
    let mut calls = vec![2i64; n];
    let mut time = T0;
    let mut put = |history: &mut Vec<BTreeMap<String, Rec>>,
                   node: usize,
                   id: &str,
                   operation: &'static str,
                   rc: i32,
                   status: i32,
                   mig: Option<(usize, usize)>| {
        time += 10;
        let call_id = if status == -1 {
            -1
        } else {
            calls[node] += 1;
            calls[node]
        };
        history[node].insert(
            id.to_string(),
            Rec {
                operation,
                call_id,
                rc,
                status,
                time,
                source: mig.map(|m| m.0),
                target: mig.map(|m| m.1),
            },
        );
    };
    for node in 0..n {
        put(&mut history, node, "vm1_last_0", "monitor", 7, 0, None);
    }
    put(&mut history, 0, "vm1_last_0", "start", 0, 0, None);
    let mut current = 0;
    for &(offset, to, from, stop) in steps {
        let target = (current + 1 + offset % (n - 1)) % n;
        let mig = Some((current, target));
        let (rc, status) = match to % 4 {
            0 => (0, 0),
            1 => (1, 0),
            2 => (193, -1),
            _ => (1, 2),
        };
        put(
            &mut history,
            current,
            "vm1_migrate_to_0",
            "migrate_to",
            rc,
            status,
            mig,
        );
        if (rc, status) != (0, 0) {
            if rc == 1 && status == 0 {
                continue; // the agent answered: the VM stays on the source; try again
            }
            break; // pending or unanswered: the history ends here
        }
        match from % 3 {
            0 => break, // interrupted before migrate_from
            1 => put(
                &mut history,
                target,
                "vm1_migrate_from_0",
                "migrate_from",
                0,
                0,
                mig,
            ),
            _ => {
                put(
                    &mut history,
                    target,
                    "vm1_migrate_from_0",
                    "migrate_from",
                    1,
                    0,
                    mig,
                );
                break;
            }
        }
        if stop {
            put(&mut history, current, "vm1_last_0", "stop", 0, 0, None);
        } else {
            break; // dangling: the source stop never ran
        }
        current = target;
    }
    Case {
        presence,
        history,
        preference,
        failed_stop_on: None,
    }
}

fn op_xml(id: &str, r: &Rec, names: &[String]) -> String {
    let mig = match (r.source, r.target) {
        (Some(s), Some(t)) => format!(
            " migrate_source=\"{}\" migrate_target=\"{}\"",
            names[s], names[t]
        ),
        _ => String::new(),
    };
    let expected = if r.operation == "monitor" { 7 } else { 0 };
    format!(
        "<lrm_rsc_op id=\"{id}\" operation_key=\"vm1_{op}_0\" operation=\"{op}\" crm-debug-origin=\"do_update_resource\" crm_feature_set=\"3.16.1\" transition-key=\"3:1:{expected}:{UUID}\" transition-magic=\"{st}:{rc};3:1:{expected}:{UUID}\" exit-reason=\"\" call-id=\"{call}\" rc-code=\"{rc}\" op-status=\"{st}\" interval=\"0\" last-rc-change=\"{t}\" exec-time=\"10\" queue-time=\"0\" op-digest=\"e748feb6ee03765dad10f7e048d65b53\"{mig}/>",
        op = r.operation,
        st = r.status,
        rc = r.rc,
        call = r.call_id,
        t = r.time,
    )
}

fn cib_xml(case: &Case, model: Option<&str>) -> String {
    let n = case.presence.len();
    let names: Vec<String> = (1..=n).map(|i| format!("node{i}")).collect();
    let mut nodes = String::new();
    for (i, name) in names.iter().enumerate() {
        if case.presence[i] == Presence::Standby {
            nodes.push_str(&format!(
                "<node id=\"{}\" uname=\"{name}\"><instance_attributes id=\"{name}-a\"><nvpair id=\"{name}-a-standby\" name=\"standby\" value=\"on\"/></instance_attributes></node>",
                i + 1
            ));
        } else {
            nodes.push_str(&format!("<node id=\"{}\" uname=\"{name}\"/>", i + 1));
        }
    }
    let constraint = match case.preference {
        None => String::new(),
        Some((node, prefer)) => format!(
            "<rsc_location id=\"pref\" rsc=\"vm1\" node=\"{}\" score=\"{}\"/>",
            names[node % n],
            if prefer { "INFINITY" } else { "-INFINITY" }
        ),
    };
    let mut status = String::new();
    for (i, name) in names.iter().enumerate() {
        let state = if case.presence[i] == Presence::Lost {
            "in_ccm=\"false\" crmd=\"offline\" join=\"down\" expected=\"member\""
        } else {
            "in_ccm=\"true\" crmd=\"online\" join=\"member\" expected=\"member\""
        };
        let ops: String = case.history[i]
            .iter()
            .map(|(id, r)| op_xml(id, r, &names))
            .collect();
        let blocker = if case.failed_stop_on.is_some() {
            let (op, rc) = if case.failed_stop_on == Some(i) {
                ("stop", 1)
            } else {
                ("monitor", 7)
            };
            format!(
                "<lrm_resource id=\"blocker\" class=\"ocf\" provider=\"pacemaker\" type=\"Dummy\"><lrm_rsc_op id=\"blocker_last_0\" operation_key=\"blocker_{op}_0\" operation=\"{op}\" crm-debug-origin=\"do_update_resource\" crm_feature_set=\"3.16.1\" transition-key=\"4:1:0:{UUID}\" transition-magic=\"0:{rc};4:1:0:{UUID}\" exit-reason=\"\" call-id=\"1\" rc-code=\"{rc}\" op-status=\"0\" interval=\"0\" last-rc-change=\"{T0}\" exec-time=\"10\" queue-time=\"0\" op-digest=\"f2317cad3d54cec5d7d7aa7d0bf35cf8\"/></lrm_resource>"
            )
        } else {
            String::new()
        };
        status.push_str(&format!(
            "<node_state id=\"{}\" uname=\"{name}\" {state} crm-debug-origin=\"do_update_resource\"><lrm id=\"{}\"><lrm_resources><lrm_resource id=\"vm1\" class=\"ocf\" provider=\"highlander\" type=\"VirtualDomain\">{ops}</lrm_resource>{blocker}</lrm_resources></lrm></node_state>",
            i + 1,
            i + 1
        ));
    }
    let model = model
        .map(|m| format!("<nvpair id=\"rd-m\" name=\"migration-model\" value=\"{m}\"/>"))
        .unwrap_or_default();
    let blocker = if case.failed_stop_on.is_some() {
        "<primitive id=\"blocker\" class=\"ocf\" provider=\"pacemaker\" type=\"Dummy\"/>"
    } else {
        ""
    };
    // The DC runs the scheduler: it is a member, never a lost node (the DC is fenced last, which a
    // lost DC would turn into orderings no real cluster plans).
    let dc = match case.presence.iter().position(|&p| p != Presence::Lost) {
        Some(i) => format!(" dc-uuid=\"{}\"", i + 1),
        None => String::new(),
    };
    format!(
        "<cib epoch=\"1\" num_updates=\"1\" admin_epoch=\"0\" validate-with=\"pacemaker-3.7\" crm_feature_set=\"3.16.1\" have-quorum=\"1\"{dc}><configuration><crm_config><cluster_property_set id=\"o\"><nvpair id=\"o-se\" name=\"stonith-enabled\" value=\"true\"/></cluster_property_set></crm_config><nodes>{nodes}</nodes><resources><primitive id=\"fencing\" class=\"stonith\" type=\"fence_xvm\"/><primitive id=\"vm1\" class=\"ocf\" provider=\"highlander\" type=\"VirtualDomain\"><instance_attributes id=\"vm1-p\"><nvpair id=\"vm1-p-config\" name=\"config\" value=\"/etc/libvirt/qemu/vm1.xml\"/></instance_attributes><meta_attributes id=\"vm1-m\"><nvpair id=\"vm1-m-am\" name=\"allow-migrate\" value=\"true\"/></meta_attributes></primitive>{blocker}</resources><constraints>{constraint}</constraints><rsc_defaults><meta_attributes id=\"rd\"><nvpair id=\"rd-s\" name=\"resource-stickiness\" value=\"1\"/>{model}</meta_attributes></rsc_defaults></configuration><status>{status}</status></cib>"
    )
}

fn key(r: &Rec) -> i64 {
    if r.call_id < 0 { i64::MAX } else { r.call_id }
}

/// May the VM run on `node`? True unless the generated history proves it does not.
fn possibly_running(case: &Case, node: usize) -> bool {
    let ops: Vec<&Rec> = case.history[node].values().collect();
    let by_own = ops.iter().max_by_key(|r| key(r)).is_some_and(|r| {
        !matches!(
            (r.operation, r.rc, r.status),
            ("stop", 0, 0) | (_, 7, 0) | ("migrate_to", 0, 0)
        )
    });
    let newest_here = ops.iter().map(|r| r.time).max();
    let by_migration = case.history.iter().enumerate().any(|(s, h)| {
        s != node
            && h.values().any(|r| {
                r.operation == "migrate_to"
                    && r.source == Some(s)
                    && r.target == Some(node)
                    && !(r.rc == 1 && r.status == 0)
                    && newest_here.is_none_or(|t| t <= r.time)
            })
    });
    by_own || by_migration
}

/// The last migration `(source, target)` when the source's record is the only trace of the move:
/// its migrate_to did not fail with an answer (success, pending or unanswered) and the target has
/// recorded nothing since. Fencing the source erases that record.
fn fragile_migration(case: &Case) -> Option<(usize, usize)> {
    let (source, last) = case
        .history
        .iter()
        .enumerate()
        .flat_map(|(n, h)| h.values().map(move |r| (n, r)))
        .filter(|(n, r)| r.operation == "migrate_to" && r.source == Some(*n))
        .max_by_key(|(_, r)| r.time)?;
    let target = last.target?;
    let failed = last.rc == 1 && last.status == 0;
    let target_since = case.history[target].values().any(|r| r.time > last.time);
    (!failed && !target_since).then_some((source, target))
}

fn before(g: &TransitionGraph, then: usize) -> Vec<usize> {
    let mut seen = vec![false; g.actions.len()];
    let mut stack = vec![then];
    while let Some(x) = stack.pop() {
        for &(a, b) in &g.edges {
            if b == x && !seen[a] {
                seen[a] = true;
                stack.push(a);
            }
        }
    }
    (0..g.actions.len()).filter(|&i| seen[i]).collect()
}

fn acyclic(g: &TransitionGraph) -> bool {
    let n = g.actions.len();
    let mut indegree = vec![0usize; n];
    for &(_, b) in &g.edges {
        indegree[b] += 1;
    }
    let mut ready: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut done = 0;
    while let Some(x) = ready.pop() {
        done += 1;
        for &(a, b) in &g.edges {
            if a == x {
                indegree[b] -= 1;
                if indegree[b] == 0 {
                    ready.push(b);
                }
            }
        }
    }
    done == n
}

/// The fencing of a fragile source (see [`fragile_migration`]) erases the only record of the move,
/// and the transition may end right after it. So (a) a newer record of where the VM is must be
/// written before it: an action of vm1 on the target that records an answer there (migrate_from,
/// a migrate_to from the target, a probe, a stop) or the target's own fencing; and (b) when the
/// plan moves the VM on from the target (a migrate_to or a stop there), every such action on the
/// target runs before that fencing: an onward move after it raced the erasure (cts-sim seeds 40045
/// and 1796061061167805 started the VM a second time).
fn fragile_source_violations(
    t: &pengine::unstable::Transition,
    vm: usize,
    source: usize,
    target: usize,
) -> Vec<String> {
    let g = &t.graph;
    let node_of = |i: usize| {
        t.observed
            .nodes
            .iter()
            .position(|n| n.uname == format!("node{}", i + 1))
    };
    let (Some(source), Some(target)) = (node_of(source), node_of(target)) else {
        return vec!["generated nodes missing".into()];
    };
    let names = |n: usize| t.observed.nodes[n].uname.clone();
    let records_on_target = |i: usize| {
        let a = &g.actions[i];
        a.rsc == Some(vm)
            && a.event == EventKind::RscOp
            && a.interval_ms == 0
            && a.node == Some(target)
            && matches!(
                a.task.as_str(),
                "monitor" | "stop" | "migrate_from" | "migrate_to"
            )
    };
    let fences = |n: usize| {
        (0..g.actions.len())
            .filter(move |&i| g.actions[i].task == "stonith" && g.actions[i].node == Some(n))
    };
    let onward = (0..g.actions.len()).any(|i| {
        records_on_target(i) && matches!(g.actions[i].task.as_str(), "migrate_to" | "stop")
    });
    let mut out = Vec::new();
    for f in fences(source) {
        let firsts = before(g, f);
        let recorded = firsts
            .iter()
            .any(|&b| records_on_target(b) || fences(target).any(|x| x == b));
        if !recorded {
            out.push(format!(
                "{} fenced (erasing the only record of vm1's move to {}) before anything records it there",
                names(source),
                names(target)
            ));
        }
        if onward {
            for i in (0..g.actions.len()).filter(|&i| records_on_target(i)) {
                if !firsts.contains(&i) {
                    out.push(format!(
                        "vm1 moves on from {}: {} is not ordered before the fencing of {}",
                        names(target),
                        g.actions[i].key,
                        names(source)
                    ));
                }
            }
        }
    }
    out
}

fn arb_case() -> impl Strategy<Value = Case> {
    (2usize..=3)
        .prop_flat_map(|n| {
            (
                prop::collection::vec(
                    prop_oneof![
                        6 => Just(Presence::Online),
                        2 => Just(Presence::Lost),
                        1 => Just(Presence::Standby),
                    ],
                    n,
                ),
                prop::collection::vec((0usize..2, 0u8..4, 0u8..3, any::<bool>()), 0..4),
                prop::option::of((0usize..3, any::<bool>())),
            )
        })
        .prop_map(|(presence, steps, preference)| build(presence, &steps, preference))
}

/// A walk of completed migrations ending with a migrate_to (successful, pending or timed out) that
/// the target has not answered yet; its source must be fenced in this transition (lost, or
/// `blocker` failed to stop there), and placement wants the VM off the target: banned there,
/// preferred on another node, or the target in standby.
fn arb_fenced_source_case() -> impl Strategy<Value = Case> {
    (2usize..=4)
        .prop_flat_map(|n| {
            (
                prop::collection::vec(0usize..3, 0..3),
                0usize..3,
                prop_oneof![3 => Just(0u8), 1 => Just(2u8), 1 => Just(3u8)],
                any::<bool>(),
                0u8..3,
                0usize..4,
                prop::collection::vec(
                    prop_oneof![
                        6 => Just(Presence::Online),
                        1 => Just(Presence::Lost),
                        1 => Just(Presence::Standby),
                    ],
                    n,
                ),
            )
        })
        .prop_map(|(prefix, last, outcome, lost, elsewhere, pick, others)| {
            let n = others.len();
            let mut steps: Vec<Step> = prefix.iter().map(|&o| (o, 0, 1, true)).collect();
            steps.push((last, outcome, 0, false));
            let mut case = build(vec![Presence::Online; n], &steps, None);
            let Some((source, target)) = fragile_migration(&case) else {
                return case;
            };
            case.presence = others;
            case.presence[target] = if elsewhere == 2 {
                Presence::Standby
            } else {
                Presence::Online
            };
            if lost {
                case.presence[source] = Presence::Lost;
            } else {
                case.presence[source] = Presence::Online;
                case.failed_stop_on = Some(source);
            }
            case.preference = match elsewhere {
                0 => Some((target, false)),
                1 => {
                    let away: Vec<usize> = (0..n).filter(|&i| i != target).collect();
                    away.get(pick % away.len().max(1)).map(|&u| (u, true))
                }
                _ => None,
            };
            case
        })
}

/// What the plan for `case` breaks (empty: nothing).
fn violations(case: &Case, model: Option<&str>) -> Vec<String> {
    let xml = cib_xml(case, model);
    let Ok(cib) = pengine::parse_cib(&xml) else {
        return vec![format!("generated CIB does not parse: {xml}")];
    };
    let t = pengine::unstable::schedule(&cib, T0 + 10_000);
    let g = &t.graph;
    let mut out = Vec::new();
    if !acyclic(g) {
        out.push("cyclic graph".to_string());
    }
    let Some(vm) = t.observed.resources.iter().position(|r| r.id == "vm1") else {
        return vec!["vm1 missing".into()];
    };
    let node_of = |name: &str| t.observed.nodes.iter().position(|n| n.uname == name);
    let possible: Vec<usize> = (0..case.presence.len())
        .filter(|&i| possibly_running(case, i))
        .filter_map(|i| node_of(&format!("node{}", i + 1)))
        .collect();
    let real = |i: usize| g.actions[i].event == EventKind::RscOp;
    for i in 0..g.actions.len() {
        let a = &g.actions[i];
        if a.rsc != Some(vm) || a.task != "start" || !real(i) {
            continue;
        }
        let firsts = before(g, i);
        for &p in &possible {
            let settled = firsts.iter().any(|&f| {
                let b = &g.actions[f];
                b.node == Some(p)
                    && ((b.rsc == Some(vm) && (b.task == "monitor" || b.task == "stop"))
                        || b.task == "stonith")
            });
            if !settled {
                out.push(format!(
                    "start of vm1 while it may run on {} unprobed",
                    t.observed.nodes[p].uname
                ));
            }
        }
    }
    let stops = (0..g.actions.len())
        .filter(|&i| g.actions[i].rsc == Some(vm) && g.actions[i].task == "stop" && real(i))
        .filter(|&i| g.actions[i].node.is_some_and(|n| possible.contains(&n)))
        .count();
    if stops > 1 {
        out.push(format!("vm1 stopped on {stops} possible nodes"));
    }
    if let Some((source, target)) = fragile_migration(case) {
        out.extend(fragile_source_violations(&t, vm, source, target));
    }
    if !out.is_empty() {
        out.push(pengine::render_simulation(&cib, T0 + 10_000));
        out.push(xml);
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn pipeline_plans_keep_the_vm_running_once(case in arb_case()) {
        let v = violations(&case, None);
        prop_assert!(v.is_empty(), "{}", v.join("\n"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn fencing_a_fragile_source_waits_for_a_record_on_the_target(case in arb_fenced_source_case()) {
        prop_assert!(fragile_migration(&case).is_some(), "generator: no fragile migration");
        let v = violations(&case, None);
        prop_assert!(v.is_empty(), "{}", v.join("\n"));
    }
}

/// The fragile-source property can fail: for scenario 16's shape (migrate_to node1 -> node2 done,
/// node1 fenced, vm1 banned from node2), Pacemaker's two-phase plan stops the copy on node2
/// without ordering it before the fencing of node1; the atomic plan confirms on node2 first.
#[test]
fn fenced_source_property_catches_an_unordered_onward_move() {
    let mut case = build(
        vec![Presence::Online, Presence::Online, Presence::Online],
        &[(0, 0, 0, false)],
        Some((1, false)),
    );
    assert_eq!(fragile_migration(&case), Some((0, 1)));
    case.failed_stop_on = Some(0);
    let atomic = violations(&case, None);
    assert!(atomic.is_empty(), "{}", atomic.join("\n"));
    let v = violations(&case, Some("two-phase"));
    assert!(
        v.iter()
            .any(|l| l.contains("node1 fenced (erasing the only record")),
        "{}",
        v.join("\n")
    );
    assert!(
        v.iter()
            .any(|l| l.contains("moves on from node2") && l.contains("not ordered before")),
        "{}",
        v.join("\n")
    );
}

/// The property can fail: the two-phase plan for a timed-out migrate_to stops the source and
/// starts the VM on the target without looking there first, and the check says so.
#[test]
fn two_phase_plans_break_the_property() {
    let case = build(
        vec![Presence::Online, Presence::Online],
        &[(0, 3, 0, false)],
        Some((1, true)),
    );
    assert!(violations(&case, Some("atomic")).is_empty());
    let v = violations(&case, Some("two-phase"));
    assert!(
        v.iter()
            .any(|l| l.contains("may run on node2 unprobed") || l.contains("stopped on 2")),
        "{}",
        v.join("\n")
    );
}

/// The generator builds the interrupted histories the property is about.
#[test]
fn generator_builds_interrupted_migrations() {
    // Source lost with migrate_to pending: an unknown location.
    let case = build(
        vec![Presence::Lost, Presence::Online],
        &[(0, 2, 0, false)],
        None,
    );
    let cib = pengine::parse_cib(&cib_xml(&case, None)).expect("parses");
    let t = pengine::unstable::schedule(&cib, T0 + 10_000);
    assert!(possibly_running(&case, 0) && possibly_running(&case, 1));
    assert_eq!(t.atomic.entries.len(), 1, "{:?}", t.atomic);
    // A completed migration is settled.
    let case = build(
        vec![Presence::Online, Presence::Online],
        &[(0, 0, 1, true)],
        None,
    );
    let cib = pengine::parse_cib(&cib_xml(&case, None)).expect("parses");
    assert!(
        pengine::unstable::schedule(&cib, T0 + 10_000)
            .atomic
            .entries
            .is_empty()
    );
    assert!(!possibly_running(&case, 0) && possibly_running(&case, 1));
}

/// A migrate_to older than the resource's latest one is closed by the migrations since (soak seed
/// 1796069027196323): vm1 went node1 -> node2 -> node3 -> node1, and node2 then shut down cleanly
/// and came back, its history erased. node1's old record "migrate_to node1 -> node2 succeeded"
/// has nothing newer on node2. The atomic model reads vm1 on node1 only, and probes node2.
/// Upstream Pacemaker 2.1.5 took it for a partial migration to node2 (vm1 on node1 and node2);
/// Debian's 2.1.5-1+deb12u1, our oracle, backports Pacemaker PR #3020 (commit ad9fd9548: a
/// migrate_to target with no history of the resource is probed, not taken as active) and reads it
/// as the atomic model does.
#[test]
fn an_older_migrate_to_is_closed_by_the_later_migrations() {
    let mut case = build(
        vec![Presence::Online, Presence::Online, Presence::Online],
        &[(0, 0, 1, true), (0, 0, 1, true), (0, 0, 1, true)],
        None,
    );
    // The walk went node1 -> node2 -> node3 -> node1; node2's history is erased.
    let mig = |n: usize| {
        case.history[n]
            .get("vm1_migrate_to_0")
            .and_then(|r| r.target)
    };
    assert_eq!((mig(0), mig(1), mig(2)), (Some(1), Some(2), Some(0)));
    case.history[1].clear();
    let plan = |model: &str| {
        let cib = pengine::parse_cib(&cib_xml(&case, Some(model))).expect("parses");
        pengine::unstable::schedule(&cib, T0 + 10_000)
    };
    let t = plan("atomic");
    let vm = t
        .observed
        .resources
        .iter()
        .position(|r| r.id == "vm1")
        .expect("vm1");
    let node = |name: &str| t.observed.nodes.iter().position(|n| n.uname == name);
    assert_eq!(
        t.observed.resources[vm].running_on,
        vec![node("node1").expect("node1")]
    );
    assert_eq!(t.observed.resources[vm].partial_migration, None);
    let g = &t.graph;
    let of_vm: Vec<(String, Option<usize>)> = (0..g.actions.len())
        .filter(|&i| g.actions[i].rsc == Some(vm) && g.actions[i].event == EventKind::RscOp)
        .map(|i| (g.actions[i].task.clone(), g.actions[i].node))
        .collect();
    assert!(
        of_vm.iter().all(|(task, _)| !task.starts_with("migrate_")),
        "{of_vm:?}"
    );
    assert!(
        of_vm.contains(&("monitor".to_string(), node("node2"))),
        "node2 is probed: {of_vm:?}"
    );
    assert!(violations(&case, None).is_empty());
    // The control: the two-phase reading (Pacemaker's, with PR #3020) agrees: vm1 on node1
    // only, node2 probed.
    let two_phase = plan("two-phase");
    assert_eq!(
        two_phase.observed.resources[vm].running_on,
        vec![node("node1").expect("node1")],
        "{:?}",
        two_phase.observed.resources[vm]
    );
}
