//! The `container` meta-attribute: a resource that runs inside another one (its container).
//!
//! Pacemaker's rules for such a resource (a "filler"), applied here as hooks of the pipeline:
//! - it is colocated with its container (INFINITY) and ordered after it (a symmetrical mandatory
//!   order: the container starts first and stops last) (`implied_colocations`, `resolve`),
//!   unless the container is a remote connection or holds a guest node: then it is banned from
//!   every other node instead (`forced_connection`, applied by placement);
//! - it is never probed (`reconcile`);
//! - its failures default to on-fail "restart-container": the container gets a required stop on
//!   that node (so it restarts, or moves), and a failed stop of the filler counts as done, the
//!   container's stop stopping it (`observed`, `require_stops`);
//! - the container's fail count on a node includes its fillers' (`failcount_with_fillers`).
//!
//! Only primitives (group members included) are containers here; a `container` naming a group,
//! naming the resource itself or nothing configured is ignored, as Pacemaker ignores the last two.

use std::borrow::Cow;

use crate::cib::{Cib, Colocation, INFINITY, Order};
use crate::observed::Observed;

/// The id Pacemaker gives the implied colocation (shown in explanations).
pub const COLOCATION_ID: &str = "resource-with-container";

/// Sets `Resource::container` from the `container` meta-attribute, and adds the implied order
/// (container start before the filler's start, filler stop before the container's stop) to
/// `obs.orders`, for every filler (a group's `container` is each member's).
pub fn resolve(obs: &mut Observed) {
    for ri in 0..obs.resources.len() {
        let r = &obs.resources[ri];
        let Some(id) = r.meta.get("container") else {
            continue;
        };
        if id.eq_ignore_ascii_case(&r.id) {
            continue;
        }
        let Some(ci) = obs.rsc_index(id) else {
            continue;
        };
        obs.resources[ri].container = Some(ci);
        obs.resources[ci].fillers.push(ri);
    }
    for ri in 0..obs.resources.len() {
        order_filler(obs, ri);
    }
}

/// The remote connection a filler is forced onto instead (Pacemaker 2.1.5's internal
/// constraints of a primitive): its container when that is a remote connection, else the guest
/// node connection its container holds. None for a connection itself or without a container.
pub fn forced_connection(obs: &Observed, ri: usize) -> Option<usize> {
    let is_conn = |i: usize| {
        let r = &obs.resources[i];
        crate::remote::is_connection_agent(&r.class, r.provider.as_deref(), &r.kind)
    };
    let ci = obs.resources[ri].container?;
    if is_conn(ri) {
        return None;
    }
    if is_conn(ci) {
        return Some(ci);
    }
    (0..obs.resources.len()).find(|&i| obs.resources[i].container == Some(ci) && is_conn(i))
}

/// The implied order of filler `ri` with its container: the container's start before the
/// filler's, the filler's stop before the container's (nothing without a container, nor for a
/// filler forced onto a remote node instead, see `forced_connection`).
pub fn order_filler(obs: &mut Observed, ri: usize) {
    let Some(ci) = obs.resources[ri].container else {
        return;
    };
    if forced_connection(obs, ri).is_some() {
        return;
    }
    // Also within one group: each filler waits for the container itself, not only for the
    // member before it.
    let (r, c) = (&obs.resources[ri], &obs.resources[ci]);
    let order = Order {
        id: format!("{}{ORDER_SUFFIX}", r.id),
        first: c.id.clone(),
        then: r.id.clone(),
        first_action: "start".into(),
        then_action: "start".into(),
        kind: "mandatory".into(),
        symmetrical: Some(true),
        one_or_more: Default::default(),
    };
    obs.orders.push(order);
}

/// The id suffix of the implied "container start then filler start" ordering.
const ORDER_SUFFIX: &str = "-container-order";

/// Whether an ordering is the one `resolve` implies between a container and its filler.
pub fn is_implied_order(o: &Order) -> bool {
    o.id.ends_with(ORDER_SUFFIX)
}

/// Moves the stops fillers' failures require (`Resource::container_stops`) onto their
/// containers, as stops created while the history is unpacked (`Resource::unpack_stops`): a
/// container that otherwise stays restarts. Only where the container is active.
pub fn require_stops(obs: &mut Observed) {
    for ri in 0..obs.resources.len() {
        let Some(ci) = obs.resources[ri].container else {
            continue;
        };
        for ni in obs.resources[ri].container_stops.clone() {
            let c = &mut obs.resources[ci];
            if c.running_on.contains(&ni) && !c.unpack_stops.contains(&ni) {
                c.unpack_stops.push(ni);
            }
        }
    }
}

/// A bundle connection's colocation with its container: highly preferred, not mandatory (the
/// container may run on a Pacemaker Remote node the connection cannot run on).
pub const NESTED_SCORE: i64 = 10_000;

/// The CIB placement reads, with each filler's colocation with its container (INFINITY; a
/// bundle connection's `NESTED_SCORE`) added after the configured ones; the CIB itself when no
/// resource has a container.
pub fn implied_colocations<'a>(cib: &'a Cib, obs: &Observed) -> Cow<'a, Cib> {
    let implied: Vec<Colocation> = obs
        .resources
        .iter()
        .enumerate()
        .filter(|&(ri, _)| forced_connection(obs, ri).is_none())
        .filter_map(|(ri, r)| {
            r.container.map(|ci| Colocation {
                id: COLOCATION_ID.into(),
                rsc: r.id.clone(),
                with_rsc: obs.resources[ci].id.clone(),
                score: if crate::bundles::is_replica_connection(obs, ri) {
                    NESTED_SCORE
                } else {
                    INFINITY
                },
                ..Default::default()
            })
        })
        .chain(crate::bundles::ip_colocations(obs))
        .collect();
    if implied.is_empty() {
        return Cow::Borrowed(cib);
    }
    let mut owned = cib.clone();
    owned.colocations.extend(implied);
    Cow::Owned(owned)
}

/// The fail count placement compares with a resource's migration-threshold on a node: its own
/// plus, for a container, each filler's (each unless its failures expired, by its own
/// failure-timeout).
pub fn failcount_with_fillers(obs: &Observed, ri: usize, ni: usize) -> i64 {
    let own = |i: usize| {
        let r = &obs.resources[i];
        let count = r.fail_count.get(&ni).copied().unwrap_or(0);
        let timeout_s = r.failure_timeout_s();
        let expired = timeout_s > 0
            && r.last_failure
                .get(&ni)
                .is_some_and(|&t| obs.now > t + timeout_s);
        if expired { 0 } else { count }
    };
    let mut total = own(ri);
    for &fi in &obs.resources[ri].fillers {
        total = crate::cib::add_score(total, own(fi));
    }
    total
}
