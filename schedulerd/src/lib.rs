//! highlander-schedulerd: a drop-in `pacemaker-schedulerd` that answers Pacemaker 2.1.5's
//! controller with pengine's plans (the atomic migration model, the policies), guarded by
//! Pacemaker's own scheduler.
//!
//! Modules: `ffi` (libqb, libbz2, the user database: the only unsafe code), `wire` (Pacemaker's
//! IPC framing), `message` (requests and replies), `plan` (the only calls into pengine),
//! `series` (saved inputs), `guard` (Pacemaker's answer and the comparison), `daemon` (what
//! each message gets), `log`, `install` (dpkg-divert).

pub mod daemon;
pub mod ffi;
pub mod guard;
pub mod install;
pub mod log;
pub mod message;
pub mod plan;
pub mod series;
pub mod wire;
