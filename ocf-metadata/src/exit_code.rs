//! OCF exit codes (0-9, 190, 191): names, integer conversions, and their meaning per action.

use crate::Action;

/// An OCF resource-agent exit code.
///
/// The numbers are the LSB init-script codes plus the OCF extensions; 190 and 191 are OCF 1.1's
/// "degraded" results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(i32)]
pub enum OcfExitCode {
    Success = 0,
    ErrGeneric = 1,
    ErrArgs = 2,
    ErrUnimplemented = 3,
    ErrPerm = 4,
    ErrInstalled = 5,
    ErrConfigured = 6,
    NotRunning = 7,
    RunningPromoted = 8,
    FailedPromoted = 9,
    Degraded = 190,
    DegradedPromoted = 191,
}

/// How Pacemaker's scheduler reacts to an unexpected result (`unpack.c`'s classes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// Not a failure (or a failure only if something else was expected).
    None,
    /// Recover in place or move: restart, then relocate by `migration-threshold`.
    Soft,
    /// This node cannot run the resource: ban it here.
    Hard,
    /// The configuration is wrong everywhere: stop everywhere, start nowhere.
    Fatal,
}

impl OcfExitCode {
    /// Every code, in numeric order.
    pub const ALL: [OcfExitCode; 12] = [
        Self::Success,
        Self::ErrGeneric,
        Self::ErrArgs,
        Self::ErrUnimplemented,
        Self::ErrPerm,
        Self::ErrInstalled,
        Self::ErrConfigured,
        Self::NotRunning,
        Self::RunningPromoted,
        Self::FailedPromoted,
        Self::Degraded,
        Self::DegradedPromoted,
    ];

    /// The numeric exit status.
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// The code for a number, if the OCF API defines one.
    pub fn from_code(code: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.code() == code)
    }

    /// The shell constant's name (`OCF_SUCCESS`, ...), with OCF 1.1's promoted/degraded names.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Success => "OCF_SUCCESS",
            Self::ErrGeneric => "OCF_ERR_GENERIC",
            Self::ErrArgs => "OCF_ERR_ARGS",
            Self::ErrUnimplemented => "OCF_ERR_UNIMPLEMENTED",
            Self::ErrPerm => "OCF_ERR_PERM",
            Self::ErrInstalled => "OCF_ERR_INSTALLED",
            Self::ErrConfigured => "OCF_ERR_CONFIGURED",
            Self::NotRunning => "OCF_NOT_RUNNING",
            Self::RunningPromoted => "OCF_RUNNING_PROMOTED",
            Self::FailedPromoted => "OCF_FAILED_PROMOTED",
            Self::Degraded => "OCF_DEGRADED",
            Self::DegradedPromoted => "OCF_DEGRADED_PROMOTED",
        }
    }

    /// Pacemaker's short text for the code, as in `returned 7 (not running)`.
    pub const fn pacemaker_text(self) -> &'static str {
        match self {
            Self::Success => "ok",
            Self::ErrGeneric => "error",
            Self::ErrArgs => "invalid parameter",
            Self::ErrUnimplemented => "unimplemented feature",
            Self::ErrPerm => "insufficient privileges",
            Self::ErrInstalled => "not installed",
            Self::ErrConfigured => "not configured",
            Self::NotRunning => "not running",
            Self::RunningPromoted => "promoted",
            Self::FailedPromoted => "promoted (failed)",
            Self::Degraded => "OCF_DEGRADED",
            Self::DegradedPromoted => "OCF_DEGRADED_PROMOTED",
        }
    }

    /// How the scheduler classes this result when it was not the expected one.
    pub const fn recovery(self) -> Recovery {
        match self {
            Self::Success | Self::Degraded | Self::DegradedPromoted => Recovery::None,
            Self::ErrGeneric | Self::NotRunning | Self::RunningPromoted | Self::FailedPromoted => {
                Recovery::Soft
            }
            Self::ErrArgs | Self::ErrUnimplemented | Self::ErrPerm | Self::ErrInstalled => {
                Recovery::Hard
            }
            Self::ErrConfigured => Recovery::Fatal,
        }
    }

    /// What this code means when `action` returns it (OCF 1.1 text plus Pacemaker's behaviour).
    pub fn meaning(self, action: &Action, probe: bool) -> &'static str {
        use Action as A;
        match (action, self) {
            (A::Stop, Self::Success) => "stopped (also when it was already stopped)",
            (A::Stop, _) => {
                "not provably stopped: Pacemaker fences the node (or blocks the resource)"
            }
            (A::Start, Self::Success) => "running (also when it was already running)",
            (A::Start, Self::ErrGeneric) => "start failed here (soft: restart or move)",
            (A::Start, Self::ErrArgs | Self::ErrInstalled) => "this node cannot run it",
            (A::Monitor | A::Status, Self::Success) => "running here",
            (A::Monitor | A::Status, Self::NotRunning) if probe => {
                "not running here (expected probe result)"
            }
            (A::Monitor | A::Status, Self::NotRunning) => "stopped unexpectedly: recovery follows",
            (A::Monitor | A::Status, Self::ErrGeneric) => {
                "failed, or its state cannot be determined"
            }
            (A::Monitor | A::Status, Self::ErrInstalled) if probe => {
                "cannot run here: left stopped here and the node is banned"
            }
            (A::Monitor | A::Status, Self::Degraded | Self::DegradedPromoted) => {
                "running, but a failure is more likely: treated as success"
            }
            (A::MigrateTo | A::MigrateFrom, Self::Success) => "migration step succeeded",
            (A::MigrateTo | A::MigrateFrom, _) => {
                "migration step failed: Pacemaker assumes it may be active on both nodes"
            }
            (A::ValidateAll, Self::Success) => "the configuration is valid",
            (A::ValidateAll, Self::ErrArgs) => "a value is invalid on this host",
            (A::ValidateAll, Self::ErrInstalled) => "this host lacks something the resource needs",
            (A::MetaData | A::Notify, Self::Success) => "always 0",
            (_, Self::ErrUnimplemented) => "action not supported",
            (_, Self::ErrConfigured) => {
                "configuration invalid everywhere: stopped everywhere, started nowhere"
            }
            (_, Self::ErrPerm) => "insufficient privilege",
            (_, Self::Success) => "succeeded",
            (_, Self::ErrGeneric) => "failed",
            (_, Self::ErrArgs) => "invalid or excess arguments",
            (_, Self::ErrInstalled) => "required software missing on this host",
            (_, Self::NotRunning) => "not running",
            (_, Self::RunningPromoted) => "running in the promoted role",
            (_, Self::FailedPromoted) => "failed in the promoted role",
            (_, Self::Degraded | Self::DegradedPromoted) => "degraded (treated as success)",
        }
    }
}

impl From<OcfExitCode> for i32 {
    fn from(code: OcfExitCode) -> i32 {
        code.code()
    }
}

impl TryFrom<i32> for OcfExitCode {
    type Error = i32;
    /// The code, or the number back when the OCF API defines none.
    fn try_from(code: i32) -> Result<Self, i32> {
        Self::from_code(code).ok_or(code)
    }
}

impl std::fmt::Display for OcfExitCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.code(), self.pacemaker_text())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_round_trip_and_gaps_are_rejected() {
        for code in OcfExitCode::ALL {
            assert_eq!(OcfExitCode::try_from(code.code()), Ok(code));
        }
        let defined: Vec<i32> = OcfExitCode::ALL.iter().map(|c| c.code()).collect();
        assert_eq!(defined, vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 190, 191]);
        for n in [-1, 10, 99, 189, 192, 255] {
            assert_eq!(OcfExitCode::try_from(n), Err(n));
        }
    }

    #[test]
    fn recovery_classes_follow_pacemaker() {
        assert_eq!(OcfExitCode::ErrGeneric.recovery(), Recovery::Soft);
        assert_eq!(OcfExitCode::ErrInstalled.recovery(), Recovery::Hard);
        assert_eq!(OcfExitCode::ErrConfigured.recovery(), Recovery::Fatal);
        assert_eq!(OcfExitCode::Degraded.recovery(), Recovery::None);
    }

    #[test]
    fn meaning_depends_on_action_and_probe() {
        let m = OcfExitCode::NotRunning;
        assert_ne!(
            m.meaning(&Action::Monitor, true),
            m.meaning(&Action::Monitor, false)
        );
        assert!(
            OcfExitCode::ErrGeneric
                .meaning(&Action::Stop, false)
                .contains("fences")
        );
        assert!(
            OcfExitCode::ErrGeneric
                .meaning(&Action::MigrateTo, false)
                .contains("both")
        );
    }
}
