//! test-cts: Highlander's cluster test suite (simulator, fault plans, checkers, real-infra harness).
//!
//! This library holds what the test rings share; each ring's tests live under `tests/`.

pub mod shared;
pub mod sim;
