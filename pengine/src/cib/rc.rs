//! Result codes of history entries by name: ocf-metadata's OCF exit codes and recovery classes
//! (one vocabulary with the agent), plus Pacemaker's own code for a pending action.

use ocf_metadata::{OcfExitCode, Recovery};

/// `OCF_SUCCESS`.
pub const OK: i32 = OcfExitCode::Success.code();
/// `OCF_ERR_ARGS`.
pub const ERR_ARGS: i32 = OcfExitCode::ErrArgs.code();
/// `OCF_ERR_UNIMPLEMENTED`.
pub const ERR_UNIMPLEMENTED: i32 = OcfExitCode::ErrUnimplemented.code();
/// `OCF_ERR_INSTALLED`.
pub const ERR_INSTALLED: i32 = OcfExitCode::ErrInstalled.code();
/// `OCF_NOT_RUNNING`.
pub const NOT_RUNNING: i32 = OcfExitCode::NotRunning.code();
/// `OCF_RUNNING_PROMOTED`.
pub const RUNNING_PROMOTED: i32 = OcfExitCode::RunningPromoted.code();
/// `OCF_DEGRADED`: a monitor's "running, degraded" (read as `OK`).
pub const DEGRADED: i32 = OcfExitCode::Degraded.code();
/// `OCF_DEGRADED_PROMOTED`: a monitor's "promoted, degraded" (read as `RUNNING_PROMOTED`).
pub const DEGRADED_PROMOTED: i32 = OcfExitCode::DegradedPromoted.code();
/// Pacemaker's `PCMK_OCF_UNKNOWN`, recorded for an action still pending (not an OCF code).
pub const PENDING: i32 = 193;

/// The recovery class of a result code (`None` for a code OCF does not define).
pub fn recovery(rc: i32) -> Option<Recovery> {
    OcfExitCode::from_code(rc).map(OcfExitCode::recovery)
}
