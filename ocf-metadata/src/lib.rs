//! ocf-metadata: the OCF 1.1 resource-agent vocabulary, pure and dependency-light.
//!
//! - [`OcfExitCode`]: exit codes 0-9 and 190/191, with what each means for each action.
//! - [`Action`]: the action names the API and Pacemaker use.
//! - [`OcfEnv`]: `OCF_*` variables parsed from an iterator of pairs (never the process environment).
//! - [`AgentSpec`] / [`ParameterSpec`]: the one parameter table that renders meta-data XML,
//!   validates values for `validate-all`, and renders Markdown docs and the man page
//!   ([`render_man_page`]).
//!
//! No I/O anywhere in this crate: callers hand in the environment and print the output.

mod action;
mod env;
mod exit_code;
mod man;
mod metadata;
mod params;

pub use action::{Action, UnknownAction};
pub use env::{CheckLevel, EnvError, EnvReading, OcfEnv, OpMeta};
pub use exit_code::{OcfExitCode, Recovery};
pub use man::{ManPage, render_man_page};
pub use metadata::{MetadataProfile, advertises, render_markdown, render_metadata};
pub use params::{
    ActionSpec, AgentSpec, ParamError, ParamType, ParameterSpec, ResolvedParams, Special,
    SpecialItem, parse_bool,
};
