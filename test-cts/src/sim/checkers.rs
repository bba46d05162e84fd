//! The checkers. They only observe (the VOPR rule): they read the hypervisors' ground truth, the
//! controller's membership view and each graph, and report the first violation; they never steer.
//!
//! - `two-nodes`: after every event, no VM's guest runs on two nodes (hypervisors, not the CIB).
//! - `down-node`: no resource action or shutdown is sent to a node the DC knows is down, lost
//!   (unclean) or being fenced.
//! - `graph-acyclic`: every transition graph is a DAG.
//! - `vm-lost`: whenever the DC is idle (its plan is empty), each enabled VM runs, or is blocked
//!   with a reason the planner states, or the CIB places it on a node that will notice (an active
//!   recurring monitor there) or that is unclean; a node never shuts down under a running VM.
//! - `liveness`: after the faults stop and the cluster is healed, every VM runs exactly once
//!   within a bounded number of transitions and of virtual time.
//! - `stall` (reported apart from the violations: counted per run, listed by cts-sim, and
//!   checked by seeds.regress's `settles`): a transition that ends without an abort leaves
//!   nothing to do. Pacemaker's controller runs the scheduler again only on an abort or when
//!   `cluster-recheck-interval` expires, so a plan that needs a second transition without an abort
//!   in between waits for that timer (15 minutes by default): converging must not rely on it. The
//!   run goes on as Pacemaker would, with the recheck timer.

use std::collections::BTreeMap;

use pengine::unstable::Role;
use pengine::unstable::Transition;
use pengine::unstable::TransitionGraph;

use super::cluster::{Phase, Sim};
use super::record::Member;

/// Kahn's algorithm over the graph's edges; the error names actions left on a cycle.
pub fn check_acyclic(g: &TransitionGraph) -> Result<(), String> {
    let n = g.actions.len();
    let mut indegree = vec![0usize; n];
    let mut out: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &(f, t) in &g.edges {
        if f >= n || t >= n {
            return Err(format!("edge {f}->{t} names an action that does not exist"));
        }
        indegree[t] += 1;
        out.entry(f).or_default().push(t);
    }
    let mut stack: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut seen = 0;
    while let Some(i) = stack.pop() {
        seen += 1;
        for &t in out.get(&i).map(Vec::as_slice).unwrap_or(&[]) {
            indegree[t] -= 1;
            if indegree[t] == 0 {
                stack.push(t);
            }
        }
    }
    if seen == n {
        return Ok(());
    }
    let on_cycle: Vec<&str> = (0..n)
        .filter(|&i| indegree[i] > 0)
        .map(|i| g.actions[i].key.as_str())
        .collect();
    Err(format!("cycle through {}", on_cycle.join(", ")))
}

/// After every event.
pub fn after_event(sim: &mut Sim) {
    for vi in 0..sim.vms.len() {
        let vm = sim.vms[vi].clone();
        let on = sim.world.running_on(&vm);
        if on.len() > 1 {
            sim.violate("two-nodes", format!("{vm} runs on {}", on.join(" and ")));
            return;
        }
        let running = !on.is_empty();
        // An incoming copy (not running yet) keeps the migration open.
        if !running
            && sim.migration_open.contains(&vm)
            && !sim.nodes.iter().any(|n| {
                sim.world
                    .domain(&n.name, &vm)
                    .is_some_and(|d| d.state.is_active())
            })
        {
            sim.migration_open.remove(&vm);
        }
        let (was, ever) = sim.was_running[vi];
        if running && !was && ever {
            sim.stats.restarts += 1;
        }
        sim.was_running[vi] = (running, ever || running);
    }
    liveness_bounds(sim);
}

/// When the DC sends an action to a node.
pub fn on_send(sim: &mut Sim, ni: usize, key: &str) {
    let n = &sim.nodes[ni];
    let bad = match n.member {
        Member::Up if sim.fence_pending.contains(&ni) => Some("being fenced"),
        Member::Up => None,
        Member::Lost => Some("lost (unclean, not yet fenced)"),
        Member::Down => Some("down"),
    };
    if let Some(why) = bad {
        let name = n.name.clone();
        sim.violate("down-node", format!("{key} sent to {name}, which is {why}"));
    }
}

/// The reason Pacemaker logs as "cannot run anywhere", read from pengine's own output: no node
/// that can host resources gives the VM a non-negative score.
fn cannot_run_anywhere(t: &Transition, ri: usize) -> bool {
    let Some(scores) = t.desired.scores.get(ri) else {
        return false;
    };
    !t.observed.nodes.iter().enumerate().any(|(ni, n)| {
        n.online
            && !n.unclean
            && !n.standby
            && !n.shutdown
            && !n.maintenance
            && scores.get(&ni).copied().unwrap_or(0) >= 0
    })
}

/// When the DC's plan is empty.
pub fn at_idle(sim: &mut Sim, t: &Transition) {
    for vm in sim.vms.clone() {
        if !sim.world.running_on(&vm).is_empty() {
            continue;
        }
        let Some(ri) = t.observed.rsc_index(&vm) else {
            continue;
        };
        let r = &t.observed.resources[ri];
        if r.target_role == Some(Role::Stopped) {
            continue;
        }
        if t.desired
            .unplaced_reason
            .get(ri)
            .is_some_and(Option::is_some)
        {
            continue;
        }
        // The atomic model waits for the fencing of a lost node the cluster cannot fence now
        // (below quorum), and says so ("wait: NODE cannot be fenced").
        if t.atomic
            .entries
            .iter()
            .any(|e| e.rsc == ri && !e.cannot_fence.is_empty())
        {
            continue;
        }
        // Placed, but its start is blocked with a stated reason (no quorum: Pacemaker 2.1.5
        // assigns as usual and only marks the start unrunnable).
        if let Some(pengine::unstable::Change::Start {
            blocked: Some(_), ..
        }) = t.reconciliation.changes.get(ri)
        {
            continue;
        }
        if r.blocked || !r.managed || t.desired.unmanaged.get(ri).copied().unwrap_or(false) {
            continue;
        }
        if cannot_run_anywhere(t, ri) {
            continue;
        }
        let believed: Vec<usize> = r.running_on.clone();
        let explained = believed.iter().any(|&oi| {
            let name = &t.observed.nodes[oi].uname;
            let Some(ni) = sim.node_index(name) else {
                return false;
            };
            let n = &sim.nodes[ni];
            // Membership will notice a dead or cut-off node; a monitor there notices the VM gone.
            n.member != Member::Up
                || !n.powered
                || sim.world.is_isolated(&n.name)
                || n.recurring.contains_key(&vm)
        });
        if explained {
            continue;
        }
        let believed_names: Vec<&str> = believed
            .iter()
            .map(|&oi| t.observed.nodes[oi].uname.as_str())
            .collect();
        let scores: Vec<String> = t
            .desired
            .scores
            .get(ri)
            .map(|m| {
                m.iter()
                    .map(|(&ni, &sc)| format!("{}={sc}", t.observed.nodes[ni].uname))
                    .collect()
            })
            .unwrap_or_default();
        let what = if believed_names.is_empty() {
            format!(
                "the DC plans nothing for it and states no reason (scores {})",
                scores.join(" ")
            )
        } else {
            format!(
                "the CIB says it runs on {} and no monitor there will notice",
                believed_names.join(",")
            )
        };
        sim.violate("vm-lost", format!("{vm} runs nowhere; {what}"));
        return;
    }
    if let Phase::Liveness { .. } = sim.phase {
        if sim.converged() && sim.tasks.iter().all(|(_, t)| t.interval_ms > 0) {
            sim.note("SIM", "converged: every VM runs exactly once");
            sim.phase_done();
        }
    }
}

/// The DC went idle after transition `id` while the planner still had work (`pending`).
/// `faithful`: why the stall is Pacemaker's own (its controller ignored a recurring result too,
/// or its scheduler has work on the same CIB), None when it is the planner's or the simulator's.
pub fn on_stall(sim: &mut Sim, id: i64, pending: &str, faithful: Option<&str>) {
    let class = match faithful {
        Some(why) => format!(" [faithful: {why}]"),
        None => String::new(),
    };
    let message = format!(
        "T{id} ended without an abort, yet the planner still has work, which waits for the recheck timer ({} ms): {pending}{class}",
        sim.opts.recheck_interval_ms
    );
    sim.note("CHECK", format!("STALL {message}"));
    if sim.first_stall.is_none() {
        sim.first_stall = Some(message);
    }
}

/// Liveness bounds, checked after every event of the liveness phase.
pub fn liveness_bounds(sim: &mut Sim) {
    if let Phase::Liveness {
        since_ms,
        since_transitions,
    } = sim.phase
    {
        // A transition that repeats the previous one exactly is the DC re-trying while it waits
        // (Pacemaker 2.1.5 re-issues the stop of a pending migration's target on every run while
        // the source is unclean; seed 688633765 waits for quorum that way): bounded by time.
        let transitions = sim.stats.progress_transitions() - since_transitions;
        let elapsed = sim.now_ms() - since_ms;
        if transitions > sim.opts.liveness_transitions_max || elapsed > sim.opts.liveness_ms_max {
            let missing: Vec<String> = sim
                .vms
                .iter()
                .filter(|vm| sim.world.running_on(vm).len() != 1)
                .cloned()
                .collect();
            sim.violate(
                "liveness",
                format!(
                    "not converged {transitions} transitions and {elapsed}ms after healing; not running once: {}",
                    if missing.is_empty() { "none (the DC still has work)".into() } else { missing.join(",") }
                ),
            );
        }
    }
}

/// Known gap: pengine's unpacking of migrate_to results is simplified (observed.rs
/// `migrate_to_success`; pacemaker.md §3.1, §3.2, §3.4): after an interrupted migration (done,
/// failed, or pending on a lost source) it believes the VM runs only on the source and never
/// counts or stops the copy on the target (`stops_forced` is computed and unused), so it starts
/// the VM again while the target runs it.
pub const GAP_MIGRATION: &str = "pengine-interrupted-migration";
/// Known gap: pengine orders `do_shutdown` after plain stops only, not after the stop that ends a
/// migration away from the node (actions.rs), so a node shuts down under a migrating VM.
pub const GAP_SHUTDOWN: &str = "pengine-shutdown-before-migration";

/// Known gap: without quorum pengine schedules stops on unclean, offline nodes it cannot fence
/// ("Stop ... due to no quorum") as real actions; Pacemaker only runs actions on online nodes and
/// shows such a stop as blocked.
pub const GAP_OFFLINE_ACTION: &str = "pengine-action-on-offline-node-without-quorum";

/// Which known planner gap, if any, a violation matches (triage only; never excuses it in
/// cts-sim's exit code).
pub fn known_gap(sim: &Sim, checker: &str, message: &str) -> Option<&'static str> {
    // The gaps are pengine's; the control planner's violations are the point of the control.
    if sim.opts.planner != super::options::PlannerKind::Pengine {
        return None;
    }
    match checker {
        "two-nodes" => {
            let vm = message.split_whitespace().next()?;
            sim.migration_open.contains(vm).then_some(GAP_MIGRATION)
        }
        "down-node" if !sim.cib.have_quorum && message.contains("lost (unclean") => {
            Some(GAP_OFFLINE_ACTION)
        }
        "vm-lost" if message.contains(" shuts down while ") => {
            let node = message.split_whitespace().next()?;
            let vms: Vec<&str> = message
                .split(" while ")
                .nth(1)?
                .split_whitespace()
                .next()?
                .split(',')
                .collect();
            let migrating_away = sim.active.as_ref().is_some_and(|a| {
                a.graph.actions.iter().any(|ga| {
                    let here = ga
                        .node
                        .and_then(|n| a.node_of.get(n))
                        .and_then(|&i| sim.nodes.get(i))
                        .is_some_and(|n| n.name == node);
                    let rsc = ga.rsc.and_then(|r| a.rsc_names.get(r));
                    ga.task == "migrate_to"
                        && here
                        && rsc.is_some_and(|r| vms.contains(&r.as_str()))
                })
            });
            if migrating_away {
                return Some(GAP_SHUTDOWN);
            }
            vms.iter()
                .any(|vm| sim.migration_open.contains(*vm))
                .then_some(GAP_MIGRATION)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::options::{Options, PlannerKind, Profile};
    use pengine::unstable::{EventKind, GraphAction};

    fn action(key: &str) -> GraphAction {
        GraphAction {
            key: key.into(),
            task: "start".into(),
            rsc: None,
            group: None,
            node: None,
            interval_ms: 0,
            event: EventKind::Pseudo,
            runnable: true,
            migrate: None,
            expected_rc: 0,
            call_id: None,
            optional: false,
            notify: None,
        }
    }

    #[test]
    fn a_cycle_is_named_and_a_dag_passes() {
        let mut g = TransitionGraph::default();
        for k in ["a", "b", "c", "d"] {
            g.actions.push(action(k));
        }
        g.edges = vec![(0, 1), (1, 2), (0, 3)];
        assert_eq!(check_acyclic(&g), Ok(()));
        g.edges.push((2, 1));
        assert_eq!(check_acyclic(&g), Err("cycle through b, c".to_string()));
        g.edges = vec![(0, 9)];
        assert!(check_acyclic(&g).is_err(), "an edge to a missing action");
    }

    #[test]
    fn sending_to_a_lost_or_fenced_node_is_a_violation() {
        let mut sim =
            Sim::new(Options::draw(1, PlannerKind::Pengine, Profile::Full)).expect("a cluster");
        on_send(&mut sim, 0, "vm1_start_0");
        assert!(sim.violation.is_none(), "node1 is up");
        sim.fence_pending.insert(1);
        on_send(&mut sim, 1, "vm1_stop_0");
        let v = sim.violation.clone().expect("node2 is being fenced");
        assert_eq!(v.checker, "down-node");
        assert_eq!(v.message, "vm1_stop_0 sent to node2, which is being fenced");
        let mut sim =
            Sim::new(Options::draw(1, PlannerKind::Pengine, Profile::Full)).expect("a cluster");
        sim.nodes[2].member = Member::Down;
        on_send(&mut sim, 2, "vm2_start_0");
        assert_eq!(
            sim.violation.map(|v| v.message),
            Some("vm2_start_0 sent to node3, which is down".to_string())
        );
    }

    #[test]
    fn a_vm_on_two_hypervisors_is_caught_from_the_hypervisors_not_the_cib() {
        let mut sim =
            Sim::new(Options::draw(1, PlannerKind::Pengine, Profile::Full)).expect("a cluster");
        let xml = crate::sim::world::domain_xml("vm1");
        use highlander_agent::hypervisor::Hypervisor;
        sim.world
            .hv("node1")
            .create(&xml, 100)
            .expect("create on node1");
        after_event(&mut sim);
        assert!(sim.violation.is_none());
        sim.world
            .hv("node2")
            .create(&xml, 100)
            .expect("create on node2");
        after_event(&mut sim);
        assert_eq!(
            sim.violation.map(|v| (v.checker, v.message)),
            Some(("two-nodes", "vm1 runs on node1 and node2".to_string()))
        );
    }
}
