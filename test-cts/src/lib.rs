//! test-cts: Highlander's cluster test suite (simulator, fault plans, checkers, real-infra harness).
//!
//! This library holds what the test rings share; each ring's tests live under `tests/`.

pub mod cluster;
pub mod diff;
pub mod host;
pub mod libvirt;
pub mod ocf;
pub mod process;
pub mod sim;
pub mod watcher;
