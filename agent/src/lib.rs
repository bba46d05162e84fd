//! highlander-agent: the `VirtualDomain` OCF resource agent for libvirt domains, as a library.
//!
//! The binary (`src/bin/VirtualDomain.rs`) only reads the environment, calls [`run`], prints and
//! exits; everything else is here so that tests and the simulator run the same logic.

pub mod params;

use ocf_metadata::{Action, MetadataProfile, OcfEnv, OcfExitCode};

/// What one invocation produced: the exit code, stdout, and an exit reason for stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub code: OcfExitCode,
    pub stdout: String,
    pub reason: Option<String>,
}

impl Outcome {
    fn code(code: OcfExitCode, reason: impl Into<String>) -> Self {
        Self {
            code,
            stdout: String::new(),
            reason: Some(reason.into()),
        }
    }
}

/// Runs one action named on the command line.
pub fn run(action_name: &str, env: &OcfEnv) -> Outcome {
    let action: Action = match action_name.parse() {
        Ok(a) => a,
        Err(e) => return Outcome::code(OcfExitCode::ErrUnimplemented, e.to_string()),
    };
    match action {
        Action::MetaData => {
            let profile = if env.caller_speaks_ocf_1_1() {
                MetadataProfile::Ocf11
            } else {
                MetadataProfile::Portable
            };
            Outcome {
                code: OcfExitCode::Success,
                stdout: ocf_metadata::render_metadata(&params::VIRTUAL_DOMAIN, profile),
                reason: None,
            }
        }
        other => Outcome::code(
            OcfExitCode::ErrUnimplemented,
            format!("action {other} is not implemented yet"),
        ),
    }
}
