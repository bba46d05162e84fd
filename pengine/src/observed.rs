//! Operation history -> one explicit state per resource per node (roles, failures, fail counts, migrations).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use ocf_metadata::Recovery;

use crate::cib::rc;
use crate::cib::{
    Cib, INFINITY, LrmResource, NodeState, NvSet, OpDef, Primitive, ResourceDef, RscOp, is_true,
    parse_interval_ms, parse_score,
};
use crate::digest::{DigestCheck, OpParams};

/// Resource roles, ordered as Pacemaker orders them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
#[allow(missing_docs)] // white-box type of `pengine::unstable`, not API
pub enum Role {
    #[default]
    Unknown,
    Stopped,
    Started,
    Unpromoted,
    Promoted,
}

#[allow(missing_docs)] // white-box item of `pengine::unstable`, not API
impl Role {
    pub fn parse(s: &str) -> Option<Role> {
        match s.to_ascii_lowercase().as_str() {
            "stopped" => Some(Role::Stopped),
            "started" => Some(Role::Started),
            "slave" | "unpromoted" => Some(Role::Unpromoted),
            "master" | "promoted" => Some(Role::Promoted),
            _ => None,
        }
    }
    pub fn text(self) -> &'static str {
        match self {
            Role::Unknown => "Unknown",
            Role::Stopped => "Stopped",
            Role::Started => "Started",
            Role::Unpromoted => "Unpromoted",
            Role::Promoted => "Promoted",
        }
    }
}

/// What to do when an operation fails, ordered by severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OnFail {
    Ignore,
    Demote,
    Recover,
    /// The default for a remote connection's failures (not probes or starts): the connection
    /// recovers and, with fencing, its remote node is fenced (see `crate::remote`).
    ResetRemote,
    /// The default inside a container (`container` meta-attribute): the container restarts.
    RestartContainer,
    Ban,
    Block,
    Stop,
    Standby,
    Fence,
}

impl OnFail {
    fn parse(s: &str) -> Option<OnFail> {
        match s.to_ascii_lowercase().as_str() {
            "ignore" => Some(OnFail::Ignore),
            "demote" => Some(OnFail::Demote),
            "restart" => Some(OnFail::Recover),
            "block" => Some(OnFail::Block),
            "stop" => Some(OnFail::Stop),
            "standby" => Some(OnFail::Standby),
            "fence" => Some(OnFail::Fence),
            _ => None,
        }
    }
}

/// A cluster node with its derived status.
#[derive(Debug, Clone, Default)]
pub struct Node {
    pub id: String,
    pub uname: String,
    pub online: bool,
    pub unclean: bool,
    pub pending: bool,
    pub standby: bool,
    pub standby_onfail: bool,
    pub maintenance: bool,
    pub shutdown: bool,
    pub expected_up: bool,
    pub unseen: bool,
    pub attrs: BTreeMap<String, String>,
    pub utilization: BTreeMap<String, i64>,
    pub fence_reason: Option<String>,
    pub health: i64,
    pub is_dc: bool,
    /// A Pacemaker Remote or guest node: its connection and state (see `crate::remote`).
    pub remote: Option<crate::remote::RemoteNode>,
    /// The node's configured `score`: a resource's score on the node starts from it.
    pub weight: i64,
    /// Pacemaker's node priority: the `priority` of each resource found active here without a
    /// failure (a promoted one counts one more; a guest node's also counts on its container's
    /// nodes). Only `priority-fencing-delay` reads it.
    pub priority: i64,
    /// The node's fencing was first asked for with a priority delay (a cluster node no longer
    /// part of the cluster while `priority-fencing-delay` is set): the fencing event says the
    /// delay, 0 unless this node must wait (see `priority_fencing_delay`).
    pub fence_priority_delay: bool,
    /// When the fencing was decided, for the summary's order: 0 while unpacking, 1 for a stop
    /// on a remote node whose connection is unrecoverable, 2 for a probe there (Pacemaker
    /// meets those actions in that order; see `remote::fence_unrecoverable`).
    pub fence_phase: u8,
    /// The resource ids of the node's history, in the order its status lists them (Pacemaker
    /// adds what it finds active there in that order: the guests a fencing of it downs).
    pub history_order: Vec<String>,
}

/// A recurring operation found active in the history.
#[derive(Debug, Clone)]
pub struct ActiveRecurring {
    pub node: usize,
    pub name: String,
    pub interval_ms: u64,
    /// The history entry's call id.
    pub call_id: i64,
}

/// A primitive with its configuration and observed state.
#[derive(Debug, Clone, Default)]
pub struct Resource {
    pub id: String,
    pub class: String,
    pub provider: Option<String>,
    pub kind: String,
    pub group: Option<usize>,
    pub meta: BTreeMap<String, String>,
    pub params: BTreeMap<String, String>,
    pub utilization: BTreeMap<String, i64>,
    pub ops: Vec<OpDef>,
    /// op_defaults without regard to the resource or operation (see `op_defaults_for`).
    pub op_defaults: BTreeMap<String, String>,
    /// The configuration's op_defaults sets and the time they are evaluated at.
    pub op_default_sets: Vec<NvSet>,
    pub evaluated_at: i64,
    // observed state
    pub role: Role,
    pub next_role: Option<Role>,
    pub running_on: Vec<usize>,
    pub failed: bool,
    pub stop_flag: bool,
    pub managed: bool,
    pub blocked: bool,
    /// Blocked: how many of `running_on`'s nodes were recorded before it was blocked. Pacemaker
    /// holds an unmanaged resource with INFINITY on each node it is found active on once it is
    /// unmanaged, so these first ones are not held (None: not blocked, every node is held).
    pub blocked_after: Option<usize>,
    /// The nodes where a start is still pending.
    pub start_pending_on: BTreeSet<usize>,
    pub failure_ignored: bool,
    pub orphan: bool,
    pub known_on: BTreeSet<usize>,
    /// A failure whose role after failure is Stopped (on-fail=stop) was unpacked: for an
    /// anonymous clone's instance the whole clone is banned (see `placement::clones`).
    pub failed_to_stopped: bool,
    /// Scores forced by history (hard errors, stop failures): node, score, reason.
    pub history_bans: Vec<(Option<usize>, i64, String)>,
    pub failed_probes: Vec<(usize, i32)>,
    pub fail_count: BTreeMap<usize, i64>,
    pub last_failure: BTreeMap<usize, i64>,
    pub partial_migration: Option<(usize, usize)>,
    pub dangling_sources: Vec<usize>,
    pub migratable_cleared: bool,
    pub recurring: Vec<ActiveRecurring>,
    /// The recurring operations (node, interval) Pacemaker creates, optional, while it unpacks
    /// the history: on an online node, after the last start and any stop after it, not
    /// pending. A monitor the plan needs there is that action (see `actions::Action::created_at`).
    pub unpacked_recurring: Vec<(usize, u64)>,
    /// Its role was last set by a demote, or raised to Started by a monitor's result, which
    /// Pacemaker's `set_active` makes Unpromoted at once for a promotable clone's instance (a
    /// start's Started becomes Unpromoted only when roles are chosen; see
    /// `promotable::settle_roles`).
    pub unpromoted_at_unpack: bool,
    pub pending_task: Option<(String, usize)>,
    /// A member of a clone of a group forced anonymous that Pacemaker still unpacks globally
    /// unique (see `clone_groups::add_instances`): the graph names it by its own id.
    pub unique_in_graph: bool,
    /// Targets whose copy must stop: a migrate_to is pending on a lost, unclean source.
    pub stops_forced: Vec<usize>,
    /// Pending migrate_tos on a source that is down: (source, target), resolved into
    /// `stops_forced` once the source is known to be unclean.
    pub pending_migrate_to_lost: Vec<(usize, usize)>,
    pub pending_migrate_to: Vec<(usize, usize, i64)>,
    /// Recurring monitors whose latest result is "not running" (Stopped-role monitors).
    pub stopped_monitors: Vec<ActiveRecurring>,
    /// Nodes where an expired fail count is cleared.
    pub clear_failcount_on: Vec<usize>,
    /// A bundle connection's unexpired last failures (node, entry) whose parameters are
    /// compared once its container is placed (`pe__add_param_check` with
    /// `pe_check_last_failure`: see `crate::bundles::check_connection_definitions`).
    pub deferred_failure_checks: Vec<(usize, RscOp)>,
    /// Nodes where the fail count is cleared because an active operation's definition may have
    /// changed (no recorded digest; see `definition_changed`).
    pub clear_failcount_changed: Vec<usize>,
    /// Recurring monitors (node, interval) rescheduled for the same reason.
    pub rescheduled: Vec<(usize, u64)>,
    /// Recurring operations (node, interval, call id) active in the history that the configuration no
    /// longer has (absent or disabled): cancelled unless stop-orphan-actions is false.
    pub orphan_ops: Vec<(usize, u64, i64)>,
    /// Recurring operations (node, interval) whose recorded failure expired on an online node:
    /// Pacemaker runs them again (it marks the entry's restart digest as changed).
    pub expired_rescheduled: Vec<(usize, u64)>,
    /// Nodes where a failure to recover from (on-fail=restart) on an active copy makes
    /// Pacemaker create the stop while it unpacks the history, before any probe.
    pub unpack_stops: Vec<usize>,
    /// Nodes where a failure with on-fail=demote makes Pacemaker create a required demote while
    /// it unpacks the history (the instance stays active: recovery by demotion, no stop).
    pub unpack_demotes: Vec<usize>,
    /// The configured instance attribute sets (evaluated per node for operation digests).
    pub param_sets: Vec<NvSet>,
    /// The CIB's feature set (for digests of entries that record none).
    pub feature_set: String,
    /// Not read from a live cluster: a change of private parameters alone is no definition
    /// change (Pacemaker's `pe_flag_sanitized`, which crm_simulate clears for `-L`).
    pub sanitized: bool,
    /// The CIB counts failures per resource, not per operation (see `legacy_fail_counts`).
    pub legacy_fail_counts: bool,
    /// Nodes where a start-like entry's digest changed so that the resource restarts there
    /// ("resource definition change").
    pub definition_restart: Vec<usize>,
    /// Nodes where a changed digest is applied by an agent reload (the entry records a restart
    /// digest, which only agents that can reload have).
    pub reload_on: Vec<usize>,
    pub target_role: Option<Role>,
    pub line: usize,
    /// The primitive named by the `container` meta-attribute: this resource runs inside it
    /// (it starts after the container, stops before it, runs where it runs, is never probed,
    /// and its failures restart the container; see `crate::container`).
    pub container: Option<usize>,
    /// The resources whose `container` is this one, in resource order (set with `container`).
    pub fillers: Vec<usize>,
    /// Nodes where a failure of this resource requires its container's stop there.
    pub container_stops: Vec<usize>,
    /// The node this resource is shutdown-locked to, from its history there (`shutdown-lock`
    /// cluster option; see `crate::shutdown_lock`), and when the lock started.
    pub lock_node: Option<usize>,
    pub lock_time: i64,
    /// A lock taken in this run (active on a node shutting down; see `crate::shutdown_lock`):
    /// the node and the lock's start, which the stop there records in the CIB.
    pub new_lock: Option<(usize, i64)>,
    /// Nodes where this resource's history is to be erased (`lrm_delete`): an expired lock.
    pub clear_history_on: Vec<usize>,
    /// Nodes whose history ran another agent (class, provider or type) than the configured
    /// one: the history is cleaned up there (`delete`), after a restart where it is active.
    pub agent_changed_on: Vec<usize>,
    /// The priority each node gets from this resource being found active there without a
    /// failure (Pacemaker's `native_priority_to_node`; see `Node::priority`).
    pub running_priority: Vec<(usize, i64)>,
    /// The node this resource is the connection of (`ocf:pacemaker:remote`, or the implicit
    /// connection of a guest node; see `crate::remote`).
    pub remote_node: Option<usize>,
    /// A failure of this connection resets its remote node (`OnFail::ResetRemote`).
    pub reset_remote: bool,
    /// For an instance of an anonymous clone: the cloned primitive's id, the name its history,
    /// fail counts and graph entries use (see `crate::clones`).
    pub clone_base: Option<String>,
    /// The name of the history an anonymous clone instance was mapped from, when it is not the
    /// instance's own (Pacemaker's `clone_name`): its action keys use it.
    pub clone_name: Option<String>,
}

impl Resource {
    pub fn meta_bool(&self, name: &str, default: bool) -> bool {
        self.meta.get(name).map(|v| is_true(v)).unwrap_or(default)
    }
    pub fn agent(&self) -> String {
        match &self.provider {
            Some(p) if self.class == "ocf" => format!("{}:{}:{}", self.class, p, self.kind),
            _ => format!("{}:{}", self.class, self.kind),
        }
    }
    /// `allow-migrate`, on by default for a remote node's connection (see `crate::remote`).
    pub fn allow_migrate(&self) -> bool {
        self.meta_bool(
            "allow-migrate",
            self.remote_node.is_some() && self.container.is_none(),
        )
    }
    /// `migration-threshold`: the fail count on a node at which the resource leaves it
    /// (INFINITY when unset or unreadable; 0 or less: never).
    pub fn migration_threshold(&self) -> i64 {
        self.meta
            .get("migration-threshold")
            .and_then(|v| crate::cib::parse_score(v))
            .unwrap_or(crate::cib::INFINITY)
    }
    /// `failure-timeout` in seconds: how long after its last failure a fail count expires (0:
    /// never).
    pub fn failure_timeout_s(&self) -> i64 {
        self.meta
            .get("failure-timeout")
            .map(|v| (parse_interval_ms(v) / 1000) as i64)
            .unwrap_or(0)
    }
    /// `resource-stickiness` (or the legacy `default-resource-stickiness`): what the resource
    /// adds to the node it runs on (0 when unset or unreadable).
    pub fn stickiness(&self) -> i64 {
        self.meta
            .get("resource-stickiness")
            .or(self.meta.get("default-resource-stickiness"))
            .and_then(|v| crate::cib::parse_score(v))
            .unwrap_or(0)
    }
    /// The name the resource's history and fail counts use (an anonymous clone instance's is
    /// the cloned primitive's id).
    pub fn history_id(&self) -> &str {
        self.clone_base.as_deref().unwrap_or(&self.id)
    }
    pub fn is_stonith(&self) -> bool {
        self.class == "stonith"
    }
    /// Whether a start is still pending on some node.
    pub fn start_pending(&self) -> bool {
        !self.start_pending_on.is_empty()
    }
}

/// A group of primitives (indexes into `Observed::resources`).
#[derive(Debug, Clone, Default)]
pub struct Group {
    pub id: String,
    pub members: Vec<usize>,
    pub meta: BTreeMap<String, String>,
    /// Set for an anonymous clone: its members are the instances (`child:N`), unchained and
    /// placed by `placement/clones.rs`, not as a group (see `crate::clones`); for a clone of a
    /// group, every instance's members (see `crate::clone_groups`).
    pub clone: Option<crate::clones::CloneSpec>,
}

impl Group {
    /// Whether a group's members start one after the other (its `ordered` meta-attribute,
    /// true unless set false); a clone's instances only when the clone is `ordered`.
    pub fn chained(&self) -> bool {
        match &self.clone {
            Some(c) => c.ordered,
            None => self
                .meta
                .get("ordered")
                .is_none_or(|v| crate::cib::is_true(v)),
        }
    }

    /// Whether a group's members are colocated one with the one before it (its `collocated`
    /// meta-attribute, true unless set false).
    pub fn collocated(&self) -> bool {
        self.clone.is_some()
            || self
                .meta
                .get("collocated")
                .is_none_or(|v| crate::cib::is_true(v))
    }
}

/// A top-level entry of the resource section, in CIB order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Top {
    Primitive(usize),
    Group(usize),
}

/// No-quorum policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoQuorum {
    Stop,
    Freeze,
    Ignore,
    Demote,
    Suicide,
}

/// Everything the scheduler knows after unpacking.
#[derive(Debug, Clone)]
pub struct Observed {
    pub nodes: Vec<Node>,
    pub resources: Vec<Resource>,
    pub groups: Vec<Group>,
    pub top: Vec<Top>,
    pub options: BTreeMap<String, String>,
    pub stonith_enabled: bool,
    pub symmetric: bool,
    pub have_quorum: bool,
    pub no_quorum_policy: NoQuorum,
    pub maintenance_mode: bool,
    pub stop_all: bool,
    pub placement_strategy: String,
    pub now: i64,
    pub start_failure_is_fatal: bool,
    pub have_stonith_resource: bool,
    /// Unfencing is in use (`Cib::unfencing`; see `unfencing`).
    pub unfencing: bool,
    /// The `shutdown-lock` cluster option, and `shutdown-lock-limit` in seconds (0: none).
    pub shutdown_lock: bool,
    pub shutdown_lock_limit_s: i64,
    /// When the cluster must plan again although nothing happened (a shutdown lock expiring):
    /// the graph's `recheck-by`, the earliest such time after `now` (see `update_recheck_by`).
    pub recheck_by: Option<i64>,
    pub orders: Vec<crate::cib::Order>,
    /// Bundles (see `crate::bundles`).
    pub bundles: Vec<crate::bundles::Bundle>,
    /// While resources are unpacked: the guest nodes of bundles not unpacked yet (Pacemaker
    /// creates a bundle's nodes when it unpacks the bundle; see `unpacked_nodes`).
    pub(crate) bundle_nodes_pending: usize,
    /// Pacemaker's unpack sequence (`unpack_resources`): per resource, the position among the
    /// configuration's top-level resource entries of the one whose unpacking made it (guest
    /// nodes' implicit connections, appended to the configuration, come last). Which nodes a
    /// resource's allowed nodes hold depends on it (see `crate::bundles::guest_node_copy`).
    pub unpack_step: Vec<usize>,
    /// The mandatory (INFINITY) colocations, as `pcmk__block_colocation_dependents` reads
    /// them: (dependent, primary, the dependent's role, the primary's role; None: any).
    pub mandatory_colocations: Vec<(String, String, Option<Role>, Option<Role>)>,
    /// The nodes whose fencing was asked for while the status was unpacked, in that order
    /// (`pe_fence_node` creates a cluster or remote node's fencing action then; the summary
    /// lists fencing actions newest first; see `note_fence_request`).
    pub fence_requests: Vec<usize>,
    /// Id lookups for `rsc_index`, `node_index` and `group_index` (see `reindex`).
    index: IdIndex,
}

/// Positions by id, built once by `Observed::reindex`. A lookup is checked against the vectors,
/// and falls back to a scan when they changed since, so a stale index is slow, never wrong.
#[derive(Debug, Clone, Default)]
struct IdIndex {
    node_by_uname: HashMap<String, usize>,
    node_by_id: HashMap<String, usize>,
    resources: HashMap<String, usize>,
    groups: HashMap<String, usize>,
    /// The vector lengths (nodes, resources, groups) when this was built.
    lens: (usize, usize, usize),
}

/// The position of the first element per key (what `Iterator::position` finds).
fn first_positions<'a>(keys: impl Iterator<Item = &'a str>) -> HashMap<String, usize> {
    let mut map = HashMap::new();
    for (i, k) in keys.enumerate() {
        map.entry(k.to_string()).or_insert(i);
    }
    map
}

impl Observed {
    /// The nodes Pacemaker knows while unpacking the resources so far (a clone's default
    /// `clone-max`): every node but the guest nodes of bundles configured later and the nodes
    /// of orphaned connections (made while the status is unpacked).
    pub fn unpacked_nodes(&self) -> usize {
        let orphaned = self.nodes.iter().filter(|&n| is_orphan_node(n)).count();
        self.nodes
            .len()
            .saturating_sub(self.bundle_nodes_pending)
            .saturating_sub(orphaned)
    }

    /// Rebuilds the id lookups after nodes, resources or groups were added.
    pub fn reindex(&mut self) {
        self.index = IdIndex {
            node_by_uname: first_positions(self.nodes.iter().map(|n| n.uname.as_str())),
            node_by_id: first_positions(self.nodes.iter().map(|n| n.id.as_str())),
            resources: first_positions(self.resources.iter().map(|r| r.id.as_str())),
            groups: first_positions(self.groups.iter().map(|g| g.id.as_str())),
            lens: (self.nodes.len(), self.resources.len(), self.groups.len()),
        };
    }
    pub fn option(&self, name: &str) -> Option<&str> {
        self.options.get(name).map(String::as_str)
    }
    /// Asks for a new plan at `when` (kept when it is after `now` and earlier than the time
    /// already asked for).
    pub fn update_recheck_by(&mut self, when: i64) {
        if when > self.now && self.recheck_by.is_none_or(|t| t > when) {
            self.recheck_by = Some(when);
        }
    }
    /// The timeout (ms) of a group's pseudo actions: a group has no operations of its own, so
    /// op_defaults' timeout, else 20s.
    pub fn group_op_timeout_ms(&self, gi: usize) -> u64 {
        self.groups[gi]
            .members
            .first()
            .and_then(|&m| self.resources[m].op_defaults.get("timeout"))
            .map(|t| parse_interval_ms(t))
            .unwrap_or(20_000)
    }
    pub fn node_index(&self, name: &str) -> Option<usize> {
        let fresh = self.index.lens.0 == self.nodes.len();
        let by_uname = self.index.node_by_uname.get(name).copied();
        if fresh && by_uname.is_some_and(|i| self.nodes[i].uname == name) {
            return by_uname;
        }
        let by_id = self.index.node_by_id.get(name).copied();
        if fresh && by_uname.is_none() {
            let i = by_id?;
            if self.nodes[i].id == name {
                return by_id;
            }
        }
        self.nodes
            .iter()
            .position(|n| n.uname == name)
            .or_else(|| self.nodes.iter().position(|n| n.id == name))
    }
    pub fn rsc_index(&self, id: &str) -> Option<usize> {
        let fresh = self.index.lens.1 == self.resources.len();
        match self.index.resources.get(id).copied() {
            Some(i) if fresh && self.resources[i].id == id => Some(i),
            None if fresh => None,
            _ => self.resources.iter().position(|r| r.id == id),
        }
    }
    pub fn group_index(&self, id: &str) -> Option<usize> {
        let fresh = self.index.lens.2 == self.groups.len();
        match self.index.groups.get(id).copied() {
            Some(i) if fresh && self.groups[i].id == id => Some(i),
            None if fresh => None,
            _ => self.groups.iter().position(|g| g.id == id),
        }
    }
    /// Records that node `ni`'s fencing was asked for now, while unpacking (its first request
    /// creates Pacemaker's fencing action: see `fence_requests`).
    pub fn note_fence_request(&mut self, ni: usize) {
        if !self.fence_requests.contains(&ni) {
            self.fence_requests.push(ni);
        }
    }

    /// A resource's current node (Pacemaker's `pe__current_node`, `pe__find_active_on`): of
    /// the nodes it runs on, a partial migration's source; else, when it does not need fencing,
    /// the first clean one (online, not unclean); else the first.
    pub fn current_node(&self, ri: usize) -> Option<usize> {
        let r = &self.resources[ri];
        if let Some((source, _)) = r.partial_migration {
            return r
                .running_on
                .iter()
                .copied()
                .find(|&ni| ni == source)
                .or(r.running_on.first().copied());
        }
        if !crate::reconcile::needs_fencing(self, r) {
            let clean = |ni: usize| self.nodes[ni].online && !self.nodes[ni].unclean;
            if let Some(ni) = r.running_on.iter().copied().find(|&ni| clean(ni)) {
                return Some(ni);
            }
        }
        r.running_on.first().copied()
    }

    /// Can this cluster fence this node?
    pub fn can_fence(&self, ni: usize) -> bool {
        self.stonith_enabled
            && (self.have_stonith_resource
                || self.option("have-watchdog").map(is_true).unwrap_or(false))
            && (self.have_quorum
                || self.no_quorum_policy == NoQuorum::Ignore
                || self.nodes[ni].online)
    }
}

/// Whether a node was made for an orphaned connection found in the status: Pacemaker makes it
/// after the resources were unpacked, so no resource has it among its allowed nodes.
pub fn is_orphan_node(n: &Node) -> bool {
    n.remote.as_ref().is_some_and(|rn| rn.orphan)
}

/// Compares strings as Pacemaker sorts node names: case-insensitive, digit runs numerically.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if a[i].is_ascii_digit() && b[j].is_ascii_digit() {
            let si = i;
            while i < a.len() && a[i].is_ascii_digit() {
                i += 1;
            }
            let sj = j;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let na = std::str::from_utf8(&a[si..i])
                .unwrap_or("0")
                .trim_start_matches('0');
            let nb = std::str::from_utf8(&b[sj..j])
                .unwrap_or("0")
                .trim_start_matches('0');
            let ord = na.len().cmp(&nb.len()).then(na.cmp(nb));
            if ord != std::cmp::Ordering::Equal {
                return ord;
            }
        } else {
            let ord = a[i].to_ascii_lowercase().cmp(&b[j].to_ascii_lowercase());
            if ord != std::cmp::Ordering::Equal {
                return ord;
            }
            i += 1;
            j += 1;
        }
    }
    (a.len() - i).cmp(&(b.len() - j))
}

/// Merges attribute sets: sets without rules in order of descending score; first value wins.
pub fn merge_sets(
    target: &mut BTreeMap<String, String>,
    sets: &[NvSet],
    now: i64,
    node_attrs: Option<&BTreeMap<String, String>>,
) {
    let mut sorted: Vec<&NvSet> = sets.iter().collect();
    sorted.sort_by_key(|s| std::cmp::Reverse(s.score));
    for set in sorted {
        if !set.rules.is_empty()
            && !set.rules.iter().all(|r| {
                crate::rules::eval_rule(r, node_attrs.unwrap_or(&BTreeMap::new()), now, None)
            })
        {
            continue;
        }
        for (k, v) in &set.pairs {
            // "#default" lets the name default (it drops a value already set).
            if v.eq_ignore_ascii_case("#default") {
                target.remove(k);
                continue;
            }
            target.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
}

fn set_utilization(sets: &[NvSet], now: i64) -> BTreeMap<String, i64> {
    let mut raw = BTreeMap::new();
    merge_sets(&mut raw, sets, now, None);
    raw.into_iter()
        .map(|(k, v)| (k, v.trim().parse().unwrap_or(0)))
        .collect()
}

pub(crate) fn make_resource(
    p: &Primitive,
    cib: &Cib,
    group_meta: Option<&BTreeMap<String, String>>,
    now: i64,
) -> Resource {
    let mut meta = BTreeMap::new();
    merge_sets(&mut meta, &p.meta, now, None);
    if let Some(gm) = group_meta {
        for (k, v) in gm {
            meta.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    merge_sets(&mut meta, &cib.rsc_defaults, now, None);
    if let Some(model) = cib.migration_model_override {
        meta.insert(
            crate::atomic::MIGRATION_MODEL_META.to_string(),
            model.to_string(),
        );
    }
    let mut params = BTreeMap::new();
    merge_sets(&mut params, &p.params, now, None);
    let mut op_defaults = BTreeMap::new();
    merge_sets(&mut op_defaults, &cib.op_defaults, now, None);
    let target_role = meta.get("target-role").and_then(|r| Role::parse(r));
    Resource {
        id: p.id.clone(),
        class: p.class.clone(),
        provider: p.provider.clone(),
        kind: p.kind.clone(),
        meta,
        params,
        utilization: set_utilization(&p.utilization, now),
        ops: p.ops.clone(),
        op_defaults,
        op_default_sets: cib.op_defaults.clone(),
        evaluated_at: now,
        param_sets: p.params.clone(),
        feature_set: cib
            .feature_set
            .clone()
            .unwrap_or_else(|| FEATURE_SET.to_string()),
        legacy_fail_counts: legacy_fail_counts(cib.feature_set.as_deref()),
        sanitized: !cib.live,
        role: Role::Stopped,
        managed: true,
        target_role,
        line: p.line,
        ..Default::default()
    }
}

/// The feature set Pacemaker 2.1.5 writes (used when neither entry nor CIB names one).
const FEATURE_SET: &str = "3.16.2";

/// A history entry's expected rc, from its transition key.
fn target_rc(op: &RscOp) -> i32 {
    op.transition_key
        .as_deref()
        .and_then(|k| k.split(':').nth(2))
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

fn is_probe(op: &RscOp) -> bool {
    op.operation == "monitor" && op.interval_ms == 0
}

impl Resource {
    /// Finds the configured on-fail for an operation (default: fence for stop with fencing).
    pub fn on_fail_for(&self, task: &str, interval_ms: u64, stonith_enabled: bool) -> OnFail {
        let configured = self
            .ops
            .iter()
            // A disabled operation's on-fail still governs how its recorded failures unpack.
            .find(|o| o.name == task && o.interval_ms == interval_ms)
            .and_then(|o| o.attrs.get("on-fail").cloned())
            .or_else(|| {
                self.op_defaults_for(task, interval_ms)
                    .get("on-fail")
                    .cloned()
            });
        // A demote without its own on-fail takes that of an enabled recurring Promoted-role
        // monitor (other than demote).
        let configured = configured.or_else(|| {
            (task == "demote")
                .then(|| {
                    self.ops.iter().find_map(|o| {
                        let v = o.attrs.get("on-fail")?;
                        (o.name == "monitor"
                            && o.enabled
                            && o.interval_ms > 0
                            && o.role.as_deref().and_then(Role::parse) == Some(Role::Promoted)
                            && !v.eq_ignore_ascii_case("demote"))
                        .then(|| v.clone())
                    })
                })
                .flatten()
        });
        // Pacemaker resets a stop's on-fail of standby, demote or stop to the default, and
        // on-fail=demote of anything but a promote or a recurring Promoted-role monitor.
        let configured = configured.filter(|v| {
            let v = v.to_ascii_lowercase();
            if task == "stop" {
                return !matches!(v.as_str(), "standby" | "demote" | "stop");
            }
            v != "demote"
                || task == "promote"
                || (task == "monitor"
                    && interval_ms > 0
                    && self
                        .ops
                        .iter()
                        .find(|o| o.name == task && o.interval_ms == interval_ms)
                        .and_then(|o| o.role.as_deref())
                        .and_then(Role::parse)
                        == Some(Role::Promoted))
        });
        if let Some(v) = configured.as_deref().and_then(OnFail::parse) {
            // on-fail=fence is reset to stop while fencing is disabled (Pacemaker 2.1.5
            // `unpack_operation_on_fail`'s caller in pe_actions.c, role after failure Stopped).
            if v == OnFail::Fence && !stonith_enabled {
                return OnFail::Stop;
            }
            return v;
        }
        // A remote node's connection (Pacemaker 2.1.5: no on-fail configured, or unmanaged):
        // failures other than probes and starts reset the remote node.
        if (configured.is_none() || !self.managed)
            && self.remote_node.is_some()
            && self.container.is_none()
            && !(task == "monitor" && interval_ms == 0)
            && task != "start"
        {
            return if self.managed {
                OnFail::ResetRemote
            } else {
                OnFail::Stop
            };
        }
        // Inside a container, failures (stops included) restart the container unless an on-fail
        // says otherwise ("restart-container" outside a container is no setting).
        if self.container.is_some() {
            return OnFail::RestartContainer;
        }
        if task == "stop" {
            if stonith_enabled {
                OnFail::Fence
            } else {
                OnFail::Block
            }
        } else {
            OnFail::Recover
        }
    }

    /// The meta-attributes an action (`task`, `interval_ms`) of this resource takes from
    /// op_defaults and from its configured operation, as Pacemaker's name (`on-fail`), besides the
    /// timeout and interval (normalized apart): the operation's own attributes win, its id is
    /// dropped, start-delay is in ms. The configured operation matches by name and interval;
    /// migrate_to and migrate_from fall back to an operation named "migrate". Attributes the
    /// cluster generates (a `#` or `:` in the name) are not passed on.
    pub fn op_meta(&self, task: &str, interval_ms: u64) -> BTreeMap<String, String> {
        let entry = |name: &str| {
            self.ops
                .iter()
                .find(|o| o.name.eq_ignore_ascii_case(name) && o.interval_ms == interval_ms)
        };
        let op = entry(task).or_else(|| {
            matches!(task, "migrate_to" | "migrate_from")
                .then(|| entry("migrate"))
                .flatten()
        });
        let mut meta = BTreeMap::new();
        let defaults = self.op_defaults_for(task, interval_ms);
        let sources = defaults
            .iter()
            .chain(op.into_iter().flat_map(|o| o.attrs.iter()));
        for (k, v) in sources {
            if matches!(k.as_str(), "id" | "interval" | "timeout") || k.contains(['#', ':']) {
                continue;
            }
            let v = if k == "start-delay" {
                parse_interval_ms(v).to_string()
            } else {
                v.clone()
            };
            meta.insert(k.clone(), v);
        }
        meta
    }

    /// The op's timeout from configuration (ms), falling back to op_defaults and 20s.
    pub fn op_timeout_ms(&self, task: &str, interval_ms: u64) -> u64 {
        let find = |name: &str, iv: u64| {
            self.ops
                .iter()
                .find(|o| o.name == name && o.interval_ms == iv)
                .and_then(|o| o.attrs.get("timeout").cloned())
        };
        // A probe without an operation of its own takes the timeout of the enabled recurring
        // monitor with the shortest interval (the first of equals), before op_defaults.
        let probe_default = || {
            if task != "monitor" || interval_ms != 0 {
                return None;
            }
            let mut best: Option<&OpDef> = None;
            for o in &self.ops {
                if o.enabled
                    && o.name.eq_ignore_ascii_case("monitor")
                    && o.interval_ms > 0
                    && best.is_none_or(|b| o.interval_ms < b.interval_ms)
                {
                    best = Some(o);
                }
            }
            best.and_then(|o| o.attrs.get("timeout").cloned())
        };
        find(task, interval_ms)
            // (a migration without an operation of its own takes the legacy "migrate" one's)
            .or_else(|| {
                matches!(task, "migrate_to" | "migrate_from")
                    .then(|| find("migrate", 0))
                    .flatten()
            })
            .or_else(probe_default)
            .or_else(|| {
                self.op_defaults_for(task, interval_ms)
                    .get("timeout")
                    .cloned()
            })
            .and_then(|t| crate::cib::parse_timeout_ms(&t))
            .unwrap_or(20_000)
    }
}

/// The index of a `node_state`'s node in `nodes` (matched by id, else by uname); None for a
/// node the configuration does not know.
pub fn node_of_state(nodes: &[Node], st: &NodeState) -> Option<usize> {
    nodes
        .iter()
        .position(|n| n.id == st.id || n.uname == st.uname)
}

/// Every resource history (`lrm_resource`) in the status, with the index of its node, in status
/// order; histories on unknown nodes are skipped. Every reader of the history starts here.
pub fn lrm_histories<'a, 'b>(
    cib: &'a Cib,
    nodes: &'b [Node],
) -> impl Iterator<Item = (usize, &'a LrmResource)> + use<'a, 'b> {
    cib.status.iter().flat_map(move |st| {
        let ni = node_of_state(nodes, st);
        st.lrm.iter().filter_map(move |lr| ni.map(|ni| (ni, lr)))
    })
}

/// Unpacks the typed CIB into an `Observed` state. `now` is seconds since the epoch.
/// The cluster options in effect at `now`: the property sets whose rules pass, the set
/// "cib-bootstrap-options" first, then by score, the later of equal-score sets first; the first
/// value of an option wins (Pacemaker's order for unpacking crm_config).
pub fn cluster_options(sets: &[NvSet], now: i64) -> BTreeMap<String, String> {
    let mut ordered: Vec<&NvSet> = sets.iter().rev().collect();
    ordered.sort_by_key(|s| (s.id != "cib-bootstrap-options", std::cmp::Reverse(s.score)));
    let no_attrs = BTreeMap::new();
    let mut out = BTreeMap::new();
    for set in ordered {
        if set
            .rules
            .iter()
            .all(|r| crate::rules::eval_rule(r, &no_attrs, now, None))
        {
            for (k, v) in &set.pairs {
                out.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    out
}

#[allow(missing_docs)] // white-box item of `pengine::unstable`, not API
pub fn observe(cib: &Cib, now: i64) -> Observed {
    let options = if cib.option_sets.is_empty() {
        cib.options.clone()
    } else {
        cluster_options(&cib.option_sets, now)
    };
    let opt = |n: &str| options.get(n).map(String::as_str);
    let flag = |n: &str, d: bool| opt(n).map(is_true).unwrap_or(d);
    let stonith_enabled = flag("stonith-enabled", true);
    let have_quorum = cib.have_quorum;
    let mut no_quorum_policy = match opt("no-quorum-policy")
        .map(|s| s.to_ascii_lowercase())
        .as_deref()
    {
        Some("ignore") => NoQuorum::Ignore,
        Some("freeze") => NoQuorum::Freeze,
        Some("demote") => NoQuorum::Demote,
        Some("suicide") => NoQuorum::Suicide,
        _ => NoQuorum::Stop,
    };
    if no_quorum_policy == NoQuorum::Suicide
        && (!stonith_enabled || !(cib.quorum_panic || have_quorum))
    {
        no_quorum_policy = NoQuorum::Stop;
    }
    let startup_fencing = stonith_enabled && flag("startup-fencing", true);
    let maintenance_mode = flag("maintenance-mode", false);

    // Nodes, sorted by name.
    let mut nodes: Vec<Node> = cib
        .nodes
        .iter()
        .filter(|n| n.kind != "remote")
        .map(|n| {
            let mut attrs = BTreeMap::new();
            merge_sets(&mut attrs, &n.attrs, now, None);
            attrs.insert("#uname".into(), n.uname.clone());
            attrs.insert("#id".into(), n.id.clone());
            attrs.insert("#kind".into(), "cluster".into());
            // The cluster's name, which is also the node's site unless it names one.
            if let Some(cluster) = opt("cluster-name") {
                attrs.insert("#cluster-name".into(), cluster.to_string());
            }
            if !attrs.contains_key("#site-name") {
                if let Some(site) = attrs
                    .get("site-name")
                    .map(String::as_str)
                    .or(opt("cluster-name"))
                {
                    attrs.insert("#site-name".into(), site.to_string());
                }
            }
            Node {
                id: n.id.clone(),
                uname: n.uname.clone(),
                unclean: startup_fencing,
                unseen: true,
                attrs,
                utilization: set_utilization(&n.utilization, now),
                weight: n.score,
                ..Default::default()
            }
        })
        .collect();
    // Pacemaker Remote nodes (see `crate::remote`) sort among the cluster nodes by name.
    nodes.extend(crate::remote::configured_nodes(cib, now));
    nodes.sort_by(|a, b| natural_cmp(&a.uname, &b.uname));
    for n in &mut nodes {
        n.is_dc = cib.dc_uuid.as_deref() == Some(n.id.as_str());
        n.attrs.insert(
            "#is_dc".into(),
            if n.is_dc { "true" } else { "false" }.into(),
        );
    }

    let mut obs = Observed {
        nodes,
        resources: Vec::new(),
        groups: Vec::new(),
        top: Vec::new(),
        options: options.clone(),
        stonith_enabled,
        symmetric: flag("symmetric-cluster", true),
        have_quorum,
        no_quorum_policy,
        maintenance_mode,
        stop_all: flag("stop-all-resources", false),
        placement_strategy: opt("placement-strategy")
            .unwrap_or("default")
            .to_ascii_lowercase(),
        now,
        start_failure_is_fatal: flag("start-failure-is-fatal", true),
        have_stonith_resource: false,
        unfencing: cib.unfencing,
        shutdown_lock: flag("shutdown-lock", false),
        shutdown_lock_limit_s: opt("shutdown-lock-limit")
            .map(|v| parse_interval_ms(v) / 1000)
            .unwrap_or(0) as i64,
        recheck_by: None,
        orders: cib.orders.clone(),
        bundles: Vec::new(),
        bundle_nodes_pending: cib
            .resources
            .iter()
            .map(|r| match r {
                ResourceDef::Bundle(b) => crate::bundles::created_nodes(b, cib),
                _ => 0,
            })
            .sum(),
        unpack_step: Vec::new(),
        fence_requests: Vec::new(),
        mandatory_colocations: cib
            .colocations
            .iter()
            .filter(|c| c.score >= INFINITY)
            .map(|c| {
                let role = |r: &Option<String>| {
                    r.as_deref()
                        .and_then(Role::parse)
                        .filter(|r| *r != Role::Started)
                };
                (
                    c.rsc.clone(),
                    c.with_rsc.clone(),
                    role(&c.rsc_role),
                    role(&c.with_rsc_role),
                )
            })
            .collect(),
        index: IdIndex::default(),
    };
    // A mandatory anti-colocation (-INFINITY) also orders what makes each side lose its role
    // (Promoted: demote; else stop, and promote for Unpromoted) before what makes the other
    // side take its own (Promoted: promote; else start, and demote for Unpromoted), kept only
    // between actions on the same node (Pacemaker's `anti_colocation_order`).
    for c in &cib.colocations {
        if c.score > -INFINITY {
            continue;
        }
        let role = |role: &Option<String>| {
            role.as_deref()
                .and_then(Role::parse)
                .filter(|r| *r != Role::Started)
        };
        let (rsc_role, with_role) = (role(&c.rsc_role), role(&c.with_rsc_role));
        let lose = |r: Option<Role>| match r {
            Some(Role::Promoted) => vec!["demote"],
            Some(Role::Unpromoted) => vec!["stop", "promote"],
            _ => vec!["stop"],
        };
        let gain = |r: Option<Role>| match r {
            Some(Role::Promoted) => vec!["promote"],
            Some(Role::Unpromoted) => vec!["start", "demote"],
            _ => vec!["start"],
        };
        for (first, fr, then, tr) in [
            (&c.rsc, rsc_role, &c.with_rsc, with_role),
            (&c.with_rsc, with_role, &c.rsc, rsc_role),
        ] {
            for fa in lose(fr) {
                for ta in gain(tr) {
                    obs.orders.push(crate::cib::Order {
                        id: format!("{}-anti-colocation", c.id),
                        first: first.clone(),
                        then: then.clone(),
                        first_action: fa.into(),
                        then_action: ta.into(),
                        kind: "anti-colocation".into(),
                        symmetrical: Some(false),
                        one_or_more: Default::default(),
                    });
                }
            }
        }
    }

    // Resources.
    for (step, r) in cib.resources.iter().enumerate() {
        match r {
            ResourceDef::Primitive(p) => {
                let rsc = make_resource(p, cib, None, now);
                obs.top.push(Top::Primitive(obs.resources.len()));
                obs.resources.push(rsc);
            }
            ResourceDef::Group(g) => {
                let mut gmeta = BTreeMap::new();
                merge_sets(&mut gmeta, &g.meta, now, None);
                let gi = obs.groups.len();
                let mut members = Vec::new();
                for p in &g.members {
                    let mut rsc = make_resource(p, cib, Some(&gmeta), now);
                    rsc.group = Some(gi);
                    members.push(obs.resources.len());
                    obs.resources.push(rsc);
                }
                let mut gm = gmeta.clone();
                merge_sets(&mut gm, &cib.rsc_defaults, now, None);
                obs.groups.push(Group {
                    id: g.id.clone(),
                    members,
                    meta: gm,
                    clone: None,
                });
                obs.top.push(Top::Group(gi));
            }
            ResourceDef::Clone(c) => crate::clones::add_clone(&mut obs, c, cib, now),
            ResourceDef::Bundle(b) => crate::bundles::add_bundle(&mut obs, b, cib, now),
        }
        let made = obs.resources.len() - obs.unpack_step.len();
        obs.unpack_step.extend(std::iter::repeat_n(step, made));
    }
    // Pacemaker counts watchdog self-fencing (have-watchdog, set by the controller when SBD runs)
    // as a fencing device: resources may start without a stonith resource.
    obs.have_stonith_resource = obs.resources.iter().any(|r| r.is_stonith())
        || obs.option("have-watchdog").map(is_true).unwrap_or(false);
    for r in &mut obs.resources {
        let mut managed = r.meta_bool("is-managed", true);
        if maintenance_mode || r.meta_bool("maintenance", false) {
            managed = false;
        }
        r.managed = managed;
    }
    obs.reindex();
    crate::container::resolve(&mut obs);
    crate::remote::link(&mut obs, startup_fencing);

    // Node states.
    let states: Vec<(usize, &NodeState)> = cib
        .status
        .iter()
        .filter_map(|st| node_of_state(&obs.nodes, st).map(|ni| (ni, st)))
        .collect();
    for (ni, st) in states {
        let node = &mut obs.nodes[ni];
        if node.remote.is_some() {
            crate::remote::note_state(node, st);
            continue;
        }
        for (k, v) in &st.attrs {
            node.attrs.insert(k.clone(), v.clone());
        }
        node.unclean = false;
        node.unseen = false;
        let shutdown_attr = node
            .attrs
            .get("shutdown")
            .map(|v| v != "0" && !v.is_empty())
            .unwrap_or(false);
        node.shutdown = shutdown_attr;
        node.expected_up = !shutdown_attr && st.expected.as_deref() == Some("member");
        let in_ccm = st.in_ccm.as_deref().map(is_true).unwrap_or(false);
        let crmd_online = st
            .crmd
            .as_deref()
            .map(|c| c.eq_ignore_ascii_case("online"))
            .unwrap_or(false);
        let join = st.join.as_deref().unwrap_or("");
        let mut online = false;
        let mut fence: Option<&str> = None;
        if !stonith_enabled {
            if !in_ccm {
            } else if crmd_online {
                online = join.eq_ignore_ascii_case("member");
            } else if !node.expected_up {
            } else {
                fence = Some("peer is unexpectedly down");
            }
        } else {
            let terminate = node
                .attrs
                .get("terminate")
                .map(|t| {
                    is_true(t)
                        || (t
                            .chars()
                            .next()
                            .map(|c| c != '0' && c.is_ascii_digit())
                            .unwrap_or(false))
                })
                .unwrap_or(false);
            let exp_state = st.expected.as_deref().unwrap_or("down");
            online = in_ccm;
            if node.shutdown {
                online = crmd_online;
            } else if st.in_ccm.is_none() {
                fence = Some("peer has not been seen by the cluster");
            } else if join.eq_ignore_ascii_case("banned") {
                fence = Some("peer failed Pacemaker membership criteria");
            } else if !terminate && exp_state.eq_ignore_ascii_case("down") {
                if in_ccm || crmd_online {
                    node.standby = true;
                    node.pending = true;
                }
            } else if terminate && join.eq_ignore_ascii_case("down") && !in_ccm && !crmd_online {
                online = false;
            } else if !in_ccm {
                fence = Some("peer is no longer part of the cluster");
            } else if !crmd_online {
                fence = Some("peer process is no longer available");
            } else if terminate {
                fence = Some("termination was requested");
            } else if join.eq_ignore_ascii_case("member") {
            } else if join.eq_ignore_ascii_case("pending") || join.eq_ignore_ascii_case("down") {
                node.standby = true;
                node.pending = true;
            } else {
                fence = Some("peer was in an unknown state");
            }
        }
        if let Some(reason) = fence {
            node.unclean = true;
            node.fence_reason = Some(reason.to_string());
            node.fence_priority_delay = reason == "peer is no longer part of the cluster";
            // (`note_fence_request`, on the field: `node` borrows the nodes)
            if !obs.fence_requests.contains(&ni) {
                obs.fence_requests.push(ni);
            }
        }
        node.online = online;
        if !have_quorum && online && no_quorum_policy == NoQuorum::Suicide && !node.unclean {
            node.unclean = true;
            node.fence_reason = Some("cluster does not have quorum".into());
        }
    }
    for node in &mut obs.nodes {
        if node.unseen {
            continue;
        }
        if node
            .attrs
            .get("standby")
            .map(|v| is_true(v))
            .unwrap_or(false)
        {
            node.standby = true;
        }
        if node
            .attrs
            .get("maintenance")
            .map(|v| is_true(v))
            .unwrap_or(false)
        {
            node.maintenance = true;
        }
    }
    for node in &mut obs.nodes {
        node.health = node_health(&obs.options, &node.attrs);
    }

    // Resource history. Every node's history of each resource, for migrations.
    // (Collected first: the items borrow the CIB only, not the nodes.)
    let all_histories: Vec<(usize, &LrmResource)> = lrm_histories(cib, &obs.nodes).collect();
    for &(ni, lr) in &all_histories {
        obs.nodes[ni].history_order.push(lr.id.clone());
    }
    let mut histories: BTreeMap<&str, Vec<(usize, &[RscOp])>> = BTreeMap::new();
    for &(ni, lr) in &all_histories {
        histories
            .entry(lr.id.as_str())
            .or_default()
            .push((ni, lr.ops.as_slice()));
    }
    let mut orphans: Vec<Resource> = Vec::new();
    let mut orphan_meta = BTreeMap::new();
    merge_sets(&mut orphan_meta, &cib.rsc_defaults, now, None);
    if let Some(model) = cib.migration_model_override {
        orphan_meta.insert(
            crate::atomic::MIGRATION_MODEL_META.to_string(),
            model.to_string(),
        );
    }
    let mut orphan_op_defaults = BTreeMap::new();
    merge_sets(&mut orphan_op_defaults, &cib.op_defaults, now, None);
    let (shutdown_lock, lock_limit_s) = (obs.shutdown_lock, obs.shutdown_lock_limit_s);
    let clone_children = crate::clones::by_child(&obs);
    // Remote nodes to fence because an operation with on-fail=fence failed there.
    let mut history_fences: Vec<(usize, String)> = Vec::new();
    // Cluster nodes' histories first, then the remote nodes', one node at a time in the
    // order `crate::remote::StatePasses` reads them (a remote node's connection state is in
    // another node's history).
    let mut batch: Vec<(usize, &LrmResource)> = all_histories
        .iter()
        .copied()
        .filter(|&(ni, _)| obs.nodes[ni].remote.is_none())
        .collect();
    let mut passes: Option<crate::remote::StatePasses> = None;
    // Orphans' recorded containers (orphan id, container id).
    let mut orphan_containers: Vec<(String, String)> = Vec::new();
    // The remote nodes' states are read with the orphans found so far in place (an orphaned
    // connection decides its node's state), which then move back behind the configuration.
    let with_orphans =
        |obs: &mut Observed,
         orphans: &mut Vec<Resource>,
         containers: &[(String, String)],
         stage: crate::remote::OrphanLink,
         read: &mut dyn FnMut(&mut Observed) -> Option<usize>| {
            let base = obs.resources.len();
            obs.resources.append(orphans);
            crate::remote::link_orphans(obs, base, containers, startup_fencing, stage);
            let read_node = read(obs);
            *orphans = obs.resources.split_off(base);
            crate::remote::unlink_orphans(obs);
            read_node
        };
    loop {
        if let Some(p) = passes.as_mut() {
            let Some(next) = with_orphans(
                &mut obs,
                &mut orphans,
                &orphan_containers,
                crate::remote::OrphanLink::Reading,
                &mut |obs| p.next(obs, cib),
            ) else {
                break;
            };
            batch = all_histories
                .iter()
                .copied()
                .filter(|&(ni, _)| ni == next)
                .collect();
        }
        for (ni, lr) in std::mem::take(&mut batch) {
            // Offline nodes' histories are read with fencing, or with shutdown locks (a lock is
            // recorded in a departed node's history).
            if !stonith_enabled && !shutdown_lock && !obs.nodes[ni].online {
                continue;
            }
            if lr.ops.is_empty() {
                if let Some(ri) = obs.rsc_index(&lr.id).filter(|_| shutdown_lock) {
                    read_shutdown_lock(&mut obs.resources[ri], ni, lr, now, lock_limit_s);
                }
                continue;
            }
            let owner = match crate::clones::history_owner(&obs, &clone_children, ni, &lr.id) {
                crate::clones::Owner::Instance(ri) => Some(ri),
                crate::clones::Owner::Orphan => {
                    crate::clone_groups::orphan_member(&mut obs, cib, &clone_children, &lr.id, now)
                }
                crate::clones::Owner::NotCloned => obs.rsc_index(&lr.id),
            };
            if let Some(ri) = owner {
                crate::clones::note_history_name(&mut obs.resources, &mut obs.groups, ri, &lr.id);
            }
            let ri = match owner {
                Some(ri) => ri,
                None => {
                    let oi = match orphans.iter().position(|o| o.id == lr.id) {
                        Some(oi) => oi,
                        None => {
                            orphans.push(Resource {
                                id: lr.id.clone(),
                                class: lr.class.clone(),
                                provider: lr.provider.clone(),
                                kind: lr.kind.clone(),
                                orphan: true,
                                managed: flag("stop-orphan-resources", true) && !maintenance_mode,
                                role: Role::Stopped,
                                // (unpacked as a resource: resource and operation defaults apply)
                                meta: orphan_meta.clone(),
                                op_defaults: orphan_op_defaults.clone(),
                                op_default_sets: cib.op_defaults.clone(),
                                evaluated_at: now,
                                legacy_fail_counts: legacy_fail_counts(cib.feature_set.as_deref()),
                                sanitized: !cib.live,
                                ..Default::default()
                            });
                            if let Some(c) = &lr.container {
                                orphan_containers.push((lr.id.clone(), c.clone()));
                            }
                            orphans.len() - 1
                        }
                    };
                    // orphans live after configured resources
                    obs.resources.len() + oi
                }
            };
            let nres = obs.resources.len();
            // The configuration check finds the resource by the history's own name: an orphaned
            // clone instance's history named after another instance is checked as that one's.
            let checked = match obs.rsc_index(&lr.id) {
                Some(c) if ri < nres && obs.resources[ri].orphan && c != ri => {
                    let node = &obs.nodes[ni];
                    let c_r = &obs.resources[c];
                    if node.online
                        && !node.unclean
                        && !node.shutdown
                        && !node.standby
                        && !node.pending
                        && !node.maintenance
                        && c_r.clone_base.is_some()
                        && !c_r.orphan
                        && (c_r.class != lr.class
                            || c_r.provider != lr.provider
                            || c_r.kind != lr.kind)
                        && !c_r.agent_changed_on.contains(&ni)
                    {
                        Some(c)
                    } else {
                        None
                    }
                }
                _ => None,
            };
            if let Some(c) = checked {
                obs.resources[c].agent_changed_on.push(ni);
            }
            let rsc = if ri < nres {
                &mut obs.resources[ri]
            } else {
                &mut orphans[ri - nres]
            };
            if shutdown_lock {
                read_shutdown_lock(rsc, ni, lr, now, lock_limit_s);
            }
            // The configuration check compares the agent the history ran (class, provider, type)
            // with the configured one on every node that can run resources: a change cleans the
            // history up there, after a restart where the resource is active.
            let node = &obs.nodes[ni];
            if !rsc.orphan
                && node.online
                && !node.unclean
                && !node.shutdown
                && !node.standby
                && !node.pending
                && !node.maintenance
                && (rsc.class != lr.class || rsc.provider != lr.provider || rsc.kind != lr.kind)
                && !rsc.agent_changed_on.contains(&ni)
            {
                rsc.agent_changed_on.push(ni);
            }
            let outcome = unpack_lrm_resource(
                rsc,
                ni,
                &lr.ops,
                &obs.nodes,
                stonith_enabled,
                now,
                histories
                    .get(lr.id.as_str())
                    .map(Vec::as_slice)
                    .unwrap_or(&[]),
            );
            crate::clones::forget_stopped_name(rsc, ni);
            if outcome.standby {
                obs.nodes[ni].standby = true;
                obs.nodes[ni].standby_onfail = true;
            }
            if outcome.fence {
                let reason = format!("{} failed there", rsc.id);
                // Pacemaker's `pe_fence_node` marks a cluster node unclean at once: the
                // histories read after this one there see it unclean (their failures are
                // ignored: `process_rsc_state`). A remote node is fenced after unpacking.
                let node = &mut obs.nodes[ni];
                if node.remote.is_some() {
                    history_fences.push((ni, reason));
                } else if !node.unclean {
                    node.unclean = true;
                    node.fence_reason = Some(reason);
                    obs.note_fence_request(ni);
                }
            }
        }
        if passes.is_none() {
            with_orphans(
                &mut obs,
                &mut orphans,
                &orphan_containers,
                crate::remote::OrphanLink::Found,
                &mut |obs| {
                    crate::remote::prepare_states(obs);
                    None
                },
            );
            passes = Some(crate::remote::StatePasses::default());
        }
    }
    // Resources are listed by priority (highest first), configuration order otherwise.
    let prio = |obs: &Observed, t: &Top| -> i64 {
        let meta = match *t {
            Top::Primitive(ri) => &obs.resources[ri].meta,
            Top::Group(gi) => &obs.groups[gi].meta,
        };
        meta.get("priority")
            .and_then(|v| parse_score(v))
            .unwrap_or(0)
    };
    let mut top = std::mem::take(&mut obs.top);
    top.sort_by_key(|t| std::cmp::Reverse(prio(&obs, t)));
    obs.top = top;
    let orphans_base = obs.resources.len();
    for o in orphans {
        obs.top.push(Top::Primitive(obs.resources.len()));
        obs.resources.push(o);
    }
    obs.reindex();
    crate::remote::link_orphans(
        &mut obs,
        orphans_base,
        &orphan_containers,
        startup_fencing,
        crate::remote::OrphanLink::Final,
    );
    crate::remote::after_histories(&mut obs);
    // A primitive found active on a node in maintenance is unmanaged (Pacemaker clears the
    // managed flag when it records the resource as running there).
    for r in &mut obs.resources {
        if r.running_on.iter().any(|&ni| obs.nodes[ni].maintenance) {
            r.managed = false;
        }
    }
    // A managed primitive active on several nodes with multiple-active=block is left alone:
    // unmanaged and blocked; in a group that also says block, so is every member.
    let multiply_blocked: Vec<usize> = (0..obs.resources.len())
        .filter(|&ri| {
            let r = &obs.resources[ri];
            r.managed
                && r.running_on.len() > 1
                && r.meta
                    .get("multiple-active")
                    .is_some_and(|v| v.eq_ignore_ascii_case("block"))
        })
        .collect();
    for ri in multiply_blocked {
        let group_blocks = obs.resources[ri].group.filter(|&gi| {
            obs.groups[gi]
                .meta
                .get("multiple-active")
                .is_some_and(|v| v.eq_ignore_ascii_case("block"))
        });
        let members = match group_blocks {
            Some(gi) => obs.groups[gi].members.clone(),
            None => vec![ri],
        };
        for m in members {
            let r = &mut obs.resources[m];
            r.managed = false;
            r.blocked = true;
            r.blocked_after = Some(r.running_on.len());
        }
    }
    // A managed primitive active on several nodes with multiple-active=stop_only is stopped
    // everywhere and may not come up again: Pacemaker 2.1.5 resets its allowed nodes to every
    // node at -INFINITY while unpacking the status (rec-rsc-7).
    for r in &mut obs.resources {
        if r.managed
            && r.running_on.len() > 1
            && r.meta
                .get("multiple-active")
                .is_some_and(|v| v.eq_ignore_ascii_case("stop_only"))
        {
            r.history_bans.push((
                None,
                -INFINITY,
                "active on several nodes with multiple-active=stop_only".into(),
            ));
        }
    }
    crate::container::require_stops(&mut obs);
    // Fail counts.
    let legacy = legacy_fail_counts(cib.feature_set.as_deref());
    for (ni, node) in obs.nodes.iter().enumerate() {
        for (k, v) in &node.attrs {
            let Some(rid) = failure_attr_rsc(k, "fail-count-", legacy) else {
                continue;
            };
            for ri in crate::clones::named_by_history(&obs, rid) {
                let count = parse_score(v).unwrap_or(0);
                *obs.resources[ri].fail_count.entry(ni).or_insert(0) += count;
            }
        }
        for (k, v) in &node.attrs {
            let Some(rid) = failure_attr_rsc(k, "last-failure-", legacy) else {
                continue;
            };
            for ri in crate::clones::named_by_history(&obs, rid) {
                let t: i64 = v.trim().parse().unwrap_or(0);
                let e = obs.resources[ri].last_failure.entry(ni).or_insert(0);
                *e = (*e).max(t);
            }
        }
    }
    failure_rechecks(&mut obs);
    // Resources running on offline nodes with fencing: the node must be fenced.
    let mut fences = history_fences;
    let mut remote_fences = Vec::new();
    for (ri, r) in obs.resources.iter().enumerate() {
        if r.role > Role::Stopped && r.managed {
            for &ni in &r.running_on {
                let n = &obs.nodes[ni];
                if n.remote.is_some() {
                    if !n.online && !n.maintenance {
                        remote_fences.push((ri, ni));
                    }
                    continue;
                }
                if !n.online && !n.maintenance && stonith_enabled && !n.unclean {
                    fences.push((ni, format!("{} is thought to be active there", r.id)));
                }
            }
        }
    }
    for (ri, ni) in remote_fences {
        crate::remote::active_on_offline(&mut obs, ri, ni);
    }
    for (ni, reason) in fences {
        // (a remote node is fenced as Pacemaker's `pe_fence_node` fences one: a guest by
        // recovering its container)
        if obs.nodes[ni].remote.is_some() {
            crate::remote::fence(&mut obs, ni, reason);
            continue;
        }
        if !obs.nodes[ni].unclean {
            obs.nodes[ni].unclean = true;
            obs.nodes[ni].fence_reason = Some(reason);
            obs.note_fence_request(ni);
        }
    }
    crate::guest::host_lost(&mut obs);
    node_priorities(&mut obs);
    crate::promotable::settle_roles(&mut obs);
    for r in &mut obs.resources {
        for (source, target) in std::mem::take(&mut r.pending_migrate_to_lost) {
            if obs.nodes[source].unclean && !r.stops_forced.contains(&target) {
                r.stops_forced.push(target);
            }
        }
    }
    obs
}

/// A fail count that has yet to expire asks for a new plan once it has (Pacemaker's
/// `check_operation_expiry`): at the last failure plus the failure timeout plus one second. A
/// remote connection's `reconnect_interval` is its failure timeout; a blocked resource has none.
fn failure_rechecks(obs: &mut Observed) {
    let mut times = Vec::new();
    for r in &obs.resources {
        let reconnect_s = (crate::remote::reconnect_interval_ms(r) / 1000) as i64;
        let timeout_s = if reconnect_s > 0 {
            reconnect_s
        } else {
            r.failure_timeout_s()
        };
        if timeout_s <= 0 || r.blocked {
            continue;
        }
        for (ni, &count) in &r.fail_count {
            let last = r.last_failure.get(ni).copied().unwrap_or(0);
            if count > 0 && last > 0 && obs.now <= last.saturating_add(timeout_s) {
                times.push(last.saturating_add(timeout_s).saturating_add(1));
            }
        }
    }
    for t in times {
        obs.update_recheck_by(t);
    }
}

/// Each node's priority from the resources found active on it (Pacemaker's
/// `native_priority_to_node`): on a guest node, also on its container's nodes.
fn node_priorities(obs: &mut Observed) {
    let mut add: Vec<(usize, i64)> = Vec::new();
    for r in &obs.resources {
        for &(ni, p) in &r.running_priority {
            add.push((ni, p));
            if let Some(ci) = crate::guest::container_of(obs, ni) {
                add.extend(obs.resources[ci].running_on.iter().map(|&h| (h, p)));
            }
        }
    }
    for (ni, p) in add {
        obs.nodes[ni].priority += p;
    }
}

/// The `priority-fencing-delay` (seconds) fencing cluster node `ni` waits (Pacemaker's
/// `node_priority_fencing_delay`): only for a cluster node outside our partition, while at
/// most half the cluster nodes are online, when it has the top priority and priorities differ.
/// None when the option is not set.
pub fn priority_fencing_delay(obs: &Observed, ni: usize) -> Option<i64> {
    let delay = obs
        .option("priority-fencing-delay")
        .map(|v| (parse_interval_ms(v) / 1000) as i64)
        .filter(|&d| d > 0)?;
    let node = &obs.nodes[ni];
    if node.remote.is_some() || node.online {
        return Some(0);
    }
    let members: Vec<&Node> = obs.nodes.iter().filter(|n| n.remote.is_none()).collect();
    let online = members.iter().filter(|n| n.online).count();
    if online > members.len() / 2 {
        return Some(0);
    }
    let top = members.iter().map(|n| n.priority).max().unwrap_or(0);
    let lowest = members.iter().map(|n| n.priority).min().unwrap_or(0);
    if lowest == top || node.priority < top {
        return Some(0);
    }
    Some(delay)
}

/// A resource's shutdown lock recorded in its history on node `ni`: the lock holds, or, past
/// `shutdown-lock-limit` (when set), has expired and the history there is to be erased.
fn read_shutdown_lock(rsc: &mut Resource, ni: usize, lr: &LrmResource, now: i64, limit_s: i64) {
    let Some(since) = lr.shutdown_lock.filter(|&t| t != 0) else {
        return;
    };
    if limit_s > 0 && now > since.saturating_add(limit_s) {
        if !rsc.clear_history_on.contains(&ni) {
            rsc.clear_history_on.push(ni);
        }
    } else {
        rsc.lock_node = Some(ni);
        rsc.lock_time = since;
    }
}

fn node_health(options: &BTreeMap<String, String>, attrs: &BTreeMap<String, String>) -> i64 {
    let strategy = options
        .get("node-health-strategy")
        .map(|s| s.to_ascii_lowercase())
        .unwrap_or_else(|| "none".into());
    if strategy == "none" {
        return 1;
    }
    let mut health = 1i64;
    let mut sum = 0i64;
    for (k, v) in attrs {
        if !k.starts_with("#health") {
            continue;
        }
        let s = match v.to_ascii_lowercase().as_str() {
            "red" => -INFINITY,
            "yellow" => 0,
            "green" => 1,
            other => other.parse().unwrap_or(0),
        };
        sum += s;
        if s <= -INFINITY {
            health = -1;
        } else if s == 0 && health > 0 && v.eq_ignore_ascii_case("yellow") {
            health = 0;
        } else if s < 0 && health > -1 {
            health = -1;
        }
    }
    let _ = sum;
    health
}

/// A resource's fail count on a node and the time of its last failure, from node attributes.
pub fn node_failcount(attrs: &BTreeMap<String, String>, rsc: &str, legacy: bool) -> (i64, i64) {
    let mut count = 0i64;
    let mut last = 0i64;
    for (k, v) in attrs {
        if failure_attr_rsc(k, "fail-count-", legacy) == Some(rsc) {
            count = crate::cib::add_score(count, parse_score(v).unwrap_or(0));
        } else if failure_attr_rsc(k, "last-failure-", legacy) == Some(rsc) {
            last = last.max(v.trim().parse().unwrap_or(0));
        }
    }
    (count, last)
}

/// Whether a CIB of this feature set counts failures per resource (`fail-count-RSC`) rather
/// than per operation (`fail-count-RSC#OP_INTERVAL`): before 3.0.13, or none recorded
/// (Pacemaker's `generate_fail_regexes`).
pub fn legacy_fail_counts(feature_set: Option<&str>) -> bool {
    feature_set.is_none_or(|v| crate::digest::version_less(v, "3.0.13"))
}

/// The resource a fail-count or last-failure node attribute names (`prefix` is `fail-count-`
/// or `last-failure-`), when Pacemaker's `generate_fail_regex` counts it: `PREFIX-RSC#TASK_N`
/// per operation, or only `PREFIX-RSC` in a `legacy` CIB (see `legacy_fail_counts`).
pub fn failure_attr_rsc<'a>(key: &'a str, prefix: &str, legacy: bool) -> Option<&'a str> {
    let rest = key.strip_prefix(prefix)?;
    if legacy {
        return (!rest.contains('#')).then_some(rest);
    }
    let (rsc, op) = rest.split_once('#')?;
    let (task, interval) = op.rsplit_once('_')?;
    (!task.is_empty() && !interval.is_empty() && interval.bytes().all(|b| b.is_ascii_digit()))
        .then_some(rsc)
}

/// What a resource's history asks of its node, for the caller, which holds the node list.
#[derive(Debug, Default)]
struct HistoryOutcome {
    /// A failure with on-fail=fence asks to fence the node.
    fence: bool,
    /// A failure with on-fail=standby puts the node in standby.
    standby: bool,
}

/// Reads one resource's history on one node (Pacemaker's `unpack_lrm_resource` and
/// `process_rsc_state`), saying what it asks of the node.
fn unpack_lrm_resource(
    rsc: &mut Resource,
    ni: usize,
    ops: &[RscOp],
    nodes: &[Node],
    stonith_enabled: bool,
    now: i64,
    hist: Hist,
) -> HistoryOutcome {
    // As Pacemaker orders a resource's history: the entries in reverse document order (it
    // prepends each to its list), then GLib's merge sort with `history_cmp`.
    let sorted: Vec<&RscOp> = glib_sort(ops.iter().rev().collect(), &|a, b| history_cmp(a, b));
    let saved_role = rsc.role;
    let mut role = Role::Unknown;
    let mut on_fail = OnFail::Ignore;
    let mut last_failure: Option<&RscOp> = None;
    let node_unclean = nodes[ni].unclean;
    // A connection's reconnect interval is its failure timeout; its recurring monitors'
    // failures do not expire while its node is not fenced (`should_ignore_failure_timeout`).
    let reconnect_s = (crate::remote::reconnect_interval_ms(rsc) / 1000) as i64;
    let failure_timeout_s = if reconnect_s > 0 {
        reconnect_s
    } else {
        rsc.failure_timeout_s()
    };
    let remote_unfenced = reconnect_s > 0
        && stonith_enabled
        && nodes
            .iter()
            .any(|n| n.uname == rsc.id && n.remote.as_ref().is_some_and(|r| !r.was_fenced));
    let mut next_role_cleared = false;
    for op in &sorted {
        if op.operation == "notify" || op.operation == "meta-data" {
            continue;
        }
        let probe = is_probe(op);
        let mut rc = op.rc_code;
        let mut status = op.op_status;
        let trc = target_rc(op);
        // failure-timeout expiry
        let mut expired = false;
        let ignore_timeout = remote_unfenced && op.interval_ms != 0 && op.operation == "monitor";
        if failure_timeout_s > 0 && status != 7 && !ignore_timeout {
            if let Some(change) = op.last_rc_change {
                if now >= change.saturating_add(failure_timeout_s) {
                    expired = true;
                }
            }
        }
        if expired {
            let (count, last) = node_failcount(&nodes[ni].attrs, &rsc.id, rsc.legacy_fail_counts);
            // Fail counts of failures whose on-fail is block never expire.
            let block_failure = sorted.iter().any(|o| {
                let t = target_rc(o);
                (o.op_status != 0
                    || (t >= 0 && o.rc_code != t && !(is_probe(o) && o.rc_code == rc::NOT_RUNNING)))
                    && o.op_status != -1
                    && rsc.on_fail_for(&o.operation, o.interval_ms, stonith_enabled)
                        == OnFail::Block
            });
            if count > 0 {
                if block_failure || now < last.saturating_add(failure_timeout_s) {
                    expired = false;
                } else if !rsc.clear_failcount_on.contains(&ni) {
                    rsc.clear_failcount_on.push(ni);
                }
            } else if reconnect_s > 0
                && op.id.ends_with("_last_failure_0")
                && !rsc.clear_failcount_on.contains(&ni)
            {
                // (an expired last failure is cleared when a reconnect interval is set, even
                // without a fail count)
                rsc.clear_failcount_on.push(ni);
            }
        }
        // An unexpired last failure of a start or monitor whose recorded parameters differ
        // from the configured ones has its fail count cleared ("resource parameters have
        // changed"), while the history is unpacked.
        if !expired
            && op.id.ends_with("_last_failure_0")
            && matches!(op.operation.as_str(), "start" | "monitor")
            && !op.element.name.is_empty()
            && rsc.addr_from_container()
        {
            rsc.deferred_failure_checks.push((ni, (*op).clone()));
        } else if !expired
            && op.id.ends_with("_last_failure_0")
            && matches!(op.operation.as_str(), "start" | "monitor")
            && !op.element.name.is_empty()
        {
            let params = rsc.op_params(&op.operation, op.interval_ms, &nodes[ni].attrs, now);
            let check = crate::digest::check(&params, &op.element, &rsc.feature_set, false);
            // (An unmanaged resource's clear is optional: never in the graph.)
            if matches!(check, DigestCheck::Restart | DigestCheck::All)
                && rsc.managed
                && !rsc.clear_failcount_on.contains(&ni)
            {
                rsc.clear_failcount_on.push(ni);
            }
        }
        if expired
            && probe
            && matches!(
                rc,
                rc::OK
                    | rc::NOT_RUNNING
                    | rc::RUNNING_PROMOTED
                    | rc::DEGRADED
                    | rc::DEGRADED_PROMOTED
            )
        {
            expired = false;
        }
        // remap
        let mask_probe = probe && (rc == rc::ERR_INSTALLED || rc == rc::ERR_ARGS || status == 7);
        if op.operation == "monitor" && (rc == rc::DEGRADED || rc == rc::DEGRADED_PROMOTED) {
            rc = if rc == rc::DEGRADED {
                rc::OK
            } else {
                rc::RUNNING_PROMOTED
            };
        }
        if status == 0 || status == 4 {
            status = 0;
            if trc < 0 || trc != rc {
                status = 4;
            }
            match rc {
                rc::OK => {
                    if probe && trc == rc::NOT_RUNNING {
                        status = 0;
                    }
                }
                rc::NOT_RUNNING => {
                    if probe || trc == rc || !rsc.managed {
                        status = 0;
                        role = Role::Stopped;
                    }
                }
                rc::RUNNING_PROMOTED => {
                    if probe && rc != trc {
                        status = 0;
                    }
                    role = Role::Promoted;
                }
                rc::ERR_UNIMPLEMENTED => status = if op.interval_ms == 0 { 5 } else { 3 },
                // The other codes by their recovery class: hard errors ban the node, a fatal
                // one the resource everywhere, the rest are soft.
                _ => match rc::recovery(rc) {
                    Some(Recovery::Fatal) => status = 6,
                    Some(Recovery::Hard) => status = 5,
                    _ => {
                        if status == 0 {
                            status = 4;
                        }
                    }
                },
            }
        }
        if expired && mask_probe && op.rc_code != trc {
            if role <= Role::Stopped {
                role = Role::Unknown;
            }
            continue;
        } else if expired
            && rc != trc
            && (op.interval_ms == 0 || (nodes[ni].online && !node_unclean))
        {
            // Only an entry with a digest can have its restart digest changed, and only entries
            // since the last start are checked for changes.
            if op.interval_ms > 0
                && op.element.attr("op-digest").is_some()
                && !sorted.iter().any(|o| {
                    matches!(o.operation.as_str(), "start" | "migrate_from")
                        && o.call_id > op.call_id
                })
                && !rsc.expired_rescheduled.contains(&(ni, op.interval_ms))
            {
                rsc.expired_rescheduled.push((ni, op.interval_ms));
            }
            continue;
        }
        if mask_probe {
            role = Role::Stopped;
            // Shown in the status only when the entry names its node (on_node).
            if let Some(on) = op.element.attr("on_node") {
                if let Some(pn) = nodes.iter().position(|n| n.uname == on) {
                    rsc.failed_probes.push((pn, op.rc_code));
                }
            }
            rsc.history_bans
                .push((Some(ni), -INFINITY, "masked-probe-failure".into()));
            continue;
        }
        match status {
            1 => continue,
            -1 => {
                if op.operation == "start" {
                    rsc.start_pending_on.insert(ni);
                    if role < Role::Started {
                        role = Role::Started;
                    }
                } else if op.operation == "promote" {
                    role = Role::Promoted;
                } else if op.operation == "migrate_to" && (node_unclean || !nodes[ni].online) {
                    // Pending on a source that is (or, being down with active resources, will
                    // be found) unclean: the target's copy must stop (see `observe`).
                    if let Some(t) = op
                        .migrate_target
                        .as_deref()
                        .and_then(|t| nodes.iter().position(|n| n.uname == t))
                    {
                        rsc.pending_migrate_to_lost.push((ni, t));
                    }
                }
                if rsc.pending_task.is_none() && (op.interval_ms != 0 || op.operation != "monitor")
                {
                    rsc.pending_task = Some((op.operation.clone(), ni));
                }
                continue;
            }
            0 => {
                update_state(
                    rsc,
                    ni,
                    op,
                    rc,
                    &mut role,
                    &mut on_fail,
                    last_failure,
                    nodes,
                    hist,
                );
                if on_fail == OnFail::Ignore {
                    next_role_cleared = true;
                }
                continue;
            }
            7 => {
                // A missing agent cannot be ignored: such a failure bans the resource from the
                // node and shows it FAILED even under on-fail=ignore.
                if rsc.on_fail_for(&op.operation, op.interval_ms, stonith_enabled) == OnFail::Ignore
                {
                    on_fail = OnFail::Ban;
                }
                rsc.history_bans
                    .push((Some(ni), -INFINITY, "hard-error".into()));
                unpack_failure(
                    rsc,
                    ni,
                    op,
                    rc,
                    &mut role,
                    &mut on_fail,
                    &mut last_failure,
                    stonith_enabled,
                    nodes,
                    hist,
                );
                continue;
            }
            _ => {}
        }
        let strategy = rsc.on_fail_for(&op.operation, op.interval_ms, stonith_enabled);
        // A failed stop inside a container counts as done: the container's restart stops it.
        let container_stop = strategy == OnFail::RestartContainer && op.operation == "stop";
        if strategy == OnFail::Ignore || container_stop {
            update_state(
                rsc,
                ni,
                op,
                trc,
                &mut role,
                &mut on_fail,
                last_failure,
                nodes,
                hist,
            );
            rsc.failure_ignored = true;
            if container_stop && on_fail <= OnFail::Recover {
                on_fail = OnFail::RestartContainer;
            }
        } else {
            unpack_failure(
                rsc,
                ni,
                op,
                rc,
                &mut role,
                &mut on_fail,
                &mut last_failure,
                stonith_enabled,
                nodes,
                hist,
            );
            if status == 5 {
                rsc.history_bans
                    .push((Some(ni), -INFINITY, "hard-error".into()));
            } else if status == 6 {
                rsc.history_bans
                    .push((None, -INFINITY, "fatal-error".into()));
            }
        }
    }
    let _ = next_role_cleared;
    // Active recurring monitors (after the last start).
    let mut start_index: Option<usize> = None;
    let mut stop_index: Option<usize> = None;
    let mut implied_monitor_start: Option<usize> = None;
    for (i, op) in sorted.iter().enumerate() {
        if op.operation == "stop" && op.op_status == 0 {
            stop_index = Some(i);
        } else if op.operation == "start" || op.operation == "migrate_from" {
            start_index = Some(i);
        } else if op.operation == "monitor"
            && implied_monitor_start
                .map(|m| Some(m) <= stop_index)
                .unwrap_or(true)
            && (op.rc_code == rc::OK || op.rc_code == rc::RUNNING_PROMOTED)
        {
            implied_monitor_start = Some(i);
        } else if op.operation == "promote" || op.operation == "demote" {
            start_index = start_index.or(Some(i));
        }
    }
    if start_index.is_none() {
        start_index = implied_monitor_start;
    }
    if let Some(si) = start_index {
        if stop_index.map(|s| s < si).unwrap_or(true) {
            for op in &sorted[si..] {
                if op.interval_ms > 0 && op.op_status == 0 && op.operation == "monitor" {
                    rsc.recurring.push(ActiveRecurring {
                        node: ni,
                        name: op.operation.clone(),
                        interval_ms: op.interval_ms,
                        call_id: op.call_id,
                    });
                }
            }
        }
    }

    // The recurring operations Pacemaker creates while unpacking (its start and stop positions
    // are the last start, else the implied one, and the last successful stop).
    if nodes[ni].online {
        let start = start_index.map(|i| i as i64).unwrap_or(-1);
        let stop = stop_index.map(|i| i as i64).unwrap_or(-1);
        for (i, op) in sorted.iter().enumerate() {
            let i = i as i64;
            let inactive = start < stop && i <= stop;
            if inactive || i < start || op.interval_ms == 0 || op.op_status == -1 {
                continue;
            }
            if !rsc.unpacked_recurring.contains(&(ni, op.interval_ms)) {
                rsc.unpacked_recurring.push((ni, op.interval_ms));
            }
        }
    }

    // Stopped-role monitors: the latest entry per interval returned "not running".
    let mut latest: BTreeMap<u64, &RscOp> = BTreeMap::new();
    for op in &sorted {
        if op.operation == "monitor" && op.interval_ms > 0 {
            latest.insert(op.interval_ms, op);
        }
    }
    for (iv, op) in latest {
        if op.rc_code == rc::NOT_RUNNING && op.op_status == 0 && target_rc(op) == rc::NOT_RUNNING {
            rsc.stopped_monitors.push(ActiveRecurring {
                node: ni,
                name: "monitor".into(),
                interval_ms: iv,
                call_id: op.call_id,
            });
        }
    }
    // process_rsc_state
    if role != Role::Unknown {
        rsc.known_on.insert(ni);
    }
    let mut eff_on_fail = on_fail;
    let mut outcome = HistoryOutcome::default();
    if node_unclean {
        eff_on_fail = OnFail::Ignore;
    }
    match eff_on_fail {
        OnFail::Ignore => {}
        OnFail::Demote => {
            rsc.failed = true;
            if !rsc.unpack_demotes.contains(&ni) {
                rsc.unpack_demotes.push(ni);
            }
        }
        OnFail::Fence => outcome.fence = true,
        // The node goes into standby (`process_rsc_state`: standby and standby_onfail); the
        // caller sets it, the node list being read here.
        OnFail::Standby => outcome.standby = true,
        OnFail::Block => {
            rsc.managed = false;
            rsc.blocked = true;
            if rsc.blocked_after.is_none() {
                rsc.blocked_after = Some(rsc.running_on.len());
            }
        }
        OnFail::Ban => {
            rsc.history_bans
                .push((Some(ni), -INFINITY, "__action_migration_auto__".into()))
        }
        OnFail::Stop => rsc.next_role = Some(Role::Stopped),
        OnFail::Recover => {
            if role != Role::Stopped && role != Role::Unknown {
                rsc.failed = true;
                rsc.stop_flag = true;
                if !rsc.unpack_stops.contains(&ni) {
                    rsc.unpack_stops.push(ni);
                }
            }
        }
        OnFail::ResetRemote => {
            rsc.failed = true;
            rsc.stop_flag = true;
            rsc.reset_remote = true;
            // With a reconnect interval the connection stays stopped until the failure expires.
            if crate::remote::reconnect_interval_ms(rsc) > 0 {
                rsc.next_role = Some(Role::Stopped);
            }
            if role > Role::Stopped && !rsc.unpack_stops.contains(&ni) {
                rsc.unpack_stops.push(ni);
            }
        }
        OnFail::RestartContainer => {
            rsc.failed = true;
            rsc.stop_flag = true;
            if rsc.container.is_some() {
                if !rsc.container_stops.contains(&ni) {
                    rsc.container_stops.push(ni);
                }
            } else if role != Role::Stopped
                && role != Role::Unknown
                && !rsc.unpack_stops.contains(&ni)
            {
                rsc.unpack_stops.push(ni);
            }
        }
    }
    if role != Role::Stopped && role != Role::Unknown {
        if !rsc.running_on.contains(&ni) {
            rsc.running_on.push(ni);
            let priority = rsc
                .meta
                .get("priority")
                .and_then(|v| parse_score(v))
                .unwrap_or(0);
            if priority != 0 && on_fail == OnFail::Ignore {
                let promoted = i64::from(role == Role::Promoted);
                rsc.running_priority.push((ni, priority + promoted));
            }
        }
        match eff_on_fail {
            OnFail::Ignore => {}
            OnFail::Demote | OnFail::Block => rsc.failed = true,
            _ => {
                rsc.failed = true;
                rsc.stop_flag = true;
            }
        }
    }
    // A stop on a partial migration's source leaves the resource started while the target
    // may still run it (the source itself is not active).
    if let Some((source, _)) = rsc.partial_migration {
        if role == Role::Stopped && source == ni && !rsc.running_on.is_empty() {
            role = Role::Started;
        }
    }
    if on_fail == OnFail::Fence && !node_unclean {
        rsc.history_bans.push((Some(ni), 0, "fence-on-fail".into()));
    }
    rsc.role = role.max(saved_role);
    if rsc.role == Role::Unknown {
        rsc.role = Role::Stopped;
    }
    // (a bundle connection reaching its container's host waits for placement: see
    // `crate::bundles::check_connection_definitions`)
    if role != Role::Stopped && role != Role::Unknown && !rsc.orphan && !rsc.addr_from_container() {
        definition_changed(rsc, ni, ops, nodes, now, None);
    }
    outcome
}

/// Pacemaker's configuration check of an active resource's history on an available node (not
/// shutting down): from the last start on, every recurring entry and every probe, start,
/// promote and migrate_from has its recorded parameter digests compared with the configured
/// parameters (see `digest`).
/// A changed recurring operation is rescheduled; a changed start-like one restarts the resource
/// there, or reloads it when the entry records a restart digest and only reloadable parameters
/// changed. Anything changed clears a fail count on the node. Entries our own simulation
/// recorded (no element) ran with the configured parameters.
pub(crate) fn definition_changed(
    rsc: &mut Resource,
    ni: usize,
    ops: &[RscOp],
    nodes: &[Node],
    now: i64,
    addr: Option<&str>,
) {
    let node = &nodes[ni];
    // (a node shutting down is not checked either: migrate-shutdown)
    if !node.online
        || node.unclean
        || node.standby
        || node.pending
        || node.maintenance
        || node.shutdown
    {
        return;
    }
    // By call id; equal call ids in reverse document order, as Pacemaker's list sort leaves them.
    let mut sorted: Vec<&RscOp> = ops.iter().rev().collect();
    sorted.sort_by_key(|o| o.call_id);
    let (mut start_index, mut stop_index, mut implied) = (0usize, 0usize, 0usize);
    for (i, op) in sorted.iter().enumerate() {
        let counter = i + 1;
        if op.operation == "stop" && op.op_status == 0 {
            stop_index = counter;
        } else if op.operation == "start" || op.operation == "migrate_from" {
            start_index = counter;
        } else if (implied <= stop_index
            && op.operation == "monitor"
            && matches!(op.rc_code, 0 | 8))
            || op.operation == "promote"
            || op.operation == "demote"
        {
            implied = counter;
        }
    }
    if start_index == 0 {
        start_index = implied;
    }
    if start_index < stop_index {
        return;
    }
    let mut changed = false;
    // Maintenance cancels recurring operations instead (see `actions`).
    let maintenance = rsc.meta_bool("maintenance", false);
    for op in sorted.iter().skip(start_index.saturating_sub(1)) {
        // A recurring operation the configuration does not have (or has disabled) is orphaned.
        if op.interval_ms > 0
            && !maintenance
            && !rsc
                .ops
                .iter()
                .any(|o| o.enabled && o.name == op.operation && o.interval_ms == op.interval_ms)
        {
            changed = true;
            if !rsc
                .orphan_ops
                .iter()
                .any(|o| (o.0, o.1) == (ni, op.interval_ms))
            {
                rsc.orphan_ops.push((ni, op.interval_ms, op.call_id));
            }
            continue;
        }
        let checked = op.interval_ms > 0
            || matches!(
                op.operation.as_str(),
                "monitor" | "start" | "promote" | "migrate_from"
            );
        if !checked || op.element.name.is_empty() || (op.interval_ms > 0 && maintenance) {
            continue;
        }
        let mut params = rsc.op_params(&op.operation, op.interval_ms, &node.attrs, now);
        if let Some(addr) = addr {
            params.params.insert("addr".into(), addr.to_string());
        }
        let check = crate::digest::check(&params, &op.element, &rsc.feature_set, rsc.sanitized);
        let restart = match check {
            DigestCheck::Match => continue,
            DigestCheck::Restart => true,
            DigestCheck::All | DigestCheck::Unknown => {
                op.interval_ms == 0 && op.element.attr("op-restart-digest").is_none()
            }
        };
        changed = true;
        if op.interval_ms > 0 {
            if !rsc.rescheduled.contains(&(ni, op.interval_ms)) {
                rsc.rescheduled.push((ni, op.interval_ms));
            }
        } else if restart {
            if !rsc.definition_restart.contains(&ni) {
                rsc.definition_restart.push(ni);
            }
        } else if !rsc.reload_on.contains(&ni) {
            rsc.reload_on.push(ni);
        }
    }
    // (an anonymous clone instance's fail count is its primitive's, under any instance name)
    let legacy = rsc.legacy_fail_counts;
    let count = match &rsc.clone_base {
        Some(base) => node
            .attrs
            .iter()
            .filter_map(|(k, v)| {
                let rid = failure_attr_rsc(k, "fail-count-", legacy)?;
                (crate::clones::strip_instance(rid) == base).then(|| parse_score(v).unwrap_or(0))
            })
            .fold(0, crate::cib::add_score),
        None => node_failcount(&node.attrs, &rsc.id, legacy).0,
    };
    if changed && count != 0 && !rsc.clear_failcount_changed.contains(&ni) {
        rsc.clear_failcount_changed.push(ni);
    }
}

impl Resource {
    /// The op_defaults that apply to this resource's operation `task` at `interval_ms`.
    pub fn op_defaults_for(&self, task: &str, interval_ms: u64) -> BTreeMap<String, String> {
        let ctx = crate::op_defaults::OpContext {
            class: &self.class,
            provider: self.provider.as_deref(),
            kind: &self.kind,
            task,
            interval_ms,
        };
        crate::op_defaults::for_op(&self.op_default_sets, &ctx, self.evaluated_at)
    }

    /// Whether this is a connection whose `addr` is the magic "#uname" (a bundle connection
    /// without an IP: REMOTE_CONTAINER_HACK), the host its container runs on.
    pub fn addr_from_container(&self) -> bool {
        self.kind == "remote"
            && self
                .op_params("monitor", 0, &BTreeMap::new(), 0)
                .params
                .get("addr")
                .is_some_and(|a| a == "#uname")
    }

    /// The parameters an operation runs with on a node (see [`op_params`]).
    pub fn op_params(
        &self,
        task: &str,
        interval_ms: u64,
        node_attrs: &BTreeMap<String, String>,
        now: i64,
    ) -> OpParams {
        let mut op = op_params(
            &self.param_sets,
            &self.ops,
            &self.op_defaults_for(task, interval_ms),
            self.is_stonith(),
            (task, interval_ms),
            node_attrs,
            now,
        );
        // A bundle connection without an address of its own reaches its container's host
        // (Pacemaker's REMOTE_CONTAINER_HACK, `pe__add_bundle_remote_name`): the node it runs
        // on, as the connection is colocated with its container.
        if self.kind == "remote" && op.params.get("addr").is_some_and(|a| a == "#uname") {
            if let Some(host) = node_attrs.get("#uname") {
                op.params.insert("addr".into(), host.clone());
            }
        }
        op
    }
}

/// The parameters an operation `(task, interval_ms)` of a primitive runs with on a node (see
/// `digest::OpParams`): the instance attribute sets evaluated for the node, the operation's own
/// instance attributes, and its timeout (the `<op>` attribute, then its meta-attributes, then
/// op_defaults, then 20 s).
pub fn op_params(
    param_sets: &[NvSet],
    ops: &[OpDef],
    op_defaults: &BTreeMap<String, String>,
    fencing: bool,
    (task, interval_ms): (&str, u64),
    node_attrs: &BTreeMap<String, String>,
    now: i64,
) -> OpParams {
    let mut params = BTreeMap::new();
    merge_sets(&mut params, param_sets, now, Some(node_attrs));
    let def = ops
        .iter()
        .find(|o| o.name.eq_ignore_ascii_case(task) && o.interval_ms == interval_ms);
    let mut extra = BTreeMap::new();
    let mut timeout = None;
    if let Some(d) = def {
        merge_sets(&mut extra, &d.params, now, Some(node_attrs));
        timeout = d.attrs.get("timeout").cloned().or_else(|| {
            let own: Vec<NvSet> = d
                .meta
                .iter()
                .filter(|m| !d.params.iter().any(|p| p.id == m.id))
                .cloned()
                .collect();
            let mut meta = BTreeMap::new();
            merge_sets(&mut meta, &own, now, Some(node_attrs));
            meta.get("timeout").cloned()
        });
    }
    let timeout_ms = timeout
        .or_else(|| op_defaults.get("timeout").cloned())
        .map(|t| parse_interval_ms(&t))
        .filter(|&t| t > 0)
        .unwrap_or(20_000);
    OpParams {
        params,
        extra,
        interval_ms,
        timeout_ms,
        fencing,
    }
}

/// The `op-digest` the controller records for an operation of the configured primitive `rsc`
/// run on a node with these attributes (None for a resource the configuration lacks).
pub fn configured_digest(
    cib: &Cib,
    rsc: &str,
    (task, interval_ms): (&str, u64),
    node_attrs: &BTreeMap<String, String>,
    now: i64,
) -> Option<String> {
    let p = cib.primitives().find(|p| p.id == rsc)?;
    let mut op_defaults = BTreeMap::new();
    merge_sets(&mut op_defaults, &cib.op_defaults, now, None);
    let params = op_params(
        &p.params,
        &p.ops,
        &op_defaults,
        p.class == "stonith",
        (task, interval_ms),
        node_attrs,
        now,
    );
    Some(crate::digest::md5_hex(
        crate::digest::params_text(&crate::digest::all_params(&params)).as_bytes(),
    ))
}

#[allow(clippy::too_many_arguments)]
fn update_state(
    rsc: &mut Resource,
    ni: usize,
    op: &RscOp,
    rc: i32,
    role: &mut Role,
    on_fail: &mut OnFail,
    last_failure: Option<&RscOp>,
    nodes: &[Node],
    hist: Hist,
) {
    let mut clear = false;
    let task = op.operation.as_str();
    if rc == rc::ERR_INSTALLED
        || (is_probe(op) && (op.rc_code == rc::ERR_INSTALLED || op.rc_code == rc::ERR_ARGS))
    {
        *role = Role::Stopped;
    } else if rc == rc::NOT_RUNNING {
        clear = true;
    } else if task == "monitor" {
        if let Some(lf) = last_failure {
            if lf.operation == op.operation && lf.interval_ms == op.interval_ms {
                clear = true;
            }
            // The atomic model (atomic.rs): a failed migrate_to or migrate_from says nothing is
            // wrong with the VM, and this node's monitor since found it running, its own word
            // (seed 40045: a killed migrate_to, then both ends answered; Pacemaker's reading
            // recovered the VM by a restart the atomic promise forbids).
            if matches!(lf.operation.as_str(), "migrate_to" | "migrate_from") && is_atomic(rsc) {
                clear = true;
            }
        }
        if *role < Role::Started {
            *role = Role::Started;
            rsc.unpromoted_at_unpack = true;
        }
    } else if task == "start" || task == "migrate_from" {
        *role = Role::Started;
        rsc.unpromoted_at_unpack = false;
        clear = true;
    } else if task == "stop" {
        *role = Role::Stopped;
        clear = true;
    } else if task == "promote" {
        *role = Role::Promoted;
        clear = true;
    } else if task == "demote" {
        // a demote clears an earlier failure only under on-fail=demote
        clear = *on_fail == OnFail::Demote;
        *role = Role::Unpromoted;
        rsc.unpromoted_at_unpack = true;
    } else if task == "migrate_to" {
        migrate_to_success(rsc, ni, op, role, nodes, hist);
    } else if *role < Role::Started {
        *role = Role::Started;
    }
    if clear {
        match *on_fail {
            OnFail::Stop | OnFail::Fence | OnFail::Ban | OnFail::Standby => {}
            // A remote connection with a reconnect interval stays reset until the failure
            // expires (see `crate::remote`).
            OnFail::ResetRemote if crate::remote::reconnect_interval_ms(rsc) > 0 => {}
            _ => {
                *on_fail = OnFail::Ignore;
            }
        }
    }
}

/// Every node's history of one resource: (node index, entries as read).
pub type Hist<'a> = &'a [(usize, &'a [RscOp])];

fn ops_on<'a>(hist: Hist<'a>, ni: usize) -> &'a [RscOp] {
    hist.iter()
        .find(|(n, _)| *n == ni)
        .map(|(_, ops)| *ops)
        .unwrap_or(&[])
}

fn node_named(nodes: &[Node], name: Option<&str>) -> Option<usize> {
    let name = name?;
    nodes.iter().position(|n| n.uname == name)
}

/// Whether history entry `a` is newer than `b` (Pacemaker's `pe__is_newer_op`): by call id on
/// the same node (`same_node` unless both name their node), else by last-rc-change; a pending
/// entry is newer than a finished one.
fn is_newer(a: &RscOp, b: &RscOp, same_node: bool) -> bool {
    let same = match (a.element.attr("on_node"), b.element.attr("on_node")) {
        (Some(x), Some(y)) => x.eq_ignore_ascii_case(y),
        _ => same_node,
    };
    let (ca, cb) = (a.call_id, b.call_id);
    if ca == -1 && cb == -1 {
        return false;
    }
    if same && ca >= 0 && cb >= 0 && ca != cb {
        return ca > cb;
    }
    if ca >= 0 && cb >= 0 {
        if let (Some(la), Some(lb)) = (a.last_rc_change, b.last_rc_change) {
            if la != lb {
                return la > lb;
            }
        }
        return false;
    }
    ca == -1
}

/// Pacemaker's `pe__is_newer_op` as a comparison of two entries of one node's history (entries
/// naming no node are taken to be on the same node): by call id; equal call ids (an operation
/// and its last_failure record) by last-rc-change; a pending entry (call id -1) against a
/// finished one by the transition numbers of their transition-magic (a different transition
/// UUID or the same number: the pending one is newer). Not a total order: only `glib_sort`
/// reproduces what Pacemaker makes of it.
pub(crate) fn history_cmp(a: &RscOp, b: &RscOp) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    let same = match (a.element.attr("on_node"), b.element.attr("on_node")) {
        (Some(x), Some(y)) => x.eq_ignore_ascii_case(y),
        _ => true,
    };
    if same && !a.id.is_empty() && a.id == b.id {
        return Equal;
    }
    let (ca, cb) = (a.call_id, b.call_id);
    if ca == -1 && cb == -1 {
        return Equal;
    }
    if same && ca >= 0 && ca < cb {
        return Less;
    }
    if same && cb >= 0 && ca > cb {
        return Greater;
    }
    if ca >= 0 && cb >= 0 && (!same || ca == cb) {
        let (la, lb) = (
            a.last_rc_change.unwrap_or(-1),
            b.last_rc_change.unwrap_or(-1),
        );
        if la >= 0 && la < lb {
            return Less;
        }
        if lb >= 0 && la > lb {
            return Greater;
        }
        return Equal;
    }
    // "op_status:rc;action:transition:target_rc:uuid" -> (uuid, transition).
    // (An entry our simulation wrote or overwrote: the magic it writes for it.)
    let magic = |op: &RscOp| -> Option<(String, i64)> {
        let own = op.element.attr("call-id") == Some(op.call_id.to_string().as_str());
        let written = op
            .transition_key
            .as_ref()
            .map(|k| format!("{}:{};{k}", op.op_status, op.rc_code));
        let m = match op.element.attr("transition-magic") {
            Some(m) if own => m.to_string(),
            _ => written?,
        };
        let (status_rc, key) = m.split_once(';')?;
        let (status, rc) = status_rc.split_once(':')?;
        status.trim().parse::<i64>().ok()?;
        rc.trim().parse::<i64>().ok()?;
        let mut parts = key.splitn(4, ':');
        parts.next()?.trim().parse::<i64>().ok()?;
        let transition = parts.next()?.trim().parse::<i64>().ok()?;
        parts.next()?.trim().parse::<i64>().ok()?;
        Some((parts.next()?.to_string(), transition))
    };
    let (Some((ua, ia)), Some((ub, ib))) = (magic(a), magic(b)) else {
        return Equal;
    };
    if !ua.eq_ignore_ascii_case(&ub) || ia == ib {
        if cb == -1 {
            return Less;
        }
        if ca == -1 {
            return Greater;
        }
    } else if (ia >= 0 && ia < ib) || ib == -1 {
        return Less;
    } else if (ib >= 0 && ia > ib) || ia == -1 {
        return Greater;
    }
    Equal
}

/// GLib's `g_list_sort`: a top-down merge sort (the first half `len / 2` long) that takes from
/// the first list while the comparison says less or equal. With a comparison that is not a
/// total order (`history_cmp`) only this exact procedure gives Pacemaker's order.
pub(crate) fn glib_sort<T: Copy>(
    items: Vec<T>,
    cmp: &dyn Fn(T, T) -> std::cmp::Ordering,
) -> Vec<T> {
    if items.len() < 2 {
        return items;
    }
    let mut left = items;
    let right = left.split_off(left.len() / 2);
    let (left, right) = (glib_sort(left, cmp), glib_sort(right, cmp));
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut i, mut j) = (0, 0);
    while i < left.len() && j < right.len() {
        if cmp(left[i], right[j]) != std::cmp::Ordering::Greater {
            out.push(left[i]);
            i += 1;
        } else {
            out.push(right[j]);
            j += 1;
        }
    }
    out.extend_from_slice(&left[i..]);
    out.extend_from_slice(&right[j..]);
    out
}

/// A start, stop, migrate_to or migrate_from on the node newer than `reference`.
fn non_monitor_after(hist: Hist, ni: usize, reference: &RscOp, same_node: bool) -> bool {
    ops_on(hist, ni).iter().any(|op| {
        !std::ptr::eq(op, reference)
            && matches!(
                op.operation.as_str(),
                "start" | "stop" | "migrate_to" | "migrate_from"
            )
            && is_newer(op, reference, same_node)
    })
}

/// A probe or monitor on the node, newer than `reference`, that found the resource not running.
fn monitor_not_running_after(hist: Hist, ni: usize, reference: &RscOp, same_node: bool) -> bool {
    ops_on(hist, ni).iter().any(|op| {
        !std::ptr::eq(op, reference)
            && op.operation == "monitor"
            && op.rc_code == rc::NOT_RUNNING
            && is_newer(op, reference, same_node)
    })
}

/// A probe or monitor on the same node as `reference`, newer by call id, that the agent answered
/// (running or not running).
fn monitor_answer_after(hist: Hist, ni: usize, reference: &RscOp) -> bool {
    ops_on(hist, ni).iter().any(|op| {
        !std::ptr::eq(op, reference)
            && op.operation == "monitor"
            && op.op_status == 0
            && matches!(op.rc_code, 0 | 7)
            && is_newer(op, reference, true)
    })
}

/// A migrate_to of the resource, on any node, newer than `reference`.
fn migrate_to_after(hist: Hist, reference: &RscOp) -> bool {
    hist.iter().any(|(_, ops)| {
        ops.iter().any(|op| {
            !std::ptr::eq(op, reference)
                && op.operation == "migrate_to"
                && is_newer(op, reference, false)
        })
    })
}

/// Whether the node has state newer than the migration (compared with the migration entry on
/// that node when there is one, since call ids are reliable there).
fn newer_state_after_migrate(
    hist: Hist,
    nodes: &[Node],
    ni: usize,
    migrate_to: Option<&RscOp>,
    migrate_from: Option<&RscOp>,
) -> bool {
    let Some(any) = migrate_from.or(migrate_to) else {
        return false;
    };
    let source = node_named(nodes, any.migrate_source.as_deref());
    let target = node_named(nodes, any.migrate_target.as_deref());
    let (reference, same) = if Some(ni) == target {
        match migrate_from {
            Some(f) => (f, true),
            None => (migrate_to.unwrap_or(any), false),
        }
    } else if Some(ni) == source {
        match migrate_to {
            Some(t) => (t, true),
            None => (any, false),
        }
    } else {
        (any, false)
    };
    non_monitor_after(hist, ni, reference, same)
        || monitor_not_running_after(hist, ni, reference, same)
}

/// The node's `task` entry for this migration (`peer` is the other end), optionally only a
/// completed one with `rc`.
fn find_migration_op<'a>(
    hist: Hist<'a>,
    ni: usize,
    task: &str,
    peer: &str,
    rc: Option<i32>,
) -> Option<&'a RscOp> {
    ops_on(hist, ni).iter().find(|op| {
        op.operation == task
            && match task {
                "migrate_to" => op.migrate_target.as_deref() == Some(peer),
                _ => op.migrate_source.as_deref() == Some(peer),
            }
            && rc.is_none_or(|rc| op.rc_code == rc && op.op_status == 0)
    })
}

/// No finished entry for the resource on the node: a probe will tell.
fn unknown_on_node(hist: Hist, ni: usize) -> bool {
    ops_on(hist, ni).iter().all(|op| op.rc_code == rc::PENDING)
}

fn add_running(rsc: &mut Resource, ni: usize) {
    if !rsc.running_on.contains(&ni) {
        rsc.running_on.push(ni);
    }
}

fn clear_migration(rsc: &mut Resource) {
    rsc.failed = true;
    rsc.stop_flag = true;
    rsc.migratable_cleared = true;
}

/// Whether the resource follows the atomic migration model (atomic.rs).
fn is_atomic(rsc: &Resource) -> bool {
    crate::atomic::model_for(
        &rsc.id,
        &rsc.class,
        rsc.provider.as_deref(),
        &rsc.kind,
        rsc.meta
            .get(crate::atomic::MIGRATION_MODEL_META)
            .map(String::as_str),
    ) == Ok(crate::atomic::MigrationModel::Atomic)
}

/// A successful migrate_to on its source `ni` (pacemaker.md 3.1): the migration is dangling
/// (migrate_from done: the source must still stop), partial (migrate_from not done, target up:
/// active on both, the migration may continue), or failed.
fn migrate_to_success(
    rsc: &mut Resource,
    ni: usize,
    op: &RscOp,
    role: &mut Role,
    nodes: &[Node],
    hist: Hist,
) {
    let (Some(source), Some(target)) = (op.migrate_source.as_deref(), op.migrate_target.as_deref())
    else {
        *role = Role::Started.max(*role);
        return;
    };
    if nodes[ni].uname != source {
        return;
    }
    // The atomic migration model (atomic.rs) probes a source instead of stopping it when the
    // VM's location is unknown; that probe's answer is the source's newer state (seed 40045:
    // read as "no newer state", the resource stayed failed and was recovered every transition).
    // Two-phase resources keep Pacemaker's reading.
    let atomic = is_atomic(rsc);
    // The atomic model reads an open migration from the resource's latest migrate_to; an older
    // one was closed by the migrations since, each started from where the VM then ran (soak seed
    // 1796069027196323: an old migrate_to node3 -> node4, whose target's history a clean shutdown
    // had erased, was read as a partial migration to node4 while the VM ran on node2).
    if atomic && migrate_to_after(hist, op) {
        return;
    }
    let source_newer_op =
        non_monitor_after(hist, ni, op, true) || (atomic && monitor_answer_after(hist, ni, op));
    let target_ni = node_named(nodes, Some(target));
    let migrate_from =
        target_ni.and_then(|t| find_migration_op(hist, t, "migrate_from", source, None));
    if source_newer_op && migrate_from.is_some() {
        return;
    }
    let target_newer_state = target_ni
        .map(|t| newer_state_after_migrate(hist, nodes, t, Some(op), migrate_from))
        .unwrap_or(false);
    if source_newer_op && target_newer_state {
        return;
    }
    *role = Role::Started;
    let target_up = target_ni.filter(|&t| nodes[t].online);
    match migrate_from {
        Some(f) if f.rc_code == rc::OK && f.op_status == 0 => {
            // Dangling: the target runs it; the source still needs its stop.
            *role = Role::Stopped;
            if !rsc.dangling_sources.contains(&ni) {
                rsc.dangling_sources.push(ni);
            }
        }
        Some(f) if f.op_status != -1 => match target_up {
            Some(t) if !target_newer_state => add_running(rsc, t),
            _ => clear_migration(rsc),
        },
        // (pending, complete but erased, or to be scheduled) An online target with no history
        // was likely cleaned up: it is probed, not thought active (Pacemaker's ad9fd9548,
        // "handle cleaned migrate_from history correctly", in the installed Debian
        // 2.1.5-1+deb12u1 build). The atomic model keeps its own reading.
        _ if !atomic && target_up.is_some_and(|t| unknown_on_node(hist, t)) => return,
        _ => match target_up {
            Some(t) if !target_newer_state => {
                add_running(rsc, t);
                if nodes[ni].online {
                    rsc.partial_migration = Some((ni, t));
                }
            }
            _ if !source_newer_op => clear_migration(rsc),
            _ => {}
        },
    }
    if let Some(t) = target_ni {
        rsc.pending_migrate_to.push((ni, t, op.call_id));
    }
}

/// A failed migrate_to on its source (pacemaker.md 3.2): the resource may also run on the
/// target; else, unless the source has moved on, the source copy must stop.
fn migrate_to_failure(rsc: &mut Resource, ni: usize, op: &RscOp, nodes: &[Node], hist: Hist) {
    let (Some(source), Some(target)) = (op.migrate_source.as_deref(), op.migrate_target.as_deref())
    else {
        return;
    };
    if nodes[ni].uname != source {
        return;
    }
    let Some(t) = node_named(nodes, Some(target)) else {
        return;
    };
    let from = find_migration_op(hist, t, "migrate_from", source, Some(0));
    if !unknown_on_node(hist, t) && !newer_state_after_migrate(hist, nodes, t, Some(op), from) {
        if nodes[t].online {
            add_running(rsc, t);
        }
    } else {
        // For the atomic model a probe or monitor of the source since is its newer state (as in
        // `migrate_to_success`): it runs there or not, no dangling migration to stop.
        let source_newer = non_monitor_after(hist, ni, op, true)
            || (is_atomic(rsc) && monitor_answer_after(hist, ni, op));
        if !source_newer && !rsc.dangling_sources.contains(&ni) {
            rsc.dangling_sources.push(ni);
        }
    }
}

/// A failed migrate_from on its target (pacemaker.md 3.3): the resource may also still run on
/// the source.
fn migrate_from_failure(rsc: &mut Resource, ni: usize, op: &RscOp, nodes: &[Node], hist: Hist) {
    let (Some(source), Some(target)) = (op.migrate_source.as_deref(), op.migrate_target.as_deref())
    else {
        return;
    };
    if nodes[ni].uname != target {
        return;
    }
    let Some(s) = node_named(nodes, Some(source)) else {
        return;
    };
    let to = find_migration_op(hist, s, "migrate_to", target, Some(0));
    if !unknown_on_node(hist, s)
        && !newer_state_after_migrate(hist, nodes, s, to, Some(op))
        && nodes[s].online
    {
        add_running(rsc, s);
    }
}

#[allow(clippy::too_many_arguments)]
fn unpack_failure<'a>(
    rsc: &mut Resource,
    ni: usize,
    op: &'a RscOp,
    rc: i32,
    role: &mut Role,
    on_fail: &mut OnFail,
    last_failure: &mut Option<&'a RscOp>,
    stonith_enabled: bool,
    nodes: &[Node],
    hist: Hist,
) {
    *last_failure = Some(op);
    let action_on_fail = rsc.on_fail_for(&op.operation, op.interval_ms, stonith_enabled);
    if *on_fail < action_on_fail {
        *on_fail = action_on_fail;
    }
    let task = op.operation.as_str();
    if task == "stop" {
        rsc.history_bans
            .push((Some(ni), -INFINITY, "__stop_fail__".into()));
    } else if task == "migrate_to" {
        // (Pacemaker 2.1.5's `unpack_migrate_to_failure` and `unpack_migrate_from_failure` leave
        // allow-migrate alone: a failed migration that is no longer the last word on its nodes
        // does not keep the resource from migrating later; the atomic model forbids it.)
        if is_atomic(rsc) {
            rsc.migratable_cleared = true;
        }
        migrate_to_failure(rsc, ni, op, nodes, hist);
    } else if task == "migrate_from" {
        if is_atomic(rsc) {
            rsc.migratable_cleared = true;
        }
        migrate_from_failure(rsc, ni, op, nodes, hist);
    } else if task == "promote" {
        *role = Role::Promoted;
    } else if task == "demote" {
        if action_on_fail == OnFail::Block {
            // a blocked failed demote leaves it promoted, to be stopped once unblocked
            *role = Role::Promoted;
            rsc.next_role = Some(Role::Stopped);
        } else {
            *role = if rc == rc::NOT_RUNNING {
                Role::Stopped
            } else {
                Role::Unpromoted
            };
        }
    }
    if is_probe(op) && rc == rc::ERR_INSTALLED {
        *role = Role::Stopped;
    } else if *role < Role::Started {
        *role = Role::Started;
    }
    if action_on_fail == OnFail::Stop {
        rsc.next_role = Some(Role::Stopped);
        rsc.failed_to_stopped = true;
        // A failure whose role after failure is Stopped keeps the resource from every node
        // (Pacemaker 2.1.5 `unpack_rsc_op_failure` resets its allowed nodes to -INFINITY; for
        // an anonymous clone instance it is the clone's: `failed_to_stopped`).
        if rsc.clone_base.is_none() && !rsc.history_bans.iter().any(|b| b.0.is_none()) {
            rsc.history_bans
                .push((None, -INFINITY, "on-fail=stop".into()));
        }
    }
}
