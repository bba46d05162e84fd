//! Differential testing against crm_simulate: a seeded CIB generator ([`generator`]), a runner
//! that compares `pengine simulate` (a subprocess) with crm_simulate on each generated CIB
//! ([`run`], [`report`]), and a shrinker that reduces a differing CIB to a minimal one
//! ([`shrink`]).

/// The conformance harness' comparison rules, shared rather than rewritten.
#[path = "../../../pengine/tests/conformance/compare.rs"]
#[allow(dead_code)]
pub mod compare;
pub mod constraints;
pub mod generator;
pub mod history;
pub mod md5;
pub mod report;
pub mod rng;
pub mod run;
pub mod shrink;
