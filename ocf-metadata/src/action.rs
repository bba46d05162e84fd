//! OCF and Pacemaker action names (`start`, `migrate_to`, `reload-agent`, ...).

use std::str::FromStr;

/// An action an agent may be asked to perform (the single argument of the agent's command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Start,
    Stop,
    Monitor,
    /// LSB legacy name that heartbeat agents still advertise; Pacemaker calls `monitor`.
    Status,
    MetaData,
    ValidateAll,
    /// Pacemaker's extension: runs on the source node.
    MigrateTo,
    /// Pacemaker's extension: runs on the target node.
    MigrateFrom,
    /// OCF 1.1: apply changes of parameters marked `reloadable`.
    ReloadAgent,
    /// Legacy reload (agents whose meta-data version is below 1.1).
    Reload,
    Promote,
    Demote,
    Notify,
    Recover,
    Usage,
    Methods,
}

/// An action name the API does not define.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown action {0:?}")]
pub struct UnknownAction(pub String);

impl Action {
    /// Every action, in declaration order.
    pub const ALL: [Action; 16] = [
        Self::Start,
        Self::Stop,
        Self::Monitor,
        Self::Status,
        Self::MetaData,
        Self::ValidateAll,
        Self::MigrateTo,
        Self::MigrateFrom,
        Self::ReloadAgent,
        Self::Reload,
        Self::Promote,
        Self::Demote,
        Self::Notify,
        Self::Recover,
        Self::Usage,
        Self::Methods,
    ];

    /// The name as written on the agent's command line and in meta-data.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Start => "start",
            Self::Stop => "stop",
            Self::Monitor => "monitor",
            Self::Status => "status",
            Self::MetaData => "meta-data",
            Self::ValidateAll => "validate-all",
            Self::MigrateTo => "migrate_to",
            Self::MigrateFrom => "migrate_from",
            Self::ReloadAgent => "reload-agent",
            Self::Reload => "reload",
            Self::Promote => "promote",
            Self::Demote => "demote",
            Self::Notify => "notify",
            Self::Recover => "recover",
            Self::Usage => "usage",
            Self::Methods => "methods",
        }
    }

    /// Whether `ra-api-1.dtd` (what `ocf-tester` validates against) accepts this name in `<action>`.
    pub const fn in_dtd(self) -> bool {
        !matches!(self, Self::ReloadAgent)
    }

    /// Whether this action changes where or whether the resource runs.
    pub const fn changes_state(self) -> bool {
        matches!(
            self,
            Self::Start
                | Self::Stop
                | Self::MigrateTo
                | Self::MigrateFrom
                | Self::Promote
                | Self::Demote
                | Self::Recover
        )
    }
}

impl FromStr for Action {
    type Err = UnknownAction;
    fn from_str(s: &str) -> Result<Self, UnknownAction> {
        Self::ALL
            .into_iter()
            .find(|a| a.as_str() == s)
            // Pacemaker's own spelling variants.
            .or(match s {
                "meta_data" => Some(Self::MetaData),
                "validate_all" => Some(Self::ValidateAll),
                "reload_agent" => Some(Self::ReloadAgent),
                _ => None,
            })
            .ok_or_else(|| UnknownAction(s.to_owned()))
    }
}

impl std::fmt::Display for Action {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in Action::ALL {
            assert_eq!(a.as_str().parse::<Action>(), Ok(a));
        }
        assert_eq!("validate_all".parse::<Action>(), Ok(Action::ValidateAll));
        assert_eq!(
            "frobnicate".parse::<Action>(),
            Err(UnknownAction("frobnicate".into()))
        );
        assert!("".parse::<Action>().is_err());
        assert!("START".parse::<Action>().is_err());
    }
}
