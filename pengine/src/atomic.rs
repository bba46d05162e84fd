//! The atomic migration model: where a VM runs after an interrupted live migration, and the plan that ends it with the VM running once.
//!
//! Pacemaker's own model (`two-phase`) treats migrate_to as half a stop and migrate_from as half a
//! start, so after an interruption it may believe the resource runs on both nodes and restarts it.
//! An agent that migrates atomically and answers truthfully (ours: `ocf:highlander:VirtualDomain`)
//! lets us know better:
//! - migrate_to answered success: the VM runs on the target (confirmation and source cleanup
//!   pending); answered failure: it still runs on the source;
//! - migrate_to pending, timed out or unanswered, or answers that contradict each other: the VM is
//!   on the source or the target, nobody knows which, so both are probed before anything else.
//!
//! This module is pure and works on its own small input types ([`NodeHistory`], [`OpRecord`]),
//! which the pipeline fills from the CIB. [`locate`] reads the history, [`decide`] picks the plan
//! for a desired node, [`Decision::steps`] expands it into Pacemaker's vocabulary (migrate_to,
//! migrate_from, stop, the pseudo start, probes and fencing) with orderings.

use std::collections::BTreeSet;

use crate::cib::rc;

/// The meta-attribute that selects a resource's migration model.
pub const MIGRATION_MODEL_META: &str = "migration-model";

/// How a resource's live migrations are modelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum MigrationModel {
    /// Pacemaker 2.1.5's model, for any agent: reproduces its decisions.
    #[default]
    TwoPhase,
    /// For agents whose migrate_to is atomic and truthful.
    Atomic,
}

impl MigrationModel {
    /// The meta-attribute value.
    pub fn as_str(self) -> &'static str {
        match self {
            MigrationModel::TwoPhase => "two-phase",
            MigrationModel::Atomic => "atomic",
        }
    }

    /// Parses a meta-attribute value (case-insensitive, surrounding blanks ignored).
    pub fn parse(value: &str) -> Option<MigrationModel> {
        let v = value.trim();
        if v.eq_ignore_ascii_case("two-phase") {
            Some(MigrationModel::TwoPhase)
        } else if v.eq_ignore_ascii_case("atomic") {
            Some(MigrationModel::Atomic)
        } else {
            None
        }
    }

    /// The model an agent gets without the meta-attribute: `atomic` for
    /// `ocf:highlander:VirtualDomain` (its meta-data advertises it), `two-phase` for every other.
    pub fn default_for_agent(class: &str, provider: Option<&str>, kind: &str) -> MigrationModel {
        if class == "ocf" && provider == Some("highlander") && kind == "VirtualDomain" {
            MigrationModel::Atomic
        } else {
            MigrationModel::TwoPhase
        }
    }
}

/// Errors of the atomic model's inputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AtomicError {
    #[error("resource '{resource}': migration-model '{value}' is neither two-phase nor atomic")]
    InvalidModel { resource: String, value: String },
}

/// The model of one resource: its `migration-model` meta-attribute if set, else the agent's default.
/// An invalid value is an error carrying it; callers report it and fall back to `two-phase`.
pub fn model_for(
    resource: &str,
    class: &str,
    provider: Option<&str>,
    kind: &str,
    meta_value: Option<&str>,
) -> Result<MigrationModel, AtomicError> {
    match meta_value {
        None => Ok(MigrationModel::default_for_agent(class, provider, kind)),
        Some(v) => MigrationModel::parse(v).ok_or_else(|| AtomicError::InvalidModel {
            resource: resource.to_string(),
            value: v.to_string(),
        }),
    }
}

/// What an operation in the history was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub enum Task {
    MigrateTo,
    MigrateFrom,
    Start,
    Stop,
    /// A probe or a recurring monitor.
    Monitor,
    /// Anything else (promote, notify, reload...): it says nothing about where the VM runs.
    Other,
}

impl Task {
    /// From the `operation` attribute.
    pub fn parse(operation: &str) -> Task {
        match operation {
            "migrate_to" => Task::MigrateTo,
            "migrate_from" => Task::MigrateFrom,
            "start" => Task::Start,
            "stop" => Task::Stop,
            "monitor" => Task::Monitor,
            _ => Task::Other,
        }
    }
}

/// What the agent answered, from an entry's op-status and rc-code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub enum Answer {
    /// rc 0.
    Ok,
    /// rc 7 (only meaningful for monitors, stops and starts).
    NotRunning,
    /// The agent answered with an error, or refused to run (not installed, not supported).
    Failed,
    /// Still running (op-status -1 or rc 193).
    Pending,
    /// Nobody answered: timed out, cancelled, the executor lost the node.
    NoAnswer,
}

impl Answer {
    /// Classifies a history entry.
    pub fn from_status(op_status: i32, rc_code: i32) -> Answer {
        match op_status {
            -1 => Answer::Pending,
            // done, error, hard error, fatal: the agent ran and answered
            0 | 4 | 5 | 6 => match rc_code {
                rc::OK => Answer::Ok,
                rc::NOT_RUNNING => Answer::NotRunning,
                rc::PENDING => Answer::Pending,
                // The agent's own failure is recorded with op-status 0 (done). An error status
                // with a failure code is the executor's: the agent was killed by a signal or
                // crashed mid-action and said nothing about where the VM is (seed 10056: a
                // migrate_to killed after the guest had moved was read as "still on the source").
                _ if op_status == 0 => Answer::Failed,
                _ => Answer::NoAnswer,
            },
            // not supported, not installed: the agent never acted
            3 | 7 => Answer::Failed,
            // cancelled, timed out, not connected, invalid, ...
            _ => Answer::NoAnswer,
        }
    }
}

/// The transition that ordered an entry, from its `transition-key` (`action:number:rc:te-uuid`).
/// One DC numbers its transitions in order and plans each only after the previous one ended, so
/// between entries of the same DC (same uuid) the higher number was ordered later.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct TransitionId {
    pub te_uuid: String,
    pub number: i64,
}

impl TransitionId {
    /// From a `transition-key` attribute; None when it is not one.
    pub fn parse(key: &str) -> Option<TransitionId> {
        let mut parts = key.split(':');
        let _action = parts.next()?;
        let number = parts.next()?.parse().ok()?;
        let _rc = parts.next()?;
        let te_uuid = parts.next()?;
        if te_uuid.is_empty() {
            return None;
        }
        Some(TransitionId {
            te_uuid: te_uuid.to_string(),
            number,
        })
    }
}

/// One history entry, as the model needs it. Node fields are indices into the history slice.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct OpRecord {
    pub task: Task,
    /// -1 for pending entries.
    pub call_id: i64,
    pub answer: Answer,
    pub migrate_source: Option<usize>,
    pub migrate_target: Option<usize>,
    /// Seconds since the epoch; compares entries of different nodes.
    pub last_rc_change: i64,
    /// Breaks a tie of `last_rc_change` between entries of different nodes (see [`TransitionId`]).
    pub transition: Option<TransitionId>,
}

/// Whether a node can act and what its loss means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub enum Presence {
    /// A member that runs actions.
    Online,
    /// Lost without a clean shutdown: it will be fenced, and whatever ran there dies.
    Lost,
    /// Cleanly down (or fenced already): nothing runs there.
    Down,
}

/// One node's history of the resource.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct NodeHistory {
    pub presence: Presence,
    pub ops: Vec<OpRecord>,
}

/// Why the location is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub enum Doubt {
    /// migrate_to has not answered yet.
    Pending,
    /// migrate_to (or migrate_from) got no answer: timeout, cancel, lost connection.
    NoAnswer,
    /// The answers contradict each other (migrate_to succeeded, migrate_from failed).
    Contradiction,
    /// The history says it runs on more than one node.
    SeveralRunning,
    /// A node's own later result is itself unsure (a failed stop or start).
    UnsureResult,
    /// migrate_to answered 7: the VM does not run on the source alone (nowhere, on both, or
    /// maybe on a target the agent could not read).
    NotOnSource,
}

impl Doubt {
    fn text(self) -> &'static str {
        match self {
            Doubt::Pending => "migrate_to pending",
            Doubt::NoAnswer => "migrate_to unanswered",
            Doubt::Contradiction => "migrate_from contradicts migrate_to",
            Doubt::SeveralRunning => "history shows it on several nodes",
            Doubt::UnsureResult => "a later result is unsure",
            Doubt::NotOnSource => "migrate_to found it not on the source alone",
        }
    }
}

/// The last live migration of a resource: migrate_to on `source` towards `target`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub struct Migration {
    pub source: usize,
    pub target: usize,
}

/// Where the resource is, after its last migration.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub enum Location {
    /// No migration in the history, or it was closed by later results on both nodes:
    /// the ordinary reading of the history stands.
    Settled,
    /// It runs on exactly one node.
    Exact {
        migration: Migration,
        node: usize,
        /// The migration `source -> node` still needs its confirmation (migrate_from on `node`).
        confirm: bool,
        /// Nodes whose last entry is a successful migrate_to away: a stop records that they no
        /// longer run it (the VM is not there; the stop is bookkeeping).
        cleanup: Vec<usize>,
    },
    /// It runs on one of `candidates` or nowhere; probe them before anything else.
    Unknown {
        migration: Migration,
        candidates: Vec<usize>,
        doubt: Doubt,
        /// Candidates whose newest entry, recorded after the migrate_to, is a sure word of their
        /// own (running, or a probe that found the domain there but broken): probing them again
        /// tells nothing new (seeds 40033, 40147 probed such a node forever, each probe aborting
        /// the transition before the other candidate's).
        answered: Vec<usize>,
        /// Nodes whose last entry is a successful migrate_to away (as for `Exact`): once the
        /// probes answered, their stops are part of the continuation.
        cleanup: Vec<usize>,
    },
    /// It runs nowhere.
    Stopped {
        migration: Migration,
        cleanup: Vec<usize>,
    },
}

/// What one node's history says about the resource after the migration's migrate_to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Seen {
    Running { confirmed: bool },
    NotRunning { cleanup: bool },
    Unsure(Doubt),
}

fn own_state(op: &OpRecord) -> Option<Seen> {
    let seen = match (op.task, op.answer) {
        (Task::Other, _) => return None,
        (_, Answer::Pending) => Seen::Unsure(Doubt::Pending),
        (_, Answer::NoAnswer) => Seen::Unsure(Doubt::NoAnswer),
        (Task::Start | Task::MigrateFrom | Task::Monitor, Answer::Ok) => {
            Seen::Running { confirmed: true }
        }
        (Task::Stop, Answer::Ok) | (_, Answer::NotRunning) => Seen::NotRunning { cleanup: false },
        (Task::MigrateTo, Answer::Ok) => Seen::NotRunning { cleanup: true },
        // A failed migrate_to leaves the VM where it was (the agent's guarantee).
        (Task::MigrateTo, Answer::Failed) => Seen::Running { confirmed: true },
        (_, Answer::Failed) => Seen::Unsure(Doubt::UnsureResult),
    };
    Some(seen)
}

/// The latest migrate_to of the resource, across nodes: by last-rc-change, then the later
/// transition, a pending entry first, then the higher call id, then the lower node index
/// (deterministic).
fn latest_migrate_to(history: &[NodeHistory]) -> Option<(usize, &OpRecord)> {
    let mut best: Option<(usize, &OpRecord)> = None;
    for (n, h) in history.iter().enumerate() {
        for op in &h.ops {
            if op.task != Task::MigrateTo || op.migrate_source != Some(n) {
                continue;
            }
            let Some(t) = op.migrate_target else {
                continue;
            };
            if t == n || t >= history.len() {
                continue;
            }
            // Within one second, the later transition of the DC (soak seed 1796059824171638: a
            // migration there and back within a second; call ids, per node, picked the older one).
            let key = |o: &OpRecord| {
                (
                    o.last_rc_change,
                    o.transition.as_ref().map_or(-1, |t| t.number),
                    o.answer == Answer::Pending,
                    if o.call_id < 0 { i64::MAX } else { o.call_id },
                )
            };
            let better = match best {
                None => true,
                Some((_, b)) => key(op) > key(b),
            };
            if better {
                best = Some((n, op));
            }
        }
    }
    best
}

/// Orders entries of one node as Pacemaker does: by call id, pending entries last.
fn call_key(op: &OpRecord) -> i64 {
    if op.call_id < 0 { i64::MAX } else { op.call_id }
}

/// When an entry was recorded, for comparing entries of different nodes. Old inputs lack
/// last-rc-change on migrate_to: then it is at least as new as its node's earlier entries.
fn recorded_at(history: &[NodeHistory], node: usize, op: &OpRecord) -> i64 {
    if op.last_rc_change > 0 {
        return op.last_rc_change;
    }
    history[node]
        .ops
        .iter()
        .filter(|o| call_key(o) <= call_key(op))
        .map(|o| o.last_rc_change)
        .max()
        .unwrap_or(0)
}

/// Whether `o` (on another node than `m`) was recorded after `m`, which was recorded at `m_time`:
/// a later second, or the same second and a later transition of the same DC. Last-rc-change
/// counts seconds, and a probe ordered because of `m`'s answer often lands in the same second
/// (seed 41422 probed the target once per transition until the clock turned).
fn recorded_after(o: &OpRecord, m: &OpRecord, m_time: i64) -> bool {
    o.last_rc_change > m_time
        || (o.last_rc_change == m_time
            && matches!((&o.transition, &m.transition),
                (Some(a), Some(b)) if a.te_uuid == b.te_uuid && a.number > b.number))
}

/// Reads where the resource runs after its last migration.
pub fn locate(history: &[NodeHistory]) -> Location {
    let Some((source, m)) = latest_migrate_to(history) else {
        return Location::Settled;
    };
    let Some(target) = m.migrate_target else {
        return Location::Settled;
    };
    let migration = Migration { source, target };
    // When the migrate_to was recorded, for comparing with the target's entries. Old inputs lack
    // last-rc-change on migrate_to: then it is at least as new as the source's earlier entries.
    let m_time = recorded_at(history, source, m);

    // The source's own later state: its newest entry after the migrate_to (same node: call ids).
    let source_after = history[source]
        .ops
        .iter()
        .filter(|o| call_key(o) > call_key(m) && m.answer != Answer::Pending)
        .filter_map(|o| own_state(o).map(|s| (call_key(o), s)))
        .max_by_key(|(k, _)| *k)
        .map(|(_, s)| s);
    // The target's own later state: its newest entry among those recorded after the migrate_to
    // (different nodes: last-rc-change), the migrate_from that answers this migration, any entry
    // still pending, and what follows them.
    let after_migrate_to = |o: &OpRecord| {
        let answers_it = o.task == Task::MigrateFrom && o.migrate_source == Some(source);
        if o.answer == Answer::Pending {
            // in flight now: newer than anything recorded
            true
        } else if answers_it {
            // a migrate_from follows its migrate_to; old inputs do not record when
            o.last_rc_change == 0 || o.last_rc_change >= m_time
        } else {
            recorded_after(o, m, m_time)
        }
    };
    // Same node: whatever follows such an entry (by call id) follows the migrate_to too.
    let first_after = history[target]
        .ops
        .iter()
        .filter(|o| after_migrate_to(o))
        .map(call_key)
        .min();
    let target_after = history[target]
        .ops
        .iter()
        .filter(|o| first_after.is_some_and(|k| call_key(o) >= k))
        .filter_map(|o| {
            let s = if o.task == Task::MigrateFrom && o.answer != Answer::Ok {
                // migrate_from said the VM is not on the target: against migrate_to's word.
                Seen::Unsure(Doubt::Contradiction)
            } else {
                own_state(o)?
            };
            Some((call_key(o), s))
        })
        .max_by_key(|(k, _)| *k)
        .map(|(_, s)| s);

    // Both nodes have answered since: the migration is closed, unless an answer is itself unsure.
    let certain =
        |s: &Option<Seen>| matches!(s, Some(Seen::Running { .. } | Seen::NotRunning { .. }));
    if certain(&source_after) && certain(&target_after) {
        return Location::Settled;
    }
    // Both nodes gave a sure answer after the migration, and something failed later (a crashed
    // guest's monitor, a failed stop): that later failure is ordinary business, not a doubt about
    // the migration. The ordinary reading (recovery, fail counts, fencing) handles it.
    // A probe or monitor that answered a failure (op-status 0: the agent's own word, a crashed
    // guest) is sure too: the domain is there, broken.
    let sure = |o: &OpRecord| {
        matches!(
            own_state(o),
            Some(Seen::Running { .. } | Seen::NotRunning { .. })
        ) || (o.task == Task::Monitor && o.answer == Answer::Failed)
    };
    let source_answered = m.answer != Answer::Pending
        && history[source]
            .ops
            .iter()
            .any(|o| call_key(o) > call_key(m) && sure(o));
    let target_answered = history[target].ops.iter().any(|o| {
        first_after.is_some_and(|k| call_key(o) >= k)
            && sure(o)
            && !(o.task == Task::MigrateFrom && o.answer != Answer::Ok)
    });
    if source_answered && target_answered {
        return Location::Settled;
    }
    // A failed migrate_to left the VM on the source and nothing on the target; a failure on the
    // source since then (a crashed guest's monitor, a timeout) is ordinary business as well.
    let stayed = m.answer == Answer::Failed
        && !history[target]
            .ops
            .iter()
            .any(|o| first_after.is_some_and(|k| call_key(o) >= k));
    let failed_since = history[source].ops.iter().any(|o| {
        call_key(o) > call_key(m)
            && o.task != Task::Other
            && matches!(o.answer, Answer::Failed | Answer::NoAnswer)
    });
    if stayed && failed_since {
        return Location::Settled;
    }
    let from_migrate_to = match m.answer {
        Answer::Ok => (
            Seen::NotRunning { cleanup: true },
            Seen::Running { confirmed: false },
        ),
        Answer::Failed => (
            Seen::Running { confirmed: true },
            Seen::NotRunning { cleanup: false },
        ),
        // rc 7: our agent's "not here alone" (nowhere, on both, or maybe moved to a target it
        // could not read): probe both.
        Answer::NotRunning => (
            Seen::Unsure(Doubt::NotOnSource),
            Seen::Unsure(Doubt::NotOnSource),
        ),
        Answer::Pending => (Seen::Unsure(Doubt::Pending), Seen::Unsure(Doubt::Pending)),
        Answer::NoAnswer => (Seen::Unsure(Doubt::NoAnswer), Seen::Unsure(Doubt::NoAnswer)),
    };
    // Every node's own word: its newest entry (an older copy that was never stopped still counts).
    let mut seen: Vec<Seen> = history
        .iter()
        .map(|h| {
            h.ops
                .iter()
                .filter_map(|o| own_state(o).map(|s| (call_key(o), s)))
                .max_by_key(|(k, _)| *k)
                .map(|(_, s)| s)
                .unwrap_or(Seen::NotRunning { cleanup: false })
        })
        .collect();
    seen[source] = source_after.unwrap_or(from_migrate_to.0);
    seen[target] = match target_after {
        Some(s) => s,
        // A failed migrate_to does not clear an older copy on the target that was never stopped.
        None if m.answer == Answer::Failed
            && matches!(seen[target], Seen::Running { .. } | Seen::Unsure(_)) =>
        {
            seen[target]
        }
        None => from_migrate_to.1,
    };
    // A failed migrate_to says the VM stayed on the source. A probe or monitor there that has since
    // found it gone, with nothing newer on the target, contradicts that: the migration may have
    // completed after the agent answered (soak seed 1796072331202629: the agent answered 1 with
    // an incoming copy still paused on the target, the move completed later, the source's monitor
    // found nothing, and the plan started the VM on a third node while the target ran it).
    let vanished = m.answer == Answer::Failed
        && target_after.is_none()
        && history[source]
            .ops
            .iter()
            .filter(|o| call_key(o) > call_key(m) && o.task != Task::Other)
            .max_by_key(|o| call_key(o))
            .is_some_and(|o| o.task == Task::Monitor && o.answer == Answer::NotRunning);
    if vanished && matches!(seen[target], Seen::NotRunning { .. }) {
        seen[target] = Seen::Unsure(Doubt::Contradiction);
    }
    // A migrate_from that failed says the VM did not arrive: unless the source has spoken since,
    // it may still be there, whatever the target did afterwards.
    let contradicted = history[target].ops.iter().any(|o| {
        o.task == Task::MigrateFrom
            && o.migrate_source == Some(source)
            && o.answer != Answer::Ok
            && first_after.is_some_and(|k| call_key(o) >= k)
    });
    if contradicted && source_after.is_none() && history[source].presence != Presence::Down {
        seen[source] = Seen::Unsure(Doubt::Contradiction);
    }
    // An older migration towards a node with nothing newer there may have left the VM on it:
    // if nothing else says it runs there, that contradicts the later answers.
    for (s_node, h) in history.iter().enumerate() {
        for o in &h.ops {
            let (Some(t), true) = (o.migrate_target, o.migrate_source == Some(s_node)) else {
                continue;
            };
            if o.task != Task::MigrateTo
                || (s_node == source && o == m)
                || t >= history.len()
                || t == s_node
                || o.answer == Answer::Failed
                || history[t]
                    .ops
                    .iter()
                    .any(|x| x.last_rc_change > recorded_at(history, s_node, o))
            {
                continue;
            }
            if let Seen::NotRunning { .. } = seen[t] {
                seen[t] = Seen::Unsure(Doubt::Contradiction);
            }
        }
    }
    let target_seen = seen[target];
    // Whether a node has answered for itself since the migrate_to: its newest entry is recorded
    // after it and is a sure word (see `sure`).
    let newest = |n: usize| history[n].ops.iter().max_by_key(|o| call_key(o));
    let answered_since = |n: usize| {
        newest(n).is_some_and(|o| {
            let after = if n == source {
                m.answer != Answer::Pending && call_key(o) > call_key(m)
            } else if n == target {
                first_after.is_some_and(|k| call_key(o) >= k)
                    && !(o.task == Task::MigrateFrom && o.answer != Answer::Ok)
            } else {
                recorded_after(o, m, m_time) || recorded_at(history, n, o) > m_time
            };
            after && sure(o)
        })
    };

    let mut running = Vec::new();
    let mut unsure = Vec::new();
    let mut cleanup = Vec::new();
    let mut doubt = None;
    for (node, s) in seen.into_iter().enumerate() {
        // A cleanly down node runs nothing, and cannot be cleaned up.
        if history[node].presence == Presence::Down {
            continue;
        }
        match s {
            Seen::Running { .. } => running.push(node),
            Seen::NotRunning { cleanup: true } => cleanup.push(node),
            Seen::NotRunning { cleanup: false } => {}
            Seen::Unsure(d) => {
                unsure.push(node);
                doubt = doubt.or(Some(d));
            }
        }
    }
    let unknown = |candidates: Vec<usize>, doubt: Doubt| {
        let answered: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|&n| answered_since(n))
            .collect();
        if answered.len() == candidates.len() {
            // Every node that may hold it has spoken since: the ordinary reading of the history
            // is the truth (a copy found broken is recovered as Pacemaker recovers it).
            return Location::Settled;
        }
        Location::Unknown {
            migration,
            candidates,
            doubt,
            answered,
            cleanup: cleanup.clone(),
        }
    };
    if let Some(doubt) = doubt {
        let candidates: BTreeSet<usize> = running.iter().chain(unsure.iter()).copied().collect();
        return unknown(candidates.into_iter().collect(), doubt);
    }
    match running.as_slice() {
        [] => Location::Stopped { migration, cleanup },
        [node] => Location::Exact {
            migration,
            node: *node,
            confirm: *node == target && target_seen == Seen::Running { confirmed: false },
            cleanup,
        },
        _ => unknown(running, Doubt::SeveralRunning),
    }
}

/// The node whose history alone says the VM may have left it: the source of the last migration,
/// when its migrate_to succeeded or never answered and the target has recorded nothing since.
/// Fencing that node or its clean shutdown erases its history (Pacemaker deletes a departed node's
/// `lrm` section), and with it the only trace of a copy on the target: after that, the target's
/// older entries (a probe that found nothing) would say the VM runs nowhere. Plans therefore write
/// an answer on the target (migrate_from, a probe, a stop) before that node is fenced or shut down.
pub fn fragile_evidence(history: &[NodeHistory]) -> Option<usize> {
    let (source, m) = latest_migrate_to(history)?;
    let target = m.migrate_target?;
    if m.answer == Answer::Failed {
        // The VM stayed on the source: erasing the source's history loses nothing elsewhere.
        return None;
    }
    let m_time = recorded_at(history, source, m);
    let answered_since = history[target].ops.iter().any(|o| {
        o.task != Task::Other
            && (o.answer == Answer::Pending
                || recorded_after(o, m, m_time)
                || (o.task == Task::MigrateFrom
                    && o.migrate_source == Some(source)
                    && (o.last_rc_change == 0 || o.last_rc_change >= m_time)))
    });
    (!answered_since).then_some(source)
}

/// Why a plan restarts the VM (it could not keep it running).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RebootCause {
    /// The only copy ran on a node that is lost and will be fenced.
    RanOnLostNode { node: usize },
    /// The location was unknown and every node that could run it was lost (fenced) or probed.
    LostDuringMigration {
        migration: Migration,
        lost: Vec<usize>,
    },
}

impl RebootCause {
    /// The summary text, with node names.
    pub fn describe(&self, names: &[String]) -> String {
        let name = |n: usize| names.get(n).map(String::as_str).unwrap_or("?");
        match self {
            RebootCause::RanOnLostNode { node } => {
                format!("{} lost with the only copy (fenced)", name(*node))
            }
            RebootCause::LostDuringMigration { migration, lost } => {
                let lost: Vec<&str> = lost.iter().map(|&n| name(n)).collect();
                format!(
                    "{} lost during migration {} -> {} (fenced)",
                    lost.join(" "),
                    name(migration.source),
                    name(migration.target)
                )
            }
        }
    }
}

/// The plan for one atomic resource after its last migration.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub enum Decision {
    /// No open migration: the ordinary plan applies.
    Defer,
    /// Stays where it runs, nothing to do.
    Keep { node: usize },
    /// Stays where it runs; stale sources get a bookkeeping stop.
    Cleanup {
        node: Option<usize>,
        stops: Vec<usize>,
    },
    /// Confirms the migration on `target` (migrate_from), then cleans up.
    Finish {
        source: usize,
        target: usize,
        cleanup: Vec<usize>,
    },
    /// Migrates live from where it runs (back to the old source, or onward).
    Migrate {
        source: usize,
        target: usize,
        cleanup: Vec<usize>,
    },
    /// Moves by stop and start: live migration is off, or kept failing (see [`MoveCause`]).
    Move {
        source: usize,
        target: usize,
        cleanup: Vec<usize>,
        cause: MoveCause,
    },
    /// Stops where it runs (no node may keep it).
    Stop { node: usize, cleanup: Vec<usize> },
    /// It runs nowhere: starts on `target`.
    Start { target: usize, cleanup: Vec<usize> },
    /// Location unknown: fence the lost candidates, probe the others; `then` runs in the same
    /// transition only after every probe answered as expected (rc 7, not running) and every
    /// fencing completed, when that leaves one reading: it runs nowhere (start on the desired
    /// node) or only on the one candidate that had answered (what the plan for that copy is).
    /// A probe that finds the VM aborts the transition before `then`: Pacemaker's controller
    /// re-plans only on such an abort, so a plan that left `then` to a second transition would
    /// wait for `cluster-recheck-interval`.
    Probe {
        probe: Vec<usize>,
        fence: Vec<usize>,
        doubt: Doubt,
        then: Option<Box<Decision>>,
    },
    /// One candidate is left after fencing the lost ones: probe it, and start on `target` only
    /// after the probe (a probe that finds it running aborts the transition).
    ProbeThenStart {
        probe: usize,
        fence: Vec<usize>,
        target: usize,
        cause: RebootCause,
    },
    /// Live migration is impossible: fence, then start on `target` if any node may run it.
    Reboot {
        fence: Vec<usize>,
        target: Option<usize>,
        cleanup: Vec<usize>,
        cause: RebootCause,
    },
}

/// How many failed migrate_to from one node the atomic model tries before it moves the VM by stop
/// and start instead (fewer when `migration-threshold` is lower; see [`migrate_attempts_limit`]).
pub const MIGRATE_TO_ATTEMPTS: i64 = 3;

/// Why a move is a stop and a start rather than a live migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MoveCause {
    /// The resource's `allow-migrate` is off: a deliberate move, not a recovery.
    AllowMigrateOff,
    /// migrate_to from this node failed `failures` times (its fail count for migrate_to): the VM
    /// still runs there (the agent's guarantee), but trying again is not going to help.
    MigrateToFailed { failures: i64 },
    /// The copy there failed (its probe or monitor answered an error): recovered by stop and
    /// start, on the same node or where placement now wants it.
    Failed,
}

/// Whether the VM may migrate live from where it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Migratable {
    Yes,
    No(MoveCause),
}

/// The number of failed migrate_to from one node after which the model stops trying:
/// [`MIGRATE_TO_ATTEMPTS`], or the resource's `migration-threshold`
/// ([`crate::observed::Resource::migration_threshold`]) when that is lower and positive (a
/// threshold of 1 means "after one failure, go elsewhere": by stop and start).
pub fn migrate_attempts_limit(migration_threshold: i64) -> i64 {
    if migration_threshold > 0 {
        migration_threshold.min(MIGRATE_TO_ATTEMPTS)
    } else {
        MIGRATE_TO_ATTEMPTS
    }
}

/// Picks the plan for a located resource. `desired` is where placement wants it (None: nowhere);
/// `can_migrate` is false when allow-migrate is off.
pub fn decide(
    location: &Location,
    presence: &[Presence],
    desired: Option<usize>,
    can_migrate: bool,
) -> Decision {
    let migratable = if can_migrate {
        Migratable::Yes
    } else {
        Migratable::No(MoveCause::AllowMigrateOff)
    };
    decide_with(location, presence, desired, |_| migratable)
}

/// [`decide`], with live migration allowed or refused per source node (`migratable(node)`).
pub fn decide_with(
    location: &Location,
    presence: &[Presence],
    desired: Option<usize>,
    migratable: impl Fn(usize) -> Migratable,
) -> Decision {
    decide_dyn(location, presence, desired, &migratable)
}

/// [`decide_with`]'s body; not generic, so the continuation of a probe can ask it again.
fn decide_dyn(
    location: &Location,
    presence: &[Presence],
    desired: Option<usize>,
    migratable: &dyn Fn(usize) -> Migratable,
) -> Decision {
    let is = |n: usize, p: Presence| presence.get(n).copied() == Some(p);
    match location {
        Location::Settled => Decision::Defer,
        Location::Exact {
            node,
            confirm,
            cleanup,
            migration,
        } => {
            let node = *node;
            if is(node, Presence::Lost) {
                let cleanup = cleanup
                    .iter()
                    .copied()
                    .filter(|&c| Some(c) != desired)
                    .collect();
                return Decision::Reboot {
                    fence: vec![node],
                    target: desired.filter(|&d| d != node),
                    cleanup,
                    cause: RebootCause::RanOnLostNode { node },
                };
            }
            match desired {
                Some(d) if d == node => {
                    if *confirm {
                        Decision::Finish {
                            source: migration.source,
                            target: node,
                            cleanup: cleanup.clone(),
                        }
                    } else if cleanup.is_empty() {
                        Decision::Keep { node }
                    } else {
                        Decision::Cleanup {
                            node: Some(node),
                            stops: cleanup.clone(),
                        }
                    }
                }
                Some(d) => {
                    // The destination needs no cleanup: the VM goes back there.
                    let cleanup: Vec<usize> = cleanup.iter().copied().filter(|&c| c != d).collect();
                    match migratable(node) {
                        Migratable::Yes => Decision::Migrate {
                            source: node,
                            target: d,
                            cleanup,
                        },
                        Migratable::No(cause) => Decision::Move {
                            source: node,
                            target: d,
                            cleanup,
                            cause,
                        },
                    }
                }
                None => Decision::Stop {
                    node,
                    cleanup: cleanup.clone(),
                },
            }
        }
        Location::Stopped { cleanup, .. } => match desired {
            Some(d) => Decision::Start {
                target: d,
                cleanup: cleanup.iter().copied().filter(|&c| c != d).collect(),
            },
            None if cleanup.is_empty() => Decision::Cleanup {
                node: None,
                stops: Vec::new(),
            },
            None => Decision::Cleanup {
                node: None,
                stops: cleanup.clone(),
            },
        },
        Location::Unknown {
            migration,
            candidates,
            doubt,
            answered,
            cleanup,
        } => {
            // Online candidates that have not answered since the migration: the ones to probe.
            let live: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|&c| is(c, Presence::Online) && !answered.contains(&c))
                .collect();
            // Online candidates that have answered: a copy is there (running or broken), so
            // nothing may start elsewhere.
            let held = candidates
                .iter()
                .any(|&c| is(c, Presence::Online) && answered.contains(&c));
            let lost: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|&c| is(c, Presence::Lost))
                .collect();
            let cause = RebootCause::LostDuringMigration {
                migration: *migration,
                lost: lost.clone(),
            };
            // What is certain once every probe answered "not running" and every lost candidate
            // is fenced: the copies that had answered are the only ones. None: several of them
            // (the ordinary reading decides in the next plan), or nothing to do.
            let answered_online: Vec<usize> = candidates
                .iter()
                .copied()
                .filter(|&c| is(c, Presence::Online) && answered.contains(&c))
                .collect();
            let then = match answered_online.as_slice() {
                [] => desired.map(|target| Decision::Start {
                    target,
                    cleanup: cleanup.iter().copied().filter(|&c| c != target).collect(),
                }),
                [only] => Some(decide_dyn(
                    &Location::Exact {
                        migration: *migration,
                        node: *only,
                        confirm: false,
                        cleanup: cleanup.iter().copied().filter(|&c| c != *only).collect(),
                    },
                    presence,
                    desired,
                    migratable,
                )),
                _ => None,
            }
            .filter(|d| !matches!(d, Decision::Keep { .. }))
            .map(Box::new);
            match (live.as_slice(), desired) {
                // Only lost nodes are in doubt: fence them, keep the copy that answered.
                ([], _) if held => Decision::Probe {
                    probe: Vec::new(),
                    fence: lost,
                    doubt: *doubt,
                    then,
                },
                ([], _) => Decision::Reboot {
                    fence: lost,
                    target: desired,
                    cleanup: Vec::new(),
                    cause,
                },
                ([only], Some(target)) if !lost.is_empty() && !held => Decision::ProbeThenStart {
                    probe: *only,
                    fence: lost,
                    target,
                    cause,
                },
                _ => Decision::Probe {
                    probe: live,
                    fence: lost,
                    doubt: *doubt,
                    then,
                },
            }
        }
    }
}

/// One action of an expanded plan, in Pacemaker's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[allow(missing_docs)] // white-box item of `pengine::unstable`, not API
pub enum Step {
    Fence(usize),
    /// A one-off monitor (rc 7 expected: a running VM aborts the transition).
    Probe(usize),
    MigrateTo {
        source: usize,
        target: usize,
    },
    MigrateFrom {
        source: usize,
        target: usize,
    },
    Stop(usize),
    /// The stop that fencing implies (a pseudo action).
    ImpliedStop(usize),
    /// The pseudo start that ends a migration.
    PseudoStart(usize),
    Start(usize),
}

/// An expanded plan: steps and "first -> then" orderings between them (indices into `steps`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[allow(missing_docs)] // white-box item of `pengine::unstable`, not API
pub struct Steps {
    pub steps: Vec<Step>,
    pub edges: Vec<(usize, usize)>,
}

impl Steps {
    fn add(&mut self, step: Step) -> usize {
        if let Some(i) = self.steps.iter().position(|s| *s == step) {
            return i;
        }
        self.steps.push(step);
        self.steps.len() - 1
    }

    fn order(&mut self, first: usize, then: usize) {
        if first != then && !self.edges.contains(&(first, then)) {
            self.edges.push((first, then));
        }
    }

    /// A stop of `node` that cleans up a stale record: real on a member, implied by fencing on
    /// a lost node, nothing on a node that is down. Returns the step that completes it.
    fn cleanup_stop(&mut self, node: usize, presence: &[Presence]) -> Option<usize> {
        match presence.get(node).copied() {
            Some(Presence::Online) => Some(self.add(Step::Stop(node))),
            Some(Presence::Lost) => {
                let f = self.add(Step::Fence(node));
                let s = self.add(Step::ImpliedStop(node));
                self.order(f, s);
                Some(s)
            }
            _ => None,
        }
    }

    fn fence_and_implied_stop(&mut self, node: usize) -> usize {
        let f = self.add(Step::Fence(node));
        let s = self.add(Step::ImpliedStop(node));
        self.order(f, s);
        s
    }
}

impl Decision {
    /// True when the plan starts the VM afresh (a reboot), as opposed to keeping it running.
    pub fn reboots(&self) -> bool {
        matches!(
            self,
            Decision::ProbeThenStart { .. }
                | Decision::Reboot {
                    target: Some(_),
                    ..
                }
        )
    }

    /// Expands the decision into actions and orderings.
    pub fn steps(&self, presence: &[Presence]) -> Steps {
        let mut p = Steps::default();
        match self {
            Decision::Defer | Decision::Keep { .. } => {}
            Decision::Cleanup { stops, .. } => {
                for &c in stops {
                    p.cleanup_stop(c, presence);
                }
            }
            Decision::Finish {
                source,
                target,
                cleanup,
            } => {
                let mf = p.add(Step::MigrateFrom {
                    source: *source,
                    target: *target,
                });
                let start = p.add(Step::PseudoStart(*target));
                p.order(mf, start);
                for &c in cleanup {
                    if let Some(s) = p.cleanup_stop(c, presence) {
                        p.order(mf, s);
                        p.order(s, start);
                    }
                }
            }
            Decision::Migrate {
                source,
                target,
                cleanup,
            } => {
                let (source, target) = (*source, *target);
                let mt = p.add(Step::MigrateTo { source, target });
                let mf = p.add(Step::MigrateFrom { source, target });
                let stop = p.add(Step::Stop(source));
                let start = p.add(Step::PseudoStart(target));
                p.order(mt, mf);
                p.order(mf, stop);
                p.order(mf, start);
                p.order(stop, start);
                for &c in cleanup {
                    if let Some(s) = p.cleanup_stop(c, presence) {
                        p.order(s, start);
                    }
                }
            }
            Decision::Move {
                source,
                target,
                cleanup,
                ..
            } => {
                let stop = p.add(Step::Stop(*source));
                let start = p.add(Step::Start(*target));
                p.order(stop, start);
                for &c in cleanup {
                    if let Some(s) = p.cleanup_stop(c, presence) {
                        p.order(s, start);
                    }
                }
            }
            Decision::Stop { node, cleanup } => {
                p.add(Step::Stop(*node));
                for &c in cleanup {
                    p.cleanup_stop(c, presence);
                }
            }
            Decision::Start { target, cleanup } => {
                let start = p.add(Step::Start(*target));
                for &c in cleanup {
                    if let Some(s) = p.cleanup_stop(c, presence) {
                        p.order(s, start);
                    }
                }
            }
            Decision::Probe {
                probe, fence, then, ..
            } => {
                let mut firsts = Vec::new();
                for &f in fence {
                    firsts.push(p.add(Step::Fence(f)));
                }
                for &n in probe {
                    firsts.push(p.add(Step::Probe(n)));
                }
                if let Some(then) = then {
                    let sub = then.steps(presence);
                    let at: Vec<usize> = sub.steps.iter().map(|&s| p.add(s)).collect();
                    for &(a, b) in &sub.edges {
                        p.order(at[a], at[b]);
                    }
                    for &f in &firsts {
                        for &t in &at {
                            if !firsts.contains(&t) {
                                p.order(f, t);
                            }
                        }
                    }
                }
            }
            Decision::ProbeThenStart {
                probe,
                fence,
                target,
                ..
            } => {
                let mut firsts = Vec::new();
                for &f in fence {
                    firsts.push(p.fence_and_implied_stop(f));
                }
                firsts.push(p.add(Step::Probe(*probe)));
                let start = p.add(Step::Start(*target));
                for f in firsts {
                    p.order(f, start);
                }
            }
            Decision::Reboot {
                fence,
                target,
                cleanup,
                ..
            } => {
                let mut firsts = Vec::new();
                for &f in fence {
                    firsts.push(p.fence_and_implied_stop(f));
                }
                for &c in cleanup {
                    if let Some(s) = p.cleanup_stop(c, presence) {
                        firsts.push(s);
                    }
                }
                if let Some(t) = target {
                    let start = p.add(Step::Start(*t));
                    for f in firsts {
                        p.order(f, start);
                    }
                }
            }
        }
        p
    }
}

/// A one-line account of a location, with node names (for summaries and `explain`).
pub fn describe_location(location: &Location, names: &[String]) -> String {
    let name = |n: usize| names.get(n).map(String::as_str).unwrap_or("?");
    match location {
        Location::Settled => "no open migration".to_string(),
        Location::Exact {
            migration,
            node,
            confirm,
            ..
        } => {
            if *confirm {
                format!(
                    "runs on {} (migrate_to from {} succeeded; confirmation pending)",
                    name(*node),
                    name(migration.source)
                )
            } else {
                format!("runs on {}", name(*node))
            }
        }
        Location::Unknown {
            candidates, doubt, ..
        } => {
            let c: Vec<&str> = candidates.iter().map(|&n| name(n)).collect();
            match c.as_slice() {
                [one] => format!("unknown: on {one} or nowhere ({})", doubt.text()),
                _ => format!("unknown between {} ({})", c.join(" and "), doubt.text()),
            }
        }
        Location::Stopped { migration, .. } => format!(
            "runs nowhere (stopped since migration {} -> {})",
            name(migration.source),
            name(migration.target)
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Pipeline hooks: the adapters between the pipeline's types and the model above. Each is called
// once from `crate::schedule` (after `observed`, after `reconcile`, after `actions`) and from the
// summary renderer; they touch only resources whose model is `atomic` and whose last migration is
// still open, so two-phase output (Pacemaker's) is unchanged.
// ---------------------------------------------------------------------------------------------

use crate::actions::{Action, Kind, Plan, Rel};
use crate::cib::Cib;
use crate::graph::{EventKind, TransitionGraph};
use crate::observed::{Observed, Role, lrm_histories};
use crate::placement::Desired;
use crate::reconcile::{Change, Reconciliation};

/// One atomic resource with an open migration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AtomicEntry {
    /// Index into `Observed::resources`.
    pub rsc: usize,
    pub location: Location,
    /// Filled by [`reconcile`].
    pub decision: Option<Decision>,
    /// Nodes the decision needs fenced that the cluster cannot fence (the plan then waits).
    pub cannot_fence: Vec<usize>,
    /// See [`fragile_evidence`]: the source whose fencing or shutdown waits for the target's answer.
    pub fragile_source: Option<usize>,
    /// Where placement wants the VM when [`confirm_before_erasing`] put the move off to the next
    /// transition (filled by [`reconcile`]; for the summary).
    pub deferred_to: Option<usize>,
    /// Nodes whose newest entry is a failed probe or monitor: a broken copy is there, which the
    /// ordinary recovery handles, not a probe's continuation.
    pub broken: Vec<usize>,
}

/// The atomic model's view of one scheduler run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AtomicView {
    pub entries: Vec<AtomicEntry>,
    /// Invalid `migration-model` values; those resources keep the two-phase model.
    pub errors: Vec<AtomicError>,
}

/// Each node's presence, as the model sees it.
pub fn presence_of(obs: &Observed) -> Vec<Presence> {
    obs.nodes
        .iter()
        .map(|n| {
            if n.unclean {
                Presence::Lost
            } else if n.online {
                Presence::Online
            } else {
                Presence::Down
            }
        })
        .collect()
}

/// One resource's history on every node (indices as in `obs.nodes`), from the CIB status.
pub fn history_for(cib: &Cib, obs: &Observed, rsc_id: &str) -> Vec<NodeHistory> {
    let presence = presence_of(obs);
    let mut history: Vec<NodeHistory> = presence
        .iter()
        .map(|&presence| NodeHistory {
            presence,
            ops: Vec::new(),
        })
        .collect();
    let node_of = |name: &str| obs.nodes.iter().position(|n| n.uname == name);
    for (ni, lr) in lrm_histories(cib, &obs.nodes).filter(|(_, lr)| lr.id == rsc_id) {
        for op in &lr.ops {
            let record = OpRecord {
                task: Task::parse(&op.operation),
                call_id: op.call_id,
                answer: Answer::from_status(op.op_status, op.rc_code),
                migrate_source: op.migrate_source.as_deref().and_then(node_of),
                migrate_target: op.migrate_target.as_deref().and_then(node_of),
                last_rc_change: op.last_rc_change.unwrap_or(0),
                transition: op.transition_key.as_deref().and_then(TransitionId::parse),
            };
            // `_last_failure_0` repeats an entry that is already there.
            if !history[ni].ops.contains(&record) {
                history[ni].ops.push(record);
            }
        }
    }
    history
}

/// Recurring monitors of a resource that a later migrate_to or migrate_from cancelled: the
/// controller cancels a resource's recurring operations before it runs any other non-recurring
/// action on that node, while their history entries stay in the CIB. Pacemaker's reading does not
/// notice, because it recovers a failed migration anyway; the atomic model keeps the VM where a
/// failed migrate_to left it, so it must start those monitors again. Returns (node, interval).
pub fn cancelled_monitors(cib: &Cib, obs: &Observed, rsc_id: &str) -> Vec<(usize, u64)> {
    let key = |call_id: i64| if call_id < 0 { i64::MAX } else { call_id };
    let mut out = Vec::new();
    for (ni, lr) in lrm_histories(cib, &obs.nodes).filter(|(_, lr)| lr.id == rsc_id) {
        let Some(migrated) = lr
            .ops
            .iter()
            .filter(|o| o.operation == "migrate_to" || o.operation == "migrate_from")
            .map(|o| key(o.call_id))
            .max()
        else {
            continue;
        };
        for o in &lr.ops {
            if o.operation == "monitor"
                && o.interval_ms > 0
                && key(o.call_id) < migrated
                && !out.contains(&(ni, o.interval_ms))
            {
                out.push((ni, o.interval_ms));
            }
        }
    }
    out.sort_unstable();
    out
}

/// Hook after `observed`: finds the atomic resources with an open migration and rewrites their
/// observed state to the exact one (running on one node, a confirmation pending), or marks the
/// location unknown (live candidates lose their "known" state, so they are probed).
pub fn observe(cib: &Cib, obs: &mut Observed) -> AtomicView {
    let mut view = AtomicView::default();
    for ri in 0..obs.resources.len() {
        let r = &obs.resources[ri];
        if r.orphan || r.is_stonith() {
            continue;
        }
        let model = match model_for(
            &r.id,
            &r.class,
            r.provider.as_deref(),
            &r.kind,
            r.meta.get(MIGRATION_MODEL_META).map(String::as_str),
        ) {
            Ok(m) => m,
            Err(e) => {
                view.errors.push(e);
                MigrationModel::TwoPhase
            }
        };
        if model != MigrationModel::Atomic {
            continue;
        }
        let history = history_for(cib, obs, &r.id);
        let location = locate(&history);
        if location == Location::Settled {
            // A migrate_to or migrate_from cancelled the recurring monitors on its node even
            // when both ends answered since (a killed migrate_to that left the VM where it
            // was): start them again, or nothing watches the VM (random sim seeds 1148874253,
            // 892025215: vm-lost).
            let cancelled = cancelled_monitors(cib, obs, &r.id);
            obs.resources[ri]
                .recurring
                .retain(|a| !cancelled.contains(&(a.node, a.interval_ms)));
            // Both ends answered after the last migration; but Pacemaker's reading of an older
            // migrate_to (one there and back within a second, seeds 40023 and 40101) may still
            // count a node whose own newest entry says the VM is not there (a stop, a probe
            // that found nothing, a migrate_to away, all truthful for this agent): drop it, or
            // the plan stops the only copy together with the phantom one and restarts it.
            if latest_migrate_to(&history).is_some() {
                let gone = |n: usize| {
                    history.get(n).is_some_and(|h| {
                        h.ops
                            .iter()
                            .filter_map(|o| own_state(o).map(|s| (call_key(o), s)))
                            .max_by_key(|(k, _)| *k)
                            .is_some_and(|(_, s)| matches!(s, Seen::NotRunning { .. }))
                    })
                };
                // Pacemaker's reading stops migrating live after any failed migration; for
                // a healthy copy the atomic model's own limit decides (see `reconcile`), or a
                // killed migrate_to would turn the next move into a stop and a start.
                let r = &obs.resources[ri];
                if r.migratable_cleared && !r.failed {
                    let limit = migrate_attempts_limit(r.migration_threshold());
                    let cleared = r
                        .running_on
                        .iter()
                        .any(|&n| migrate_to_failures(obs, ri, n) >= limit);
                    obs.resources[ri].migratable_cleared = cleared;
                }
                let r = &mut obs.resources[ri];
                let before = r.running_on.len();
                r.running_on.retain(|&n| !gone(n));
                if r.running_on.len() < before {
                    r.dangling_sources.retain(|&n| !gone(n));
                    r.stops_forced.retain(|&n| !gone(n));
                    if r.running_on.is_empty() {
                        r.role = Role::Stopped;
                    }
                }
            }
            continue;
        }
        let presence = presence_of(obs);
        let cancelled = cancelled_monitors(cib, obs, &r.id);
        let r = &mut obs.resources[ri];
        r.recurring
            .retain(|a| !cancelled.contains(&(a.node, a.interval_ms)));
        // Pacemaker's reading of the same history (failed on both, forced stops) no longer applies.
        r.failed = false;
        r.stop_flag = false;
        r.migratable_cleared = false;
        r.stops_forced.clear();
        r.pending_migrate_to.clear();
        r.partial_migration = None;
        r.dangling_sources.clear();
        if r.pending_task
            .as_ref()
            .is_some_and(|(task, _)| task.starts_with("migrate_"))
        {
            r.pending_task = None;
        }
        match &location {
            Location::Settled => {}
            Location::Exact {
                migration,
                node,
                confirm,
                ..
            } => {
                r.running_on = vec![*node];
                r.role = Role::Started;
                r.known_on.insert(*node);
                if *confirm {
                    r.partial_migration = Some((migration.source, *node));
                }
            }
            Location::Unknown {
                candidates,
                answered,
                ..
            } => {
                // A copy on a lost node dies with the fencing (an implied stop), a copy that
                // answered is where it said; the other live candidates are probed before
                // anything else.
                r.running_on = candidates
                    .iter()
                    .copied()
                    .filter(|&c| presence.get(c) == Some(&Presence::Lost) || answered.contains(&c))
                    .collect();
                r.role = if r.running_on.is_empty() {
                    Role::Stopped
                } else {
                    Role::Started
                };
                for c in candidates {
                    if presence.get(*c) == Some(&Presence::Online) && !answered.contains(c) {
                        r.known_on.remove(c);
                    }
                }
            }
            Location::Stopped { .. } => {
                r.running_on.clear();
                r.role = Role::Stopped;
            }
        }
        view.entries.push(AtomicEntry {
            rsc: ri,
            location,
            decision: None,
            cannot_fence: Vec::new(),
            fragile_source: fragile_evidence(&history),
            deferred_to: None,
            broken: (0..history.len())
                .filter(|&n| {
                    history[n]
                        .ops
                        .iter()
                        .max_by_key(|o| call_key(o))
                        .is_some_and(|o| o.task == Task::Monitor && o.answer == Answer::Failed)
                })
                .collect(),
        });
    }
    view
}

/// The resource's fail count for migrate_to on a node (Pacemaker's `fail-count-<rsc>#migrate_to_0`
/// node attribute), 0 when it has expired (failure-timeout: the fail count is being cleared).
fn migrate_to_failures(obs: &Observed, ri: usize, node: usize) -> i64 {
    let r = &obs.resources[ri];
    if r.clear_failcount_on.contains(&node) {
        return 0;
    }
    let key = format!("fail-count-{}#migrate_to_0", r.id);
    obs.nodes
        .get(node)
        .and_then(|n| n.attrs.get(&key))
        .and_then(|v| crate::cib::parse_score(v))
        .unwrap_or(0)
        .max(0)
}

/// The nodes a decision needs fenced: those it fences, and the lost nodes of its bookkeeping
/// stops (a stop on a lost node is its fencing). The record that says the VM left such a node may
/// be all that is left of a newer move towards it (soak seed 1796074916209987: two VMs migrating
/// in opposite directions between node1 and node3, both lost; fencing node3 first erased vm1's
/// record of its move to node1, and the next plan, below quorum, started vm1 elsewhere while node1
/// ran it), so a plan that cannot fence them waits.
fn fences_needed(decision: &Decision, presence: &[Presence]) -> Vec<usize> {
    let mut needed = match decision {
        Decision::Probe { fence, .. }
        | Decision::ProbeThenStart { fence, .. }
        | Decision::Reboot { fence, .. } => fence.clone(),
        _ => Vec::new(),
    };
    for c in extra_cleanup(decision) {
        if presence.get(c) == Some(&Presence::Lost) && !needed.contains(&c) {
            needed.push(c);
        }
    }
    needed
}

/// Hook after `reconcile`: decides each open migration and sets the resource's change (and its
/// probes) so the ordinary action builder produces the plan.
pub fn reconcile(
    view: &mut AtomicView,
    obs: &Observed,
    desired: &Desired,
    rec: &mut Reconciliation,
) {
    let presence = presence_of(obs);
    for e in &mut view.entries {
        let ri = e.rsc;
        if ri >= rec.changes.len() || desired.unmanaged.get(ri).copied().unwrap_or(true) {
            continue;
        }
        let r = &obs.resources[ri];
        let allow_migrate = r.meta_bool("allow-migrate", false);
        let limit = migrate_attempts_limit(r.migration_threshold());
        // Without quorum (no-quorum-policy stop) a copy that runs is stopped, as the ordinary
        // reading stops it ("due to no quorum"), not migrated or recovered (seed 40673 migrated
        // two VMs below quorum and the next plan stopped both); a stopped one's start is blocked
        // (see `change_of`).
        let quorum = crate::reconcile::quorum_block(obs, ri);
        let placed = desired
            .assigned
            .get(ri)
            .copied()
            .flatten()
            .filter(|_| quorum.is_none() || matches!(e.location, Location::Stopped { .. }));
        let decision = decide_with(&e.location, &presence, placed, |node| {
            if !allow_migrate {
                return Migratable::No(MoveCause::AllowMigrateOff);
            }
            let failures = migrate_to_failures(obs, ri, node);
            if failures >= limit {
                Migratable::No(MoveCause::MigrateToFailed { failures })
            } else {
                Migratable::Yes
            }
        });
        // A clean shutdown of the source waits for the onward migration's answers instead (see
        // `amend_graph`; scenario 14): only fencing races them.
        let fenced = |n: usize| {
            presence.get(n) == Some(&Presence::Lost) || rec.fence.iter().any(|(f, _)| *f == n)
        };
        let wanted = match &decision {
            Decision::Migrate { target, .. } | Decision::Move { target, .. } => Some(*target),
            _ => None,
        };
        let decision = confirm_before_erasing(decision, &e.location, e.fragile_source, fenced);
        // A broken copy that answered is recovered once the probes have settled the rest: the
        // continuation stops it and starts the VM where placement wants it (never migrates it
        // live), in the same transition as Pacemaker's recovery. A continuation that left it to
        // the ordinary reading of a later plan waited for cluster-recheck-interval, the probes'
        // expected answers aborting nothing (cts-sim seeds 40443, 40025, 40033: 24 of the 37
        // stalls in 40000..41500).
        let decision = match decision {
            Decision::Probe {
                probe,
                fence,
                doubt,
                then,
            } => {
                let answered_online: Vec<usize> = match &e.location {
                    Location::Unknown { answered, .. } => answered
                        .iter()
                        .copied()
                        .filter(|&a| presence.get(a) == Some(&Presence::Online))
                        .collect(),
                    _ => Vec::new(),
                };
                let then = match answered_online.as_slice() {
                    [b] if e.broken.contains(b) => {
                        // Without quorum (policy stop) it is only stopped.
                        Some(Box::new(recover_broken(*b, placed)))
                    }
                    _ if answered_online.iter().any(|a| e.broken.contains(a)) => None,
                    _ => then,
                };
                Decision::Probe {
                    probe,
                    fence,
                    doubt,
                    then,
                }
            }
            d => d,
        };
        e.deferred_to = wanted.filter(|_| matches!(decision, Decision::Finish { .. }));
        if let Decision::Finish { target, .. } = &decision {
            // The copy stays on the target this transition: the target does not shut down under it.
            if e.fragile_source.is_some() {
                rec.shutdown.retain(|n| n != target);
            }
        }
        e.cannot_fence = fences_needed(&decision, &presence)
            .into_iter()
            .filter(|n| !rec.fence.iter().any(|(f, _)| f == n))
            .collect();
        let change = if !e.cannot_fence.is_empty() {
            // Nothing is safe until the lost node is fenced: wait.
            Change::Keep
        } else {
            let reason = || {
                if let Some(q) = &quorum {
                    return q.clone();
                }
                desired
                    .unplaced_reason
                    .get(ri)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| "node availability".into())
            };
            change_of(&decision, &rec.changes[ri], reason, quorum.clone())
        };
        rec.changes[ri] = change;
        let probes: Vec<usize> = match &decision {
            Decision::Probe { probe, .. } if e.cannot_fence.is_empty() => probe.clone(),
            Decision::ProbeThenStart { probe, .. } if e.cannot_fence.is_empty() => vec![*probe],
            _ => Vec::new(),
        };
        for n in probes {
            if !rec.probes.contains(&(ri, n)) {
                rec.probes.push((ri, n));
            }
        }
        // While the other candidates are probed, a copy that answered stays where it is: its node
        // may not shut down under it (seed 40509), unless the continuation takes it away (then
        // `amend_graph` orders the shutdown after that stop or migration; seed 40019 recovered a
        // broken copy and left the shutdown to the recheck timer).
        if let (Decision::Probe { then, .. }, Location::Unknown { answered, .. }) =
            (&decision, &e.location)
        {
            let leaves = |n: usize| match then.as_deref() {
                Some(
                    Decision::Move { source, target, .. }
                    | Decision::Migrate { source, target, .. },
                ) => *source == n && *target != n,
                Some(Decision::Stop { node, .. }) => *node == n,
                _ => false,
            };
            rec.shutdown.retain(|&n| {
                !(answered.contains(&n) && presence.get(n) == Some(&Presence::Online)) || leaves(n)
            });
        }
        e.decision = Some(decision);
    }
    // Fencing is serialised in the order of `rec.fence`: a migration's target comes before its
    // fragile source (see `amend_graph`), whose fencing erases the record of the move.
    for e in &view.entries {
        let (Some(source), Some(target)) = (
            e.fragile_source,
            migration_of(&e.location).map(|m| m.target),
        ) else {
            continue;
        };
        let at = |n: usize| rec.fence.iter().position(|(f, _)| *f == n);
        if let (Some(si), Some(ti)) = (at(source), at(target)) {
            if si < ti {
                let entry = rec.fence.remove(si);
                rec.fence.insert(ti, entry);
            }
        }
    }
}

/// The continuation of a probe for the one copy that answered and is broken (its newest entry a
/// failed probe or monitor): stop it, and start the VM on `desired` (the same node or another;
/// none: it stays stopped).
fn recover_broken(node: usize, desired: Option<usize>) -> Decision {
    match desired {
        Some(target) => Decision::Move {
            source: node,
            target,
            cleanup: Vec::new(),
            cause: MoveCause::Failed,
        },
        None => Decision::Stop {
            node,
            cleanup: Vec::new(),
        },
    }
}

/// The resource's change for a decision (`ordinary`: the change the ordinary reading made, kept
/// for `Defer`; `reason`: why a stop, when placement left it nowhere). A probe's change is its
/// continuation's, whose actions `amend_graph` orders after the probes and fencing.
/// `blocked`: why a start may not happen now (no quorum, see `reconcile::quorum_block`): a start
/// is then blocked as the ordinary reading blocks it (seed 40181 started a VM without quorum, and
/// the next plan stopped it again, "due to no quorum").
fn change_of(
    decision: &Decision,
    ordinary: &Change,
    reason: impl Fn() -> String,
    blocked: Option<String>,
) -> Change {
    match decision {
        Decision::Defer => ordinary.clone(),
        Decision::Keep { .. } | Decision::Cleanup { .. } | Decision::Probe { then: None, .. } => {
            Change::Keep
        }
        Decision::Probe {
            then: Some(then), ..
        } => change_of(then, ordinary, reason, blocked),
        Decision::Finish { source, target, .. } => Change::Migrate {
            source: *source,
            target: *target,
        },
        Decision::Migrate { source, target, .. } => Change::Migrate {
            source: *source,
            target: *target,
        },
        Decision::Move {
            source,
            target,
            cause: MoveCause::Failed,
            ..
        } => Change::Recover {
            source: *source,
            target: *target,
            stops: vec![*source],
        },
        Decision::Move { source, target, .. } => Change::Move {
            source: *source,
            target: *target,
            stops: vec![*source],
        },
        Decision::Stop { node, .. } => Change::Stop {
            sources: vec![*node],
            reason: Some(reason()),
            blocked: false,
        },
        Decision::Start { target, .. } => Change::Start {
            target: *target,
            blocked,
        },
        Decision::ProbeThenStart { fence, target, .. } => Change::Recover {
            source: fence.first().copied().unwrap_or(*target),
            target: *target,
            stops: fence.clone(),
        },
        Decision::Reboot {
            fence,
            target: Some(target),
            ..
        } => Change::Recover {
            source: fence.first().copied().unwrap_or(*target),
            target: *target,
            stops: fence.clone(),
        },
        Decision::Reboot {
            fence,
            target: None,
            ..
        } => Change::Stop {
            sources: fence.clone(),
            reason: Some("node availability".into()),
            blocked: false,
        },
    }
}

/// A move onward from a migration's target waits one transition when the migration's source holds
/// the only record of the move and this transition fences that source (`fenced(source)`), which
/// erases the record: the plan confirms the migration on the target first (migrate_from, which
/// the fencing waits for), and moves it on once the target has recorded it.
/// An onward migration in the same transition raced the fencing: its migrate_to could not be
/// ordered before the fencing without a cycle, the fencing went first, and the next plan,
/// finding no record anywhere, started the VM a second time (cts-sim seeds 40045 and
/// 1796061061167805).
pub fn confirm_before_erasing(
    decision: Decision,
    location: &Location,
    fragile_source: Option<usize>,
    fenced: impl Fn(usize) -> bool,
) -> Decision {
    let Location::Exact {
        node,
        confirm: true,
        cleanup,
        migration,
    } = location
    else {
        return decision;
    };
    let onward = match &decision {
        Decision::Migrate { source, .. } | Decision::Move { source, .. } => source == node,
        _ => false,
    };
    if onward && fragile_source == Some(migration.source) && fenced(migration.source) {
        Decision::Finish {
            source: migration.source,
            target: *node,
            cleanup: cleanup.clone(),
        }
    } else {
        decision
    }
}

/// The migration a location was read from.
fn migration_of(location: &Location) -> Option<Migration> {
    match location {
        Location::Exact { migration, .. }
        | Location::Unknown { migration, .. }
        | Location::Stopped { migration, .. } => Some(*migration),
        Location::Settled => None,
    }
}

/// The stale sources a decision cleans up beyond what its migration's own stop covers.
fn extra_cleanup(decision: &Decision) -> Vec<usize> {
    match decision {
        Decision::Finish {
            source, cleanup, ..
        } => cleanup.iter().copied().filter(|c| c != source).collect(),
        Decision::Migrate {
            source, cleanup, ..
        }
        | Decision::Move {
            source, cleanup, ..
        } => cleanup.iter().copied().filter(|c| c != source).collect(),
        Decision::Cleanup { stops, .. } => stops.clone(),
        Decision::Stop { node, cleanup } => cleanup.iter().copied().filter(|c| c != node).collect(),
        Decision::Start { cleanup, .. } | Decision::Reboot { cleanup, .. } => cleanup.clone(),
        // The continuation's stale sources, stopped once the probes answered (`amend_graph`).
        Decision::Probe {
            then: Some(then), ..
        } => extra_cleanup(then),
        _ => Vec::new(),
    }
}

/// Hook after `actions`: adds the bookkeeping stops on stale sources (nodes a successful
/// migrate_to left), ordered before the resource's start or migration, and after fencing when
/// the node is lost.
pub fn amend_plan(view: &AtomicView, obs: &Observed, rec: &Reconciliation, plan: &mut Plan) {
    let presence = presence_of(obs);
    for e in &view.entries {
        let Some(decision) = &e.decision else {
            continue;
        };
        if !e.cannot_fence.is_empty() {
            continue;
        }
        let ri = e.rsc;
        let starts = plan.starts(ri);
        // A migration whose source is lost: its stop there waits for the fencing.
        if let Decision::Finish { source, .. } = decision {
            if presence.get(*source) == Some(&Presence::Lost) {
                let fence = plan
                    .actions
                    .iter()
                    .position(|a| a.kind == Kind::Fence && a.node == Some(*source));
                if let Some(f) = fence {
                    for &s in &starts {
                        plan.edges.push((f, s, Rel::Stop));
                    }
                }
            }
        }
        for c in extra_cleanup(decision) {
            let lost = presence.get(c) == Some(&Presence::Lost);
            if presence.get(c) == Some(&Presence::Down) {
                continue;
            }
            let exists = plan
                .actions
                .iter()
                .any(|a| a.rsc == Some(ri) && a.node == Some(c) && a.kind == Kind::Stop);
            // A lost node's stop is implied by its fencing: without the fencing in this plan (no
            // quorum), the pseudo stop would be planned again every transition (soak seed
            // 1796073767207431: 41 transitions of one pseudo action, never idle).
            let fenced = plan
                .actions
                .iter()
                .any(|a| a.kind == Kind::Fence && a.node == Some(c));
            if exists || (lost && !fenced) {
                continue;
            }
            plan.actions.push(Action {
                pseudo: lost,
                ..crate::actions::act(Kind::Stop, Some(ri), Some(c))
            });
            let stop = plan.actions.len() - 1;
            if lost {
                let fence = plan
                    .actions
                    .iter()
                    .position(|a| a.kind == Kind::Fence && a.node == Some(c));
                if let Some(f) = fence {
                    plan.edges.push((f, stop, Rel::Plain));
                }
            }
            for &s in &starts {
                plan.edges.push((stop, s, Rel::Plain));
            }
        }
        let _ = rec;
    }
}

/// Whether `to` is reachable from `from` along the graph's edges.
fn reaches(g: &TransitionGraph, from: usize, to: usize) -> bool {
    let mut seen = vec![false; g.actions.len()];
    let mut stack = vec![from];
    while let Some(a) = stack.pop() {
        if a == to {
            return true;
        }
        if std::mem::replace(&mut seen[a], true) {
            continue;
        }
        stack.extend(g.edges.iter().filter(|e| e.0 == a).map(|e| e.1));
    }
    false
}

/// Adds "first before then" to an expanded graph (edge and synapse input), unless either action
/// is unrunnable or the edge would close a cycle. Returns whether it was added.
fn order_in_graph(g: &mut TransitionGraph, first: usize, then: usize) -> bool {
    if first == then
        || !g.actions[first].runnable
        || !g.actions[then].runnable
        || g.edges.contains(&(first, then))
        || reaches(g, then, first)
    {
        return false;
    }
    g.edges.push((first, then));
    if let Some(s) = g.synapses.iter_mut().find(|s| s.action == then) {
        if !s.inputs.contains(&first) {
            s.inputs.push(first);
            s.inputs.sort_unstable();
        }
    }
    true
}

/// Hook after `graph::expand`: nothing erases the record of where an atomic VM is before the plan
/// has written a newer one.
/// - A node's clean shutdown (`do_shutdown`) erases its history: it waits for every action of the
///   resource on that node (a probe that may find the VM there, a bookkeeping stop), and, when the
///   node is the migration's fragile source (see [`fragile_evidence`]), for the resource's actions
///   on the other nodes too (the migrate_from, probe or stop that records the VM's whereabouts).
/// - Fencing the fragile source erases its history as well: it waits for the resource's
///   migrate_from, probes and stops on the other nodes.
///
/// Orderings that would close a cycle are left out (the graph stays acyclic).
pub fn amend_graph(view: &AtomicView, g: &mut TransitionGraph) {
    for e in &view.entries {
        if e.decision.is_none() || !e.cannot_fence.is_empty() {
            continue;
        }
        let writes_answer = |a: &crate::graph::GraphAction| {
            a.rsc == Some(e.rsc)
                && a.runnable
                && a.event == EventKind::RscOp
                && a.interval_ms == 0
                && matches!(
                    a.task.as_str(),
                    "monitor" | "stop" | "migrate_to" | "migrate_from"
                )
        };
        let answers: Vec<usize> = (0..g.actions.len())
            .filter(|&i| writes_answer(&g.actions[i]))
            .collect();
        let cluster_action = |g: &TransitionGraph, task: &str, node: usize| {
            (0..g.actions.len())
                .find(|&i| g.actions[i].task == task && g.actions[i].node == Some(node))
        };
        for &a in &answers {
            let Some(node) = g.actions[a].node else {
                continue;
            };
            if let Some(sd) = cluster_action(g, "do_shutdown", node) {
                order_in_graph(g, a, sd);
            }
        }
        // While candidates are in doubt, their fencing and their probes are what settle it: the
        // recurring monitor of a copy that answered waits for them. A broken copy's monitor fails
        // at once and aborts the transition; fired first, it aborted every transition before the
        // fencing (soak seed 1796059824169465) or the other candidate's probe (seed 425020044):
        // liveness.
        if let Some(Decision::Probe {
            probe, fence, then, ..
        }) = &e.decision
        {
            // With a continuation, every action of the resource but the probes waits for them
            // too: it is planned for "found nowhere else", which only their answers make true.
            let monitors: Vec<usize> = (0..g.actions.len())
                .filter(|&i| {
                    let a = &g.actions[i];
                    a.rsc == Some(e.rsc)
                        && a.event == EventKind::RscOp
                        && ((a.task == "monitor" && a.interval_ms > 0)
                            || (then.is_some() && a.task != "monitor"))
                })
                .collect();
            let mut settles: Vec<usize> = fence
                .iter()
                .filter_map(|&f| cluster_action(g, "stonith", f))
                .collect();
            settles.extend((0..g.actions.len()).filter(|&i| {
                let a = &g.actions[i];
                a.rsc == Some(e.rsc)
                    && a.event == EventKind::RscOp
                    && a.task == "monitor"
                    && a.interval_ms == 0
                    && a.node.is_some_and(|n| probe.contains(&n))
            }));
            for &first in &settles {
                for &m in &monitors {
                    order_in_graph(g, first, m);
                }
            }
            // The source's probe first: the agent's per-resource lock holds it until a migration
            // job still in flight there has ended, so the target's probe, after it, cannot miss a
            // VM that arrives late (both answering "not running" would let the continuation
            // start it a second time).
            if let Some(m) = migration_of(&e.location) {
                let probe_on = |g: &TransitionGraph, n: usize| {
                    (0..g.actions.len()).find(|&i| {
                        let a = &g.actions[i];
                        a.rsc == Some(e.rsc)
                            && a.event == EventKind::RscOp
                            && a.task == "monitor"
                            && a.interval_ms == 0
                            && a.node == Some(n)
                    })
                };
                if let (Some(ps), Some(pt)) = (probe_on(g, m.source), probe_on(g, m.target)) {
                    order_in_graph(g, ps, pt);
                }
            }
        }
        let Some(source) = e.fragile_source else {
            continue;
        };
        // A target that must be fenced (lost, or unclean after a failed stop) answers only by its
        // fencing, which destroys any copy there: the source's fencing and its clean shutdown,
        // which erase the record of the move, wait for it (soak seeds 1796059824164228 and
        // 1796059824168492: the source left first, and the next plan started the VM elsewhere
        // while the unfenced target ran it).
        let target = migration_of(&e.location).map(|m| m.target);
        if let Some(fence_target) = target.and_then(|t| cluster_action(g, "stonith", t)) {
            for task in ["stonith", "do_shutdown"] {
                if let Some(erases) = cluster_action(g, task, source) {
                    order_in_graph(g, fence_target, erases);
                }
            }
        }
        for &a in &answers {
            if let Some(sd) = cluster_action(g, "do_shutdown", source) {
                order_in_graph(g, a, sd);
            }
            if g.actions[a].node != Some(source) {
                if let Some(f) = cluster_action(g, "stonith", source) {
                    order_in_graph(g, a, f);
                }
            }
        }
    }
}

/// What the plan does, in words, for the summary.
fn describe_decision(decision: &Decision, names: &[String]) -> String {
    let name = |n: usize| names.get(n).map(String::as_str).unwrap_or("?");
    let list = |v: &[usize]| v.iter().map(|&n| name(n)).collect::<Vec<_>>().join(" ");
    let clean = |v: &[usize]| {
        if v.is_empty() {
            String::new()
        } else {
            format!(", clean up {}", list(v))
        }
    };
    match decision {
        Decision::Defer => "ordinary plan".into(),
        Decision::Keep { node } => format!("keep it on {}", name(*node)),
        Decision::Cleanup { node, stops } => match node {
            Some(n) => format!("keep it on {}{}", name(*n), clean(stops)),
            None => format!("leave it stopped{}", clean(stops)),
        },
        Decision::Finish {
            target, cleanup, ..
        } => format!(
            "finish the migration: confirm on {}{}",
            name(*target),
            clean(cleanup)
        ),
        Decision::Migrate {
            source,
            target,
            cleanup,
        } => format!(
            "migrate live {} -> {}{}",
            name(*source),
            name(*target),
            clean(cleanup)
        ),
        Decision::Move {
            source,
            target,
            cleanup,
            cause,
        } => {
            let why = match cause {
                MoveCause::AllowMigrateOff => "allow-migrate is off".to_string(),
                MoveCause::Failed => format!("the copy on {} failed", name(*source)),
                MoveCause::MigrateToFailed { failures } => format!(
                    "live migration from {} failed {failures} time{}",
                    name(*source),
                    if *failures == 1 { "" } else { "s" }
                ),
            };
            if source == target {
                return format!(
                    "recover it on {} by stop and start ({why}){}",
                    name(*source),
                    clean(cleanup)
                );
            }
            format!(
                "move {} -> {} by stop and start ({why}){}",
                name(*source),
                name(*target),
                clean(cleanup)
            )
        }
        Decision::Stop { node, cleanup } => format!("stop it on {}{}", name(*node), clean(cleanup)),
        Decision::Start { target, cleanup } => {
            format!("start it on {}{}", name(*target), clean(cleanup))
        }
        Decision::Probe {
            probe, fence, then, ..
        } => {
            let fenced = if fence.is_empty() {
                String::new()
            } else {
                format!("fence {}, ", list(fence))
            };
            let asked = if probe.is_empty() {
                fenced.trim_end_matches(", ").to_string()
            } else {
                format!("{fenced}probe {} first", list(probe))
            };
            match then {
                None => format!("{asked}, nothing else until they answer"),
                Some(then) => format!(
                    "{asked}; if they find it nowhere: {}",
                    describe_decision(then, names)
                ),
            }
        }
        Decision::ProbeThenStart {
            probe,
            target,
            cause,
            ..
        } => format!(
            "probe {}; start on {} only if the probe finds it nowhere (reboot: {})",
            name(*probe),
            name(*target),
            cause.describe(names)
        ),
        Decision::Reboot {
            target: Some(t),
            cause,
            ..
        } => format!("reboot on {} due to {}", name(*t), cause.describe(names)),
        Decision::Reboot {
            target: None,
            cause,
            ..
        } => format!(
            "stopped due to {}; no node may run it",
            cause.describe(names)
        ),
    }
}

/// The summary section for atomic resources: where each one is and what the plan does (empty
/// when no atomic resource has an open migration, so two-phase output is unchanged).
pub fn render_notes(view: &AtomicView, obs: &Observed) -> String {
    if view.entries.is_empty() && view.errors.is_empty() {
        return String::new();
    }
    let names: Vec<String> = obs.nodes.iter().map(|n| n.uname.clone()).collect();
    let mut out = String::from("Atomic Migrations:\n");
    for e in &view.entries {
        let id = obs
            .resources
            .get(e.rsc)
            .map(|r| r.id.as_str())
            .unwrap_or("?");
        let mut what = describe_location(&e.location, &names);
        if let Location::Stopped { migration, .. } = &e.location {
            if presence_of(obs).get(migration.target) == Some(&Presence::Down) {
                what = format!("{what}; {} is down", names[migration.target]);
            }
        }
        let plan = match (&e.decision, e.cannot_fence.is_empty()) {
            (_, false) => {
                let list: Vec<&str> = e.cannot_fence.iter().map(|&n| names[n].as_str()).collect();
                format!("wait: {} cannot be fenced", list.join(" "))
            }
            (Some(d), true) => describe_decision(d, &names),
            (None, true) => "unmanaged: no action".into(),
        };
        let name = |n: usize| names.get(n).map(String::as_str).unwrap_or("?");
        let plan = match (e.deferred_to, e.fragile_source, &e.decision) {
            (Some(d), Some(s), Some(Decision::Finish { target, .. })) => format!(
                "{plan}; on to {} in the next transition (fencing {} erases the only record until {} confirms)",
                name(d),
                name(s),
                name(*target)
            ),
            _ => plan,
        };
        out.push_str(&format!("  * {id}: {what}; {plan}\n"));
    }
    for err in &view.errors {
        out.push_str(&format!("  * {err}; using two-phase\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: i64 = 1_764_489_600;

    fn op(task: Task, call_id: i64, answer: Answer, t: i64) -> OpRecord {
        OpRecord {
            task,
            call_id,
            answer,
            migrate_source: None,
            migrate_target: None,
            last_rc_change: t,
            transition: None,
        }
    }

    fn mig(task: Task, call_id: i64, answer: Answer, t: i64, s: usize, d: usize) -> OpRecord {
        OpRecord {
            migrate_source: Some(s),
            migrate_target: Some(d),
            ..op(task, call_id, answer, t)
        }
    }

    fn node(presence: Presence, ops: Vec<OpRecord>) -> NodeHistory {
        NodeHistory { presence, ops }
    }

    /// node0 started vm, migrate_to node0 -> node1 answered `answer`; node1 has an old probe.
    fn two_nodes(answer: Answer, p0: Presence, p1: Presence) -> Vec<NodeHistory> {
        vec![
            node(
                p0,
                vec![
                    op(Task::Start, 10, Answer::Ok, T0 + 10),
                    mig(Task::MigrateTo, 12, answer, T0 + 400, 0, 1),
                ],
            ),
            node(p1, vec![op(Task::Monitor, 6, Answer::NotRunning, T0)]),
        ]
    }

    const M01: Migration = Migration {
        source: 0,
        target: 1,
    };

    #[test]
    fn model_meta_overrides_agent_default() {
        let m = |meta| model_for("vm", "ocf", Some("highlander"), "VirtualDomain", meta);
        assert_eq!(m(None), Ok(MigrationModel::Atomic));
        assert_eq!(m(Some("two-phase")), Ok(MigrationModel::TwoPhase));
        assert_eq!(m(Some(" Atomic ")), Ok(MigrationModel::Atomic));
        assert_eq!(
            model_for("x", "ocf", Some("heartbeat"), "VirtualDomain", None),
            Ok(MigrationModel::TwoPhase)
        );
        assert_eq!(
            model_for("x", "ocf", Some("heartbeat"), "Xen", Some("atomic")),
            Ok(MigrationModel::Atomic)
        );
        assert_eq!(
            m(Some("sometimes")),
            Err(AtomicError::InvalidModel {
                resource: "vm".into(),
                value: "sometimes".into()
            })
        );
    }

    #[test]
    fn answers_from_status() {
        assert_eq!(Answer::from_status(0, 0), Answer::Ok);
        assert_eq!(Answer::from_status(0, 7), Answer::NotRunning);
        assert_eq!(Answer::from_status(0, 1), Answer::Failed);
        // killed by a signal: the executor's error, not the agent's answer
        assert_eq!(Answer::from_status(4, 1), Answer::NoAnswer);
        assert_eq!(Answer::from_status(-1, 193), Answer::Pending);
        assert_eq!(Answer::from_status(2, 1), Answer::NoAnswer);
        assert_eq!(Answer::from_status(2, 198), Answer::NoAnswer);
        assert_eq!(Answer::from_status(1, 0), Answer::NoAnswer);
        assert_eq!(Answer::from_status(7, 5), Answer::Failed);
    }

    #[test]
    fn no_migration_is_settled() {
        let h = vec![
            node(Presence::Online, vec![op(Task::Start, 3, Answer::Ok, T0)]),
            node(Presence::Online, vec![]),
        ];
        assert_eq!(locate(&h), Location::Settled);
    }

    #[test]
    fn succeeded_migrate_to_means_target_with_confirmation_pending() {
        let h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        assert_eq!(
            locate(&h),
            Location::Exact {
                migration: M01,
                node: 1,
                confirm: true,
                cleanup: vec![0]
            }
        );
    }

    #[test]
    fn failed_migrate_to_means_source() {
        let h = two_nodes(Answer::Failed, Presence::Online, Presence::Online);
        assert_eq!(
            locate(&h),
            Location::Exact {
                migration: M01,
                node: 0,
                confirm: false,
                cleanup: vec![]
            }
        );
    }

    #[test]
    fn pending_or_unanswered_migrate_to_is_unknown_between_both() {
        for (answer, doubt) in [
            (Answer::Pending, Doubt::Pending),
            (Answer::NoAnswer, Doubt::NoAnswer),
        ] {
            let h = two_nodes(answer, Presence::Online, Presence::Online);
            assert_eq!(
                locate(&h),
                Location::Unknown {
                    migration: M01,
                    candidates: vec![0, 1],
                    doubt,
                    answered: vec![],
                    cleanup: vec![],
                }
            );
        }
    }

    #[test]
    fn failed_migrate_from_contradicts_and_makes_it_unknown() {
        let mut h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        h[1].ops
            .push(mig(Task::MigrateFrom, 7, Answer::Failed, T0 + 410, 0, 1));
        assert_eq!(
            locate(&h),
            Location::Unknown {
                migration: M01,
                candidates: vec![0, 1],
                doubt: Doubt::Contradiction,
                answered: vec![],
                cleanup: vec![],
            }
        );
    }

    #[test]
    fn confirmed_migration_without_source_stop_needs_only_cleanup() {
        let mut h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        h[1].ops
            .push(mig(Task::MigrateFrom, 7, Answer::Ok, T0 + 410, 0, 1));
        assert_eq!(
            locate(&h),
            Location::Exact {
                migration: M01,
                node: 1,
                confirm: false,
                cleanup: vec![0]
            }
        );
    }

    #[test]
    fn complete_migration_is_settled() {
        let mut h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        h[1].ops
            .push(mig(Task::MigrateFrom, 7, Answer::Ok, T0 + 410, 0, 1));
        h[0].ops.push(op(Task::Stop, 13, Answer::Ok, T0 + 411));
        assert_eq!(locate(&h), Location::Settled);
    }

    #[test]
    fn stopped_source_still_leaves_the_vm_on_the_unconfirmed_target() {
        // PR #2739's nested abort: the source was stopped after migrate_to; the VM is on the target.
        let mut h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        h[0].ops.push(op(Task::Stop, 13, Answer::Ok, T0 + 420));
        assert_eq!(
            locate(&h),
            Location::Exact {
                migration: M01,
                node: 1,
                confirm: true,
                cleanup: vec![]
            }
        );
    }

    #[test]
    fn latest_migration_wins_across_nodes() {
        // 0 -> 1 completed, then 1 -> 0 migrate_to succeeded: the VM is on node 0.
        let h = vec![
            node(
                Presence::Online,
                vec![
                    op(Task::Start, 10, Answer::Ok, T0 + 10),
                    mig(Task::MigrateTo, 12, Answer::Ok, T0 + 400, 0, 1),
                    op(Task::Stop, 13, Answer::Ok, T0 + 415),
                ],
            ),
            node(
                Presence::Online,
                vec![
                    op(Task::Monitor, 6, Answer::NotRunning, T0),
                    mig(Task::MigrateFrom, 14, Answer::Ok, T0 + 410, 0, 1),
                    mig(Task::MigrateTo, 15, Answer::Ok, T0 + 800, 1, 0),
                ],
            ),
        ];
        let loc = locate(&h);
        assert_eq!(
            loc,
            Location::Exact {
                migration: Migration {
                    source: 1,
                    target: 0
                },
                node: 0,
                confirm: true,
                cleanup: vec![1]
            }
        );
        let presence = [Presence::Online, Presence::Online];
        // Preference flipped back to node 1: migrate back live, no cleanup of the destination.
        assert_eq!(
            decide(&loc, &presence, Some(1), true),
            Decision::Migrate {
                source: 0,
                target: 1,
                cleanup: vec![]
            }
        );
    }

    #[test]
    fn a_failure_after_a_finished_migration_is_ordinary_business() {
        // Seed 613161548: migrated 0 -> 1 (confirmed, source stopped), then the guest crashed on
        // 1 and its monitor failed. Not a doubt about the migration: the ordinary reading
        // recovers it. Before, the model probed node 1 forever (the probe kept failing).
        let mut h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        h[0].ops.push(op(Task::Stop, 13, Answer::Ok, T0 + 420));
        h[1].ops
            .push(mig(Task::MigrateFrom, 7, Answer::Ok, T0 + 410, 0, 1));
        h[1].ops
            .push(op(Task::Monitor, 8, Answer::Failed, T0 + 500));
        assert_eq!(locate(&h), Location::Settled);
        // Without the confirmation, a monitor on the target that answered a failure (the agent's
        // word: the domain is there, broken) closes it too; one that never answered does not.
        let mut h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        h[0].ops.push(op(Task::Stop, 13, Answer::Ok, T0 + 420));
        h[1].ops
            .push(op(Task::Monitor, 8, Answer::Failed, T0 + 500));
        assert_eq!(locate(&h), Location::Settled);
        let mut h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        h[0].ops.push(op(Task::Stop, 13, Answer::Ok, T0 + 420));
        h[1].ops
            .push(op(Task::Monitor, 8, Answer::NoAnswer, T0 + 500));
        assert!(matches!(locate(&h), Location::Unknown { .. }));
    }

    #[test]
    fn a_failure_on_the_source_after_a_failed_migrate_to_is_ordinary_business() {
        // Seed 9034: migrate_to failed (the VM stayed on node 0), then the guest crashed there and
        // the monitor failed. The model kept probing node 0 (the probe kept failing); the
        // ordinary reading recovers it.
        let mut h = two_nodes(Answer::Failed, Presence::Online, Presence::Online);
        h[0].ops
            .push(op(Task::Monitor, 13, Answer::Failed, T0 + 500));
        assert_eq!(locate(&h), Location::Settled);
        // A healthy monitor since: it still runs on the source, exactly.
        let mut h = two_nodes(Answer::Failed, Presence::Online, Presence::Online);
        h[0].ops.push(op(Task::Monitor, 13, Answer::Ok, T0 + 500));
        assert!(matches!(locate(&h), Location::Exact { node: 0, .. }));
    }

    #[test]
    fn a_vm_gone_from_the_source_after_a_failed_migrate_to_is_looked_for_on_the_target() {
        // Soak seed 1796072331202629: migrate_to answered 1 (stayed on the source), then the
        // source's monitor found nothing: the move may have completed after all. Probe the target.
        let mut h = two_nodes(Answer::Failed, Presence::Online, Presence::Online);
        h[0].ops
            .push(op(Task::Monitor, 13, Answer::NotRunning, T0 + 500));
        assert!(
            matches!(&locate(&h), Location::Unknown { candidates, answered, .. }
                if candidates == &vec![1] && answered.is_empty()),
            "{:?}",
            locate(&h)
        );
        // The target's answer since closes it.
        h[1].ops
            .push(op(Task::Monitor, 7, Answer::NotRunning, T0 + 510));
        assert_eq!(locate(&h), Location::Settled);
        // A stop on the source (the plan's own) is no such surprise.
        let mut h = two_nodes(Answer::Failed, Presence::Online, Presence::Online);
        h[0].ops.push(op(Task::Stop, 13, Answer::Ok, T0 + 500));
        assert!(!matches!(locate(&h), Location::Unknown { .. }));
    }

    #[test]
    fn migrate_to_not_running_means_probe_both() {
        // Seeds 10248, 10285: the agent answered "runs nowhere" / "source gone, target unreadable"
        // (now rc 7). Read as "still on the source", the VM was started a second time while it
        // ran on the target. rc 7 is "not here alone": probe both.
        let h = two_nodes(Answer::NotRunning, Presence::Online, Presence::Online);
        assert_eq!(
            locate(&h),
            Location::Unknown {
                migration: M01,
                candidates: vec![0, 1],
                doubt: Doubt::NotOnSource,
                answered: vec![],
                cleanup: vec![],
            }
        );
        let presence = [Presence::Online, Presence::Online];
        assert!(matches!(
            decide(&locate(&h), &presence, Some(1), true),
            Decision::Probe { .. }
        ));
    }

    #[test]
    fn only_the_source_records_a_copy_on_the_target() {
        // Succeeded, pending or unanswered with nothing on the target since: the source's
        // migrate_to is the only record of a copy on the target.
        for answer in [Answer::Ok, Answer::Pending, Answer::NoAnswer] {
            let h = two_nodes(answer, Presence::Online, Presence::Online);
            assert_eq!(fragile_evidence(&h), Some(0), "{answer:?}");
        }
        // A failed migrate_to left it on the source: nothing elsewhere depends on the record.
        let h = two_nodes(Answer::Failed, Presence::Online, Presence::Online);
        assert_eq!(fragile_evidence(&h), None);
        // The target answered since (a probe, a migrate_from): its own history says it.
        let mut h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        h[1].ops
            .push(op(Task::Monitor, 8, Answer::NotRunning, T0 + 500));
        assert_eq!(fragile_evidence(&h), None);
        let mut h = two_nodes(Answer::Ok, Presence::Lost, Presence::Online);
        h[1].ops
            .push(mig(Task::MigrateFrom, 8, Answer::Ok, T0 + 400, 0, 1));
        assert_eq!(fragile_evidence(&h), None);
        // The target's older probe does not count.
        let h = two_nodes(Answer::Ok, Presence::Lost, Presence::Online);
        assert_eq!(h[1].ops.len(), 1);
        assert_eq!(fragile_evidence(&h), Some(0));
        // No migration at all.
        let h = vec![
            node(Presence::Online, vec![op(Task::Start, 10, Answer::Ok, T0)]),
            node(Presence::Online, vec![]),
        ];
        assert_eq!(fragile_evidence(&h), None);
    }

    #[test]
    fn target_probe_after_migrate_to_is_its_own_word() {
        let mut h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        h[1].ops
            .push(op(Task::Monitor, 8, Answer::NotRunning, T0 + 500));
        assert_eq!(
            locate(&h),
            Location::Stopped {
                migration: M01,
                cleanup: vec![0]
            }
        );
    }

    #[test]
    fn down_target_cannot_run_it() {
        let h = two_nodes(Answer::Pending, Presence::Online, Presence::Down);
        assert_eq!(
            locate(&h),
            Location::Unknown {
                migration: M01,
                candidates: vec![0],
                doubt: Doubt::Pending,
                answered: vec![],
                cleanup: vec![],
            }
        );
    }

    #[test]
    fn finish_when_it_should_stay_on_the_target() {
        let h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        let presence = [Presence::Online, Presence::Online];
        let d = decide(&locate(&h), &presence, Some(1), true);
        assert_eq!(
            d,
            Decision::Finish {
                source: 0,
                target: 1,
                cleanup: vec![0]
            }
        );
        let s = d.steps(&presence);
        assert_eq!(
            s.steps,
            vec![
                Step::MigrateFrom {
                    source: 0,
                    target: 1
                },
                Step::PseudoStart(1),
                Step::Stop(0)
            ]
        );
        assert_eq!(s.edges, vec![(0, 1), (0, 2), (2, 1)]);
        assert!(!d.reboots());
    }

    #[test]
    fn migrate_back_when_the_preference_returns_to_the_source() {
        let h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        let presence = [Presence::Online, Presence::Online];
        let d = decide(&locate(&h), &presence, Some(0), true);
        assert_eq!(
            d,
            Decision::Migrate {
                source: 1,
                target: 0,
                cleanup: vec![]
            }
        );
        let s = d.steps(&presence);
        assert_eq!(
            s.steps,
            vec![
                Step::MigrateTo {
                    source: 1,
                    target: 0
                },
                Step::MigrateFrom {
                    source: 1,
                    target: 0
                },
                Step::Stop(1),
                Step::PseudoStart(0)
            ]
        );
    }

    #[test]
    fn onward_migration_cleans_up_the_old_source() {
        let h = vec![
            two_nodes(Answer::Ok, Presence::Online, Presence::Online).remove(0),
            two_nodes(Answer::Ok, Presence::Online, Presence::Online).remove(1),
            node(Presence::Online, vec![]),
        ];
        let presence = [Presence::Online; 3];
        let d = decide(&locate(&h), &presence, Some(2), true);
        assert_eq!(
            d,
            Decision::Migrate {
                source: 1,
                target: 2,
                cleanup: vec![0]
            }
        );
        assert!(d.steps(&presence).steps.contains(&Step::Stop(0)));
    }

    #[test]
    fn lost_source_during_pending_migrate_to_probes_target_then_starts() {
        let h = two_nodes(Answer::Pending, Presence::Lost, Presence::Online);
        let presence = [Presence::Lost, Presence::Online];
        let d = decide(&locate(&h), &presence, Some(1), true);
        assert_eq!(
            d,
            Decision::ProbeThenStart {
                probe: 1,
                fence: vec![0],
                target: 1,
                cause: RebootCause::LostDuringMigration {
                    migration: M01,
                    lost: vec![0]
                }
            }
        );
        assert!(d.reboots());
        let s = d.steps(&presence);
        let start = s.steps.iter().position(|x| *x == Step::Start(1)).unwrap();
        let probe = s.steps.iter().position(|x| *x == Step::Probe(1)).unwrap();
        let fence = s.steps.iter().position(|x| *x == Step::Fence(0)).unwrap();
        assert!(s.edges.contains(&(probe, start)));
        assert!(s.edges.iter().any(|&(a, b)| b == start && a != probe));
        assert!(s.edges.iter().any(|&(a, _)| a == fence));
    }

    #[test]
    fn both_live_candidates_are_probed_before_the_start_in_one_plan() {
        // Pacemaker's controller plans again only when a result differs from the expected one:
        // the start waits for both probes (rc 7 expected) in the same transition; a probe that
        // finds the VM aborts it before the start.
        let h = two_nodes(Answer::NoAnswer, Presence::Online, Presence::Online);
        let presence = [Presence::Online, Presence::Online];
        let d = decide(&locate(&h), &presence, Some(1), true);
        assert_eq!(
            d,
            Decision::Probe {
                probe: vec![0, 1],
                fence: vec![],
                doubt: Doubt::NoAnswer,
                then: Some(Box::new(Decision::Start {
                    target: 1,
                    cleanup: vec![]
                })),
            }
        );
        let s = d.steps(&presence);
        assert_eq!(
            s.steps,
            vec![Step::Probe(0), Step::Probe(1), Step::Start(1)]
        );
        assert!(s.edges.contains(&(0, 2)) && s.edges.contains(&(1, 2)));
        // Wanted nowhere: the probes alone.
        let d = decide(&locate(&h), &presence, None, true);
        assert_eq!(
            d.steps(&presence).steps,
            vec![Step::Probe(0), Step::Probe(1)]
        );
    }

    #[test]
    fn lost_target_after_success_is_a_reboot_with_a_cause() {
        let h = vec![
            two_nodes(Answer::Ok, Presence::Online, Presence::Lost).remove(0),
            two_nodes(Answer::Ok, Presence::Online, Presence::Lost).remove(1),
            node(Presence::Online, vec![]),
        ];
        let presence = [Presence::Online, Presence::Lost, Presence::Online];
        let d = decide(&locate(&h), &presence, Some(2), true);
        assert_eq!(
            d,
            Decision::Reboot {
                fence: vec![1],
                target: Some(2),
                cleanup: vec![0],
                cause: RebootCause::RanOnLostNode { node: 1 }
            }
        );
        let names: Vec<String> = ["node1", "node2", "node3"].map(String::from).to_vec();
        if let Decision::Reboot { cause, .. } = &d {
            assert_eq!(
                cause.describe(&names),
                "node2 lost with the only copy (fenced)"
            );
        }
    }

    #[test]
    fn lost_source_after_success_finishes_with_an_implied_stop() {
        let h = two_nodes(Answer::Ok, Presence::Lost, Presence::Online);
        let presence = [Presence::Lost, Presence::Online];
        let d = decide(&locate(&h), &presence, Some(1), true);
        let s = d.steps(&presence);
        assert!(s.steps.contains(&Step::Fence(0)));
        assert!(s.steps.contains(&Step::ImpliedStop(0)));
        assert!(!s.steps.contains(&Step::Stop(0)));
        assert!(!d.reboots());
    }

    #[test]
    fn no_allow_migrate_moves_by_stop_then_start() {
        let h = two_nodes(Answer::Failed, Presence::Online, Presence::Online);
        let presence = [Presence::Online, Presence::Online];
        let d = decide(&locate(&h), &presence, Some(1), false);
        assert_eq!(
            d,
            Decision::Move {
                source: 0,
                target: 1,
                cleanup: vec![],
                cause: MoveCause::AllowMigrateOff
            }
        );
        assert_eq!(d.steps(&presence).edges, vec![(0, 1)]);
    }

    #[test]
    fn migrate_to_failing_again_and_again_falls_back_to_stop_and_start() {
        // Seed 613161548: migrate_to kept failing (the guest had crashed on the source) and the
        // model retried it every transition. Below the limit it retries live; at the limit it
        // moves by stop and start, and the summary says why.
        let h = two_nodes(Answer::Failed, Presence::Online, Presence::Online);
        let presence = [Presence::Online, Presence::Online];
        let failures = |n: i64| {
            move |node: usize| {
                let limit = migrate_attempts_limit(crate::cib::INFINITY);
                if node == 0 && n >= limit {
                    Migratable::No(MoveCause::MigrateToFailed { failures: n })
                } else {
                    Migratable::Yes
                }
            }
        };
        assert_eq!(
            decide_with(&locate(&h), &presence, Some(1), failures(2)),
            Decision::Migrate {
                source: 0,
                target: 1,
                cleanup: vec![]
            }
        );
        let d = decide_with(&locate(&h), &presence, Some(1), failures(3));
        assert_eq!(
            d,
            Decision::Move {
                source: 0,
                target: 1,
                cleanup: vec![],
                cause: MoveCause::MigrateToFailed { failures: 3 }
            }
        );
        let names: Vec<String> = ["node1", "node2"].map(String::from).to_vec();
        assert_eq!(
            describe_decision(&d, &names),
            "move node1 -> node2 by stop and start (live migration from node1 failed 3 times)"
        );
        // Staying put needs no migration, whatever the count.
        assert_eq!(
            decide_with(&locate(&h), &presence, Some(0), failures(9)),
            Decision::Keep { node: 0 }
        );
        // The limit: 3, or a lower positive migration-threshold.
        assert_eq!(migrate_attempts_limit(crate::cib::INFINITY), 3);
        assert_eq!(migrate_attempts_limit(1), 1);
        assert_eq!(migrate_attempts_limit(0), 3);
        assert_eq!(migrate_attempts_limit(1_000_000), 3);
    }

    #[test]
    fn describes_locations_with_names() {
        let names: Vec<String> = ["node1", "node2"].map(String::from).to_vec();
        let h = two_nodes(Answer::NoAnswer, Presence::Online, Presence::Online);
        assert_eq!(
            describe_location(&locate(&h), &names),
            "unknown between node1 and node2 (migrate_to unanswered)"
        );
        let h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        assert_eq!(
            describe_location(&locate(&h), &names),
            "runs on node2 (migrate_to from node1 succeeded; confirmation pending)"
        );
    }

    #[test]
    fn migrate_to_without_last_rc_change_is_newer_than_the_targets_old_probe() {
        // migrate-partial-2: the migrate_to entry has no last-rc-change attribute.
        let mut h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        h[0].ops[1].last_rc_change = 0;
        assert!(matches!(
            locate(&h),
            Location::Exact {
                node: 1,
                confirm: true,
                ..
            }
        ));
    }

    #[test]
    fn failed_migrate_from_then_stopped_source_leaves_the_target_in_doubt() {
        // migrate-fail-3: Pacemaker restarts it on the target; we probe the target first.
        let mut h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        h[1].ops
            .push(mig(Task::MigrateFrom, 7, Answer::Failed, T0 + 410, 0, 1));
        h[0].ops.push(op(Task::Stop, 13, Answer::Ok, T0 + 420));
        assert_eq!(
            locate(&h),
            Location::Unknown {
                migration: M01,
                candidates: vec![1],
                doubt: Doubt::Contradiction,
                answered: vec![],
                cleanup: vec![],
            }
        );
    }

    #[test]
    fn failed_migrate_from_then_stopped_target_leaves_the_source_in_doubt() {
        // migrate-fail-4: Pacemaker stops the source and starts on the target; we probe the source.
        let mut h = two_nodes(Answer::Ok, Presence::Online, Presence::Online);
        h[1].ops
            .push(mig(Task::MigrateFrom, 7, Answer::Failed, T0 + 410, 0, 1));
        h[1].ops.push(op(Task::Stop, 8, Answer::Ok, T0 + 420));
        assert_eq!(
            locate(&h),
            Location::Unknown {
                migration: M01,
                candidates: vec![0],
                doubt: Doubt::Contradiction,
                answered: vec![],
                cleanup: vec![],
            }
        );
    }

    #[test]
    fn a_candidate_that_answered_is_not_probed_again() {
        // Seed 40033: migrate_to answered 7 (probe both); the source's probe found the domain
        // crashed (rc 1, the agent's own answer) and aborted the transition before the target's
        // probe ran. The source has answered: only the target is probed.
        let mut h = two_nodes(Answer::NotRunning, Presence::Online, Presence::Online);
        h[0].ops
            .push(op(Task::Monitor, 13, Answer::Failed, T0 + 401));
        let location = locate(&h);
        assert_eq!(
            location,
            Location::Unknown {
                migration: M01,
                candidates: vec![0, 1],
                doubt: Doubt::UnsureResult,
                answered: vec![0],
                cleanup: vec![],
            }
        );
        let presence = [Presence::Online, Presence::Online];
        // Once the target's probe says "not here", the copy that answered is the only one: the
        // continuation is that copy's plan (the pipeline drops it for a broken copy, see
        // `AtomicEntry::broken`, and the ordinary recovery follows).
        assert_eq!(
            decide(&location, &presence, Some(1), true),
            Decision::Probe {
                probe: vec![1],
                fence: vec![],
                doubt: Doubt::UnsureResult,
                then: Some(Box::new(Decision::Migrate {
                    source: 0,
                    target: 1,
                    cleanup: vec![]
                })),
            }
        );
        // With the other candidate lost, the copy that answered keeps it from starting elsewhere.
        let lost = [Presence::Online, Presence::Lost];
        assert_eq!(
            decide(&location, &lost, Some(0), true),
            Decision::Probe {
                probe: vec![],
                fence: vec![1],
                doubt: Doubt::UnsureResult,
                then: None,
            }
        );
        // Once the target has answered too, the ordinary reading takes over.
        h[1].ops
            .push(op(Task::Monitor, 7, Answer::NotRunning, T0 + 402));
        assert_eq!(locate(&h), Location::Settled);
    }

    #[test]
    fn a_later_transition_in_the_same_second_is_after_the_migrate_to() {
        // Seed 41422: the target's probe landed in the same second as migrate_to's answer; by
        // last-rc-change alone it is not "after", so it was ordered again in every transition.
        let key = |n: i64, uuid: &str| {
            Some(TransitionId {
                te_uuid: uuid.to_string(),
                number: n,
            })
        };
        let with = |probe_transition| {
            let mut h = two_nodes(Answer::NotRunning, Presence::Online, Presence::Online);
            h[0].ops[1].transition = key(5, "dc-a");
            h[0].ops
                .push(op(Task::Monitor, 13, Answer::NotRunning, T0 + 400));
            h[1].ops.push(OpRecord {
                transition: probe_transition,
                ..op(Task::Monitor, 7, Answer::NotRunning, T0 + 400)
            });
            locate(&h)
        };
        assert_eq!(with(key(6, "dc-a")), Location::Settled);
        // An earlier transition, another DC's numbering, or no key: not known to be after.
        for t in [key(4, "dc-a"), key(6, "dc-b"), None] {
            assert!(matches!(with(t), Location::Unknown { .. }));
        }
        assert_eq!(TransitionId::parse("3:35:7:dc-a"), key(35, "dc-a"));
        assert_eq!(TransitionId::parse("3:x:7:dc-a"), None);
        assert_eq!(TransitionId::parse("3:35:7:"), None);
    }

    #[test]
    fn malformed_migration_records_are_ignored() {
        // Missing target, target out of range, target == source: no migration to speak of.
        let h = vec![node(
            Presence::Online,
            vec![
                OpRecord {
                    migrate_source: Some(0),
                    ..op(Task::MigrateTo, 4, Answer::Ok, T0)
                },
                mig(Task::MigrateTo, 5, Answer::Ok, T0, 0, 9),
                mig(Task::MigrateTo, 6, Answer::Ok, T0, 0, 0),
            ],
        )];
        assert_eq!(locate(&h), Location::Settled);
    }
}
