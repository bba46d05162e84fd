//! The `shutdown-lock` cluster option: a resource stopped by its node's clean shutdown stays
//! locked to that node (not started elsewhere) until the node rejoins or, with
//! `shutdown-lock-limit`, until the limit has passed since the shutdown.
//!
//! As Pacemaker 2.1.5 does: the lock is read from the resource's history on the departed node
//! (`lrm_resource shutdown-lock="<epoch>"`, see `observed`; an expired one has that history
//! erased, `lrm_delete`), and taken here, before placement, for a resource active on exactly one
//! node that is shutting down (not unclean). A locked resource is banned from every other node.
//! Fencing devices are never locked. A lock from the history is cancelled (its history erased)
//! when the resource is active anyway. The status shows a resource locked by its history as
//! "Stopped NODE (LOCKED)" (`status`). With a limit, the second after a lock expires is when
//! the cluster must plan again (`Observed::recheck_by`, the graph's `recheck-by`); a new lock
//! starts at the node's `shutdown` attribute (the time its shutdown was asked for).
//!
//! Highlander's own `shutdown-policy=freeze` (`lifecycle`) is the same idea, kept in meta
//! attributes instead of the node's history.

use crate::cib::INFINITY;
use crate::observed::Observed;

/// The ban's reason, as Pacemaker names the location.
pub const BAN: &str = "shutdown-lock";

/// Takes and applies the shutdown locks (nothing unless the `shutdown-lock` option is set).
pub fn apply(obs: &mut Observed) {
    if !obs.shutdown_lock {
        return;
    }
    for ri in 0..obs.resources.len() {
        let r = &obs.resources[ri];
        if r.is_stonith() {
            continue;
        }
        let lock = match r.lock_node {
            Some(ln) if r.running_on.is_empty() => Some((ln, r.lock_time)),
            Some(ln) => {
                // Active although locked: leave it be, and forget the lock.
                let r = &mut obs.resources[ri];
                if !r.clear_history_on.contains(&ln) {
                    r.clear_history_on.push(ln);
                }
                None
            }
            None if r.running_on.len() == 1 => {
                let ni = r.running_on[0];
                let n = &obs.nodes[ni];
                let since = n
                    .attrs
                    .get("shutdown")
                    .and_then(|v| v.parse::<i64>().ok())
                    .unwrap_or(0);
                (n.shutdown && !n.unclean).then_some((ni, since))
            }
            None => None,
        };
        let Some((locked_to, since)) = lock else {
            continue;
        };
        if obs.resources[ri].lock_node.is_none() {
            obs.resources[ri].new_lock = Some((locked_to, since));
        }
        if obs.shutdown_lock_limit_s > 0 {
            let expires = since.saturating_add(obs.shutdown_lock_limit_s);
            obs.update_recheck_by(expires.saturating_add(1));
        }
        for ni in 0..obs.nodes.len() {
            if ni != locked_to {
                obs.resources[ri]
                    .history_bans
                    .push((Some(ni), -INFINITY, BAN.into()));
            }
        }
    }
}
