//! Property tests of the atomic migration model over random histories: never a start while the VM
//! may run somewhere unprobed, never a stop of two possible copies, every plan acyclic.
//!
//! The oracle here is written independently of `pengine::atomic::locate`: a deliberately coarse
//! over-approximation of "the VM may run on this node", read straight from the history.

use pengine::unstable::{
    Answer, Decision, NodeHistory, OpRecord, Presence, Step, Steps, Task, decide, locate,
};
use proptest::prelude::*;

const T0: i64 = 1_764_489_600;

fn key(op: &OpRecord) -> i64 {
    if op.call_id < 0 { i64::MAX } else { op.call_id }
}

/// May the VM run on `n`? True unless the history proves it does not (over-approximation).
fn possibly_running(history: &[NodeHistory], n: usize) -> bool {
    if history[n].presence == Presence::Down {
        return false;
    }
    let latest = history[n].ops.iter().max_by_key(|o| key(o));
    let by_own = match latest {
        None => false,
        Some(op) => !matches!(
            (op.task, op.answer),
            (Task::Stop, Answer::Ok)
                | (_, Answer::NotRunning)
                | (Task::MigrateTo, Answer::Ok)
                | (Task::Other, _)
        ),
    };
    // The target of a migrate_to that may have moved it here, with nothing newer on this node.
    let newest_here = history[n].ops.iter().map(|o| o.last_rc_change).max();
    let by_migration = history.iter().enumerate().any(|(s, h)| {
        s != n
            && h.ops.iter().any(|o| {
                o.task == Task::MigrateTo
                    && o.migrate_source == Some(s)
                    && o.migrate_target == Some(n)
                    && o.answer != Answer::Failed
                    && o.answer != Answer::NotRunning
                    && newest_here.is_none_or(|t| t <= o.last_rc_change)
            })
    });
    by_own || by_migration
}

/// Every step that must complete before `then`, transitively.
fn before(plan: &Steps, then: usize) -> Vec<usize> {
    let mut seen = vec![false; plan.steps.len()];
    let mut stack = vec![then];
    while let Some(x) = stack.pop() {
        for &(a, b) in &plan.edges {
            if b == x && !seen[a] {
                seen[a] = true;
                stack.push(a);
            }
        }
    }
    (0..plan.steps.len()).filter(|&i| seen[i]).collect()
}

fn acyclic(plan: &Steps) -> bool {
    let n = plan.steps.len();
    let mut indegree = vec![0usize; n];
    for &(a, b) in &plan.edges {
        if a >= n || b >= n {
            return false;
        }
        indegree[b] += 1;
    }
    let mut ready: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
    let mut done = 0;
    while let Some(x) = ready.pop() {
        done += 1;
        for &(a, b) in &plan.edges {
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

fn step_node(step: &Step) -> usize {
    match *step {
        Step::Fence(n)
        | Step::Probe(n)
        | Step::Stop(n)
        | Step::ImpliedStop(n)
        | Step::PseudoStart(n)
        | Step::Start(n) => n,
        Step::MigrateTo { source, .. } => source,
        Step::MigrateFrom { target, .. } => target,
    }
}

fn arb_presence() -> impl Strategy<Value = Presence> {
    prop_oneof![
        6 => Just(Presence::Online),
        2 => Just(Presence::Lost),
        1 => Just(Presence::Down),
    ]
}

fn arb_answer() -> impl Strategy<Value = Answer> {
    prop_oneof![
        5 => Just(Answer::Ok),
        1 => Just(Answer::NotRunning),
        2 => Just(Answer::Failed),
        2 => Just(Answer::Pending),
        2 => Just(Answer::NoAnswer),
    ]
}

fn arb_task() -> impl Strategy<Value = Task> {
    prop_oneof![
        2 => Just(Task::Start),
        2 => Just(Task::Stop),
        2 => Just(Task::Monitor),
        4 => Just(Task::MigrateTo),
        3 => Just(Task::MigrateFrom),
        1 => Just(Task::Other),
    ]
}

/// A raw op: task, answer, the peer node (as an offset), the time step.
type RawOp = (Task, Answer, usize, i64);

fn build(nodes: usize, presence: &[Presence], raw: &[Vec<RawOp>]) -> Vec<NodeHistory> {
    (0..nodes)
        .map(|n| {
            let mut call = 2;
            let mut t = T0;
            let ops = raw[n]
                .iter()
                .map(|&(task, answer, peer, dt)| {
                    call += 1;
                    t += dt;
                    let other = (n + 1 + peer % (nodes - 1)) % nodes;
                    let (source, target) = match task {
                        Task::MigrateTo => (Some(n), Some(other)),
                        Task::MigrateFrom => (Some(other), Some(n)),
                        _ => (None, None),
                    };
                    OpRecord {
                        task,
                        call_id: if answer == Answer::Pending { -1 } else { call },
                        answer,
                        migrate_source: source,
                        migrate_target: target,
                        last_rc_change: t,
                        transition: None,
                    }
                })
                .collect();
            NodeHistory {
                presence: presence[n],
                ops,
            }
        })
        .collect()
}

fn arb_case() -> impl Strategy<Value = (Vec<NodeHistory>, Option<usize>, bool)> {
    (2usize..=4)
        .prop_flat_map(|nodes| {
            (
                Just(nodes),
                prop::collection::vec(arb_presence(), nodes),
                prop::collection::vec(
                    prop::collection::vec((arb_task(), arb_answer(), 0usize..3, 1i64..400), 0..5),
                    nodes,
                ),
                prop::option::of(0usize..nodes),
                any::<bool>(),
            )
        })
        .prop_map(|(nodes, presence, raw, desired, can_migrate)| {
            let history = build(nodes, &presence, &raw);
            // Placement never picks a node that cannot run resources.
            let desired = desired.filter(|&d| presence[d] == Presence::Online);
            (history, desired, can_migrate)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn atomic_plans_keep_the_vm_running_once((history, desired, can_migrate) in arb_case()) {
        let presence: Vec<Presence> = history.iter().map(|h| h.presence).collect();
        let location = locate(&history);
        let decision = decide(&location, &presence, desired, can_migrate);
        let plan = decision.steps(&presence);
        let possible: Vec<usize> =
            (0..history.len()).filter(|&n| possibly_running(&history, n)).collect();

        prop_assert!(acyclic(&plan), "cycle in {:?}", plan);
        for (i, step) in plan.steps.iter().enumerate() {
            let n = step_node(step);
            prop_assert!(n < history.len());
            match step {
                Step::Fence(_) | Step::ImpliedStop(_) => {
                    prop_assert_eq!(presence[n], Presence::Lost, "{:?} on a node that is not lost", step);
                }
                _ => prop_assert_eq!(presence[n], Presence::Online, "{:?} on a node that is not online", step),
            }
            if let Step::ImpliedStop(_) = step {
                let fence = plan.steps.iter().position(|s| *s == Step::Fence(n));
                prop_assert!(fence.is_some_and(|f| before(&plan, i).contains(&f)));
            }
            if let Step::MigrateFrom { source, target } = *step {
                // Either this plan's migrate_to precedes it, or the history holds a migrate_to
                // source -> target that answered success (confirming a finished migration).
                let mt = plan.steps.iter().position(|s| *s == Step::MigrateTo { source, target });
                let recorded = history[source].ops.iter().any(|o| {
                    o.task == Task::MigrateTo && o.migrate_target == Some(target) && o.answer == Answer::Ok
                });
                prop_assert!(mt.is_some_and(|m| before(&plan, i).contains(&m)) || (mt.is_none() && recorded));
            }
            if let Step::Start(x) = *step {
                // No start while the VM may run on a node that this plan has not probed, fenced
                // or stopped first.
                let firsts = before(&plan, i);
                for &p in &possible {
                    let settled = firsts.iter().any(|&f| {
                        matches!(plan.steps[f], Step::Probe(m) | Step::Fence(m) | Step::Stop(m) | Step::ImpliedStop(m) if m == p)
                    });
                    prop_assert!(settled, "start on {} while it may run on {} ({:?}, {:?})", x, p, location, plan);
                }
            }
        }
        // Never a stop of two copies that may both be running.
        let stopped_possible: Vec<usize> = plan.steps.iter().filter_map(|s| match s {
            Step::Stop(n) if possible.contains(n) => Some(*n),
            _ => None,
        }).collect();
        prop_assert!(stopped_possible.len() <= 1, "stops {:?} of possible copies {:?}: {:?}", stopped_possible, possible, plan);
        // A stop of a possible copy is part of a migration away from it, or a deliberate stop or
        // move: the decision's own, or a probe's continuation after every probe has answered.
        let (deliberate, probes_first) = match &decision {
            Decision::Probe { then: Some(then), probe, .. } => (then.as_ref(), probe.clone()),
            d => (d, Vec::new()),
        };
        for &n in &stopped_possible {
            let i = plan.steps.iter().position(|s| *s == Step::Stop(n)).unwrap_or(0);
            let firsts = before(&plan, i);
            let migrated_away = firsts.iter().any(|&f| {
                matches!(plan.steps[f], Step::MigrateFrom { source, target } if source == n && target != n)
            });
            prop_assert!(
                migrated_away || matches!(deliberate, Decision::Stop { .. } | Decision::Move { .. }),
                "stop of a running copy on {} in {:?}", n, decision
            );
            for p in &probes_first {
                let probe = plan.steps.iter().position(|s| *s == Step::Probe(*p));
                prop_assert!(probe.is_some_and(|x| firsts.contains(&x)), "stop on {} before the probe of {}: {:?}", n, p, plan);
            }
        }
        // A reboot happens only when a node that could hold the VM was lost.
        if decision.reboots() {
            prop_assert!(presence.contains(&Presence::Lost), "reboot without a lost node: {:?}", decision);
        }
    }
}

/// The oracle itself must be able to say "no": a plan that starts while a copy may run fails it.
#[test]
fn oracle_rejects_a_start_next_to_a_running_copy() {
    let history = vec![
        NodeHistory {
            presence: Presence::Online,
            ops: vec![OpRecord {
                task: Task::MigrateTo,
                call_id: 12,
                answer: Answer::NoAnswer,
                migrate_source: Some(0),
                migrate_target: Some(1),
                last_rc_change: T0,
                transition: None,
            }],
        },
        NodeHistory {
            presence: Presence::Online,
            ops: vec![],
        },
    ];
    assert!(possibly_running(&history, 0));
    assert!(possibly_running(&history, 1));
    // Pacemaker's two-phase answer to a timed-out migrate_to: stop both, start one.
    let reboot = Steps {
        steps: vec![Step::Stop(0), Step::Stop(1), Step::Start(1)],
        edges: vec![(0, 2), (1, 2)],
    };
    assert_eq!(before(&reboot, 2), vec![0, 1]);
    assert!(acyclic(&reboot));
    let cyclic = Steps {
        steps: vec![Step::Probe(0), Step::Start(1)],
        edges: vec![(0, 1), (1, 0)],
    };
    assert!(!acyclic(&cyclic));
    // Ours probes instead.
    let d = decide(&locate(&history), &[Presence::Online; 2], Some(1), true);
    assert!(matches!(d, Decision::Probe { .. }));
}

/// The generator reaches every kind of plan, so the property above is not vacuous.
#[test]
fn generator_reaches_every_decision() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRng, TestRunner};
    use std::collections::BTreeMap;

    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(proptest::test_runner::RngAlgorithm::ChaCha),
    );
    let strategy = arb_case();
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    for _ in 0..5000 {
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            panic!("generator failed");
        };
        let (history, desired, can_migrate) = tree.current();
        let presence: Vec<Presence> = history.iter().map(|h| h.presence).collect();
        let kind = match decide(&locate(&history), &presence, desired, can_migrate) {
            Decision::Defer => "defer",
            Decision::Keep { .. } => "keep",
            Decision::Cleanup { .. } => "cleanup",
            Decision::Finish { .. } => "finish",
            Decision::Migrate { .. } => "migrate",
            Decision::Move { .. } => "move",
            Decision::Stop { .. } => "stop",
            Decision::Start { .. } => "start",
            Decision::Probe { .. } => "probe",
            Decision::ProbeThenStart { .. } => "probe-then-start",
            Decision::Reboot { .. } => "reboot",
        };
        *counts.entry(kind).or_default() += 1;
    }
    eprintln!("decisions over 5000 random histories: {counts:?}");
    for kind in [
        "defer",
        "keep",
        "cleanup",
        "finish",
        "migrate",
        "move",
        "stop",
        "start",
        "probe",
        "probe-then-start",
        "reboot",
    ] {
        assert!(
            counts.get(kind).copied().unwrap_or(0) > 0,
            "no '{kind}' plan in {counts:?}"
        );
    }
}
